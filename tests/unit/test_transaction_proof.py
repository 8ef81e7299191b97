"""The transaction's proof phases (lib/sglang_state/transaction_proof.py) over a fake host: the record and the
serving process read at the start of a run, this node's proof decided from them and the deploy's run, and after the
proof the proven mark and the record (a check writes nothing; a failed proof marks nothing)."""

import json
import os
import tempfile

import pytest
import sglang_unit_state
from sglang_state import transaction_proof as proof
from sglang_state.transaction import PhaseFailed

PROCESS = {"Id": "sglang.service", "InvocationID": "1f2e", "MainPID": "4242",
           "ExecMainStartTimestamp": "Tue 2026-12-01 08:00:00 UTC"}
SMOKE = {"ok": True, "level": "full", "pool_tokens": 200064, "min_pool_tokens": 200000, "context_target": 200000,
         "context_length": 200000, "prompt_tokens": 196004, "elapsed_s": 41.0, "decode": {"tokens": 16}}


class FakeHost:
    def __init__(self, record=None, process=PROCESS, record_bytes=None):
        self.record_bytes = record_bytes if record_bytes is not None else (
            json.dumps(record).encode() if record is not None else None)
        self.process, self.calls, self.copied = process, [], None

    def module(self, name, args, secret=False):
        self.calls.append((name, args.get("state")))
        if name == "sglang_unit_state":
            result = {"properties": dict(self.process)}
            if args.get("record"):  # the record file on the fake host, read by the module's own reader
                with tempfile.TemporaryDirectory() as folder:
                    path = os.path.join(folder, "last-full-proof.json")
                    if self.record_bytes is not None:
                        with open(path, "wb") as handle:
                            handle.write(self.record_bytes)
                    result["record"], result["record_problem"] = sglang_unit_state.read_record(path)
            return result
        if name == "sglang_backup_store":
            return {"changed": True, "name": "e2", "entries": [{"name": "e2", "files": {"unit": "abc"}}]}
        raise AssertionError(name)

    def copy(self, args):
        self.copied = args
        return {"changed": True}

    @staticmethod
    def to_json(value):
        return json.dumps(value)


def test_a_host_never_proven_has_no_record_and_needs_the_full_proof():
    host = FakeHost()
    seen = proof.observe(host, {"record_path": "/b/last-full-proof.json", "service": "sglang"})
    assert seen["record"] == {} and seen["proven"] is False and seen["process"]["main_pid"] == "4242"
    decided = proof.decide(host, {"record": {}, "service": "sglang", "context_target": 200000}, {})
    assert decided["own"]["level"] == "full"


@pytest.mark.parametrize("data", [b"{not json", b"[1, 2]", b"\xff\xfe", b"[" * 100000 + b"]" * 100000])
def test_an_unreadable_record_counts_as_none(data):
    assert proof.observe(FakeHost(record_bytes=data), {"record_path": "/r", "service": "sglang"})["record"] == {}


def test_the_record_a_full_proof_left_lets_a_re_run_only_check():
    host = FakeHost()
    live = proof.decide(host, {"record": {}, "service": "sglang", "context_target": 200000}, {})["live"]
    recorded = proof.record(host, {"planned": {"level": "full", "reason": "never proven"}, "smoke": SMOKE,
                                   "live": live, "store": {"dir": "/b", "keep": 5, "lock_owner": "t"},
                                   "files": ["/etc/systemd/system/sglang.service"], "manifest": {"reason": "deployed"},
                                   "record_path": "/b/last-full-proof.json"}, {})
    assert ("sglang_backup_store", "proven") in host.calls and recorded["level"]["level"] == "full"
    record = json.loads(host.copied["content"])
    assert host.copied["mode"] == "0600" and record["entry"] == "e2" and record["pool_tokens"] == 200064
    # the next run: same process, nothing changed -> a check, holding the server to the proven pool and context
    again = FakeHost(record=record)
    seen = proof.observe(again, {"record_path": "/r", "service": "sglang"})
    assert seen["proven"] is True
    decided = proof.decide(again, {"record": seen["record"], "service": "sglang", "context_target": 200000},
                           {"before": {"entries": [{"name": "e2", "current": True, "files": {"unit": "abc"}}]}})
    assert decided["own"]["level"] == "check", decided["own"]
    assert decided["own"]["expect"]["pool_tokens"] == 200064


def test_a_check_writes_nothing_and_a_failed_proof_marks_nothing():
    host = FakeHost()
    args = {"planned": {"level": "check", "reason": "nothing changed"}, "smoke": dict(SMOKE, level="check"),
            "live": {}, "store": {}, "files": [], "manifest": {}, "record_path": "/r"}
    checked = proof.record(host, args, {})
    assert checked["level"]["level"] == "check" and host.calls == [] and host.copied is None
    with pytest.raises(PhaseFailed, match="401"):
        proof.record(host, dict(args, smoke={"failed": True, "msg": "the server answered 401"}), {})
    assert host.calls == [] and host.copied is None


def test_a_bad_proof_knob_is_a_sentence_not_a_traceback():
    with pytest.raises(PhaseFailed, match="sglang_reprove_after_days"):
        proof.decide(FakeHost(), {"record": {}, "service": "sglang", "context_target": 200000,
                                  "reprove_after_days": "soon"}, {})


