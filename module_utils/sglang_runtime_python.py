"""Asking a python, bounded (library/sglang_runtime.py): the host's interpreter (its real path and version enter a
runtime's digest) and a runtime's distribution versions (from its manifest when it records them, else from its own
python). Each command has COMMAND_TIMEOUT seconds: a hung interpreter or file system is named, not waited on."""

from __future__ import annotations

import json
import os
import subprocess

from ansible.module_utils.sglang_runtime_markers import marker_for_path
from ansible.module_utils.sglang_runtime_refusal import RuntimeError_

# A python that does not answer (a hung legacy venv, a broken NFS mount) must not hang the run: seconds allowed.
COMMAND_TIMEOUT = 120
# Prints {name: installed version or null} for the distributions named on its command line.
VERSIONS_SCRIPT = """import importlib.metadata as m, json, sys
def version(name):
    try:
        return m.version(name)
    except m.PackageNotFoundError:
        return None
print(json.dumps({name: version(name) for name in sys.argv[1:]}))"""


def read_versions(module, path, names, markers):
    """A complete runtime's versions from its manifest (no process), else from its own python; None when its
    python is gone (a manifest without its folder proves nothing)."""
    python = os.path.join(path, "bin", "python")
    if not os.path.isfile(python):
        return None
    manifest = marker_for_path(markers, path)[1]
    recorded = (manifest or {}).get("versions") or {}
    if names and all(n in recorded for n in names):
        return {n: recorded[n] for n in names}
    rc, out, err = run_bounded([python, "-c", VERSIONS_SCRIPT] + list(names))
    if rc != 0:
        raise RuntimeError_("%s cannot read its versions (rc %d): %s" % (python, rc, (err or out).strip()[-500:]))
    try:
        return json.loads(out)
    except ValueError:
        raise RuntimeError_("%s printed no versions: %s" % (python, out.strip()[-500:])) from None


def run_bounded(argv, timeout=None):
    """(rc, stdout, stderr) of a command given at most timeout seconds (COMMAND_TIMEOUT): one that hangs is named,
    not waited on."""
    timeout = timeout or COMMAND_TIMEOUT
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, errors="replace", timeout=timeout,
                              stdin=subprocess.DEVNULL, check=False)
    except subprocess.TimeoutExpired:
        raise RuntimeError_("%s did not answer within %d s (a hung interpreter or file system): check it by hand, "
                            "or move that folder away, and run again" % (argv[0], timeout)) from None
    return proc.returncode, proc.stdout, proc.stderr


def python_identity(module, python):
    """{path: the interpreter's real path, version: its version or None} of the host's python (a name looked up on
    PATH, or a path), or None when there is none."""
    binary = module.get_bin_path(python, required=False) if "/" not in python else python
    if not binary or not os.path.exists(binary):
        return None
    rc, out, err = run_bounded([binary, "-c", "import sys; print(sys.version.split()[0])"])
    return {"path": os.path.realpath(binary), "version": out.strip() if rc == 0 else None}
