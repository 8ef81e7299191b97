#!/usr/bin/python
"""Ansible module: SGLang runtimes, one folder per package set (plan a build, mark one complete, read one's
versions, prune the ones nothing names, and run uv for a build). The decisions are plain functions, unit-tested in
tests/unit/test_sglang_runtime*.py and tests/unit/test_runtime_prune_*.py; the runtime install
(lib/sglang_state/runtime_install.py) runs the build's steps and the checks between them.
A manifest-less folder is taken for an interrupted build and removed: true only because the role calls this module
under the host's run lock (library/sglang_run_lock.py), so no other run's build is in progress beside it."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: sglang_runtime
short_description: Plan, complete, read and prune SGLang runtimes (one virtualenv per package set)
description:
  - A runtime is a virtualenv in its own folder, C(<dir>/<version>-<digest12>), where the digest is the
    sha256 of its package set (SGLang's version and source, a wheel's sha256, the extras, the kernel wheels
    and sources, the host's python). A runtime's packages are never modified once complete.
  - Completion is a manifest file written beside the folder, C(<dir>/<name>.json), only after the role's
    version and import checks passed. A folder without its manifest is an interrupted build; C(state=plan)
    removes it so that it is built again, and nothing ever points a unit at it. (A virtualenv is not
    relocatable, its C(bin/) scripts and C(pyvenv.cfg) name its path, and a kernel built from source may
    too, so it is built where it will stay instead of under a temporary name.)
  - C(state=plan) decides, without pip and without starting python when the runtime is complete, whether the
    wanted runtime is complete (C(use)), is the host's legacy virtualenv with the same versions (C(adopt) -
    a host deployed before runtimes keeps its venv as its first runtime, nothing reinstalled), or must be
    built (C(build)), after checking the free disk. It also reads which runtime the live unit runs.
  - C(state=complete) writes the runtime's launcher, then the manifest (with the versions the role read),
    each atomically.
  - The launcher, C(<runtime>/bin/sglang-serve) (root, 0755), is the program the unit's ExecStart runs, that
    is C(python -m sglang.launch_server) with the API key rewritten out of SGLang's server_args log line. It is
    not part of the package set (nor of the digest or the manifest); C(state=plan) writes it into a complete
    runtime that lacks it (one built before the launcher existed), reported as changed.
  - C(state=versions) returns a runtime's distribution versions (from its manifest, else from its python);
    it fails with a clear message when the runtime is gone.
  - C(state=prune) removes every runtime (and the legacy virtualenv) that neither C(keep), the live unit,
    any unit in the backup store, nor any running process names. A unit names every runtime that any word of any
    of its C(Exec*) lines could start (module_utils/sglang_unit_exec.py), read as systemd reads it; its drop-ins
    in C(<unit>.d/), and for a unit in systemd's folders theirs too (C(systemctl edit --runtime) writes to
    C(/run/systemd/system)); an empty C(ExecStart=) resetting; the prefixes C(@) C(-) C(:) C(+) C(!) C(!!) C(|),
    quotes, continued lines. A word counts wherever it stands (after C(env A=1), C(numactl), C(nice), inside a
    C(sh -c) string, an option's C(=) value, a C(PATH)), with C($VAR) and C(${VAR}) from its C(Environment=) and
    C(EnvironmentFile=); its C(WorkingDirectory=) and its variables' values count too. A process names a runtime
    when a word of its command line is inside it. Every path is compared after C(realpath), folder by folder (a
    link to the runtimes folder, C(runtimes/current)). Nothing at all is pruned, with a warning, when a unit exists
    but cannot be read whole, when its commands use a variable while an C(EnvironmentFile=) cannot be read, or when
    a shell string in them makes its words by running a command (C($(...))).
  - C(state=plan) with O(prune_when_found) prunes too when it finds the runtime complete (C(use)), keeping it, in the
    same call (a re-run with nothing to build needs no second one).
  - C(state=builder) makes sure the runtimes' builder holds uv O(uv_version) (C(<dir>/.builder), installed with pip
    from the host's package index, marked complete last), with its package cache C(<dir>/.uv-cache) shared by every
    runtime of the host (hard links). When uv cannot be installed it says why (RV(builder) C(pip), RV(why)) and the
    caller builds with pip. Neither folder is a runtime's name, so C(state=prune) never removes them.
  - C(state=install) runs uv for a build, C(uv venv) when the runtime has no virtualenv yet, then one
    C(uv pip install) per entry of O(steps), with the host's pip configuration translated for uv
    (module_utils/sglang_uv.py).
version_added: "1.0.0"
author: sglang-longctx maintainers (!UNKNOWN)
options:
  state:
    description: What to do.
    type: str
    choices: [plan, complete, versions, prune, builder, install]
    default: plan
  dir:
    description: The runtimes' folder (sglang_runtimes_dir).
    type: path
    required: true
  legacy:
    description: The single virtualenv of deployments before runtimes (sglang_venv), adopted or pruned.
    type: path
  unit:
    description: >-
      The live systemd unit: the runtime its ExecStart runs is the one serving now (RV(serving)); prune keeps every
      runtime any of its Exec lines could start.
    type: path
  store:
    description: The backup store; every C(<store>/<entry>/<unit's file name>) names a runtime to keep.
    type: path
  version:
    description: SGLang's version (sglang_version).
    type: str
  package:
    description: >-
      Where SGLang comes from (sglang_package): empty (the index), a URL or requirement, or a controller-side
      wheel, read on the host in wheels_dir (its sha256 enters the digest).
    type: str
    default: ""
  wheels_dir:
    description: >-
      Where the runtime install (sglang_runtime_install) copies controller-side wheels for a build (a src or
      package without ://).
    type: path
  wheel_sha256:
    description: >-
      A controller-side wheel's sha256 by its file name, as the controller read it: the digest uses it instead of
      the copy in wheels_dir, so a complete runtime is found without copying the wheel.
    type: dict
    default: {}
  extras:
    description: SGLang's extras.
    type: list
    elements: str
    default: []
  kernel_wheels:
    description: Kernel wheels, each {src, name, version}; src is a URL or a controller-side wheel (see wheels_dir).
    type: list
    elements: dict
    default: []
  kernel_sources:
    description: Kernel sources built from git, each {repo, ref, subdir, name, version}.
    type: list
    elements: dict
    default: []
  python:
    description: The interpreter the virtualenv is made with (its real path and version enter the digest).
    type: str
    default: python3
  min_free_gib:
    description: The free disk (GiB) a build needs on the runtimes' file system (sglang_runtime_min_free_gib).
    type: float
    default: 20
  path:
    description: For C(complete) and C(versions), the runtime's folder (C(versions) without it reads C(unit)'s).
    type: path
  name:
    description: For C(complete), the runtime's name (C(plan)'s name); C(digest) and C(set) go with it.
    type: str
  digest:
    description: For C(complete), C(plan)'s digest.
    type: str
  set:
    description: For C(complete), C(plan)'s package set.
    type: dict
  versions:
    description: For C(complete), the versions the role read from the runtime.
    type: dict
  names:
    description: For C(versions) and C(plan), the distributions whose versions are read.
    type: list
    elements: str
    default: [sglang]
  entry:
    description: For C(versions), the store entry whose runtime is read (named in the refusal when it is gone).
    type: str
  keep:
    description: For C(prune), runtimes to keep besides those the units name.
    type: list
    elements: path
    default: []
  uv_version:
    description: For C(builder), the uv release the builder holds (sglang_uv_version); empty builds with pip.
    type: str
    default: ""
  steps:
    description: For C(install), the requirements of each C(uv pip install), in order (a wheel, a pin, a folder).
    type: list
    elements: list
    default: []
  chdir:
    description: For C(install), the folder uv runs in (a kernel source's checkout).
    type: path
  no_build_isolation:
    description: For C(install), build sources with the runtime's own packages (torch), as pip's --no-build-isolation.
    type: bool
    default: false
  cuda_home:
    description: For C(install), the CUDA toolkit a kernel source is built with (CUDA_HOME, its bin/ on PATH).
    type: path
  builder:
    description: For C(complete), which builder built the runtime (recorded in the manifest, outside the digest).
    type: str
  prune_when_found:
    description: For C(plan), when the runtime is found complete (C(use)), prune as C(state=prune) with C(keep) its
      folder (RV(pruned) says what it did); after an adoption or a build the caller prunes once it is complete.
    type: bool
    default: false
notes:
  - Supports check mode (nothing is written or removed).
"""

