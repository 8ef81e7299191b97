"""state=plan of library/sglang_runtime.py: the package set's runtime is complete (use), is the legacy virtualenv with
the same versions (adopt), or is to be built (an interrupted build of it removed, the free disk checked); with the
runtime the live unit serves from. With prune_when_found, a runtime found complete prunes the others in the same
call."""

from __future__ import annotations

import math
import os
import re
import shutil

from ansible.module_utils.sglang_runtime_launcher import LAUNCHER, ensure_launcher
from ansible.module_utils.sglang_runtime_markers import MARKER_SUFFIX, built_here, marker_for_path, read_markers
from ansible.module_utils.sglang_runtime_prune import run_prune
from ansible.module_utils.sglang_runtime_python import python_identity, read_versions
from ansible.module_utils.sglang_runtime_refusal import RuntimeError_
from ansible.module_utils.sglang_runtime_set import (
    check_kernels,
    digest_of,
    expected_versions,
    package_set,
    runtime_name,
    sha256_file,
)
from ansible.module_utils.sglang_runtime_units import unit_runtime, unit_runtimes


def free_gib(path):
    """(the existing folder at or above path, the free GiB of its file system)."""
    existing = path
    while not os.path.exists(existing):
        existing = os.path.dirname(existing) or "/"
    stat = os.statvfs(existing)
    return existing, stat.f_bavail * stat.f_frsize / 1024 ** 3


def decide(markers, name, runtimes_dir, legacy, legacy_versions, wanted_versions):
    """(action, path): use a complete runtime of this set, adopt the legacy venv (legacy_versions: read only for
    one never adopted before; adopted when it reports exactly the versions this set asks for), or build."""
    if name in markers and os.path.isfile(os.path.join(markers[name]["path"], "bin", "python")):
        return "use", markers[name]["path"]
    if legacy_versions is not None and legacy_versions == wanted_versions:
        return "adopt", legacy
    return "build", os.path.join(runtimes_dir, name)


