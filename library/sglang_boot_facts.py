#!/usr/bin/python
"""Ansible module: what SGLang measured while booting, read from the journal of its current run."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: sglang_boot_facts
short_description: Read the KV-pool calibration of the running SGLang service from its journal
description:
  - Reads the journal of the unit's current invocation (C(systemctl show -p InvocationID)) and parses the
    lines SGLang prints while booting, per rank (C([... TP3]), C([... PP1 TP0]), C([... DP0 TP0 EP0]) prefixes),
    MIN over ranks as SGLang itself takes them.
  - P and A are the TARGET's weight load, the first C(Load weight begin/end) pair of each rank. With a
    speculative draft model SGLang logs a second pair (the draft's); it is reported apart under C(draft).
  - Also reads the pool (C(KV Cache is allocated), C(max_total_num_tokens=...)), the memory left after the pool
    (C(Memory pool end. avail mem)) and after CUDA-graph capture, and the C(--max-total-tokens) warning.
  - The boot's times, each null when the journal does not say, C(times_source) naming the line each was read
    from - C(weight_load_s) and C(graph_capture_s) from SGLang's own C(elapsed=) figures (the slowest rank),
    else from the bracket times of the phase's first and last line; C(ready_s) from the unit's start
    (C(ExecMainStartTimestampMonotonic)) to the journal entry of C(The server is fired up and ready to roll!).
  - A journal without boot lines (rotated, or the unit has not logged yet) is not an error; C(found) is false then.
  - Changes nothing.
version_added: "1.0.0"
author: sglang-longctx maintainers (!UNKNOWN)
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
found:
  description: Whether the journal holds any SGLang boot line; false when rotated away or not logged yet.
  type: bool
  returned: always
pre_load_avail_gib:
  description: Free GiB before the TARGET's weights loaded (P), least-free rank; null when not logged.
  type: float
  returned: always
  sample: 85.33
post_load_avail_gib:
  description: Free GiB after the TARGET's weights loaded (A), least-free rank.
  type: float
  returned: always
  sample: 19.42
draft:
  description: The draft model's weight load (the second begin/end pair of each rank), or null without one.
  type: dict
  returned: always
  contains:
    pre_load_avail_gib:
      description: Free GiB before the draft loaded, least-free rank.
      type: float
    post_load_avail_gib:
      description: Free GiB after the draft loaded, least-free rank.
      type: float
    ranks:
      description: How many ranks logged the draft's load.
      type: int
pool_tokens:
  description: The KV pool SGLang allocated (max_total_num_tokens; for sliding-window models the full layers').
  type: int
  returned: always
  sample: 200230
profiled_tokens:
  description: What the memory profile allowed, from the --max-total-tokens warning; null without the warning.
  type: int
  returned: always
cap_exceeds_profile:
  description: True when SGLang warned that --max-total-tokens is larger than the profiled value.
  type: bool
  returned: always
context_len:
  description: The context length SGLang reported.
  type: int
  returned: always
max_running_requests:
  description: The concurrency SGLang settled on.
  type: int
  returned: always
pool_end_avail_gib:
  description: Free GiB after the KV pool(s) were allocated ('Memory pool end. avail mem'), least-free rank.
  type: float
  returned: always
after_graph_avail_gib:
  description: Free GiB after CUDA-graph capture, least-free rank (the summary line's available_gpu_mem when
    no capture was logged).
  type: float
  returned: always
hybrid:
  description: C(mamba) or C(swa) when the boot shows a hybrid model's pools (which the planner cannot size).
  type: str
  returned: always
ranks:
  description: How many ranks logged the target's 'Load weight end'.
  type: int
  returned: always
error:
  description: The exception SGLang logged, if it failed to start.
  type: str
  returned: always
weight_load_s:
  description: Seconds the target's weights took to load on the slowest rank (SGLang's C(Load weight end.
    elapsed=), else the bracket times of its begin and end lines); null when the journal does not say.
  type: float
  returned: always
  sample: 312.4
graph_capture_s:
  description: Seconds of CUDA-graph capture on the slowest rank, all captures of the boot summed (target and
    draft, decode and prefill); null when none was logged (CPU, C(--disable-cuda-graph)).
  type: float
  returned: always
  sample: 41.2
ready_s:
  description: Seconds from the unit's start to SGLang's C(ready to roll) line, on the host's monotonic clock;
    null when systemd or the journal does not say.
  type: float
  returned: always
  sample: 371.9
times_source:
  description: For each of weight_load_s, graph_capture_s and ready_s, the line (or the reason for null) it
    was read from.
  type: dict
  returned: always
invocation_id:
  description: The systemd invocation the lines were read from.
  type: str
  returned: always
"""

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.sglang_errors import failures_as_sentences
from ansible.module_utils.sglang_journal import journal_entries, parse_boot_log, ready_seconds
from ansible.module_utils.sglang_systemd import JOURNAL_LIMIT, run, unit_name_problem

__all__ = ["parse_boot_log"]


def main():
    module = AnsibleModule(argument_spec={"unit": {"type": "str", "default": "sglang"}}, supports_check_mode=True)
    with failures_as_sentences(module, "sglang_boot_facts"):
        unit = module.params["unit"]
        if unit_name_problem(unit):
            module.fail_json(msg="unit %r %s: give the service's name (sglang_service_name, e.g. sglang)."
                             % (unit[:80], unit_name_problem(unit)))
        # with a deadline and a size limit (sglang_systemd.run): a hung systemd fails with a sentence
        rc, out, err = run(module, ["show", "-p", "InvocationID", "-p", "ExecMainStartTimestampMonotonic", "--", unit])
        props = dict(line.split("=", 1) for line in out.splitlines() if "=" in line)
        invocation = props.get("InvocationID", "").strip()
        if rc != 0 or not invocation:
            module.fail_json(msg="%s has not run since boot (no InvocationID): start it first. %s"
                             % (unit, err.strip()))
        # JSON, not "-o cat": each entry's monotonic time gives ready_s against the unit's start.
        rc, text, err = run(module, ["--no-pager", "-o", "json", "--output-fields=MESSAGE",
                                     "_SYSTEMD_INVOCATION_ID=" + invocation], limit=JOURNAL_LIMIT, program="journalctl")
        if rc != 0:
            module.fail_json(msg="journalctl could not read %s's journal: %s" % (unit, err.strip()))
        entries = journal_entries(text)
        result = parse_boot_log("\n".join(entry[1] for entry in entries))
        ready, source = ready_seconds(entries, props.get("ExecMainStartTimestampMonotonic", "").strip())
        result["ready_s"] = ready
        result["times_source"]["ready_s"] = source
        module.exit_json(changed=False, invocation_id=invocation, **result)


if __name__ == "__main__":
    main()
