"""The rescue proves what it restored, as a rollback proves its restore (issue 48, "Lost on day 2"): the check at
least (lib/sglang_state/rescue.py restored_proof*), run by roles/sglang/tasks/rescue.yml with sglang_prove's prove
phase, then the end phase (lib/sglang_state/transaction_rescue.py) records it and says whether the restored state
proved. And on day 2 the rescue goes back to the state that served, proven, most recently."""

import itertools
import os
from datetime import UTC, datetime, timedelta

import pytest
import sglang_backup_store as store_module
import yaml
from sglang_state import transaction_rescue
from sglang_state.rescue import (
    rescue_action,
    rescue_message,
    rescue_node,
    restored_proof,
    restored_proof_mark,
    restored_proof_outcome,
)
from sglang_state.transaction import PhaseFailed

REPO = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir)
KEY = "sk-day2-secret"
ENTRY = {"name": "20261201T090000000000Z", "context_target": 200_000, "current": True,
         "proven": {"at": "2026-12-01T11:00:00+00:00", "pool_tokens": 200_230, "context_length": 200_000}}
CHECKED = {"phase": "prove", "smoke": {"level": "check", "pool_tokens": 200_230, "context_length": 200_000,
                                       "prompt_tokens": 38, "failed": False}}


def test_probe6_day2_the_rescue_plans_the_check_against_the_entry_s_own_proof_and_target():
    planned = restored_proof(ENTRY)
    assert planned["planned"]["level"] == "check" and ENTRY["name"] in planned["planned"]["reason"]
    assert planned["planned"]["expect"] == {"pool_tokens": 200_230, "context_length": 200_000}
    # the entry's own target, not the inventory's; the check's own needle, not this run's sglang_smoke_expect
    assert planned["smoke"] == {"context_target": 200_000, "min_pool_tokens": 200_000, "expect": None}
    # an entry known but never proven (a host whose store had no proof yet): no expectation, its own target
    unproven = restored_proof({"name": "x", "context_target": 150_000, "proven": None})
    assert unproven["planned"]["expect"] == {} and unproven["smoke"]["context_target"] == 150_000
    # odd values are no expectation (the check then compares the capacity only); no target: the smoke's is left out
    odd = restored_proof({"name": "y", "context_target": 0, "proven": {"pool_tokens": True, "context_length": "1"}})
    assert odd["planned"]["expect"] == {} and odd["smoke"]["context_target"] is None is odd["smoke"]["min_pool_tokens"]


@pytest.mark.parametrize(("proved", "passed", "said"), [
    (CHECKED, True, "It proved again with the check (pool 200230 tokens, context length 200000, a 38-token "
                    "prompt answered, as proven)."),
    ({"smoke": {"level": "full", "escalated": "the check found pool 190,000 tokens, proven 200,230",
                "pool_tokens": 190_000, "context_length": 200_000, "prompt_tokens": 196_004}}, True,
     "It proved again in full (the check found pool 190,000 tokens, proven 200,230): pool 190000 tokens"),
    ({"smoke": {"failed": True, "msg": "The KV pool holds 100 tokens. Its last lines:\nTraceback"}}, False,
     "The restored state did not prove: The KV pool holds 100 tokens."),
    (None, False, "The restored state did not prove: ct200, rank 0, ran no proof of it (its own rescue failed)."),
    ({"msg": "sglang_prove (phase prove): unknown option 'x'"}, False,
     "ran no proof of it (sglang_prove (phase prove): unknown option 'x')."),
])
def test_probe6_day2_the_outcome_of_the_restored_state_s_proof(proved, passed, said):
    outcome = restored_proof_outcome(proved, "ct200")
    assert outcome[0] is passed and said in outcome[1]
    assert "Traceback" not in outcome[1]  # the journal excerpt goes: the message ends with the journal once


def test_probe6_day2_what_the_store_records_a_check_moves_the_time_a_full_proof_its_measurements():
    assert restored_proof_mark(CHECKED["smoke"])["level"] == "check"
    full = restored_proof_mark({"level": "full", "pool_tokens": 1, "prompt_tokens": 2, "msg": "x"})
    assert full["level"] == "full" and full["pool_tokens"] == 1 and "msg" not in full


class Host:
    """The end phase's one module: the backup store's proven mark (failing when told to)."""

    def __init__(self, store_fails=False):
        self.calls, self.store_fails = [], store_fails

    def module(self, name, args, secret=False):
        self.calls.append((name, args))
        assert name == "sglang_backup_store" and args["state"] == "proven"
        return {"failed": True, "msg": "disk full"} if self.store_fails else {"changed": True, "name": ENTRY["name"]}


def _said():
    decided = dict(rescue_node({"status": -1}, [ENTRY], ENTRY["name"], "", "sglang is failed: it stopped."),
                   action="restore")
    facts = {"service": "sglang", "rescue_from": "", "journal": "started with api_key=<api key>",
             "current": ENTRY["name"], "entry": ENTRY, "versions_now": {}}
    return {"decided": decided, "facts": facts}


