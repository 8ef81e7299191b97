#!/usr/bin/env bash
# Build what molecule serves in place of NVIDIA and SGLang (nothing of theirs is reachable here):
#   CACHE/apt-repo/  a signed apt repository of stand-in packages with NVIDIA's real names and versions
#                    (built with dpkg-deb), plus a stand-in linux-headers for this machine's kernel;
#   CACHE/apt-repo/standin-archive-key.asc  the key that signs it (the role's repo key URL points here), and
#                    .fpr its fingerprint (pinned by molecule as nvidia_driver_repo_key_fingerprint);
#   CACHE/apt-repo/next/  the index after a simulated NVIDIA release (580.105.08), which a scenario publishes
#                    over the first one to make the instance's apt cache stale;
#   CACHE/apt-repo.tar  all of CACHE/apt-repo/, which prepare unpacks into each instance;
#   CACHE/apt-repo/standin-reboot  the stand-in for a reboot (containers cannot reboot): records it, and loads
#                    the module on disk as a boot would (/sys/module/nvidia/{version,taint});
#   CACHE/wheels/sglang-*.whl  the SGLang double (tests/sglang_double) as a wheel named sglang (0.5.23+double,
#                    and the same code as 0.5.22+double, for a switch between two runtimes), and
#   CACHE/wheels/ddtree_kernels-*.whl  a stand-in custom-kernel wheel.
# Rebuilt only when molecule/standins/ or this script change.
set -euo pipefail
CACHE="$1"
HERE="$(cd "$(dirname "$0")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
SRC="$REPO/molecule/standins"
OUT="$CACHE/apt-repo"
DRIVER_VERSIONS="580.82.07 580.95.05"   # two releases of the 580 branch: pins must pick the asked one
NEXT_VERSION="580.105.08"                # published later (next/): a version bump against a stale apt cache
CUDA_VERSIONS="12.9.1"
KERNEL="$(uname -r)"
KERNEL2="$KERNEL-next"   # the "next kernel" the headers metapackage brings: DKMS must build for it too
stamp=$( (cat "$0"; find "$SRC" "$REPO/tests/sglang_double" "$REPO/lib/sglang_kvplan/releases" -type f \
  -not -name '*.pyc' | sort | xargs cat) \
  | sha256sum | cut -c1-16)-$KERNEL
[ -f "$OUT/.stamp" ] && [ "$(cat "$OUT/.stamp")" = "$stamp" ] && exit 0
echo "[harness] building stand-in NVIDIA apt repository and SGLang double wheel"
rm -rf "$OUT" "$CACHE/build" && mkdir -p "$OUT/pool" "$OUT/pool-next" "$OUT/next" "$CACHE/build" "$CACHE/wheels"
BUILD="$CACHE/build"

package() {  # name version description [src:destdir ...] [--postinst f] [--prerm f] [--depends d] [--link target:path]
  local name="$1" version="$2" description="$3" depends="" pool="${POOL:-pool}"; shift 3
  local root="$BUILD/$name-$version"
  mkdir -p "$root/DEBIAN"
  while [ $# -gt 0 ]; do
    case "$1" in
      --postinst|--prerm) install -m 0755 "$2" "$root/DEBIAN/${1#--}"; shift 2; continue ;;
      --depends) depends="$2"; shift 2; continue ;;
      --link) mkdir -p "$root$(dirname "${2#*:}")"; ln -sfn "${2%%:*}" "$root${2#*:}"; shift 2; continue ;;
    esac
    mkdir -p "$root${1#*:}"; cp -p "${1%%:*}" "$root${1#*:}"; shift
  done
  printf 'Package: %s\nVersion: %s\nArchitecture: amd64\nSection: misc\nPriority: optional\n' "$name" "$version" \
    >"$root/DEBIAN/control"
  [ -z "$depends" ] || printf 'Depends: %s\n' "$depends" >>"$root/DEBIAN/control"
  printf 'Maintainer: sglang-longctx molecule stand-in <noreply@example.invalid>\n' >>"$root/DEBIAN/control"
  printf 'Description: STAND-IN for %s (molecule tests only)\n %s\n' "$name" "$description" >>"$root/DEBIAN/control"
  dpkg-deb --root-owner-group --build "$root" "$OUT/$pool/${name}_${version}_amd64.deb" >/dev/null
}

# The key first: the stand-in cuda-keyring package carries it, as NVIDIA's carries theirs.
export GNUPGHOME="$BUILD/gnupg"; mkdir -p "$GNUPGHOME"; chmod 700 "$GNUPGHOME"
gpg --batch --quiet --pinentry-mode loopback --passphrase '' \
  --quick-gen-key "sglang-longctx stand-in archive <noreply@example.invalid>" rsa3072 sign never
gpg --batch --armor --export >"$OUT/standin-archive-key.asc"
gpg --batch --with-colons --list-keys | awk -F: '/^fpr:/ {print $10; exit}' >"$OUT/standin-archive-key.fpr"

