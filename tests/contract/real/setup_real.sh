#!/usr/bin/env bash
# Installs the real SGLang releases into their own venvs and builds the stub libcuda.
#   tests/contract/real/setup_real.sh [VERSION ...]   (default: 0.5.23 0.5.15)
# Cached: a venv with a .complete marker is reused; the uv cache is shared so the
# second release hard-links the files the first already downloaded.
# Python: this machine's python3 (3.11); both releases support 3.10+.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../../.." && pwd)"
BASE="${SGLANG_REAL_DIR:-$ROOT/.cache/sglang-real}"
PY="${SGLANG_REAL_PYTHON:-python3}"
VERSIONS=("$@")
[ ${#VERSIONS[@]} -eq 0 ] && VERSIONS=(0.5.23 0.5.15)
mkdir -p "$BASE"
export UV_CACHE_DIR="$BASE/uv-cache"
# hard links from the shared cache (same filesystem): the two venvs share their files
export UV_LINK_MODE=hardlink

UV="$BASE/tools/bin/uv"
if [ ! -x "$UV" ]; then
  "$PY" -m venv "$BASE/tools"
  "$BASE/tools/bin/pip" install -q uv
fi

for v in "${VERSIONS[@]}"; do
  venv="$BASE/$v"
  if [ -f "$venv/.complete" ]; then
    echo "sglang $v: cached ($venv)"
    continue
  fi
  rm -rf "$venv"
  start=$(date +%s)
  "$UV" venv -q -p "$PY" "$venv"
  VIRTUAL_ENV="$venv" "$UV" pip install -q -p "$venv/bin/python" "sglang==$v"
  # the marker is written only after a whole install: an interrupted one is redone
  echo "sglang==$v installed in $(( $(date +%s) - start )) s" > "$venv/.complete"
  cat "$venv/.complete"
done

# The stub driver: sgl_kernel's common_ops links libcuda.so.1 for one symbol; with no
# driver its import fails during argument resolution. Every entry point of the stub
# answers CUDA_ERROR_NO_DEVICE (100); nothing in the resolver calls it.
SGLANG_REAL_PYTHON="$PY" "$ROOT/tests/contract/real/build_stub.sh" "$BASE/stubcuda" "$BASE"