class ProvingHost:
    """rank 0 as the prove phase sees it: the smoke module (sync for a check, an async job for the full proof)."""

    def __init__(self, tries=2, answer=None):
        self.tries, self.answer = tries, answer or dict(SMOKE, invocation={"module_args": {"api_key": "***"}})
        self.calls, self.said, self.clock = [], [], 0.0

    def module(self, name, args, secret=False):
        self.calls.append((name, dict(args)))
        if name == proof.SMOKE_MODULE:
            return dict(self.answer)
        if name == proof.PROGRESS_MODULE:
            self.tries -= 1
            return {"finished": self.tries < 0, "progress": "proof: prefill started, 196,004 prompt tokens, 5s"}
        if name == "ansible.builtin.async_status":
            assert args == {"jid": "j1", "_async_dir": "/root/.ansible_async"}
            return dict(self.answer, finished=1, ansible_job_id="j1", results_file="/root/.ansible_async/j1")
        raise AssertionError(name)

    def module_async(self, name, args, limit):
        self.calls.append((name + " (async %d s)" % limit, dict(args)))
        return {"ansible_job_id": "j1", "results_file": "/root/.ansible_async/j1", "started": 1, "finished": 0}

    def monotonic(self):
        return self.clock

    def sleep(self, seconds):
        self.clock += seconds

    def say(self, line):
        self.said.append(line)


PROVE = {"on_rank0": True, "progress_file": "/run/p.json", "limit": 900, "concurrent_requests": 8,
         "smoke": {"url": "http://127.0.0.1:30000", "api_key": "", "context_target": 200000, "min_pool_tokens": None,
                   "prompt_tokens": "auto", "expect": ""}}


def test_a_check_is_one_short_request_holding_the_pool_and_context_the_record_expects():
    host = ProvingHost()
    planned = {"level": "check", "expect": {"pool_tokens": 200064, "context_length": None}}
    ran = proof.prove(host, dict(PROVE, planned=planned), {})
    [(name, args)] = host.calls
    assert name == proof.SMOKE_MODULE and args["level"] == "check" and args["expect_pool_tokens"] == 200064
    # empty arguments are left to the module's defaults; no key, no context to expect
    assert not {"api_key", "expect", "min_pool_tokens", "expect_context_length", "concurrent_requests"} & set(args)
    assert ran["smoke"]["pool_tokens"] == 200064 and "invocation" not in ran["smoke"]


def test_the_full_proof_is_an_async_job_whose_stage_is_said_until_it_ends():
    host = ProvingHost(tries=2)
    ran = proof.prove(host, dict(PROVE, planned={"level": "full"}), {})
    assert host.calls[0][0] == "sglang_smoke_test (async 900 s)" and host.calls[0][1]["concurrent_requests"] == 8
    assert host.said == ["proof: prefill started, 196,004 prompt tokens, 5s"] * 2 and host.clock == 10
    assert ran["smoke"]["ok"] and not {"ansible_job_id", "results_file", "finished"} & set(ran["smoke"])


def test_a_job_that_outlives_its_backstop_is_a_failed_proof_and_other_nodes_prove_nothing():
    ran = proof.prove(ProvingHost(tries=10**6), dict(PROVE, planned={"level": "full"}, limit=30), {})
    assert ran["smoke"]["failed"] and "did not end within 30 s" in ran["smoke"]["msg"]
    other = ProvingHost()
    assert proof.prove(other, dict(PROVE, on_rank0=False, planned={"level": "full"}), {})["smoke"] is None
    assert other.calls == []


def test_decide_takes_the_process_the_start_phase_read_when_it_started_nothing():
    host = FakeHost(process={"InvocationID": "other", "MainPID": "1", "ExecMainStartTimestamp": "x"})
    process = {"invocation_id": "1f2e", "main_pid": "4242", "exec_main_start": "Tue 2026-12-01 08:00:00 UTC"}
    decided = proof.decide(host, {"record": {}, "service": "sglang", "context_target": 200000}, {"process": process})
    assert decided["process"] == process and host.calls == []  # no second systemctl show
    # a run that restarted carries no process: it is read
    decided = proof.decide(host, {"record": {}, "service": "sglang", "context_target": 200000},
                           {"restarted_this_run": True})
    assert decided["process"]["invocation_id"] == "other" and host.calls == [("sglang_unit_state", None)]


def test_the_proven_mark_keeps_the_plan_that_serves_and_a_restores_versions():
    manifest = {"reason": "deployed", "plan": "estimate", "calibrated": False, "versions": {"sglang": "0.5.23"}}
    corrected = {"sglang_kv_plan_result": {"explanation": "measured", "calibrated": True}}
    assert proof.proven_manifest(manifest, corrected) == dict(manifest, plan="measured", calibrated=True)
    # a rollback's manifest names no plan: only the restored runtime's versions are taken
    proven_only = {"reason": "proven on the host", "versions": {}}
    restored = {"sglang_venv_versions": {"sglang": "0.5.9"}}
    assert proof.proven_manifest(proven_only, restored) == dict(proven_only, versions={"sglang": "0.5.9"})
    assert proof.proven_manifest(manifest, {}) == manifest
