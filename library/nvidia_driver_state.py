#!/usr/bin/python
"""Ansible module: is the NVIDIA driver the host runs the one it has installed? (read-only)."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: nvidia_driver_state
short_description: Compare the loaded NVIDIA kernel module with the installed driver package; say if a reboot is needed
description:
  - Reads the loaded module's version from C(/sys/module/nvidia/version), else C(/proc/driver/nvidia/version), and
    its flavour from C(/proc/driver/nvidia/version) (C(Open Kernel Module) is the open one) or, without it, from
    C(/sys/module/nvidia/taint) (C(P) marks a proprietary module).
  - Reads the installed package's version with C(dpkg-query) and the on-disk module's with C(modinfo).
  - C(reboot_required) is true when the package is installed and the loaded module is missing, of another version,
    or of another flavour than asked. The answer comes from the host, so a run that stopped before its reboot is
    finished by the next one.
  - Optionally reads C(dkms status) and reports, for every kernel with headers under C(/lib/modules), whether the
    C(nvidia) module is built and installed for it at the installed version.
  - Changes nothing.
version_added: "1.1.0"
author: sglang-longctx maintainers (!UNKNOWN)
options:
  package:
    description: The package whose version is the driver's (its upstream part, before the last C(-), is compared).
    type: str
    required: true
  flavour:
    description: The wanted module flavour; a loaded module of the other flavour needs a reboot too.
    type: str
    choices: [open, proprietary]
  check_dkms:
    description: Also read C(dkms status) for every kernel found under C(/lib/modules).
    type: bool
    default: false
  services:
    description: Also read whether these systemd units (the services that need the loaded driver) run and are
      enabled, with one C(systemctl show); RV(services) says.
    type: list
    elements: str
    default: []
notes:
  - Supports check mode.
"""

EXAMPLES = r"""
- name: Is a reboot needed to load the installed driver?
  nvidia_driver_state:
    package: nvidia-kernel-open-dkms
    flavour: open
  register: driver

- name: Reboot when the host says so
  ansible.builtin.reboot:
  when: driver.reboot_required
"""

RETURN = r"""
reboot_required:
  description: The installed driver is not the one loaded.
  returned: always
  type: bool
reasons:
  description: Why a reboot is required (empty when it is not).
  returned: always
  type: list
  elements: str
installed_version:
  description: Upstream version of the installed package (e.g. C(580.95.05)), or null.
  returned: always
  type: str
loaded_version:
  description: Version of the loaded C(nvidia) module, or null when none is loaded.
  returned: always
  type: str
loaded_flavour:
  description: C(open), C(proprietary) or C(none).
  returned: always
  type: str
ondisk_version:
  description: Version of the module C(modinfo) finds for the running kernel (what the next boot loads), or null.
  returned: always
  type: str
services:
  description: Per unit of O(services), C(active) (its ActiveState is active) and C(enabled) (its UnitFileState is
    enabled).
  returned: when services
  type: dict
  sample: {nvidia-persistenced: {active: true, enabled: true}}
dkms:
  description: Per kernel, the DKMS state of C(nvidia) at the installed version (C(installed), C(built), C(missing)).
  returned: when check_dkms
  type: dict
  sample: {"6.1.0-28-amd64": installed, "6.1.0-31-amd64": installed}
dkms_missing:
  description: Kernels for which the module is not installed by DKMS.
  returned: when check_dkms
  type: list
  elements: str
"""

import os
import re

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.sglang_errors import failures_as_sentences
from ansible.module_utils.sglang_nvidia import PROC_VERSION, SYS_TAINT, SYS_VERSION, parse_proc_version, read_text
from ansible.module_utils.sglang_systemd import show


def flavour_from_taint(taint):
    """The kernel taints with P for a proprietary module; the open one is only out-of-tree (O)."""
    return "proprietary" if "P" in (taint or "") else "open"


def upstream(deb_version):
    """580.95.05-1 -> 580.95.05 (and an epoch, if any, dropped)."""
    if not deb_version:
        return None
    return deb_version.split(":", 1)[-1].rsplit("-", 1)[0]


