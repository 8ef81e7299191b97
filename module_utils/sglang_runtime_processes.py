"""The runtimes that running processes run from (library/sglang_runtime.py state=prune): a scan of every process's
command line under /proc, so that a runtime in use is never removed, whatever the units say."""

from __future__ import annotations

import os

from ansible.module_utils.sglang_runtime_units import runtime_folder
from ansible.module_utils.sglang_unit_exec import path_pieces


def running_runtimes(runtimes_dir, legacy=None, proc="/proc"):
    """The runtimes any running process runs from: a word of its command line (the interpreter, the launcher, an
    option's value) in a runtime's folder or the legacy virtualenv, compared after realpath. Whatever the unit says,
    a runtime in use is never removed."""
    found = set()
    try:
        pids = [pid for pid in os.listdir(proc) if pid.isdigit()]
    except OSError:
        return found
    for pid in pids:
        try:
            with open(os.path.join(proc, pid, "cmdline"), "rb") as handle:
                words = handle.read(1 << 20).decode("utf-8", "replace").split("\0")
        except OSError:
            continue
        for word in words:
            for piece in set(path_pieces(word)):
                found.add(runtime_folder(piece, runtimes_dir, legacy))
    return found - {None}
