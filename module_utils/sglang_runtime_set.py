"""A runtime's package set and its digest (library/sglang_runtime.py state=plan): SGLang's version and source (a
wheel by its sha256), the extras, the kernel wheels and sources and the host's python. The digest names the runtime's
folder, <version>-<digest12>; the versions the set asks for decide whether a legacy virtualenv holds it."""

from __future__ import annotations

import hashlib
import json
import os

from ansible.module_utils.sglang_files import sha256
from ansible.module_utils.sglang_runtime_markers import VERSION_RE
from ansible.module_utils.sglang_runtime_refusal import RuntimeError_


def sha256_file(path):
    """A wheel's sha256 on the host; refused when the wheel is not there."""
    sha = sha256(path)
    if sha is None:
        raise RuntimeError_("the wheel %s is not on the host (the install phase copies it there for a build)" % path)
    return sha


def host_wheel(src, wheels_dir):
    """Where a wheel is read on the host: a src without :// is a controller-side wheel that the install phase
    copies into wheels_dir; anything else (an index requirement, a URL, git+...) is taken as written."""
    if "://" in src or not wheels_dir:  # as the install phase decides what it copies
        return src
    return os.path.join(wheels_dir, os.path.basename(src))


def source_of(src, wheels_dir, hasher=sha256_file):
    """A wheel on the host by its content (a rebuilt wheel with the same name is another runtime); anything
    else by its text."""
    src = host_wheel(src, wheels_dir)
    if src.startswith("/"):
        return {"wheel": os.path.basename(src), "sha256": hasher(src)}
    return {"requirement": src}


def package_set(version, package, extras, kernel_wheels, kernel_sources, python, wheels_dir="",
                hasher=sha256_file):
    """What defines a runtime. A kernel source's ref enters as written: a branch name that moves is the same
    runtime, so pin a tag or commit for a reproducible one."""
    return {
        "python": python,
        "sglang": {"version": version, "extras": sorted(extras or []),
                   "source": source_of(package, wheels_dir, hasher) if package else {"index": True}},
        "kernel_wheels": [dict(source_of(str(w["src"]), wheels_dir, hasher), name=w.get("name"),
                               version=None if w.get("version") is None else str(w["version"]))
                          for w in kernel_wheels or []],
        "kernel_sources": [{"repo": s["repo"], "ref": str(s.get("ref", "HEAD")), "subdir": s.get("subdir", "."),
                            "name": s.get("name"),
                            "version": None if s.get("version") is None else str(s["version"])}
                           for s in kernel_sources or []],
    }


def digest_of(pset):
    """The package set's sha256 (its JSON, keys sorted, no spaces)."""
    return hashlib.sha256(json.dumps(pset, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def runtime_name(version, digest):
    """<version>-<digest12>, the runtime's folder name; a version that cannot be a folder's name is refused."""
    if not isinstance(version, str) or not VERSION_RE.match(version) or ".." in version:
        raise RuntimeError_("sglang_version is %r: a release such as 0.5.23 (digits, letters, . + - only; it names "
                            "the runtime's folder, so no /, .., space or control character)" % (version,))
    return "%s-%s" % (version, digest[:12])


def check_kernels(kernel_wheels, kernel_sources):
    """Each kernel wheel names its src and each kernel source its repo: a sentence, not a KeyError."""
    for index, wheel in enumerate(kernel_wheels or []):
        if not isinstance(wheel, dict) or not isinstance(wheel.get("src"), str) or not wheel["src"].strip():
            raise RuntimeError_("sglang_kernel_wheels[%d] has no src: give each wheel {src: <URL or controller-side "
                                ".whl>, name: ..., version: ...}" % index)
    for index, source in enumerate(kernel_sources or []):
        if not isinstance(source, dict) or not isinstance(source.get("repo"), str) or not source["repo"].strip():
            raise RuntimeError_("sglang_kernel_sources[%d] has no repo: give each source {repo: <git URL>, ref: ..., "
                                "name: ..., version: ...}" % index)


def expected_versions(pset):
    """{dist: version} a runtime of this set must report, or None when some part has no version to compare
    (a kernel wheel or source without one): then a legacy venv cannot be shown to hold this set."""
    wanted = {"sglang": pset["sglang"]["version"]}
    for item in pset["kernel_wheels"] + pset["kernel_sources"]:
        if not item.get("name") or item.get("version") is None:
            return None
        wanted[item["name"]] = item["version"]
    return wanted
