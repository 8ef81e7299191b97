#!/usr/bin/python
"""Ansible module: SGLang runtimes, one folder per package set (plan a build, mark one complete, read one's
versions, prune the ones nothing names, and run uv for a build). This file is its Ansible shell (the documentation,
the arguments, the dispatch by state); the code is in module_utils/sglang_runtime_*.py, one job a file: a state each
(_plan, _complete, _versions, _prune, _build) over _set (the package set, its digest), _markers (names, manifests),
_launcher, _units (which runtimes a unit names), _processes (which ones running processes use), _python (asking a
python, bounded) and _refusal; module_utils/sglang_unit_exec.py reads a unit's text and what it could start. The
decisions are plain functions, unit-tested in tests/unit/test_sglang_runtime*.py and tests/unit/test_runtime_prune_*.py;
the runtime install (lib/sglang_state/runtime_install.py) runs the build's steps and the checks between them.
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

import os

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.sglang_errors import failures_as_sentences
from ansible.module_utils.sglang_runtime_build import run_builder, run_install
from ansible.module_utils.sglang_runtime_complete import run_complete
from ansible.module_utils.sglang_runtime_plan import run_plan
from ansible.module_utils.sglang_runtime_prune import run_prune
from ansible.module_utils.sglang_runtime_refusal import RuntimeError_
from ansible.module_utils.sglang_runtime_versions import run_versions


# The arguments, then the function of the state asked; its refusal, or a folder that cannot be read or removed, is
# the module's failure as a sentence (msg), never a traceback.
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
