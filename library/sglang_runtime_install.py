#!/usr/bin/python
"""Documentation of the sglang_runtime_install action (action_plugins/sglang_runtime_install.py): it runs on the
controller and drives modules on the host; this file is what ansible-doc reads."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: sglang_runtime_install
short_description: Find or build the SGLang runtime of a package set, check it, mark it complete, prune the rest
description:
  - The runtime of roles/sglang in Python (lib/sglang_state/runtime_install.py). One runtime per package set (SGLang,
    its extras and the custom kernels), found complete by its manifest (a re-run copies nothing and starts no
    python), or built beside the runtime serving now - with uv (installed for the builder from the index; a cache
    shared by the host's runtimes), pip the fallback and said - then checked (versions, torch, GPUs, kernel imports)
    and only then marked complete. A legacy virtualenv holding exactly the asked versions is adopted, never modified.
  - Then the runtimes nothing names are pruned - never the one the unit or its running process uses, nor one a
    backup store entry names (sglang_runtime's prune).
  - An action plugin; it runs modules on the host (sglang_runtime, sglang_runtime_check, pip, git, copy) and reads
    controller-side wheels' sha256 on the controller. Whether the serving state is the proven one (a runtime in use
    is then not checked again) it reads from this run's record (sglang_prove's C(observe), the run's first look).
  - It takes only these options, each of the type documented here; it refuses any other, a missing required one,
    and a value of the wrong type (a mapping or list where a scalar is wanted, or the reverse, or a value Ansible
    cannot convert) by name before it runs anything. An error inside it whose options passed is reported as its
    defect, its traceback in C(exception) (shown with -vvv). A module that fails without a result (a broken
    interpreter) is said with the end of its stderr and stdout.
version_added: "1.1.0"
author: sglang-longctx maintainers (!UNKNOWN)
options:
  dir:
    description: The runtimes' folder (sglang_runtimes_dir).
    type: path
  legacy:
    description: The single virtualenv of a host deployed before runtimes (sglang_venv).
    type: path
  unit:
    description: The live unit (it names the runtime serving now).
    type: path
  store_dir:
    description: The backup store's folder (a runtime an entry names is never pruned).
    type: path
  version:
    description: SGLang's release (sglang_version).
    type: str
  package:
    description: Where SGLang comes from (sglang_package; empty is the index).
    type: str
  wheels_dir:
    description: Where controller-side wheels are copied for a build.
    type: path
  extras:
    description: SGLang's extras.
    type: list
    elements: str
  kernel_wheels:
    description: Kernel wheels, each C({src, name, version, import}).
    type: list
    elements: dict
  kernel_sources:
    description: Kernel sources built from git, each C({repo, ref, subdir, name, version, import}).
    type: list
    elements: dict
  min_free_gib:
    description: The free GiB a build needs.
    type: float
  uv_version:
    description: The uv release that builds a runtime (sglang_uv_version); empty builds with pip.
    type: str
  names:
    description: The distributions a runtime reports (SGLang and the named kernels).
    type: list
    elements: str
  cuda_home:
    description: The CUDA toolkit kernel sources are built with.
    type: path
  user:
    description: The service user (created when missing).
    type: str
  home:
    description: The service user's home.
    type: path
  check:
    description: The runtime check's arguments (sglang_runtime_check) besides the path.
    type: dict
"""

EXAMPLES = r"""
- name: Find or build the runtime of this package set
  sglang_runtime_install:
    dir: /opt/sglang/runtimes
    legacy: /opt/sglang/venv
    unit: /etc/systemd/system/sglang.service
    store_dir: /var/lib/sglang/backups
    version: 0.5.23
    package: ""
    wheels_dir: /opt/sglang/wheels
    extras: []
    kernel_wheels: []
    kernel_sources: []
    min_free_gib: 20
    uv_version: 0.13.8
    names: [sglang]
    cuda_home: /usr/local/cuda
    user: sglang
    home: /var/lib/sglang
    check: {gpus: 8, torch_cuda: "12.9", torch: 2.9.1, release: 0.5.23, nodes: 1, imports: []}
  register: _sglang_runtime_plan
"""

RETURN = r"""
path:
  description: The runtime of this package set.
  returned: success
  type: str
action:
  description: What was done - C(use) (found complete), C(build) or C(adopt) (a legacy virtualenv).
  returned: success
  type: str
builder:
  description: What built it (uv and its release, or pip and why).
  returned: success
  type: str
versions:
  description: The runtime's SGLang and kernel versions.
  returned: success
  type: dict
serving:
  description: The runtime the live unit runs, C({path, versions}) (path null without a unit), kept beside the new one.
  returned: success
  type: dict
launcher:
  description: The runtime's python, which the unit runs.
  returned: success
  type: str
removed:
  description: The runtimes the prune removed.
  returned: success
  type: list
  elements: str
"""