def decide(installed, loaded, loaded_flavour, flavour=None):
    """Reasons a reboot is needed (the whole decision, in plain Python)."""
    if not installed:
        return []
    if not loaded:
        return ["no nvidia module is loaded; driver %s is installed" % installed]
    reasons = []
    if loaded != installed:
        reasons.append("the loaded module is %s but driver %s is installed" % (loaded, installed))
    if flavour and loaded_flavour not in (flavour, "none"):
        reasons.append("the loaded module is %s but %s is wanted" % (loaded_flavour, flavour))
    return reasons


def parse_dkms_status(text, module="nvidia"):
    """{(version, kernel): state} from `dkms status`, in dkms 3's "nvidia/580.95.05, K, x86_64: installed" and
    dkms 2's "nvidia, 396.45, K, x86_64: installed" forms."""
    states = {}
    for line in (text or "").splitlines():
        match = re.match(r"^%s[/,]\s*([^,]+),\s*([^,]+),\s*[^:]+:\s*(\w+)" % re.escape(module), line.strip())
        if match:
            states[(match.group(1).strip(), match.group(2).strip())] = match.group(3)
    return states


def dkms_by_kernel(states, version, kernels):
    return {kernel: states.get((version, kernel), "missing") for kernel in kernels}


def read(path):
    return (read_text(path) or "").strip() or None


def services_state(shown):
    """{unit: {active, enabled}} of systemctl show's properties (sglang_systemd.show)."""
    return {name: {"active": props.get("ActiveState") == "active", "enabled": props.get("UnitFileState") == "enabled"}
            for name, props in shown.items()}


def main():
    module = AnsibleModule(
        argument_spec={"package": {"type": "str", "required": True},
                       "flavour": {"type": "str", "choices": ["open", "proprietary"]},
                       "check_dkms": {"type": "bool", "default": False},
                       "services": {"type": "list", "elements": "str", "default": []}},
        supports_check_mode=True)
    with failures_as_sentences(module, "nvidia_driver_state"):
        params = module.params

        proc = read(PROC_VERSION)
        proc_version, proc_flavour = parse_proc_version(proc)
        loaded = read(SYS_VERSION) or proc_version
        if not loaded:
            loaded_flavour = "none"
        elif proc:
            loaded_flavour = proc_flavour
        else:
            loaded_flavour = flavour_from_taint(read(SYS_TAINT))

        rc, out, _err = module.run_command(["dpkg-query", "-W", "-f=${Status}|${Version}", params["package"]])
        installed = None
        if rc == 0 and out.startswith(("install ok installed", "hold ok installed")):
            installed = upstream(out.split("|", 1)[1])

        ondisk = None
        modinfo = module.get_bin_path("modinfo", opt_dirs=["/usr/sbin", "/sbin"])
        if modinfo:
            rc, out, _err = module.run_command([modinfo, "-F", "version", "nvidia"])
            ondisk = out.strip() or None if rc == 0 else None

        reasons = decide(installed, loaded, loaded_flavour, params["flavour"])
        result = {"changed": False, "reboot_required": bool(reasons), "reasons": reasons,
                  "installed_version": installed, "loaded_version": loaded, "loaded_flavour": loaded_flavour,
                  "ondisk_version": ondisk}

        if params["check_dkms"]:
            # Every kernel with headers (a build link): DKMS can and must build the module for each of them.
            root = "/lib/modules"
            kernels = sorted(k for k in os.listdir(root) if os.path.isdir(os.path.join(root, k, "build"))) \
                if os.path.isdir(root) else []
            dkms = module.get_bin_path("dkms", opt_dirs=["/usr/sbin", "/sbin"])
            out = module.run_command([dkms, "status"])[1] if dkms else ""
            result["dkms"] = dkms_by_kernel(parse_dkms_status(out), installed, kernels)
            result["dkms_missing"] = [k for k, state in result["dkms"].items() if state != "installed"]
        if params["services"]:
            result["services"] = services_state(show(module, params["services"], ("ActiveState", "UnitFileState")))
        module.exit_json(**result)


if __name__ == "__main__":
    main()