EXAMPLES = r"""
- name: Plan the runtime of this package set
  sglang_runtime:
    dir: /opt/sglang/runtimes
    legacy: /opt/sglang/venv
    unit: /etc/systemd/system/sglang.service
    version: "0.5.23"
    kernel_wheels: [{src: /opt/sglang/wheels/ddtree_kernels-0.3.1-py3-none-any.whl, name: ddtree-kernels,
                     version: 0.3.1}]
    names: [sglang, ddtree-kernels]
    min_free_gib: 20
  register: runtime

- name: Prune what nothing names
  sglang_runtime:
    state: prune
    dir: /opt/sglang/runtimes
    legacy: /opt/sglang/venv
    unit: /etc/systemd/system/sglang.service
    store: /var/backups/sglang
    keep: ["{{ runtime.path }}"]
"""

RETURN = r"""
action:
  description: "C(plan): use (complete), adopt (the legacy virtualenv, same versions) or build."
  type: str
  returned: state=plan
  sample: use
launcher:
  description: The runtime's launcher, C(<path>/bin/sglang-serve) (written by plan for a complete runtime, by complete).
  type: str
  returned: state=plan, complete
  sample: /opt/sglang/runtimes/0.5.23-3f2a9c01d4be/bin/sglang-serve
path:
  description: The runtime's folder (the legacy virtualenv's when adopted).
  type: str
  returned: state=plan, complete, versions
  sample: /opt/sglang/runtimes/0.5.23-3f2a9c01d4be
name:
  description: The runtime's name, C(<version>-<digest12>).
  type: str
  returned: state=plan
digest:
  description: The package set's sha256.
  type: str
  returned: state=plan
set:
  description: The package set the digest is over.
  type: dict
  returned: state=plan
versions:
  description: "{distribution: version or null}: the wanted runtime's (plan: complete or adopted) or the named one's."
  type: dict
  returned: state=plan, versions
serving:
  description: The runtime the live unit runs, {path, versions}; path null without a unit.
  type: dict
  returned: state=plan
free_gib:
  description: Free GiB on the runtimes' file system.
  type: float
  returned: state=plan
removed:
  description: Folders removed (an interrupted build by plan; unnamed runtimes by prune).
  type: list
  elements: str
  returned: state=plan, prune
kept:
  description: The runtimes prune kept (named by keep, the live unit or a store entry).
  type: list
  elements: str
  returned: state=prune
builder:
  description: >-
    C(builder) - C(uv) or C(pip) (uv could not be installed, RV(why) says why); C(plan) - the builder a complete
    runtime's manifest records.
  type: str
  returned: state=builder, plan
why:
  description: C(builder) - why the build falls back to pip.
  type: str
  returned: state=builder, when builder is pip
index:
  description: C(builder) - what uv was given of the host's pip configuration (passwords replaced).
  type: str
  returned: state=builder, when builder is uv
not_carried:
  description: C(builder) - pip settings uv has no equivalent for (also warned).
  type: list
  elements: str
  returned: state=builder, when builder is uv
pruned:
  description: The prune's result (C(removed), C(kept), C(skipped)) when O(prune_when_found) pruned.
  type: dict
  returned: with state=plan and prune_when_found, when the runtime was found complete
skipped:
  description: >-
    Folders prune left alone although nothing names them, each C(path) and C(why): one whose manifest is corrupt,
    one this module did not build (no manifest, no pyvenv.cfg), a legacy virtualenv never adopted or holding a kept
    folder (the runtimes' folder, the live runtime).
  type: list
  elements: dict
  returned: state=prune
"""

