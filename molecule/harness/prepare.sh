#!/usr/bin/env bash
# Take a fresh Debian 12 machine (root, no container registry, no Galaxy, no NVIDIA repository) to
# the point where `molecule test` can run:
#   1. Debian packages: docker.io, debootstrap, dpkg-dev, apt-utils, gnupg, gcc (apt, from the machine's sources)
#   2. a Docker engine (started here when none answers)
#   3. a systemd-capable Debian 12 base image, built with debootstrap (nothing can be pulled), and a Debian 13
#      one when a scenario's molecule.yml names it (gpu_host does): of the scenarios given as arguments (the demo
#      gives default), of every scenario when none is given
#   4. the collections molecule's docker driver needs, taken from the `ansible` package on PyPI
#   5. the stand-in NVIDIA apt repository and the SGLang double's wheel (molecule/harness/standins.sh)
# Idempotent: each step is skipped when its result is already there. (A docker client alone, as some
# machines have in /usr/local/bin, is not an engine: the check is for dockerd.)
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
CACHE="${MOLECULE_HARNESS_CACHE:-$REPO/.cache/molecule}"
VENV="${VENV:-$REPO/.venv}"
IMAGE="${MOLECULE_BASE_IMAGE:-sglang-longctx/debian12-systemd}"
IMAGE13="${MOLECULE_BASE_IMAGE13:-sglang-longctx/debian13-systemd}"
ANSIBLE_BUNDLE_VERSION="12.3.0"   # carries community.docker 4.8.5, ansible.posix 2.1.0, community.general 11.4.2
mkdir -p "$CACHE"
log() { printf '[harness] %s\n' "$*"; }

# 1. Debian packages
need=()
for cmd_pkg in dockerd:docker.io debootstrap:debootstrap dpkg-scanpackages:dpkg-dev gpg:gnupg apt-ftparchive:apt-utils gcc:gcc; do
  command -v "${cmd_pkg%%:*}" >/dev/null 2>&1 || need+=("${cmd_pkg#*:}")