def _end(host, proved):
    run = {"restored": ENTRY["name"]}
    with pytest.raises(PhaseFailed) as failed:
        transaction_rescue.end(host, {"said": _said(), "proved": proved, "rank0": "ct200",
                                      "store": {"dir": "/b", "keep": 5}, "files": ["/etc/sglang.service"],
                                      "api_key": KEY}, run)
    return str(failed.value), run


def test_probe6_day2_a_passed_proof_is_recorded_and_the_replica_may_rejoin_its_routers():
    host = Host()
    message, run = _end(host, CHECKED)
    assert message.startswith("sglang is failed: it stopped. Restored the last proven state 20261201T090000000000Z "
                              "(context 200000), which serves again (always, for a start that never became "
                              "healthy). It proved again with the check (")
    assert message.endswith("Last lines of sglang's journal before the rescue:\nstarted with api_key=<api key>")
    ((_, mark),) = host.calls
    assert mark["proof"]["level"] == "check" and mark["files"] == ["/etc/sglang.service"] and mark["dir"] == "/b"
    assert run["restored_serves"] is True


def test_probe6_day2_a_failed_proof_says_the_restored_state_did_not_prove_and_records_nothing():
    host = Host()
    failed = {"phase": "prove", "smoke": {"failed": True, "msg": "the answer did not match /\\b4242\\b/"}}
    message, run = _end(host, failed)
    assert "which serves again (always, for a start that never became healthy). The restored state did not " \
           "prove: the answer did not match" in message
    assert host.calls == [] and "restored_serves" not in run  # unproven: it stays out of its routers


def test_probe6_day2_a_proof_the_store_cannot_record_is_said_and_the_rest_kept():
    message, run = _end(Host(store_fails=True), CHECKED)
    assert "It proved again with the check" in message and "Recording that proof in the backup store failed: " \
                                                             "disk full" in message
    assert run["restored_serves"] is True and KEY not in message


def test_probe6_day2_the_rescue_after_a_failed_upgrade_restores_the_state_that_served_proven_last(tmp_path):
    # deploy A 200k, deploy B 150k, roll back to A (proven again), upgrade C fails: the store's facts, as the
    # rescue's look reads them, name A, and the message says context 200000
    etc = tmp_path / "etc"
    etc.mkdir()
    files = [str(etc / "sglang.service"), str(etc / "sglang.env")]
    ticks = itertools.count()
    store = store_module.Store(str(tmp_path / "b"), files,
                               now=lambda: datetime(2026, 12, 1, 9, tzinfo=UTC) + timedelta(minutes=next(ticks)))

    def deploy(target, release):
        (etc / "sglang.service").write_text('ExecStart=x "--context-length" "%d"\n' % target)
        (etc / "sglang.env").write_text("RELEASE=%s\n" % release)

    deploy(200_000, "0.5.9")
    a = store.mark_proven({"pool_tokens": 200_230}, {})[0]
    deploy(150_000, "0.5.9")
    store.mark_proven({"pool_tokens": 150_102}, {})
    store.restore(a)
    store.mark_proven({"pool_tokens": 200_230}, {})
    deploy(200_000, "0.6.0")
    store.add({"reason": "deployed"})
    facts = store_module.store_facts(store)
    decided = rescue_action(rescue_node({"status": -1}, facts["entries"], facts["last_proven"], "", "boom"),
                            {"ct200": facts["entries"]})
    assert decided["action"] == "restore" and decided["target"] == a
    entry = next(e for e in facts["entries"] if e["name"] == a)
    text = rescue_message(decided, {"service": "sglang", "entry": entry, "journal": "",
                                    "proof": restored_proof_outcome(CHECKED, "ct200")[1]})
    assert "Restored the last proven state %s (context 200000)" % a in text and "It proved again" in text


def _tasks(path):
    with open(os.path.join(REPO, path)) as handle:
        return yaml.safe_load(handle)


def test_probe6_day2_rescue_yml_proves_the_restore_between_the_rescue_and_the_end():
    tasks = _tasks("roles/sglang/tasks/rescue.yml")
    steps = [(next(k for k in task if k.startswith("sglang_")), task) for task in tasks if
             any(k.startswith("sglang_") for k in task)]
    assert [(module, task[module]["phase"]) for module, task in steps] == [
        ("sglang_rescue", "look"), ("sglang_rescue", "rescue"), ("sglang_prove", "prove"), ("sglang_rescue", "end")]
    rescue, prove, end = (task for _, task in steps[1:])
    # what the rescue decided, the restored entry's proof and rank 0's result are read from this run's record by the
    # actions (tests/unit/test_rescue_proof_play.py runs these tasks): the role hands none of them on
    assert end["register"] == "_sglang_rescue_end"  # routers_back.yml reads the end's run
    assert prove["failed_when"] is False and "register" not in rescue
    assert set(prove["sglang_prove"]) == {"phase", "on_rank0", "batch", "smoke", "config_path", "progress_file",
                                          "limit"}
    assert set(end["sglang_rescue"]) == {"phase", "rank0", "store", "files", "api_key"}
    # the key the restored state serves with is read from its own config by the proof (config_path)
    assert prove["sglang_prove"]["config_path"] == "{{ _sglang_config_path }}"
    assert not [task for task in tasks if "ansible.builtin.slurp" in task]
