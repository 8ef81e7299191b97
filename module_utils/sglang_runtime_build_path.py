"""The PATH a kernel source is built with: CUDA's bin/ first, then the runtime's, then the system's. The same for uv
(library/sglang_runtime.py state=install) and for pip (lib/sglang_state/runtime_install.py, which loads this file by
its path: module_utils/ is not a package on the controller's path), so it imports nothing."""

from __future__ import annotations

SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def kernel_build_path(cuda_home, runtime):
    """PATH for building a kernel source into the runtime folder with the CUDA toolkit in cuda_home."""
    return "%s/bin:%s/bin:%s" % (cuda_home, runtime, SYSTEM_PATH)