# A stand-in DKMS (real dkms would need a compiler and real headers): same state tree, same status lines.
mkdir -p "$BUILD/hook" && cp -p "$SRC/dkms-header-postinst" "$BUILD/hook/dkms"
package nvidia-standin-dkms 1.0-standin "dkms install/remove/autoinstall/status over a prebuilt module." \
  "$SRC/dkms:/usr/sbin/" "$BUILD/hook/dkms:/etc/kernel/header_postinst.d/" --depends kmod

for ver in $DRIVER_VERSIONS $NEXT_VERSION; do
  deb="$ver-1"
  POOL=pool; [ "$ver" = "$NEXT_VERSION" ] && POOL=pool-next
  export POOL
  sed "s/@DRIVER_VERSION@/$ver/" "$SRC/nvidia-smi" >"$BUILD/nvidia-smi"; chmod +x "$BUILD/nvidia-smi"
  sed "s/@DRIVER_VERSION@/$ver/" "$SRC/dkms-postinst" >"$BUILD/postinst"
  sed "s/@DRIVER_VERSION@/$ver/" "$SRC/dkms-prerm" >"$BUILD/prerm"
  sed "s/@DRIVER_VERSION@/$ver/" "$SRC/fabricmanager" >"$BUILD/nv-fabricmanager"; chmod +x "$BUILD/nv-fabricmanager"
  for flavour in open proprietary; do
    license="Dual MIT/GPL"; [ $flavour = proprietary ] && license="NVIDIA"
    printf 'static const char m[] __attribute__((section(".modinfo"), used, aligned(1))) =\n"license=%s\\0version=%s\\0description=NVIDIA kernel module stand-in";\n' \
      "$license" "$ver" >"$BUILD/nvidia.c"
    gcc -c "$BUILD/nvidia.c" -o "$BUILD/nvidia.ko"
    name=nvidia-kernel-open-dkms; [ $flavour = proprietary ] && name=nvidia-kernel-dkms
    package "$name" "$deb" "A DKMS source tree whose module carries only modinfo ($license)." \
      "$BUILD/nvidia.ko:/usr/src/nvidia-$ver/" --postinst "$BUILD/postinst" --prerm "$BUILD/prerm" \
      --depends nvidia-standin-dkms
  done
  package nvidia-driver-cuda "$deb" "A fixture-driven nvidia-smi." "$BUILD/nvidia-smi:/usr/bin/"
  cp "$SRC/daemon" "$BUILD/nvidia-persistenced"
  package nvidia-persistenced "$deb" "A daemon that does nothing, and its unit." \
    "$BUILD/nvidia-persistenced:/usr/bin/" "$SRC/nvidia-persistenced.service:/lib/systemd/system/"
  package nvidia-fabricmanager "$deb" "A daemon that does nothing, and its unit." \
    "$BUILD/nv-fabricmanager:/usr/bin/" "$SRC/nvidia-fabricmanager.service:/lib/systemd/system/"
  package cuda-drivers "$deb" "Metapackage stand-in."
  package nvidia-open "$deb" "Metapackage stand-in."
done
POOL=pool
for ver in $CUDA_VERSIONS; do
  short="${ver%.*}"
  sed "s/@CUDA_SHORT@/$short/g; s/@CUDA_FULL@/$ver/g" "$SRC/nvcc" >"$BUILD/nvcc"; chmod +x "$BUILD/nvcc"
  package "cuda-toolkit-${short//./-}" "$ver-1" "An nvcc that answers --version." "$BUILD/nvcc:/usr/local/cuda-$short/bin/"
done
# Kernel headers as Debian ships them: /lib/modules/<k>/build, and a postinst that runs the header_postinst.d
# hooks (DKMS's builds the module for the new kernel). This machine's kernel, and a "next" one that only the
# headers metapackage (linux-headers-standin, as linux-headers-amd64 in Debian) brings.
for k in "$KERNEL" "$KERNEL2"; do
  printf '#!/bin/sh\nset -e\n[ "$1" = configure ] || exit 0\n[ -d /etc/kernel/header_postinst.d ] || exit 0\nexec run-parts --report --exit-on-error --arg=%s /etc/kernel/header_postinst.d\n' "$k" >"$BUILD/headers-postinst"
  mkdir -p "$BUILD/src-$k"; echo "# stand-in kernel headers for $k" >"$BUILD/src-$k/Makefile"
  package "linux-headers-$k" "1.0-standin" "Headers of kernel $k (a Makefile only) and the DKMS hook run." \
    "$BUILD/src-$k/Makefile:/usr/src/linux-headers-$k/" --link "/usr/src/linux-headers-$k:/lib/modules/$k/build" \
    --postinst "$BUILD/headers-postinst"
done
package linux-headers-standin "1.0-standin" "Headers metapackage: depends on the newest kernel's headers." \
  --depends "linux-headers-$KERNEL2"

