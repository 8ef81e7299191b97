"""The runtimes folder's names and manifests (library/sglang_runtime.py). A runtime is <dir>/<version>-<digest12>,
complete once its manifest <dir>/<name>.json is written; a folder without one is an interrupted build. What a name
looks like, which folders this module built, and a manifest read (a corrupt one kept apart, never taken for absent),
found by its folder, and written."""

from __future__ import annotations

import json
import os
import re

from ansible.module_utils.sglang_files import load_json, write_atomic

MARKER_SUFFIX = ".json"
NAME_RE = re.compile(r"^[0-9][0-9A-Za-z.+-]*-[0-9a-f]{12}$")
# A release as a runtime's folder name holds it: PEP 440's characters, no / . . or space (a version is a path part).
VERSION_RE = re.compile(r"^[0-9][0-9A-Za-z.+!-]{0,63}$")


def under(path, folder):
    """Whether path is folder or inside it (by their normalized text; both absolute)."""
    path, folder = os.path.normpath(path), os.path.normpath(folder)
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def built_here(runtime, runtimes_dir):
    """Whether a runtime is one this module built (a folder directly in the runtimes folder). An adopted legacy
    venv is not: it is never modified, so it gets no launcher and its unit keeps the one-line form."""
    return os.path.dirname(os.path.normpath(runtime)) == os.path.normpath(runtimes_dir)


def manifest_problem(runtimes_dir, name, manifest):
    """Why a parsed manifest cannot describe the complete runtime `name` (a phrase), or None."""
    if not isinstance(manifest, dict):
        return "it holds %s, not an object" % type(manifest).__name__
    path = manifest.get("path")
    if not isinstance(path, str) or not os.path.isabs(path):
        return "its path is %r, not an absolute folder" % (path,)
    own = os.path.join(runtimes_dir, name)
    # the same folder however spelled: the runtimes folder may be reached through a link (or was, when it was built)
    inside = os.path.normpath(path) == os.path.normpath(own) or (
        not os.path.islink(own) and os.path.realpath(path) == os.path.realpath(own))
    if not inside and not (manifest.get("adopted") is True and not under(path, runtimes_dir)):
        return "its path %s is neither %s nor an adopted virtualenv" % (path, os.path.join(runtimes_dir, name))
    if os.path.islink(path.rstrip("/")):
        return "its folder %s is a symbolic link, not a runtime this module built" % path
    versions = manifest.get("versions", {})
    if not isinstance(versions, dict) or not all(isinstance(v, str) or v is None for v in versions.values()):
        return "its versions are not {distribution: version}"
    return None


def read_markers(runtimes_dir, corrupt=None):
    """{name: manifest} of the complete runtimes. A manifest that is not a small regular file of valid JSON naming its
    own folder is not a runtime's: it goes to corrupt ({name: problem}, when given), never taken for absent (its
    folder is kept and named, not removed as an interrupted build)."""
    found = {}
    try:
        names = os.listdir(runtimes_dir)
    except OSError:
        return found
    for entry in names:
        if not entry.endswith(MARKER_SUFFIX) or not NAME_RE.match(entry[:-len(MARKER_SUFFIX)]):
            continue
        name = entry[:-len(MARKER_SUFFIX)]
        try:
            manifest = load_json(os.path.join(runtimes_dir, entry))
            problem = manifest_problem(runtimes_dir, name, manifest)
        except OSError as error:
            problem = "it cannot be read (%s)" % (error.strerror or error)
        except ValueError as error:
            problem = "it is not JSON (%s)" % str(error)[:200]
        if problem is None:
            found[name] = manifest
        elif corrupt is not None:
            corrupt[name] = problem
    return found


def marker_for_path(markers, path):
    """(name, manifest) of the complete runtime whose manifest names the folder path, or (None, None)."""
    for name, manifest in markers.items():
        if os.path.normpath(manifest["path"]) == os.path.normpath(path):
            return name, manifest
    return None, None


def write_marker(runtimes_dir, name, manifest):
    """Write the runtime's manifest <dir>/<name>.json atomically (0644): the runtime is complete from then on."""
    write_atomic(os.path.join(runtimes_dir, name + MARKER_SUFFIX), json.dumps(manifest, indent=1, sort_keys=True),
                 0o644)
