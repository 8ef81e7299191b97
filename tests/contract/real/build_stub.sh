#!/usr/bin/env bash
# Builds the stub libcuda.so.1 (stubcuda.py, compiled with gcc) into OUT, again when stubcuda.py is newer than it:
#   tests/contract/real/build_stub.sh OUT [BASE]
# BASE: a folder of installed releases whose driver imports the stub also answers (setup_real.sh); without one, the
# entry points sgl_kernel's import needs (stubcuda.py ALWAYS), as molecule/real_server's prepare builds it.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../../.." && pwd)"
OUT="$1"
BASE="${2:-/nonexistent}"
if [ ! -f "$OUT/libcuda.so.1" ] || [ "$OUT/stub.c" -ot "$ROOT/tests/contract/real/stubcuda.py" ]; then
  mkdir -p "$OUT"
  "${SGLANG_REAL_PYTHON:-python3}" "$ROOT/tests/contract/real/stubcuda.py" "$BASE" > "$OUT/stub.c"
  gcc -shared -fPIC -o "$OUT/libcuda.so.1" "$OUT/stub.c"
fi