import hashlib
import json
import math
import os
import re
import shutil
import subprocess

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.sglang_errors import failures_as_sentences
from ansible.module_utils.sglang_files import NotPlainFile, load_json, read_plain, sha256, write_atomic
from ansible.module_utils.sglang_unit_exec import environment, path_pieces, program_words, settings, startable_paths
from ansible.module_utils.sglang_uv import (
    BUILDER,
    builder_complete,
    compile_bytecode,
    index_summary,
    install_builder,
    pip_options,
    redact,
    uv_environment,
    uv_settings,
)

MARKER_SUFFIX = ".json"
NAME_RE = re.compile(r"^[0-9][0-9A-Za-z.+-]*-[0-9a-f]{12}$")
# A release as a runtime's folder name holds it: PEP 440's characters, no / . . or space (a version is a path part).
VERSION_RE = re.compile(r"^[0-9][0-9A-Za-z.+!-]{0,63}$")
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


class RuntimeError_(Exception):
    """A refusal with the sentence the operator reads."""


# -- the launcher the unit runs -----------------------------------------------------------------------------
# The unit's ExecStart names this file, so `systemctl show sglang -p ExecStart` (and `ps`) say what runs and from
# which runtime; before it, a one-line `python -c` program stood in ExecStart. It is the runtime's, not the role's:
# a restored unit names its own runtime's launcher, so going back restores the launcher with the code.
LAUNCHER = os.path.join("bin", "sglang-serve")
LAUNCHER_MODE = 0o755
# Linux reads at most 127 bytes of a #! line before 5.1 (BINPRM_BUF_SIZE 128) and splits it at whitespace: a longer
# or spaced python path is started through /bin/sh instead (as pip's script launchers do).
SHEBANG_MAX = 127
# Why the body does what it does (SGLang's own code, read from the wheels):
# - SGLang logs its server_args at INFO once it starts, api_key in clear (0.5.9 entrypoints/engine.py:156 and :1031
#   `logger.info(f"{server_args=}")`; 0.5.23 entrypoints/engine.py:311 and :1185, whose _server_args_for_logging
#   redacts only the watermark's secrets), and the key has no environment variable (0.5.23
#   arg_groups/fields/serving.py: api_key is a plain field). systemd 252 (Debian 12) has no LogFilterPatterns=, so
#   the key would reach the journal.
# - The key itself is never an argument: the unit passes it in the --config file (root:<user> 0640).
LAUNCHER_BODY = r'''# sglang-serve: how the sglang systemd unit starts SGLang from this runtime (ExecStart names it).
# Written by the sglang role (library/sglang_runtime.py); it is the same in every runtime except the python above.
# It runs SGLang's own `python -m sglang.launch_server <the unit's arguments>` (runpy, as -m does), after a
# log-record factory that rewrites the value of every *api_key*, *password* and *secret* field in a log record's
# message to '<redacted>': SGLang logs its server_args line with the API key in clear (0.5.9 and 0.5.23
# entrypoints/engine.py), and systemd 252 cannot filter the journal. The line stays, without the key. It is logged
# by this process; the schedulers and the detokenizer (spawned, without this factory) never log it.
# The key is never an argument here: it is in the unit's --config file.
import logging
import re
import runpy
import sys

SECRET = re.compile(r"""(\w*(?:api_key|password|secret)\w*'?(?:: |=))('(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")""")
make_record = logging.getLogRecordFactory()


def redacting_record(*args, **kwargs):
    record = make_record(*args, **kwargs)
    if isinstance(record.msg, str):  # SGLang's line is an f-string: the whole text is the record's msg
        record.msg = SECRET.sub(r"\1'<redacted>'", record.msg)
    return record


logging.setLogRecordFactory(redacting_record)
# The import path `python -c` (this launcher's earlier form) and `python -m` start with: the working directory
# first, not this script's bin/ folder.
sys.path[0] = ""
runpy.run_module("sglang.launch_server", run_name="__main__", alter_sys=True)
'''


