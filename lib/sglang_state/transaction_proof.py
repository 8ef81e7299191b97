"""The proof's phases, run by the sglang_prove action (the long prompt itself is library/sglang_smoke_test.py, run as
an async job so that its stage prints every few seconds):

  observe  the last full proof's record and the serving process (systemd's InvocationID, MainPID, start time):
           at the start of a run (the install skips its runtime check when the proven process still serves)
  decide   this node's proof: full after a change, when never proven, asked for or old; else a check
           (lib/sglang_state/proof_level.py), from the live state the deploy left and the process now
  prove    on rank 0: the check (one short prompt, synchronous), or the full proof as an async job followed every
           few seconds, its stage printed ("proof: prefill started, 196,004 prompt tokens, 42s"); never fails itself,
           so that every node of a server reads rank 0's result in record and fails with it together
  record   which proof ran; after a passed full proof, the live state marked proven in the backup store and the
           record the next run decides from (a check writes nothing: the record stays the last full proof's)
"""

from __future__ import annotations

from sglang_state.proof_level import ProofLevelError, live_state, proof_level, proof_ran, proof_record, serving_process
from sglang_state.transaction import STORE_MODULE, PhaseFailed, read_unit, succeeded


def _process(ex, service, record):
    return serving_process(read_unit(ex, service)["properties"], record)


def observe(ex, args):
    """args: record_path, service. {record, process, proven}: one module call reads both (a missing or unreadable
    record is {}: the proof is then the full one)."""
    read = read_unit(ex, args["service"], args["record_path"])
    serving = serving_process(read["properties"], read["record"])
    return {"phase": "observe", "changed": False, "record": read["record"], **serving}


def decide(ex, args, run):
    """args: record (observe's), service, versions, runtime_changed, context_target, asked, reprove_after_days.
    run: the deploy's (its flags, the store snapshot it took, and the serving process when its start phase found it
    running and started nothing; {} after a restore's run record)."""
    serving = ({"process": run["process"]} if run.get("process")
               else _process(ex, args["service"], args.get("record") or {}))
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


SMOKE_MODULE = "sglang_smoke_test"
PROGRESS_MODULE = "async_progress"
FOLLOW_EVERY_S = 5


def _follow(ex, args, limit):
    """The full proof as an async job (a proof outlives a connection's patience), its stage said every few seconds
    (library/async_progress.py), then its result (async_status, which also removes the job's file)."""
    job = ex.module_async(SMOKE_MODULE, args, limit)
    if job.get("failed") or not job.get("ansible_job_id"):
        return job
    follow = {"results_file": job["results_file"], "progress_file": args["progress_file"]}
    deadline = ex.monotonic() + limit + 60
    while True:
        tried = ex.module(PROGRESS_MODULE, follow)
        if tried.get("failed"):
            return tried
        if tried.get("finished"):
            break
        if ex.monotonic() > deadline:
            return {"failed": True, "msg": "the proof did not end within %d s (its own deadlines should have ended "
                                           "it first)" % limit}
        if tried.get("progress"):
            ex.say(tried["progress"])
        ex.sleep(FOLLOW_EVERY_S)
    folder = job["results_file"].rsplit("/", 1)[0]
    return ex.module("ansible.builtin.async_status", {"jid": job["ansible_job_id"], "_async_dir": folder})


def prove(ex, args, run):
    """args: on_rank0 (this node serves the server's HTTP API), planned (the server's level, the same on every node),
    smoke (sglang_smoke_test's arguments; empty ones are left out), progress_file, concurrent_requests, limit.
    {smoke}: rank 0's result, failed or not (record fails with it on every node); None on the other nodes."""
    result = {"phase": "prove", "changed": False, "smoke": None, "run": run}
    if not args["on_rank0"]:
        return result
    smoke = {key: value for key, value in args["smoke"].items() if value is not None and value != ""}
    smoke["progress_file"] = args["progress_file"]
    if args["planned"]["level"] == "check":
        expect = args["planned"].get("expect") or {}
        expected = {"expect_" + key: expect[key] for key in ("pool_tokens", "context_length") if expect.get(key)}
        smoke.update(level="check", **expected)
        answer = ex.module(SMOKE_MODULE, smoke)
    else:
        smoke.update(level="full", concurrent_requests=args.get("concurrent_requests") or 0)
        answer = _follow(ex, smoke, int(args["limit"]))
    job_keys = ("invocation", "ansible_job_id", "results_file", "started", "finished")
    result["smoke"] = {key: value for key, value in answer.items() if key not in job_keys}
    return result


def proven_manifest(manifest, deployed):
    """The manifest the proven mark keeps: the role's, with what the deploy's last phase found (deployed: its facts,
    from the run record): the plan that serves, after a calibration's correction, and a restore's runtime versions."""
    kept = dict(manifest)
    plan = deployed.get("sglang_kv_plan_result")
    if isinstance(plan, dict) and "plan" in kept:
        kept.update(plan=plan.get("explanation") or "", calibrated=bool(plan.get("calibrated")))
    if isinstance(deployed.get("sglang_venv_versions"), dict):
        kept["versions"] = deployed["sglang_venv_versions"]
    return kept


def record(ex, args, run):
    """args: planned (the server's level), smoke (rank 0's result), live (decide's), store, files, manifest (as
    proven_manifest made it), record_path. {level, record, proven}."""
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
