#!/usr/bin/env bash
# Build what molecule serves in place of NVIDIA and SGLang (nothing of theirs is reachable here):
#   CACHE/apt-repo/  a signed apt repository of stand-in packages with NVIDIA's real names and versions
#                    (built with dpkg-deb), plus a stand-in linux-headers for this machine's kernel;
#   CACHE/apt-repo/standin-archive-key.asc  the key that signs it (the role's repo key URL points here);
#   CACHE/wheels/sglang-*.whl  the SGLang double (tests/sglang_double) as a wheel named sglang, and
#   CACHE/wheels/ddtree_kernels-*.whl  a stand-in custom-kernel wheel.
# Rebuilt only when molecule/standins/ or this script change.
set -euo pipefail
CACHE="$1"
HERE="$(cd "$(dirname "$0")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
SRC="$REPO/molecule/standins"
OUT="$CACHE/apt-repo"
DRIVER_VERSIONS="580.82.07 580.95.05"   # two releases of the 580 branch: pins must pick the asked one
CUDA_VERSIONS="12.9.1"
KERNEL="$(uname -r)"
stamp=$( (cat "$0"; find "$SRC" "$REPO/tests/sglang_double" "$REPO/lib/sglang_kvplan/releases" -type f \
  -not -name '*.pyc' | sort | xargs cat) \
  | sha256sum | cut -c1-16)-$KERNEL
[ -f "$OUT/.stamp" ] && [ "$(cat "$OUT/.stamp")" = "$stamp" ] && exit 0
echo "[harness] building stand-in NVIDIA apt repository and SGLang double wheel"
rm -rf "$OUT" "$CACHE/build" && mkdir -p "$OUT/pool" "$CACHE/build" "$CACHE/wheels"
BUILD="$CACHE/build"

package() {  # name version description [src:destdir ...] [--postinst file]; built with dpkg-deb
  local name="$1" version="$2" description="$3"; shift 3
  local root="$BUILD/$name-$version"
  mkdir -p "$root/DEBIAN"
  while [ $# -gt 0 ]; do
    if [ "$1" = "--postinst" ]; then install -m 0755 "$2" "$root/DEBIAN/postinst"; shift 2; continue; fi
    mkdir -p "$root${1#*:}"; cp -p "${1%%:*}" "$root${1#*:}"; shift
  done
  printf 'Package: %s\nVersion: %s\nArchitecture: amd64\nSection: misc\nPriority: optional\n' "$name" "$version" \
    >"$root/DEBIAN/control"
  printf 'Maintainer: sglang-longctx molecule stand-in <noreply@example.invalid>\n' >>"$root/DEBIAN/control"
  printf 'Description: STAND-IN for %s (molecule tests only)\n %s\n' "$name" "$description" >>"$root/DEBIAN/control"
  dpkg-deb --root-owner-group --build "$root" "$OUT/pool/${name}_${version}_amd64.deb" >/dev/null
}

for ver in $DRIVER_VERSIONS; do
  deb="$ver-1"
  sed "s/@DRIVER_VERSION@/$ver/" "$SRC/nvidia-smi" >"$BUILD/nvidia-smi"; chmod +x "$BUILD/nvidia-smi"
  for flavour in open proprietary; do
    license="Dual MIT/GPL"; [ $flavour = proprietary ] && license="NVIDIA"
    printf 'static const char m[] __attribute__((section(".modinfo"), used, aligned(1))) =\n"license=%s\\0version=%s\\0description=NVIDIA kernel module stand-in";\n' \
      "$license" "$ver" >"$BUILD/nvidia.c"
    gcc -c "$BUILD/nvidia.c" -o "$BUILD/nvidia.ko"
    name=nvidia-kernel-open-dkms; [ $flavour = proprietary ] && name=nvidia-kernel-dkms
    package "$name" "$deb" "Installs a module file carrying only modinfo ($license)." \
      "$BUILD/nvidia.ko:/usr/lib/nvidia-standin/" --postinst "$SRC/dkms-postinst"
  done
  package nvidia-driver-cuda "$deb" "A fixture-driven nvidia-smi." "$BUILD/nvidia-smi:/usr/bin/"
  cp "$SRC/daemon" "$BUILD/nvidia-persistenced"; cp "$SRC/daemon" "$BUILD/nv-fabricmanager"
  package nvidia-persistenced "$deb" "A daemon that does nothing, and its unit." \
    "$BUILD/nvidia-persistenced:/usr/bin/" "$SRC/nvidia-persistenced.service:/lib/systemd/system/"
  package nvidia-fabricmanager "$deb" "A daemon that does nothing, and its unit." \
    "$BUILD/nv-fabricmanager:/usr/bin/" "$SRC/nvidia-fabricmanager.service:/lib/systemd/system/"
  package cuda-drivers "$deb" "Metapackage stand-in."
  package nvidia-open "$deb" "Metapackage stand-in."
done
for ver in $CUDA_VERSIONS; do
  short="${ver%.*}"
  sed "s/@CUDA_SHORT@/$short/g; s/@CUDA_FULL@/$ver/g" "$SRC/nvcc" >"$BUILD/nvcc"; chmod +x "$BUILD/nvcc"
  package "cuda-toolkit-${short//./-}" "$ver-1" "An nvcc that answers --version." "$BUILD/nvcc:/usr/local/cuda-$short/bin/"
done
package "linux-headers-$KERNEL" "1.0-standin" "Headers for this machine's kernel, which Debian does not carry."

# Sign the repository with a throwaway key, as NVIDIA signs theirs (the role checks signed-by).
export GNUPGHOME="$BUILD/gnupg"; mkdir -p "$GNUPGHOME"; chmod 700 "$GNUPGHOME"
gpg --batch --quiet --pinentry-mode loopback --passphrase '' \
  --quick-gen-key "sglang-longctx stand-in archive <noreply@example.invalid>" rsa3072 sign never
gpg --batch --armor --export >"$OUT/standin-archive-key.asc"
(cd "$OUT" && dpkg-scanpackages --multiversion pool /dev/null >Packages 2>/dev/null && gzip -kf Packages \
  && apt-ftparchive -o APT::FTPArchive::Release::Origin="sglang-longctx stand-in" release . >Release \
  && gpg --batch --yes --clearsign -o InRelease Release && gpg --batch --yes -abs -o Release.gpg Release)

# The SGLang double as a wheel named sglang (a zip with metadata; no build backend needed offline).
rm -f "$CACHE"/wheels/*.whl
"$REPO/.venv/bin/python" "$REPO/tests/sglang_double/build_wheel.py" "$CACHE/wheels"
# A stand-in custom-kernel wheel, so the role's kernel install and version check run for real.
"$REPO/.venv/bin/python" "$REPO/tests/sglang_double/build_wheel.py" "$CACHE/wheels" "$SRC/kernels/ddtree_kernels" \
  ddtree-kernels 0.3.1 "STAND-IN for a custom kernel package (molecule tests only)"
# A stand-in torch, so the role's runtime check (CUDA build, GPUs seen through nvidia-smi) runs for real.
"$REPO/.venv/bin/python" "$REPO/tests/sglang_double/build_wheel.py" "$CACHE/wheels" "$SRC/python/torch" \
  torch 2.14.1+standin "STAND-IN for torch (molecule tests only)"
echo "$stamp" >"$OUT/.stamp"
