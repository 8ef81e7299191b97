#!/usr/bin/env bash
# make core-next: the tests that run Ansible, on the newest ansible-core line (ANSIBLE_CORE_NEXT, 2.21: Python 3.12+),
# inside the Debian 13 image the molecule harness builds (Python 3.13; this machine's Python is 3.11, where pip stops
# at 2.19). The controller's own pins (requirements.txt) with ansible-core replaced and the linters and molecule left
# out are installed once into an image keyed on them (sglang-longctx/core-next:<key>); each run copies the checkout
# into a fresh container and runs pytest there. Usage: tests/core_next/run.sh [pytest arguments, default TESTS];
# tests/core_next/run.sh sanity [options]: make sanity (tests/sanity/run.sh) there instead, its checkers kept in
# .cache/core-next/sanity between runs.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
core=${ANSIBLE_CORE_NEXT:-2.21.5}
base=${MOLECULE_BASE_IMAGE13:-sglang-longctx/debian13-systemd}:latest
cache="$repo/.cache/core-next"
mkdir -p "$cache"
log() { printf '[core-next] %s\n' "$*"; }
started=$(date +%s)
trap 'log "$(( $(date +%s) - started )) s"' EXIT

# The Docker engine and the Debian 13 image: the harness's (idempotent; seconds when both are there).
docker image inspect "$base" >/dev/null 2>&1 && docker info >/dev/null 2>&1 || "$repo/molecule/harness/prepare.sh"
docker image inspect "$base" >/dev/null || { log "no $base: molecule/harness/prepare.sh builds it"; exit 1; }

# requirements.txt with ansible-core $core, without the linters and molecule (they run on the controller's 2.19).
sed -E -e "s/^ansible-core==.*/ansible-core==$core/" -e '/^(ruff|yamllint|ansible-lint|molecule|molecule-plugins|pytest-testinfra)[=[]/d' \
  "$repo/requirements.txt" >"$cache/requirements.txt"
# Debian packages the tests call: make (the Makefile's targets), ssh (an unreachable host is an ssh failure), git
# (ansible-test lists a collection's files with it).
packages="make openssh-client git"
key=$( (docker image inspect --format '{{.Id}}' "$base"; echo "$packages"; cat "$cache/requirements.txt") | sha256sum | cut -c1-12)
image="sglang-longctx/core-next:$key"
if ! docker image inspect "$image" >/dev/null 2>&1; then
  log "building $image (ansible-core $core on Debian 13's Python)"
  docker rm -f sglang-core-next-build >/dev/null 2>&1 || true
  docker run --name sglang-core-next-build -v "$cache/requirements.txt:/requirements.txt:ro" -e PACKAGES="$packages" \
    "$base" bash -c 'apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $PACKAGES >/dev/null
    python3 -m venv /venv && /venv/bin/pip install --quiet --upgrade pip && /venv/bin/pip install --quiet -r /requirements.txt' \
    >"$cache/build.log" 2>&1 || { tail -20 "$cache/build.log"; docker rm -f sglang-core-next-build >/dev/null; exit 1; }
  docker commit sglang-core-next-build "$image" >/dev/null
  docker rm sglang-core-next-build >/dev/null
fi

# What runs Ansible: the integration playbooks, the installed collection, the modules inside ansible-playbook, the
# filters, callbacks, argument specs and templates; the planner's plain-Python tests do not depend on Ansible's line.
# The Prometheus tests need Debian's prometheus, which this image does not hold: make unit runs them on the controller.
TESTS=${TESTS:-tests/integration tests/collection tests/smoke/test_module_in_ansible.py tests/unit/test_callback_once.py
  tests/unit/test_filter_plugin.py tests/unit/test_ansible_doc.py tests/unit/test_role_argument_specs.py
  tests/unit/test_hostile_render.py tests/unit/test_report_playbooks.py tests/unit/test_progress.py
  --ignore-glob=tests/integration/test_prometheus_*}
# .git comes too: the collection's build ships what git tracks (tests/collection/build.sh), so its tests need the
# checkout's history (without it they failed: "repository '/repo' does not exist")
copy='mkdir -p /repo && tar -C /src --exclude=./.venv --exclude=./.cache --exclude=./reports -cf - . \
  | tar -C /repo -xf - && git config --global --add safe.directory /repo && ln -s /venv /repo/.venv && cd /repo'
if [ "${1:-}" = sanity ]; then
  shift
  mkdir -p "$cache/sanity"
  docker run --rm -v "$repo:/src:ro" -v "$cache/sanity:/repo/.cache/sanity" "$image" bash -c \
    "$copy && exec tests/sanity/run.sh --requirements $*"
  exit
fi
# shellcheck disable=SC2086
docker run --rm -v "$repo:/src:ro" -e TESTS="${*:-$(echo $TESTS)}" "$image" bash -c '
  set -e; '"$copy"'
  echo "[core-next] $(/venv/bin/ansible --version | head -1), Python $(python3 -V | cut -d" " -f2), $(. /etc/os-release; echo "$PRETTY_NAME")"
  exec /venv/bin/pytest -q -p no:cacheprovider -n 2 --dist loadfile $TESTS'