def launcher_text(runtime):
    """The launcher's text for a runtime folder: #! its own bin/python, then LAUNCHER_BODY."""
    python = os.path.join(os.path.normpath(runtime), "bin", "python")
    if len("#!" + python) <= SHEBANG_MAX and not any(c.isspace() for c in python):
        return "#!%s\n%s" % (python, LAUNCHER_BODY)
    if any(c in python for c in "\"\\$`'\n"):
        raise RuntimeError_("The runtime folder %r holds a quote, $, ` or \\: its launcher cannot name its python. "
                            "Give sglang_runtimes_dir a plain path." % runtime)
    # sh runs the second line (python's string literal) and execs python on this file; python reads the rest
    return "#!/bin/sh\n'''exec' \"%s\" \"$0\" \"$@\"\n' '''\n%s" % (python, LAUNCHER_BODY)


def launcher_owner():
    """The owner a written launcher has: root's when the module runs as root (as the role runs it)."""
    return (0, 0) if os.geteuid() == 0 else (os.geteuid(), os.getegid())


def launcher_differences(path, text, owner):
    """What differs between the file at path and the launcher it should be: a list of 'missing', 'not a file',
    'content', 'mode', 'owner' (empty when it is the launcher)."""
    try:
        status = os.lstat(path)
    except FileNotFoundError:
        return ["missing"]
    try:
        held = read_plain(path)
    except NotPlainFile:
        return ["not a file"]
    found = []
    if held != text.encode("utf-8"):
        found.append("content")
    if status.st_mode & 0o7777 != LAUNCHER_MODE:
        found.append("mode")
    if (status.st_uid, status.st_gid) != tuple(owner):
        found.append("owner")
    return found


