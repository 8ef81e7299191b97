"""The transaction's proof phases (lib/sglang_state/transaction_proof.py) over a fake host: the record and the
serving process read at the start of a run, this node's proof decided from them and the deploy's run, and after the
proof the proven mark and the record (a check writes nothing; a failed proof marks nothing)."""

import base64
import json

import pytest
from sglang_state import transaction_proof as proof
from sglang_state.transaction import PhaseFailed

PROCESS = ["InvocationID=1f2e", "MainPID=4242", "ExecMainStartTimestamp=Tue 2026-12-01 08:00:00 UTC"]
SMOKE = {"ok": True, "level": "full", "pool_tokens": 200064, "min_pool_tokens": 200000, "context_target": 200000,
         "context_length": 200000, "prompt_tokens": 196004, "elapsed_s": 41.0, "decode": {"tokens": 16}}


class FakeHost:
    def __init__(self, record=None, process=PROCESS, record_bytes=None):
        self.record_bytes = record_bytes if record_bytes is not None else (
            json.dumps(record).encode() if record is not None else None)
        self.process, self.calls, self.copied = process, [], None

    def module(self, name, args, secret=False):
        self.calls.append((name, args.get("state")))
        if name == "ansible.builtin.slurp":
            if self.record_bytes is None:
                return {"failed": True, "msg": "file not found"}
            return {"content": base64.b64encode(self.record_bytes).decode()}
        if name == "ansible.builtin.command":
            return {"rc": 0, "stdout": "\n".join(self.process)}
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
