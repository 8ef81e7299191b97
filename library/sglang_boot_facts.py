#!/usr/bin/python
"""Ansible module: what SGLang measured while booting, read from the journal of its current run."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: sglang_boot_facts
short_description: Read the KV-pool calibration of the running SGLang service from its journal
description:
  - Reads the journal of the unit's current invocation (C(systemctl show -p InvocationID)) and parses the
    lines SGLang prints while booting, MIN over tensor-parallel ranks as SGLang itself takes them
    (C(Load weight begin. avail mem=P GB), C(Load weight end. ... avail mem=A GB),
    C(KV Cache is allocated. #tokens: N), C(max_total_num_tokens=N, ... context_len=C)).
  - Changes nothing.
version_added: "1.0.0"
author: sglang-longctx maintainers
options:
  unit:
    description: The systemd unit running SGLang.
    type: str
    default: sglang
notes:
  - Supports check mode.
"""

EXAMPLES = r"""
- name: Read the boot's calibration
  sglang_boot_facts:
    unit: sglang
  register: boot
"""

RETURN = r"""
pre_load_avail_gib:
  description: Free GiB before the weights loaded (P), least-free rank; null when not logged yet.
  type: float
  returned: always
  sample: 85.33
post_load_avail_gib:
  description: Free GiB after the weights loaded (A), least-free rank.
  type: float
  returned: always
  sample: 19.42
pool_tokens:
  description: The KV pool SGLang allocated (max_total_num_tokens).
  type: int
  returned: always
  sample: 200230
context_len:
  description: The context length SGLang reported.
  type: int
  returned: always
max_running_requests:
  description: The concurrency SGLang settled on.
  type: int
  returned: always
ranks:
  description: How many ranks logged 'Load weight end'.
  type: int
  returned: always
error:
  description: The exception SGLang logged, if it failed to start.
  type: str
  returned: always
invocation_id:
  description: The systemd invocation the lines were read from.
  type: str
  returned: always
"""

import re

from ansible.module_utils.basic import AnsibleModule

_BEGIN = re.compile(r"Load weight begin\. avail mem=([0-9.]+) GB")
_END = re.compile(r"Load weight end\..*?avail mem=([0-9.]+) GB")
_KV = re.compile(r"KV Cache is allocated\..*?#tokens: ([0-9]+)")
_SUMMARY = re.compile(r"max_total_num_tokens=([0-9]+).*?max_running_requests=([0-9]+), context_len=([0-9]+)")
_ERROR = re.compile(r"(RuntimeError|ValueError|OSError|torch\.OutOfMemoryError|CUDA out of memory)[:.].*")


def parse_boot_log(text):
    """SGLang's boot lines -> the calibration; MIN over ranks, as SGLang's all-reduce takes them."""
    begins = [float(m.group(1)) for m in _BEGIN.finditer(text)]
    ends = [float(m.group(1)) for m in _END.finditer(text)]
    pools = [int(m.group(1)) for m in _KV.finditer(text)]
    summary = _SUMMARY.findall(text)
    errors = [m.group(0) for m in _ERROR.finditer(text)]
    pool = min(pools) if pools else (int(summary[-1][0]) if summary else None)
    return {
        "pre_load_avail_gib": min(begins) if begins else None,
        "post_load_avail_gib": min(ends) if ends else None,
        "pool_tokens": pool,
        "max_running_requests": int(summary[-1][1]) if summary else None,
        "context_len": int(summary[-1][2]) if summary else None,
        "ranks": len(ends),
        "error": errors[-1] if errors else None,
    }


def main():
    module = AnsibleModule(argument_spec={"unit": {"type": "str", "default": "sglang"}}, supports_check_mode=True)
    unit = module.params["unit"]
    systemctl, journalctl = module.get_bin_path("systemctl", True), module.get_bin_path("journalctl", True)
    rc, out, err = module.run_command([systemctl, "show", "-p", "InvocationID", "--value", unit])
    invocation = out.strip()
    if rc != 0 or not invocation:
        module.fail_json(msg="%s has not run since boot (no InvocationID): start it first. %s" % (unit, err.strip()))
    rc, text, err = module.run_command([journalctl, "--no-pager", "-o", "cat", "_SYSTEMD_INVOCATION_ID=" + invocation])
    if rc != 0:
        module.fail_json(msg="journalctl could not read %s's journal: %s" % (unit, err.strip()))
    result = parse_boot_log(text)
    module.exit_json(changed=False, invocation_id=invocation, **result)


if __name__ == "__main__":
    main()
