"""STAND-IN for torch (molecule only): what roles/sglang's runtime check asks of torch, answered from the
stand-in nvidia-smi (its fixture lists the simulated GPUs), so the check runs unchanged in a container.
The version and CUDA build are those SGLang 0.5.23 pins (torch 2.14.1, CUDA 13)."""

import subprocess

__version__ = "2.14.1+standin"


class version:  # torch.version is a module in torch; an attribute holder is enough here
    cuda = "13.0"


class cuda:
    @staticmethod
    def is_available():
        return cuda.device_count() > 0

    @staticmethod
    def device_count():
        try:
            out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, check=True).stdout
        except (OSError, subprocess.CalledProcessError):
            return 0
        return sum(1 for line in out.splitlines() if line.startswith("GPU "))