def run_plan(module, p):
    """{action, path, name, digest, set, versions, serving, free_gib, removed, launcher, ...} of state=plan (see the
    module's RETURN); refused with a sentence before anything is read or removed when an argument is bad."""
    if not math.isfinite(p["min_free_gib"]) or p["min_free_gib"] < 0:
        raise RuntimeError_("sglang_runtime_min_free_gib is %s: give the free GiB a build needs, 0 or more "
                            "(e.g. 20)" % p["min_free_gib"])
    if not p["version"]:
        raise RuntimeError_("sglang_version is empty: name the SGLang release the runtime holds")
    runtime_name(p["version"], "0" * 12)  # refused before anything is read or removed
    for what, item in [("sglang_package", p["package"])] + [("sglang_extras", e) for e in p["extras"]]:
        if item and (item.startswith("-") or any(c.isspace() for c in item)):
            raise RuntimeError_("%s holds %r: pip would read it as an option (an --index-url, a -r file), not a "
                                "requirement. Give a version pin, a URL or a wheel; set pip's index in pip.conf."
                                % (what, item))
    check_kernels(p["kernel_wheels"], p["kernel_sources"])
    python = python_identity(module, p["python"])
    if python is None:
        raise RuntimeError_("%s is not on the host's PATH: a runtime is made with `python3 -m venv`" % p["python"])

    given = p["wheel_sha256"] or {}
    for wheel, digest in given.items():
        if not isinstance(digest, str) or not re.fullmatch(r"[0-9a-f]{64}", digest):
            raise RuntimeError_("wheel_sha256 gives %r for %s: a sha256 as 64 lowercase hex digits" % (digest, wheel))

    def hasher(path):
        # a controller-side wheel by the digest the controller read (copied only for a build); in check mode one
        # not given and not copied yet is named without its content
        if os.path.basename(path) in given:
            return given[os.path.basename(path)]
        if module.check_mode and not os.path.isfile(path):
            return "not copied yet (check mode)"
        return sha256_file(path)

    pset = package_set(p["version"], p["package"], p["extras"], p["kernel_wheels"], p["kernel_sources"], python,
                       p["wheels_dir"], hasher)
    digest = digest_of(pset)
    name = runtime_name(p["version"], digest)
    corrupt = {}
    markers = read_markers(p["dir"], corrupt)
    if name in corrupt:
        raise RuntimeError_(
            "The manifest %s of the runtime %s is corrupt (%s). The runtime may be complete, so it is neither used nor "
            "removed: look at it, then either remove both %s and that manifest (the next run builds it again) or put "
            "the manifest back." % (os.path.join(p["dir"], name + MARKER_SUFFIX), name, corrupt[name],
                                    os.path.join(p["dir"], name)))
    serving_path = unit_runtime(p["unit"]) if p["unit"] else None
    legacy = p["legacy"] if p["legacy"] and os.path.isfile(os.path.join(p["legacy"], "bin", "python")) else None
    wanted = expected_versions(pset)
    legacy_versions = None
    if name not in markers and legacy and wanted is not None and marker_for_path(markers, legacy)[0] is None:
        legacy_versions = read_versions(module, legacy, sorted(wanted), markers)
    action, path = decide(markers, name, p["dir"], legacy, legacy_versions, wanted)
    result = {"changed": False, "action": action, "path": path, "name": name, "digest": digest, "set": pset,
              "removed": [], "versions": {}}
    where, free = free_gib(p["dir"])
    result["free_gib"] = round(free, 2)
    if action == "build":
        folder = os.path.join(p["dir"], name)
        if os.path.lexists(folder):
            try:
                live, problems = unit_runtimes(p["unit"], p["dir"], p["legacy"]) if p["unit"] else (set(), [])
            except OSError as error:
                live, problems = set(), ["it cannot be read (%s)" % (error.strerror or error)]
            if os.path.normpath(folder) in live or problems:
                raise RuntimeError_(
                    "%s has no manifest %s%s, yet the live unit %s %s: it may have been built by hand or its "
                    "manifest deleted. It is not removed; move it away (or stop the unit) and re-run."
                    % (folder, name, MARKER_SUFFIX, p["unit"],
                       "may run it (%s)" % "; ".join(problems) if problems else "runs it"))
            result["removed"].append(folder)
            result["changed"] = True
            if not module.check_mode:  # an interrupted build: never pointed at, built again from nothing
                shutil.rmtree(folder) if os.path.isdir(folder) and not os.path.islink(folder) else os.unlink(folder)
            where, free = free_gib(p["dir"])
            result["free_gib"] = round(free, 2)
        if free < p["min_free_gib"]:
            raise RuntimeError_(
                "Building the runtime %s needs %.1f GiB free (sglang_runtime_min_free_gib), but %s has %.1f GiB: "
                "free space there, or prune old runtimes by lowering sglang_backup_keep (a runtime is kept while a "
                "store entry names it), or lower sglang_runtime_min_free_gib."
                % (folder, p["min_free_gib"], where, free))
    else:
        names = sorted(set(p["names"]) | set(wanted or {}))
        result["versions"] = (legacy_versions if action == "adopt"
                              else read_versions(module, path, names, markers)) or {}
    if action == "use":  # the builder that built it, as its manifest records (none before builders were recorded)
        result["builder"] = markers[name].get("builder")
    owned = built_here(path, p["dir"])
    if action == "use" and owned:
        # a runtime completed before the launcher existed gets it here (complete writes it into new ones): the
        # unit the deploy renders names it
        result["changed"] = ensure_launcher(path, module.check_mode) or result["changed"]
    result["launcher"] = os.path.join(path, LAUNCHER) if owned else None
    result["serving"] = {"path": serving_path,
                         "versions": (read_versions(module, serving_path, p["names"], markers) or {})
                         if serving_path else {}}
    if action == "use" and p["prune_when_found"]:
        result["pruned"] = run_prune(module, dict(p, keep=list(p["keep"]) + [path]))
        result["changed"] = result["changed"] or result["pruned"]["changed"]
    return result
