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
  - A journal without boot lines (rotated, or the unit has not logged yet) is not an error; C(found) is false then.
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
invocation_id:
  description: The systemd invocation the lines were read from.
  type: str
  returned: always
"""

import re

from ansible.module_utils.basic import AnsibleModule

# "[2025-10-16 09:06:10 TP5] ...", "[2026-01-30 20:54:50 PP1 TP0] ...", "[2025-12-26 23:01:32 DP1 TP1 EP1] ...",
# "[2025-12-23 14:18:01] ..." (one GPU), "[TP0] ..." (no time): the rank is whatever follows the time.
_PREFIX = re.compile(r"^\[(?:\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d+)?)?\s*((?:[A-Z_]+\d+\s*)*)\]")
_BEGIN = re.compile(r"Load weight begin\. avail mem=([0-9.]+) GB")
_END = re.compile(r"Load weight end\..*?avail mem=([0-9.]+) GB")
_KV = re.compile(r"(?:^|\] )(\w+ )?KV Cache is allocated\..*?#tokens: ([0-9]+)")
_SWA = re.compile(r"full_layer_tokens=([0-9]+), swa_layer_tokens=([0-9]+)")
_POOL_END = re.compile(r"Memory pool end\. avail mem=([0-9.]+) GB")
_GRAPH_END = re.compile(r"Capture .*?graph end\..*?avail mem=([0-9.]+) GB")
_SUMMARY = re.compile(r"max_total_num_tokens=([0-9]+).*?max_running_requests=([0-9]+), context_len=([0-9]+)"
                      r"(?:, available_gpu_mem=([0-9.]+) GB)?")
_CAP = re.compile(r"max_total_tokens=([0-9]+) is larger than the profiled value ([0-9]+)")
_MAMBA = re.compile(r"Mamba Cache is allocated")
_ERROR = re.compile(r"(RuntimeError|ValueError|OSError|torch\.OutOfMemoryError|CUDA out of memory)[:.].*")


def _rank(line):
    match = _PREFIX.match(line)
    return " ".join(match.group(1).split()) if match else ""


def _min(values):
    return min(values) if values else None


def parse_boot_log(text):
    """SGLang's boot lines -> the calibration; MIN over ranks, as SGLang's all-reduce takes them."""
    loads = {}  # rank -> [[begin, end], ...] in order: the target's first, then the draft's
    kv, full_tokens, pool_end, graph_end, cap, errors = [], [], [], [], [], []
    summary, hybrid = None, None
    for line in text.splitlines():
        rank = _rank(line)
        begin, end = _BEGIN.search(line), _END.search(line)
        if begin:
            loads.setdefault(rank, []).append([float(begin.group(1)), None])
        elif end:
            pairs = loads.setdefault(rank, [])
            if not pairs or pairs[-1][1] is not None:
                pairs.append([None, None])  # an end whose begin rotated away
            pairs[-1][1] = float(end.group(1))
        for pattern, bucket, kind in ((_POOL_END, pool_end, float), (_GRAPH_END, graph_end, float)):
            match = pattern.search(line)
            if match:
                bucket.append(kind(match.group(1)))
        match = _KV.search(line)
        if match:
            if (match.group(1) or "").strip() == "SWA":
                hybrid = "swa"
            else:
                kv.append(int(match.group(2)))
        match = _SWA.search(line)
        if match:
            full_tokens.append(int(match.group(1)))
            hybrid = "swa"
        if _MAMBA.search(line):
            hybrid = "mamba"
        match = _SUMMARY.search(line)
        if match:
            summary = match
        match = _CAP.search(line)
        if match:
            cap.append(int(match.group(2)))
        match = _ERROR.search(line)
        if match:
            errors.append(match.group(0))
    found = bool(loads or kv or full_tokens or pool_end or graph_end or summary or cap or errors or hybrid)
    target = [pairs[0] for pairs in loads.values()]
    drafts = [pairs[1] for pairs in loads.values() if len(pairs) > 1]
    if summary:
        pool = int(summary.group(1))
    else:
        pool = _min(full_tokens) or _min(kv)
    after_graph = _min(graph_end)
    if after_graph is None and summary and summary.group(4):
        after_graph = float(summary.group(4))
    return {
        "found": found,
        "pre_load_avail_gib": _min([p[0] for p in target if p[0] is not None]),
        "post_load_avail_gib": _min([p[1] for p in target if p[1] is not None]),
        "draft": {
            "pre_load_avail_gib": _min([p[0] for p in drafts if p[0] is not None]),
            "post_load_avail_gib": _min([p[1] for p in drafts if p[1] is not None]),
            "ranks": sum(1 for p in drafts if p[1] is not None),
        } if drafts else None,
        "pool_tokens": pool,
        "profiled_tokens": _min(cap),
        "cap_exceeds_profile": bool(cap),
        "max_running_requests": int(summary.group(2)) if summary else None,
        "context_len": int(summary.group(3)) if summary else None,
        "pool_end_avail_gib": _min(pool_end),
        "after_graph_avail_gib": after_graph,
        "hybrid": hybrid,
        "ranks": sum(1 for p in target if p[1] is not None),
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
