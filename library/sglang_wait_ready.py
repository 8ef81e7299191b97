#!/usr/bin/python
"""Ansible module: one try of waiting for SGLang: ready, still booting (and at which stage), or dead."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: sglang_wait_ready
short_description: One try of waiting for a starting SGLang service, with the boot's stage; fails fast when it dies
description:
  - Polls C(/health_generate) (a real one-token generation) for up to O(poll) seconds. Meant to run as a
    retried task (C(until) with C(retries)/C(delay)); every try returns how far the boot has come, read
    from the journal of the unit's current invocation, so that a callback can print one line per try.
  - "The stages, from SGLang's own log lines (0.5.9's; 0.5.23 names the graphs, C(Capture target decode cuda
    graph begin), and says C(KV Cache is allocated. dtype: ...), which match too), in boot order:
    C(starting); C(joining the process group) (C(Init parallel begin) in 0.5.23, C(Init torch distributed
    begin) in 0.5.9; across nodes, a boot that stays there waits for a node that has not joined);
    C(loading weights) with shard k/n and percent from
    C(Loading safetensors checkpoint shards: NN% Completed | k/n) or, where loading is multi-threaded (the
    default from 0.5.10), C(Multi-thread loading shards: NN% Completed | k/n) (C(weight_utils.py), tqdm with
    C(BAR_FORMAT) from C(utils/common.py)); C(loading the draft model) (a second C(Load weight begin) on a
    rank, the speculative draft's); C(allocating the KV cache) (after C(Load weight end), until
    C(KV Cache is allocated.) with its token count); C(capturing CUDA graphs) (C(Capture cuda graph begin), with
    C(Capturing batches ... k/n) when logged); C(warming up) (C(Capture cuda graph end) or the
    scheduler's C(max_total_num_tokens=) line, until the warm-up request is answered); C(ready)."
  - Rank prefixes such as C([2026-01-02 03:04:05 TP3]) and a worker prefix such as C(Worker_TP0 pid=1) in
    parentheses are read by the one parser module_utils/sglang_journal.py shares with sglang_boot_facts.
  - When the unit has failed, stopped or crashed into an automatic restart, fails at once with the last
    journal lines instead of waiting out the timeout.
  - Changes nothing.
version_added: "1.0.0"
author: sglang-longctx maintainers (!UNKNOWN)
options:
  url:
    description: Base URL of the server.
    type: str
    default: http://127.0.0.1:30000
  unit:
    description: The systemd unit running it.
    type: str
    default: sglang
  timeout:
    description:
      - Seconds the unit's current run may take to answer, counted from when systemd started it; a try
        after that fails with the last journal lines.
    type: int
    default: 1800
  poll:
    description:
      - Seconds one try polls before it returns the boot's stage with C(ready=false), for a retried task.
      - Unset, one call waits until SGLang answers, dies or runs past O(timeout) (no progress lines).
    type: int
  api_key:
    description:
      - The server's C(--api-key), sent as a bearer token. SGLang 0.4-0.5 lets /health* through without it;
        sending it keeps the wait working on builds that do not.
    type: str
notes:
  - Supports check mode.
"""

EXAMPLES = r"""
- name: Wait for SGLang to answer /health_generate
  sglang_wait_ready:
    timeout: 1800
  register: ready
  until: ready is failed or ready.ready
  retries: 200
  delay: 2
"""

RETURN = r"""
ready:
  description: Whether /health_generate answered during this try.
  type: bool
  returned: always
stage:
  description: >-
    The boot's stage - starting, loading weights, loading the draft model, allocating the KV cache,
    capturing CUDA graphs, warming up, ready.
  type: str
  returned: always
progress:
  description: One line for people, e.g. C(loading weights 24/64 (37%), 1m12s, avail mem 45.10 GB).
  type: str
  returned: always
shard:
  description: The last checkpoint shard loaded and how many there are, C([k, n]); null before the first.
  type: list
  elements: int
  returned: always
percent:
  description: SGLang's percent of the shards loaded (or of the CUDA graphs captured); null when not logged.
  type: int
  returned: always
avail_mem_gib:
  description: The last C(avail mem) SGLang logged (GiB, "GB" in its log), any rank.
  type: float
  returned: always
kv_tokens:
  description: "The pool SGLang allocated (the C(#tokens) of C(KV Cache is allocated.)), once logged."
  type: int
  returned: always
elapsed_s:
  description: Seconds since systemd started the unit's current run.
  type: float
  returned: always
last_log_line:
  description: The unit's last journal line.
  type: str
  returned: always
"""

import time
from urllib.error import HTTPError, URLError

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.sglang_errors import failures_as_sentences
from ansible.module_utils.sglang_http import error_body, open_bearer, read_bounded
from ansible.module_utils.sglang_journal import boot_progress
from ansible.module_utils.sglang_systemd import JOURNAL_LIMIT, run, unit_name_problem
from ansible.module_utils.sglang_text import duration

__all__ = ["boot_progress", "progress_line"]


