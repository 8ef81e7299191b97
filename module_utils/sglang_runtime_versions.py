"""state=versions of library/sglang_runtime.py: a runtime's distribution versions (given by its folder, or the one a
unit runs), refused with a sentence when the runtime or the launcher its unit names is gone from the host, before
anything restarts on it."""

from __future__ import annotations

import os

from ansible.module_utils.sglang_runtime_launcher import LAUNCHER
from ansible.module_utils.sglang_runtime_markers import read_markers
from ansible.module_utils.sglang_runtime_python import read_versions
from ansible.module_utils.sglang_runtime_refusal import RuntimeError_
from ansible.module_utils.sglang_runtime_units import unit_launcher, unit_runtime


def run_versions(module, p):
    """{changed, path, versions} of state=versions."""
    if not p["path"] and p["unit"]:
        p = dict(p, path=unit_runtime(p["unit"]))
        if not p["path"]:
            raise RuntimeError_("%s names no runtime (no ExecStart=\"<runtime>/bin/sglang-serve\" nor "
                                "\"<runtime>/bin/python\"), or is missing" % p["unit"])
    if not p["path"]:
        raise RuntimeError_("state=versions needs path (a runtime's folder) or unit")
    versions = read_versions(module, p["path"], p["names"], read_markers(p["dir"]))
    if versions is None:
        raise RuntimeError_(
            ("The store entry %s runs the runtime %%s" % p["entry"] if p["entry"] else "The runtime %s")
            % p["path"] + ", which is gone from this host (%s/bin/python is missing): it was removed by hand or by "
            "another tool, so this state cannot be put back offline. Pick another entry (-e "
            "sglang_rollback_list=true lists them), or run site.yml with that state's package set to build it "
            "again." % p["path"])
    launcher = os.path.join(p["path"], LAUNCHER)
    if p["unit"] and os.path.normpath(unit_launcher(p["unit"]) or "") == launcher and not os.path.isfile(launcher):
        # the unit would not start: say so before anything restarts on it (plan writes it back into a runtime)
        raise RuntimeError_(
            ("The store entry %s runs " % p["entry"] if p["entry"] else "%s runs " % p["unit"]) + "%s, which is "
            "missing (removed by hand?) although its runtime %s is here. Run site.yml with that state's package set "
            "to write it back, or pick another entry." % (launcher, p["path"]))
    return {"changed": False, "path": p["path"], "versions": versions}