def built_here(runtime, runtimes_dir):
    """Whether a runtime is one this module built (a folder directly in the runtimes folder). An adopted legacy
    venv is not: it is never modified, so it gets no launcher and its unit keeps the one-line form."""
    return os.path.dirname(os.path.normpath(runtime)) == os.path.normpath(runtimes_dir)


def ensure_launcher(runtime, check_mode=False):
    """Write the runtime's launcher when it is missing or differs (content, mode 0755, root's): True when it did
    (or would, in check mode). A runtime without its bin/python is refused: it is not one to launch."""
    if not os.path.isfile(os.path.join(runtime, "bin", "python")):
        raise RuntimeError_("%s/bin/python is missing: no launcher is written into a runtime that cannot run" % runtime)
    path = os.path.join(runtime, LAUNCHER)
    text = launcher_text(runtime)
    if not launcher_differences(path, text, launcher_owner()):
        return False
    if not check_mode:
        if os.path.isdir(path) and not os.path.islink(path):
            raise RuntimeError_("%s is a folder: move it away; the unit runs a launcher of that name" % path)
        write_atomic(path, text, LAUNCHER_MODE)  # a root-run module's new file is root's (mkstemp)
    return True


# -- the package set and its digest ------------------------------------------------------------------------

def sha256_file(path):
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
    return hashlib.sha256(json.dumps(pset, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def runtime_name(version, digest):
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


# -- what is on the host -------------------------------------------------------------------------------------

def unit_runtime(unit_path):
    """The runtime folder a unit's ExecStart runs (its program: '<runtime>/bin/sglang-serve', the launcher, or
    '<runtime>/bin/python' in a unit rendered before the launcher, which a store entry may still hold), or None
    (also for a unit that is not a small regular file: a FIFO is not waited on)."""
    try:
        return program_runtime(unit_launcher(unit_path, strict=True))
    except OSError:
        return None


def program_runtime(program):
    """The runtime folder of a unit's program, a `current`-style symbolic link to a runtime read as that runtime."""
    for tail in ("/" + LAUNCHER, "/bin/python"):
        if program and program.endswith(tail):
            return resolved_in_place(os.path.normpath(program[:-len(tail)]))
    return None


def resolved_in_place(folder):
    """A symbolic link to a folder beside it (runtimes/current -> 0.5.23-...) as that folder, spelled with the same
    parent (so that it compares equal to the runtimes folder's entries); any other path as it is."""
    if os.path.islink(folder):
        target = os.path.realpath(folder)
        if os.path.dirname(target) == os.path.realpath(os.path.dirname(folder)):
            return os.path.join(os.path.dirname(folder), os.path.basename(target))
    return folder


def read_unit_file(path):
    """A unit's file or an EnvironmentFile= it names, whole (read_plain: a FIFO or a huge file is refused)."""
    return read_plain(path, follow=True)


# Where systemd looks for a system unit and its drop-ins, most important first (systemd.unit(5), "Unit File Load
# Path"): `systemctl edit --runtime` writes /run/systemd/system/<unit>.d/, a package /usr/lib/systemd/system/<unit>.d/.
SYSTEM_UNIT_DIRS = ("/etc/systemd/system.control", "/run/systemd/system.control", "/run/systemd/transient",
                    "/run/systemd/generator.early", "/etc/systemd/system", "/etc/systemd/system.attached",
                    "/run/systemd/system", "/run/systemd/system.attached", "/run/systemd/generator",
                    "/usr/local/lib/systemd/system", "/usr/lib/systemd/system", "/lib/systemd/system",
                    "/run/systemd/generator.late")


def drop_in_names(unit_name):
    """The <name>.d folders whose drop-ins apply to a unit, most specific first: its own, its dashed prefixes'
    (sglang-router.service: sglang-.service.d) and its type's (service.d)."""
    stem, dot, kind = unit_name.rpartition(".")
    if not dot:
        return [unit_name + ".d"]
    parts = stem.split("-")
    prefixes = ["-".join(parts[:count]) + "-." + kind + ".d" for count in range(len(parts) - 1, 0, -1)]
    return [unit_name + ".d"] + prefixes + [kind + ".d"]


def drop_in_files(unit_path, search=SYSTEM_UNIT_DIRS):
    """The drop-ins systemd applies to the unit, in its order (by file name): <unit>.d/*.conf beside it, and for a
    unit in one of systemd's folders (search) the drop-ins of every one of them, its dashed prefixes' and its type's
    too; a file name in a more important folder hides the same name in a later one."""
    folder, name = os.path.split(os.path.abspath(unit_path))
    folders = list(search) if folder in search else [folder]
    found = {}
    for where in folders:
        for drop_ins in drop_in_names(name) if folder in search else [name + ".d"]:
            path = os.path.join(where, drop_ins)
            if os.path.isdir(path):
                for entry in sorted(os.listdir(path)):
                    if entry.endswith(".conf"):
                        found.setdefault(entry, os.path.join(path, entry))
    return [found[entry] for entry in sorted(found)]


def unit_text(unit_path, search=SYSTEM_UNIT_DIRS):
    """The unit's text as systemd combines it: the file, then its drop-ins (drop_in_files: <unit>.d/*.conf beside it,
    as `systemctl edit` writes them, and systemd's other folders for a unit in one of them). None when the unit file
    is absent; OSError (NotPlainFile) when it or a drop-in cannot be read whole (a FIFO, over the size limit,
    unreadable)."""
    try:
        texts = [read_unit_file(unit_path).decode("utf-8", "replace")]
    except (FileNotFoundError, NotADirectoryError):  # no unit there (a store's own files are not entries)
        return None
    for path in drop_in_files(unit_path, search):
        texts.append(read_unit_file(path).decode("utf-8", "replace"))
    return "\n".join(texts)


def unit_launcher(unit_path, strict=False):
    """The runtime's program the unit runs, or None: in the last ExecStart= systemd keeps that names one (a oneshot's
    later `ExecStart=/bin/true` names none), the first word that is a runtime's launcher or python, wherever it
    stands (after `env A=1`, a wrapper, `sh -c`, `${VAR}` from the unit's environment). strict: a unit that exists
    but cannot be read raises OSError instead of reading as None."""
    try:
        text = unit_text(unit_path)
    except OSError:
        if strict:
            raise
        return None
    if text is None:
        return None
    env = environment(settings(text), read_unit_file)[0]
    for words in reversed(program_words(text, env)):
        for word in words:
            for piece in path_pieces(word):
                if program_runtime(piece):
                    return piece
    return None


def runtime_folder(path, runtimes_dir, legacy=None):
    """The runtime a path lies in, spelled as the prune lists them (<runtimes_dir>/<name>, or legacy), or None.
    Compared after os.path.realpath, folder by folder from the top, so that a runtimes folder reached through a
    symbolic link, or `runtimes/current`, counts as what it points at, while a runtime's own bin/python (a link to
    the host's python) still counts as inside its runtime."""
    root = os.path.realpath(runtimes_dir).rstrip("/") + "/"
    real_legacy = os.path.realpath(legacy) if legacy else None
    parts = os.path.normpath(path).split("/")
    prefixes = ["/".join(parts[:count]) or "/" for count in range(2, len(parts) + 1)]
    for prefix in prefixes:
        real = os.path.realpath(prefix)
        if real.startswith(root):
            return os.path.join(os.path.normpath(runtimes_dir), real[len(root):].split("/", 1)[0])
    if real_legacy and any(under(os.path.realpath(prefix), real_legacy) for prefix in prefixes):
        return os.path.normpath(legacy)
    return None


def unit_runtimes(unit_path, runtimes_dir, legacy=None):
    """(runtimes, problems): every runtime folder (runtime_folder) a word of the unit's commands, its working
    folder or its environment names (module_utils/sglang_unit_exec.py reads them), and sentences naming what could not
    be read when the commands depend on it. OSError when the unit (or a drop-in) exists but cannot be read whole."""
    text = unit_text(unit_path)
    if text is None:
        return set(), []
    paths, problems = startable_paths(text, read_unit_file)
    folders = {runtime_folder(path, runtimes_dir, legacy) for path in paths}
    return folders - {None}, problems


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


def under(path, folder):
    """Whether path is folder or inside it (by their normalized text; both absolute)."""
    path, folder = os.path.normpath(path), os.path.normpath(folder)
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def marker_for_path(markers, path):
    for name, manifest in markers.items():
        if os.path.normpath(manifest["path"]) == os.path.normpath(path):
            return name, manifest
    return None, None


def free_gib(path):
    existing = path
    while not os.path.exists(existing):
        existing = os.path.dirname(existing) or "/"
    stat = os.statvfs(existing)
    return existing, stat.f_bavail * stat.f_frsize / 1024 ** 3


# -- the decisions ---------------------------------------------------------------------------------------------

def decide(markers, name, runtimes_dir, legacy, legacy_versions, wanted_versions):
    """(action, path): use a complete runtime of this set, adopt the legacy venv (legacy_versions: read only for
    one never adopted before; adopted when it reports exactly the versions this set asks for), or build."""
    if name in markers and os.path.isfile(os.path.join(markers[name]["path"], "bin", "python")):
        return "use", markers[name]["path"]
    if legacy_versions is not None and legacy_versions == wanted_versions:
        return "adopt", legacy
    return "build", os.path.join(runtimes_dir, name)


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


# -- the builder --------------------------------------------------------------------------------------------
# uv builds a host's runtimes from one cache (module_utils/sglang_uv.py says why). A build can take many minutes (torch
# and its CUDA wheels from an index): bounded only against a hang, never against a slow link.
BUILD_TIMEOUT = 4 * 3600
# PATH for a kernel source's build (CUDA's bin/ first, then the runtime's, then the system's), as pip's build had it
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def run_builder(module, p):
    """The builder for a build: uv (installed once, reused) or pip with the reason."""
    version = (p["uv_version"] or "").strip()
    if not version:
        return {"changed": False, "builder": "pip", "why": "sglang_uv_version is empty"}
    if not VERSION_RE.match(version) or ".." in version:
        raise RuntimeError_("sglang_uv_version is %r: a uv release such as 0.13.8, or empty to build with pip"
                            % (version,))
    changed = False
    if not builder_complete(p["dir"], version):
        if module.check_mode:
            return {"changed": True, "builder": "uv", "index": "(read once uv is installed)", "not_carried": []}
        python = python_identity(module, p["python"])
        if python is None:
            return {"changed": False, "builder": "pip", "why": "%s is not on the host's PATH" % p["python"]}
        os.makedirs(p["dir"], mode=0o755, exist_ok=True)
        why = install_builder(p["dir"], version, python["path"])
        if why:
            return {"changed": False, "builder": "pip", "why": "uv %s could not be installed: %s" % (version, why)}
        changed = True
    env, flags, not_carried = uv_settings(pip_options(p["dir"]))
    for key in not_carried:
        module.warn("the pip setting %s has no uv equivalent: uv builds the runtime without it" % key)
    return {"changed": changed, "builder": "uv", "index": index_summary(env, flags),
            "not_carried": not_carried}


def run_install(module, p):
    """uv venv (once) and one uv pip install per step into the runtime p['path'] (a build's, never a complete one)."""
    runtime, version = p["path"], (p["uv_version"] or "").strip()
    if not runtime or not built_here(runtime, p["dir"]) or not NAME_RE.match(os.path.basename(runtime)):
        raise RuntimeError_("state=install needs path, a runtime folder directly in %s (from state=plan)" % p["dir"])
    if marker_for_path(read_markers(p["dir"]), runtime)[0]:
        raise RuntimeError_("%s is complete: a runtime is never modified once complete" % runtime)
    for step in p["steps"]:
        for item in step:
            if not isinstance(item, str) or not item.strip() or item.startswith("-"):
                raise RuntimeError_("state=install's step %r holds %r: uv would read it as an option, not a "
                                    "requirement. Give a wheel, a pin or a folder; set the index in pip.conf."
                                    % (step, item))
    if module.check_mode:  # state=builder installed nothing in check mode either
        return {"changed": True, "path": runtime}
    if not builder_complete(p["dir"], version):
        raise RuntimeError_("the builder in %s does not hold uv %s: run state=builder first"
                            % (os.path.join(p["dir"], BUILDER), version))
    env, flags, _not_carried = uv_settings(pip_options(p["dir"]))
    env = uv_environment(p["dir"], env)
    if p["cuda_home"]:
        env.update(CUDA_HOME=p["cuda_home"], PATH="%s/bin:%s/bin:%s" % (p["cuda_home"], runtime, SYSTEM_PATH))
    uv = os.path.join(p["dir"], BUILDER, "bin", "uv")
    python = python_identity(module, p["python"])
    if python is None:
        raise RuntimeError_("%s is not on the host's PATH: a runtime is made with it" % p["python"])
    commands = []
    if not os.path.isfile(os.path.join(runtime, "pyvenv.cfg")):
        # the interpreter as `python3 -m venv` names it (pyvenv.cfg's home), not its resolved file
        binary = module.get_bin_path(p["python"]) if "/" not in p["python"] else p["python"]
        commands.append(("making the virtualenv %s" % runtime, [uv, "venv", "--python", binary, runtime]))
    for step in p["steps"]:
        argv = [uv, "pip", "install", "--python", os.path.join(runtime, "bin", "python")] + flags
        if p["no_build_isolation"]:
            argv.append("--no-build-isolation")
        commands.append(("installing %s" % " ".join(step), argv + list(step)))
    for what, argv in commands:
        try:
            proc = subprocess.run(argv, capture_output=True, text=True, errors="replace", timeout=BUILD_TIMEOUT,
                                  stdin=subprocess.DEVNULL, check=False, env=env, cwd=p["chdir"] or None)
        except subprocess.TimeoutExpired:
            raise RuntimeError_("uv, %s, did not finish within %d s" % (what, BUILD_TIMEOUT)) from None
        if proc.returncode != 0:
            said = redact((proc.stderr or proc.stdout).strip())[-2000:]
            raise RuntimeError_("uv, %s (rc %d): %s" % (what, proc.returncode, said))
    # the other complete runtimes of the host: the same files from uv's cache, compiled once
    others = [m["path"] for m in read_markers(p["dir"]).values()
              if os.path.normpath(m["path"]) != os.path.normpath(runtime)]
    try:
        bytecode = compile_bytecode(runtime, others)
    except OSError as err:
        raise RuntimeError_("compiling the bytecode of %s: %s" % (runtime, err)) from None
    return {"changed": True, "path": runtime, "bytecode": bytecode}


# -- the module ---------------------------------------------------------------------------------------------

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
    binary = module.get_bin_path(python, required=False) if "/" not in python else python
    if not binary or not os.path.exists(binary):
        return None
    rc, out, err = run_bounded([binary, "-c", "import sys; print(sys.version.split()[0])"])
    return {"path": os.path.realpath(binary), "version": out.strip() if rc == 0 else None}


def write_marker(runtimes_dir, name, manifest):
    write_atomic(os.path.join(runtimes_dir, name + MARKER_SUFFIX), json.dumps(manifest, indent=1, sort_keys=True),
                 0o644)


def run_plan(module, p):
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


def run_complete(module, p):
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


def run_versions(module, p):
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


def run_prune(module, p):
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


def main():
    module = AnsibleModule(
        argument_spec={
            "state": {"type": "str", "choices": ["plan", "complete", "versions", "prune", "builder", "install"],
                      "default": "plan"},
            "dir": {"type": "path", "required": True},
            "legacy": {"type": "path"},
            "unit": {"type": "path"},
            "store": {"type": "path"},
            "version": {"type": "str"},
            "package": {"type": "str", "default": ""},
            "wheels_dir": {"type": "path"},
            "wheel_sha256": {"type": "dict", "default": {}},
            "extras": {"type": "list", "elements": "str", "default": []},
            "kernel_wheels": {"type": "list", "elements": "dict", "default": []},
            "kernel_sources": {"type": "list", "elements": "dict", "default": []},
            "python": {"type": "str", "default": "python3"},
            "min_free_gib": {"type": "float", "default": 20},
            "path": {"type": "path"},
            "name": {"type": "str"},
            "digest": {"type": "str"},
            "set": {"type": "dict"},
            "versions": {"type": "dict"},
            "names": {"type": "list", "elements": "str", "default": ["sglang"]},
            "entry": {"type": "str"},
            "keep": {"type": "list", "elements": "path", "default": []},
            "prune_when_found": {"type": "bool", "default": False},
            "uv_version": {"type": "str", "default": ""},
            "steps": {"type": "list", "elements": "list", "default": []},
            "chdir": {"type": "path"},
            "no_build_isolation": {"type": "bool", "default": False},
            "cuda_home": {"type": "path"},
            "builder": {"type": "str"},
        },
        supports_check_mode=True,
    )
    with failures_as_sentences(module, "sglang_runtime"):
        run = {"plan": run_plan, "complete": run_complete, "versions": run_versions, "prune": run_prune,
               "builder": run_builder, "install": run_install}
        if module.params["state"] in ("builder", "install"):
            os.umask(0o022)  # the builder, the cache and the runtime: root's, readable by the service user
        try:
            module.exit_json(**run[module.params["state"]](module, module.params))
        except RuntimeError_ as error:
            module.fail_json(msg=str(error))
        except OSError as error:  # a folder that cannot be read or removed: say which
            module.fail_json(msg="sglang_runtime (state=%s, %s) failed: %s"
                             % (module.params["state"], module.params["dir"], error))


if __name__ == "__main__":
    main()