def progress_line(state, elapsed_s):
    """'loading weights 24/64 (37%), 1m12s, avail mem 45.10 GB'."""
    stage = state["stage"]
    parts = [stage]
    if stage in ("loading weights", "loading the draft model") and state["shard"]:
        parts[0] += " %d/%d (%d%%)" % (state["shard"][0], state["shard"][1], state["percent"] or 0)
    elif stage == "capturing CUDA graphs" and state["graphs"]:
        parts[0] += " %d/%d" % tuple(state["graphs"])
    elif stage in ("capturing CUDA graphs", "warming up", "ready") and state["kv_tokens"]:
        parts[0] += " (pool %s tokens)" % format(state["kv_tokens"], ",")
    parts.append(duration(elapsed_s))
    if state["avail_mem_gib"] is not None:
        parts.append("avail mem %.2f GB" % state["avail_mem_gib"])
    return ", ".join(parts)


def main():
    module = AnsibleModule(argument_spec={
        "url": {"type": "str", "default": "http://127.0.0.1:30000"},
        "unit": {"type": "str", "default": "sglang"},
        "timeout": {"type": "int", "default": 1800},
        "poll": {"type": "int"},
        "api_key": {"type": "str", "no_log": True},
    }, supports_check_mode=True)
    with failures_as_sentences(module, "sglang_wait_ready"):
        params = module.params
        unit = params["unit"]
        if unit_name_problem(unit):
            module.fail_json(msg="unit %r %s: give the service's name (sglang_service_name, e.g. sglang)."
                             % (unit[:80], unit_name_problem(unit)))
        # systemctl and journalctl with a deadline and a size limit (sglang_systemd.run): a hung systemd fails the
        # wait with a sentence instead of holding it past its own timeout

        def journal(*args):
            return run(module, ["--no-pager", "-o", "cat"] + list(args), limit=JOURNAL_LIMIT, program="journalctl")[1]

        def show():
            out = run(module, ["show", "-p", "ActiveState", "-p", "SubState", "-p", "NRestarts", "-p", "InvocationID",
                               "-p", "ExecMainStartTimestampMonotonic", "--", unit])[1]
            return dict(line.split("=", 1) for line in out.splitlines() if "=" in line)

        def elapsed(props):
            started_us = int(props.get("ExecMainStartTimestampMonotonic") or 0)
            # systemd and time.monotonic() read the same CLOCK_MONOTONIC.
            return round(time.monotonic() - started_us / 1e6, 1) if started_us else 0.0

        def state_now(props):
            text = journal("_SYSTEMD_INVOCATION_ID=" + props["InvocationID"]) if props.get("InvocationID") else ""
            return boot_progress(text)

        def result(props, ready, state):
            seconds = elapsed(props)
            if ready:
                state = dict(state, stage="ready")
            return dict(changed=False, ready=ready, stage=state["stage"], progress=progress_line(state, seconds),
                        shard=state["shard"], percent=state["percent"], avail_mem_gib=state["avail_mem_gib"],
                        kv_tokens=state["kv_tokens"], elapsed_s=seconds,
                        last_log_line=journal("-n", "1", "-u", unit).strip())

        first = show()
        restarts_before = int(first.get("NRestarts") or 0)
        try_start = time.monotonic()
        last = "no answer yet"
        while True:
            try:
                url = params["url"].rstrip("/") + "/health_generate"
                read_bounded(open_bearer(url, params["api_key"], timeout=60), what=url)
                props = show()
                module.exit_json(**result(props, True, state_now(props)))
            except HTTPError as error:
                last = ("HTTP %d %s" % (error.code, error_body(error)[:200])).strip()
            except (URLError, OSError, ValueError) as error:
                last = str(getattr(error, "reason", error))
            props = show()
            active, sub = props.get("ActiveState", ""), props.get("SubState", "")
            # Restart=on-failure makes a crashing server look "activating (auto-restart)": that is a death.
            crashed = sub == "auto-restart" or int(props.get("NRestarts") or 0) > restarts_before
            if active in ("failed", "inactive") or crashed:
                how = "restarting after a crash" if active not in ("failed", "inactive") else active
                module.fail_json(msg="%s is %s: SGLang stopped while starting. Its last lines:\n%s"
                                     % (unit, how, journal("-n", "15", "-u", unit).strip()),
                                 **result(props, False, state_now(props)))
            if elapsed(props) > params["timeout"]:
                state = state_now(props)
                stage = progress_line(state, elapsed(props))
                module.fail_json(msg="%s did not answer /health_generate within %d s of its start (last: %s; unit %s; "
                                     "stage: %s). Last lines:\n%s"
                                     % (params["url"], params["timeout"], last, active, stage,
                                        journal("-n", "15", "-u", unit).strip()),
                                 **result(props, False, state))
            if params["poll"] is not None and time.monotonic() - try_start >= params["poll"]:
                module.exit_json(**result(props, False, state_now(props)))
            time.sleep(2)


if __name__ == "__main__":
    main()
