"""The transaction's proof phases (the long prompt itself is library/sglang_smoke_test.py, run by the role as an async
job so that its stage prints every few seconds):

  observe  the last full proof's record and the serving process (systemd's InvocationID, MainPID, start time):
           at the start of a run (the install skips its runtime check when the proven process still serves)
  decide   this node's proof: full after a change, when never proven, asked for or old; else a check
           (lib/sglang_state/proof_level.py), from the live state the deploy left and the process now
  record   which proof ran; after a passed full proof, the live state marked proven in the backup store and the
           record the next run decides from (a check writes nothing: the record stays the last full proof's)
"""

from __future__ import annotations

import base64
import binascii
import json

from sglang_state.proof_level import ProofLevelError, live_state, proof_level, proof_ran, proof_record, serving_process
from sglang_state.transaction import STORE_MODULE, PhaseFailed, succeeded

# A record is a few hundred bytes; anything much larger is not one of ours.
RECORD_LIMIT = 1 << 20


def _record(ex, path):
    """The last full proof's record, or {} when there is none or it is unreadable (then the proof is the full one)."""
    read = ex.module("ansible.builtin.slurp", {"src": path})
    if read.get("failed") or not read.get("content"):
        return {}
    try:
        data = base64.b64decode(read["content"])
        value = json.loads(data) if len(data) <= RECORD_LIMIT else None
    except (binascii.Error, ValueError, RecursionError):
        return {}
    return value if isinstance(value, dict) else {}


def _process(ex, service, record):
    shown = ex.module("ansible.builtin.command", {"argv": ["systemctl", "show", service, "-p", "InvocationID",
                                                           "-p", "MainPID", "-p", "ExecMainStartTimestamp"]})
    return serving_process(str(shown.get("stdout") or "").splitlines(), record)


def observe(ex, args):
    """args: record_path, service. {record, process, proven}."""
    record = _record(ex, args["record_path"])
    serving = _process(ex, args["service"], record)
    return {"phase": "observe", "changed": False, "record": record, **serving}


def decide(ex, args, run):
    """args: record (observe's), service, versions, runtime_changed, context_target, asked, reprove_after_days.
    run: the deploy's (its flags and the store snapshot it took; {} after a restore's run record)."""
    serving = _process(ex, args["service"], args.get("record") or {})
    try:
        live = live_state(run.get("before") or {}, bool(run.get("changed_this_run")),
                          bool(run.get("restarted_this_run")), bool(args.get("runtime_changed")),
                          serving["process"], args.get("versions") or {}, args["context_target"])
        own = proof_level(live, args.get("record") or {}, args.get("asked", "auto"),
                          args.get("reprove_after_days", 7))
    except ProofLevelError as error:
        raise PhaseFailed(str(error)) from None
    return {"phase": "decide", "changed": False, "live": live, "own": own, "process": serving["process"],
            "run": run}


def record(ex, args, run):
    """args: planned (the server's level), smoke (rank 0's result), live (decide's), store, files, manifest,
    record_path. {level, record, proven}."""
    smoke = args.get("smoke") or {}
    if smoke.get("failed"):  # rank 0's proof failed: every node of the server fails with its message
        raise PhaseFailed(smoke.get("msg") or "the proof failed")
    level = proof_ran(args["planned"], smoke)
    result = {"phase": "record", "changed": False, "level": level, "record": None, "proven": None, "run": run}
    if level.get("level") != "full":
        return result
    proof = {name: smoke.get(name) for name in ("pool_tokens", "min_pool_tokens", "context_target", "context_length",
                                                "prompt_tokens", "elapsed_s", "decode")}
    mark = dict(args["store"], files=args["files"], state="proven", manifest=args["manifest"], proof=proof)
    proven = succeeded(ex.module(STORE_MODULE, mark), "marking the live state proven in the backup store")
    entry = next((each for each in proven.get("entries") or [] if each.get("name") == proven.get("name")), {})
    made = proof_record(dict(args["live"], entry=entry.get("name"), files=entry.get("files") or {}), smoke)
    record_file = {"dest": args["record_path"], "content": ex.to_json(made), "owner": "root", "group": "root",
                   "mode": "0600"}
    succeeded(ex.copy(record_file), "keeping the proof's record")
    result.update(changed=True, record=made, proven=proven)
    return result
