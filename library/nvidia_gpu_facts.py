#!/usr/bin/python
"""Ansible module: the host's NVIDIA GPUs, driver and module flavour, read-only."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: nvidia_gpu_facts
short_description: Read the host's NVIDIA GPUs, driver version, kernel module flavour and Secure Boot state
description:
  - Uses C(nvidia-smi) when it answers (GPU names, C(memory.total) in MiB), else C(lspci) (GPUs, PCI classes
    0300, 0302 and 0380, and NVSwitches seen on the PCI bus before any driver is installed).
  - The compute capability (C(compute_capability), the lowest of the GPUs, e.g. C(10.0) on a B200) from
    C(nvidia-smi --query-gpu=compute_cap) (drivers 510 and newer), else from the chip lspci names (GB1xx
    datacenter Blackwell 10.0, GB2xx 12.0, GH100 9.0, AD10x 8.9, GA100 8.0, GA10x 8.6); null when neither says.
    SGLang picks its attention backend, and so its page size, by it.
  - The driver version and module flavour are the B(loaded) module's (C(/sys/module/nvidia/version), else
    C(/proc/driver/nvidia/version), whose C(Open Kernel Module) marks the open flavour; C(/sys/module/nvidia/taint)
    with C(P) marks the proprietary one), else what C(nvidia-smi) reports. The module on disk, which the next boot
    loads, is reported separately (C(ondisk_version), C(ondisk_flavour) from C(modinfo), where C(Dual MIT/GPL) is open,
    C(NVIDIA) proprietary).
  - Secure Boot from C(mokutil --sb-state) or the EFI variable.
  - Changes nothing; sets the fact C(nvidia_gpu).
version_added: "1.0.0"
author: sglang-longctx maintainers (!UNKNOWN)
options: {}
notes:
  - Supports check mode.
"""

EXAMPLES = r"""
- name: Read the GPUs
  nvidia_gpu_facts:

- name: Show the smallest GPU memory
  ansible.builtin.debug:
    msg: "{{ nvidia_gpu.count }} GPUs, smallest {{ nvidia_gpu.memory_mib_min }} MiB"
"""

RETURN = r"""
ansible_facts:
  description: Facts to add to the host.
  returned: always
  type: dict
  contains:
    nvidia_gpu:
      description: What was found.
      type: dict
      sample:
        source: nvidia-smi
        count: 8
        names: ["NVIDIA RTX PRO 6000 Blackwell Server Edition"]
        memory_mib_min: 97887
        compute_capability: "12.0"
        driver_version: "580.95.05"
        module_flavour: open
        driver_loaded: true
        ondisk_version: "580.95.05"
        ondisk_flavour: open
        nvswitch: false
        secure_boot: false
"""

import os
import re

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.sglang_errors import failures_as_sentences
from ansible.module_utils.sglang_nvidia import PROC_VERSION, SYS_TAINT, SYS_VERSION, parse_proc_version, read_text

SECURE_BOOT_VAR = "/sys/firmware/efi/efivars/SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c"


def parse_nvidia_smi(output):
    """Rows of `--query-gpu=index,name,memory.total,driver_version --format=csv,noheader,nounits`."""
    gpus = []
    for line in output.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) == 4 and parts[0].isdigit():
            gpus.append({"name": parts[1], "memory_mib": int(float(parts[2])), "driver_version": parts[3]})
    return gpus


def parse_lspci(output):
    """`lspci -nn -d 10de:` lines: GPUs are class 0300 (VGA), 0302 (3D) or 0380 (display, some data-center
    boards); NVSwitches are bridges (0680)."""
    gpus, switches = [], 0
    for line in output.splitlines():
        match = re.search(r"\[(0300|0302|0380|0680)\]: NVIDIA Corporation (.*?) \[10de:", line)
        if not match:
            continue
        if match.group(1) == "0680":
            switches += 1
        else:
            name = re.search(r"\[([^\]]+)\]$", match.group(2))
            chip = match.group(2).split(" [")[0].strip()
            gpus.append({"name": "NVIDIA " + (name.group(1) if name else match.group(2)),
                         "compute_capability": compute_capability_of_chip(chip)})
    return gpus, switches


def parse_compute_caps(output):
    """The lowest `--query-gpu=compute_cap --format=csv,noheader` row ("10.0"), or None (an older driver
    answers 'Field "compute_cap" is not a valid field to query.')."""
    caps = [line.strip() for line in output.splitlines() if re.match(r"^\d+\.\d+$", line.strip())]
    return min(caps, key=lambda c: tuple(int(n) for n in c.split("."))) if caps else None