# NVIDIA's cuda-keyring, as a host that followed NVIDIA's install guide has it: its own .list and keyring.
mkdir -p "$BUILD/keyring"
gpg --batch --export >"$BUILD/keyring/cuda-archive-keyring.gpg"
echo "deb [signed-by=/usr/share/keyrings/cuda-archive-keyring.gpg] file:///srv/nvidia-standin-repo/ /" \
  >"$BUILD/keyring/cuda-debian12-x86_64.list"
package cuda-keyring 1.1-1 "NVIDIA's repository source and key, in NVIDIA's file names." \
  "$BUILD/keyring/cuda-archive-keyring.gpg:/usr/share/keyrings/" "$BUILD/keyring/cuda-debian12-x86_64.list:/etc/apt/sources.list.d/"

cp "$SRC/standin-reboot" "$OUT/standin-reboot"

# Sign the repository with the throwaway key, as NVIDIA signs theirs (the role checks the fingerprint).
# The published index leaves out NEXT_VERSION; next/ holds the index after its release.
index() {  # dir pools...
  local dir="$1"; shift
  (cd "$OUT" && for p in "$@"; do dpkg-scanpackages --multiversion "$p" /dev/null 2>/dev/null; done) >"$OUT/$dir/Packages"
  (cd "$OUT/$dir" && gzip -kf Packages \
    && apt-ftparchive -o APT::FTPArchive::Release::Origin="sglang-longctx stand-in" release . >Release \
    && gpg --batch --yes --clearsign -o InRelease Release && gpg --batch --yes -abs -o Release.gpg Release)
}
index . pool
index next pool pool-next
# The later release's index is dated later, as a real publication is: apt's file:// method answers "not
# modified" when an index has the mtime of the one it cached, and both are written within the same second.
touch -d "@$(( $(date +%s) + 3600 ))" "$OUT"/next/*
gpgconf --kill all 2>/dev/null || true   # no gpg-agent left running, nor its sockets in the image build context
# One archive for prepare to unpack: copying the repository file by file into each instance took minutes.
tar -C "$OUT" -cf "$CACHE/apt-repo.tar" .

# The SGLang double as a wheel named sglang (a zip with metadata; no build backend needed offline).
rm -f "$CACHE"/wheels/*.whl
"$REPO/.venv/bin/python" "$REPO/tests/sglang_double/build_wheel.py" "$CACHE/wheels"
# A second release of the double (the same code reporting 0.5.22+double, as `from sglang import __version__` is
# where the wheel and /server_info take it), so that a scenario can switch runtimes between two releases.
rm -rf "$BUILD/double-0.5.22" && mkdir -p "$BUILD/double-0.5.22" && cp -r "$REPO/tests/sglang_double/sglang" "$BUILD/double-0.5.22/"
find "$BUILD/double-0.5.22" -name __pycache__ -prune -exec rm -rf {} +
sed -i 's/^__version__ = .*/__version__ = "0.5.22+double"/' "$BUILD/double-0.5.22/sglang/__init__.py"
# ... and behaves as that release: the double impersonates its simulated GPU's "version" (/server_info names the
# package's __version__ above), DEFAULTS "0.5.23" unless a fixture sets one, so this copy's default is its own and it is
# 0.5.22 (its flag table and rules.json entry: sim.exact_release()).
sed -i 's/^    "version": "0.5.23",$/    "version": "0.5.22+double",/' "$BUILD/double-0.5.22/sglang/_double_gpu.py"
grep -q '"version": "0.5.22+double"' "$BUILD/double-0.5.22/sglang/_double_gpu.py"
"$REPO/.venv/bin/python" - "$CACHE/wheels" "$BUILD/double-0.5.22/sglang" "$REPO/tests/sglang_double" <<'PY'
import os, sys
sys.path.insert(0, sys.argv[3])
import build_wheel
tables = {"sglang/_double_flags/" + n: os.path.join(build_wheel.RELEASES, n)
          for n in os.listdir(build_wheel.RELEASES) if n == "rules.json" or (n.startswith("flags-") and n.endswith(".json"))}
print(build_wheel.build(sys.argv[1], sys.argv[2], "sglang", "0.5.22+double",
                        "TEST DOUBLE of SGLang for molecule and the demo; not SGLang", tables))
PY
# A stand-in custom-kernel wheel, so the role's kernel install and version check run for real.
"$REPO/.venv/bin/python" "$REPO/tests/sglang_double/build_wheel.py" "$CACHE/wheels" "$SRC/kernels/ddtree_kernels" \
  ddtree-kernels 0.3.1 "STAND-IN for a custom kernel package (molecule tests only)"
# A stand-in torch, so the role's runtime check (CUDA build, GPUs seen through nvidia-smi) runs for real.
"$REPO/.venv/bin/python" "$REPO/tests/sglang_double/build_wheel.py" "$CACHE/wheels" "$SRC/python/torch" \
  torch 2.14.1+standin "STAND-IN for torch (molecule tests only)"
echo "$stamp" >"$OUT/.stamp"
