#!/usr/bin/env bash
# make sanity: ansible-core's own `ansible-test sanity` over the collection sglang.longctx (modules, module_utils,
# plugins, roles, lib): ansible-test checks collections only, so this builds it (tests/collection/build.sh) and
# installs it under .cache/sanity/. Usage: tests/sanity/run.sh [ansible-test sanity options, e.g. --test pylint].
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
bin="$repo/.venv/bin"
root="$repo/.cache/sanity"
coll="$root/ansible_collections/sglang/longctx"
# ansible-test wants the en_US.UTF-8 locale (else it warns and uses C.UTF-8): generated once, as root, where Debian's
# locales package is installed (it is on these machines); elsewhere the warning stays.
if ! locale -a 2>/dev/null | grep -qi '^en_US\.utf-\?8$' && [ "$(id -u)" = 0 ] && [ -f /etc/locale.gen ] \
    && command -v locale-gen >/dev/null; then
  sed -i 's/^# *\(en_US\.UTF-8 UTF-8\)/\1/' /etc/locale.gen && locale-gen >/dev/null
fi
# ansible-test keeps its per-test virtual environments and caches under ~/.ansible/test: here, under .cache/.
export HOME="$root/home"
mkdir -p "$HOME/.ansible/test/cache"
# The pip that ansible-test bootstraps (ansible_test/_internal/python_requirements.py): 24.2 for ansible-core 2.19,
# 25.2 for 2.21 (make core-next).
for pip in 24_2 25_2; do cp "$repo/tests/sanity/get_pip_offline.py" "$HOME/.ansible/test/cache/get_pip_$pip.py"; done
# The collection as `make collection` builds it (tests/collection/build.sh), installed from its tarball: the sanity
# tests see the files another team installs.
tarball=$("$repo/tests/collection/build.sh" "$root/build")
rm -rf "$root/ansible_collections"
ANSIBLE_COLLECTIONS_PATH="$root" "$bin/ansible-galaxy" collection install --force "$tarball" -p "$root" >/dev/null
mkdir -p "$coll/tests/sanity"
cp "$repo"/tests/sanity/ignore-*.txt "$coll/tests/sanity/"
# ansible-test reads tests/sanity/ignore-<its version>.txt: the same reasons hold on every line this repository tests.
core=$("$bin/python" -c 'from ansible.release import __version__; print(".".join(__version__.split(".")[:2]))')
[ -f "$coll/tests/sanity/ignore-$core.txt" ] || cp "$repo/tests/sanity/ignore-2.19.txt" "$coll/tests/sanity/ignore-$core.txt"
cd "$coll"
# ansible-test lists a collection's files with git; .cache/ is ignored by the repository's, so the copy has its own.
git init --quiet . && git add --all && git -c user.name=sanity -c user.email=sanity@localhost commit --quiet -m copy
started=$(date +%s)
trap 'echo "ansible-test sanity: $(( $(date +%s) - started )) s"' EXIT
python=$("$bin/python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
"$bin/ansible-test" sanity --python "$python" --color no "$@"