# NVIDIA's chip names as lspci shows them (the part before the bracket) -> compute capability: CUDA's
# compute-capability table by architecture (Blackwell datacenter GB1xx sm_100/103, Blackwell GB2xx sm_120,
# Hopper GH100 sm_90, Ada AD10x sm_89, Ampere GA100 sm_80 and GA10x sm_86).
CHIP_COMPUTE_CAPABILITY = ((r"^GB1\d\d", "10.0"), (r"^GB2\d\d", "12.0"), (r"^GH100", "9.0"), (r"^AD10\d", "8.9"),
                           (r"^GA100", "8.0"), (r"^GA10\d", "8.6"))


def compute_capability_of_chip(chip):
    for pattern, cap in CHIP_COMPUTE_CAPABILITY:
        if re.match(pattern, chip or ""):
            return cap
    return None


def flavour_from_license(license_text):
    text = license_text.strip()
    if not text:
        return "none"
    return "open" if "MIT" in text or "GPL" in text else "proprietary"


def loaded_module(sys_version, sys_taint, proc_text):
    """(version, flavour) of the running nvidia module, or (None, "none") when none is loaded."""
    proc_version, proc_flavour = parse_proc_version(proc_text)
    version = (sys_version or "").strip() or proc_version
    if not version:
        return None, "none"
    if proc_text:
        return version, proc_flavour
    return version, "proprietary" if "P" in (sys_taint or "") else "open"


read = read_text


def main():
    module = AnsibleModule(argument_spec={}, supports_check_mode=True)
    with failures_as_sentences(module, "nvidia_gpu_facts"):
        facts = {"source": "none", "count": 0, "names": [], "memory_mib_min": None, "compute_capability": None,
                 "driver_version": None, "module_flavour": "none", "driver_loaded": False, "ondisk_version": None,
                 "ondisk_flavour": "none", "nvswitch": False, "secure_boot": False}

        smi = module.get_bin_path("nvidia-smi")
        if smi:
            rc, out, _err = module.run_command([smi, "--query-gpu=index,name,memory.total,driver_version",
                                                "--format=csv,noheader,nounits"])
            gpus = parse_nvidia_smi(out) if rc == 0 else []
            if gpus:
                facts.update(source="nvidia-smi", count=len(gpus), names=sorted({g["name"] for g in gpus}),
                             memory_mib_min=min(g["memory_mib"] for g in gpus),
                             driver_version=gpus[0]["driver_version"])
                # A query of its own: a driver without the field fails the whole query, and the GPUs must still count.
                rc, out, _err = module.run_command([smi, "--query-gpu=compute_cap", "--format=csv,noheader"])
                facts["compute_capability"] = parse_compute_caps(out) if rc == 0 else None
                rc, out, _err = module.run_command([smi, "-q"])
                facts["nvswitch"] = rc == 0 and bool(re.search(r"Fabric\s+State\s+:\s+(Completed|In Progress)", out))

        lspci = module.get_bin_path("lspci", opt_dirs=["/usr/local/sbin", "/usr/sbin", "/sbin"])
        if lspci:
            rc, out, _err = module.run_command([lspci, "-nn", "-d", "10de:"])
            if rc == 0:
                gpus, switches = parse_lspci(out)
                facts["nvswitch"] = facts["nvswitch"] or switches > 0
                if facts["source"] == "none" and gpus:
                    facts.update(source="lspci", count=len(gpus), names=sorted({g["name"] for g in gpus}))
                caps = [g["compute_capability"] for g in gpus if g["compute_capability"]]
                if facts["compute_capability"] is None and caps and len(caps) == len(gpus):
                    facts["compute_capability"] = min(caps, key=lambda c: tuple(int(n) for n in c.split(".")))

        modinfo = module.get_bin_path("modinfo", opt_dirs=["/usr/sbin", "/sbin"])
        if modinfo:
            rc, out, _err = module.run_command([modinfo, "-F", "license", "nvidia"])
            facts["ondisk_flavour"] = flavour_from_license(out) if rc == 0 else "none"
            rc, out, _err = module.run_command([modinfo, "-F", "version", "nvidia"])
            facts["ondisk_version"] = (out.strip() or None) if rc == 0 else None

        # What runs is the loaded module, not the file on disk: they differ until the reboot after an install.
        version, flavour = loaded_module(read(SYS_VERSION), read(SYS_TAINT), read(PROC_VERSION))
        facts.update(driver_loaded=version is not None, module_flavour=flavour)
        if version:
            facts["driver_version"] = version

        mokutil = module.get_bin_path("mokutil")
        if mokutil:
            rc, out, _err = module.run_command([mokutil, "--sb-state"])
            facts["secure_boot"] = rc == 0 and "SecureBoot enabled" in out
        elif os.path.exists(SECURE_BOOT_VAR):
            with open(SECURE_BOOT_VAR, "rb") as handle:
                facts["secure_boot"] = handle.read()[-1:] == b"\x01"

        module.exit_json(changed=False, ansible_facts={"nvidia_gpu": facts})


if __name__ == "__main__":
    main()
