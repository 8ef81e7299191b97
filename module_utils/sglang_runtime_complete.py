"""state=complete of library/sglang_runtime.py: a built runtime marked complete, its launcher first, then its
manifest (with the versions the role read), each written atomically; nothing is marked when its python is missing."""

from __future__ import annotations

import os

from ansible.module_utils.sglang_runtime_launcher import LAUNCHER, ensure_launcher
from ansible.module_utils.sglang_runtime_markers import NAME_RE, built_here, read_markers, write_marker
from ansible.module_utils.sglang_runtime_refusal import RuntimeError_


def run_complete(module, p):
    """{changed, path, launcher} of state=complete: unchanged when the manifest already says the same."""
    for key in ("path", "name", "digest", "set"):
        if not p[key]:
            raise RuntimeError_("state=complete needs %s (from state=plan)" % key)
    if not NAME_RE.match(p["name"]):
        raise RuntimeError_("state=complete's name %r is not a runtime's name (<version>-<12 hex digits>, from "
                            "state=plan)" % (p["name"],))
    if not os.path.isfile(os.path.join(p["path"], "bin", "python")):
        raise RuntimeError_("%s/bin/python is missing: the build did not finish; nothing is marked complete"
                            % p["path"])
    # the launcher before the manifest: a runtime marked complete has the launcher its unit will name (not an
    # adopted legacy venv, which is never modified)
    owned = built_here(p["path"], p["dir"])
    wrote = ensure_launcher(p["path"], module.check_mode) if owned else False
    launcher = os.path.join(p["path"], LAUNCHER) if owned else None
    markers = read_markers(p["dir"])
    manifest = {"format": 1, "name": p["name"], "path": p["path"], "digest": p["digest"], "set": p["set"],
                "versions": p["versions"] or {}, "adopted": os.path.dirname(os.path.normpath(p["path"]))
                != os.path.normpath(p["dir"])}
    if p["builder"]:  # which builder built it (uv, or pip and why): read back by plan, outside the digest
        manifest["builder"] = p["builder"]
    old = markers.get(p["name"])
    if old and {k: old.get(k) for k in manifest} == manifest:
        return {"changed": wrote, "path": p["path"], "launcher": launcher}
    if not module.check_mode:
        os.makedirs(p["dir"], mode=0o755, exist_ok=True)
        write_marker(p["dir"], p["name"], manifest)
    return {"changed": True, "path": p["path"], "launcher": launcher}
