"""The NVIDIA kernel module's own report, read the same way by nvidia_driver_state and nvidia_gpu_facts."""

from __future__ import annotations

import re

SYS_VERSION = "/sys/module/nvidia/version"
SYS_TAINT = "/sys/module/nvidia/taint"
PROC_VERSION = "/proc/driver/nvidia/version"


def parse_proc_version(text):
    """(version, flavour) from /proc/driver/nvidia/version; the open module says "Open Kernel Module for <arch>"."""
    match = re.search(r"NVRM version:.*?Kernel Module(?: for \S+)?\s+([0-9]+(?:\.[0-9]+)+)", text or "")
    if not match:
        return None, "none"
    return match.group(1), "open" if "Open Kernel Module" in text else "proprietary"


def read_text(path):
    """The file's text, or None when it cannot be read (no module loaded, not this platform)."""
    try:
        with open(path) as handle:
            return handle.read()
    except OSError:
        return None