done
if [ ${#need[@]} -gt 0 ]; then
  log "installing ${need[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi

# 2. Docker engine
if ! docker info >/dev/null 2>&1; then
  log "starting dockerd"
  setsid dockerd >"$CACHE/dockerd.log" 2>&1 </dev/null &
  for _ in $(seq 1 60); do docker info >/dev/null 2>&1 && break; sleep 1; done
  docker info >/dev/null 2>&1 || { log "dockerd did not start:"; tail -20 "$CACHE/dockerd.log"; exit 1; }
fi

# 3. Base image, keyed on this script's image recipe and the machine's CA certificates (HTTPS from inside
#    the instance needs the same trust as the host).
certs_hash=$( (cat /usr/local/share/ca-certificates/*.crt 2>/dev/null || true; sed -n '/^build_image()/,/^}/p' "$0") | sha256sum | cut -c1-12)
build_image() {  # suite image tag
  local suite="$1" image="$2" tag="$3" rootfs="$CACHE/rootfs"
  rm -rf "$rootfs"
  debootstrap --variant=minbase \
    --include=systemd,systemd-sysv,dbus,python3,python3-venv,python3-apt,python3-debian,sudo,ca-certificates,curl,iproute2,procps,kmod,gnupg,initramfs-tools \
    "$suite" "$rootfs" >"$CACHE/debootstrap-$suite.log" 2>&1
  # The machine's own apt sources (its mirror), with the suite names of the image's release.
  cp /etc/apt/sources.list "$rootfs/etc/apt/sources.list" 2>/dev/null || true
  [ -d /etc/apt/sources.list.d ] && cp /etc/apt/sources.list.d/*.sources "$rootfs/etc/apt/sources.list.d/" 2>/dev/null || true
  if [ -f /etc/apt/sources.list.d/debian.sources ]; then rm -f "$rootfs/etc/apt/sources.list"; fi
  [ "$suite" = bookworm ] || sed -i "s/\bbookworm\b/$suite/g" "$rootfs"/etc/apt/sources.list "$rootfs"/etc/apt/sources.list.d/*.sources 2>/dev/null || true
  cp /usr/local/share/ca-certificates/*.crt "$rootfs/usr/local/share/ca-certificates/" 2>/dev/null || true
  if [ -f /etc/pip.conf ]; then cp /etc/pip.conf "$rootfs/etc/pip.conf"; fi
  chroot "$rootfs" update-ca-certificates >/dev/null 2>&1 || true
  : >"$rootfs/etc/machine-id"
  rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
  for unit in getty@tty1.service apt-daily.timer apt-daily-upgrade.timer fstrim.timer e2scrub_all.timer; do
    ln -sf /dev/null "$rootfs/etc/systemd/system/$unit"
  done
  tar --numeric-owner -C "$rootfs" -cf "$CACHE/rootfs.tar" .
  printf 'FROM scratch\nADD rootfs.tar /\nENV container=docker\nSTOPSIGNAL SIGRTMIN+3\nCMD ["/lib/systemd/systemd"]\n' \
    >"$CACHE/Dockerfile"
  # Docker 23+ without buildx prints "DEPRECATED: The legacy builder is deprecated..." on every build; FROM
  # scratch + ADD needs nothing more, so its messages are shown only when the build fails.
  docker build -q -t "$image:$tag" -t "$image:latest" -f "$CACHE/Dockerfile" "$CACHE" >/dev/null \
    2>"$CACHE/docker-build.log" || { cat "$CACHE/docker-build.log" >&2; return 1; }
  rm -rf "$rootfs" "$CACHE/rootfs.tar"
}
if ! docker image inspect "$IMAGE:$certs_hash" >/dev/null 2>&1; then
  log "building $IMAGE:$certs_hash with debootstrap"
  build_image bookworm "$IMAGE" "$certs_hash"
fi
docker tag "$IMAGE:$certs_hash" "$IMAGE:latest"
# Debian 13 only when a scenario uses it; keyed and cached the same way.
scenario_files=("$REPO"/molecule/*/molecule.yml)
if [ $# -gt 0 ]; then
  scenario_files=()
  for scenario in "$@"; do scenario_files+=("$REPO/molecule/$scenario/molecule.yml"); done
fi
if grep -qs "${IMAGE13##*/}" "${scenario_files[@]}"; then
  if ! docker image inspect "$IMAGE13:$certs_hash" >/dev/null 2>&1; then
    log "building $IMAGE13:$certs_hash with debootstrap (trixie)"
    build_image trixie "$IMAGE13" "$certs_hash"
  fi
  docker tag "$IMAGE13:$certs_hash" "$IMAGE13:latest"
fi

# 4. Collections for molecule's docker driver, from the ansible package (Galaxy is not reachable)
site=$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
if [ ! -d "$site/ansible_collections/community/docker" ]; then
  log "installing collections from ansible==$ANSIBLE_BUNDLE_VERSION"
  "$VENV/bin/pip" download --quiet --no-deps "ansible==$ANSIBLE_BUNDLE_VERSION" -d "$CACHE/wheels"
  "$VENV/bin/python" - "$CACHE/wheels/ansible-$ANSIBLE_BUNDLE_VERSION-py3-none-any.whl" "$site" <<'PY'
import sys, zipfile
wheel, site = sys.argv[1], sys.argv[2]
keep = ("ansible_collections/community/docker/", "ansible_collections/ansible/posix/",
        "ansible_collections/community/general/", "ansible_collections/community/library_inventory_filtering_v1/")
with zipfile.ZipFile(wheel) as archive:
    archive.extractall(site, [n for n in archive.namelist() if n.startswith(keep)])
PY
fi

# 5. Stand-ins
"$HERE/standins.sh" "$CACHE"
log "ready: docker $(docker version --format '{{.Server.Version}}'), image $IMAGE:$certs_hash"
