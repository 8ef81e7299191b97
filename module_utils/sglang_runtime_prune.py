"""state=prune of library/sglang_runtime.py: remove every runtime (and the adopted legacy virtualenv) that neither keep,
the live unit, a unit in the backup store nor a running process names, and nothing at all when a unit cannot be read
whole. to_prune is the decision, over plain arguments; run_prune gathers what names what, then removes."""

from __future__ import annotations

import os
import shutil

from ansible.module_utils.sglang_runtime_markers import MARKER_SUFFIX, NAME_RE, marker_for_path, read_markers, under
from ansible.module_utils.sglang_runtime_processes import running_runtimes
from ansible.module_utils.sglang_runtime_units import runtime_folder, unit_runtimes


def to_prune(runtimes_dir, markers, legacy, named, existing_dirs, legacy_exists, started=(), corrupt=(),
             skipped=None):
    """The folders to remove: the runtimes under runtimes_dir that no unit, store entry or keep names, when this module
    made them (a manifest, or `started`: an interrupted build, holding the pyvenv.cfg its venv wrote first), and the
    legacy venv when it was adopted (a manifest names it) and holds nothing that is kept. Never a folder whose manifest
    is corrupt, nor one the module did not make: those go to skipped ([(folder, why)]). Returns
    [(marker name or None, folder)]."""
    named = {os.path.normpath(p) for p in named if p}
    skipped = [] if skipped is None else skipped
    out = []
    for entry in sorted(existing_dirs):
        folder = os.path.join(runtimes_dir, entry)
        # only runtimes' names: never the builder (.builder) nor uv's cache (.uv-cache), which every runtime of the host
        # and a build in progress use, and which only uv itself may trim
        if not NAME_RE.match(entry) or os.path.normpath(folder) in named:
            continue
        if entry in corrupt:
            skipped.append((folder, "its manifest %s%s is corrupt (%s): kept for a person"
                            % (entry, MARKER_SUFFIX, corrupt[entry])))
        elif entry in markers or entry in started:
            out.append((entry if entry in markers else None, folder))
        else:
            skipped.append((folder, "it has neither a manifest nor a virtualenv's pyvenv.cfg: not a runtime this "
                                    "module built, left alone"))
    if legacy and legacy_exists and os.path.normpath(legacy) not in named:
        holds = sorted(p for p in named | {os.path.normpath(runtimes_dir)} if under(p, legacy))
        marker = marker_for_path(markers, legacy)[0]
        if holds:
            skipped.append((legacy, "the legacy virtualenv (sglang_venv) holds %s: never removed" % ", ".join(holds)))
        elif marker is None:
            skipped.append((legacy, "the legacy virtualenv (sglang_venv) was never adopted (no manifest names it): "
                                    "not removed; remove it by hand once no unit runs it"))
        else:
            out.append((marker, legacy))
    # a manifest whose folder is gone (removed by hand) is removed too, so it is never taken for complete
    listed = {pair[1] for pair in out}
    for name, manifest in sorted(markers.items()):
        path = os.path.normpath(manifest["path"])
        if path not in named and path not in listed and not os.path.isdir(path):
            out.append((name, None))
    return out


def run_prune(module, p):
    """{changed, removed, kept, skipped} of state=prune (check mode removes nothing); a unit, live or a store entry's,
    that cannot be read whole prunes nothing, with a warning."""
    corrupt = {}
    markers = read_markers(p["dir"], corrupt)
    # every path compared after realpath, spelled as the folders listed below (runtime_folder)
    named = [runtime_folder(path, p["dir"], p["legacy"]) or os.path.normpath(path) for path in p["keep"] if path]
    named += sorted(running_runtimes(p["dir"], p["legacy"]))
    units = [p["unit"]] if p["unit"] else []
    if p["store"] and os.path.isdir(p["store"]) and p["unit"]:
        unit_file = os.path.basename(p["unit"])
        for entry in os.listdir(p["store"]):  # every entry, staging folders included: keeping more is safe
            folder = os.path.join(p["store"], entry)
            if os.path.isdir(folder) and not os.path.islink(folder):
                units.append(os.path.join(folder, unit_file))
    for unit_path in units:
        try:
            folders, problems = unit_runtimes(unit_path, p["dir"], p["legacy"])
        except OSError as err:
            folders, problems = set(), ["it cannot be read (%s)" % getattr(err, "strerror", err)]
        if problems:
            # a unit that cannot be read may name any runtime: "prune nothing", never "it names nothing"
            for problem in problems:
                module.warn("%s: %s: no runtime was pruned." % (unit_path, problem))
            return {"changed": False, "removed": [], "kept": sorted(set(named)),
                    "skipped": [{"path": unit_path, "why": "%s: nothing pruned" % "; ".join(problems)}]}
        named += sorted(folders)
    try:
        dirs = [e for e in os.listdir(p["dir"]) if os.path.isdir(os.path.join(p["dir"], e))
                and not os.path.islink(os.path.join(p["dir"], e))]
    except OSError:
        dirs = []
    legacy_exists = bool(p["legacy"]) and os.path.isdir(p["legacy"]) and not os.path.islink(p["legacy"]) \
        and os.path.isfile(os.path.join(p["legacy"], "bin", "python"))
    started = {d for d in dirs if os.path.isfile(os.path.join(p["dir"], d, "pyvenv.cfg"))
               or not os.listdir(os.path.join(p["dir"], d))}
    skipped = []
    plan = to_prune(p["dir"], markers, p["legacy"], named, dirs, legacy_exists, started, corrupt, skipped)
    for folder, why in skipped:
        module.warn("%s: %s." % (folder, why))
    removed = []
    for marker, folder in plan:
        if not module.check_mode:
            # the manifest first: a removal cut short leaves a folder without one, which is never used
            if marker:
                os.unlink(os.path.join(p["dir"], marker + MARKER_SUFFIX))
            if folder:
                shutil.rmtree(folder)
        removed.append(folder or os.path.join(p["dir"], marker + MARKER_SUFFIX))
    kept = sorted(set(named))
    return {"changed": bool(removed), "removed": removed, "kept": kept,
            "skipped": [{"path": folder, "why": why} for folder, why in skipped]}
