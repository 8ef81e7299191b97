"""The proof level (lib/sglang_state/proof_level.py): full on any change or when old, else the cheap check."""

from datetime import UTC, datetime, timedelta

import pytest
from sglang_state import (
    ProofLevelError,
    live_state,
    proof_level,
    proof_ran,
    proof_record,
    server_proof_level,
    serving_process,
)

NOW = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
FILES = {"sglang.service": "aa", "sglang.env": "bb", "sglang.yaml": "cc"}
PROCESS = {"invocation_id": "1f2e", "main_pid": "4242", "exec_main_start": "Tue 2026-12-01 08:00:00 UTC"}
VERSIONS = {"sglang": "0.5.23", "ddtree-kernels": "0.3.1"}
SMOKE = {"pool_tokens": 200064, "context_length": 200000, "prompt_tokens": 196004}


def live(**changes):
    state = {"entry": "20261201T080000000000Z", "files": dict(FILES), "process": dict(PROCESS),
             "versions": dict(VERSIONS), "context_target": 200000}
    state.update(changes)
    return state


def record(days_ago=1.0, **changes):
    made = proof_record(live(), SMOKE, at=(NOW - timedelta(days=days_ago)).isoformat(timespec="seconds"))
    made.update(changes)
    return made


def test_nothing_changed_is_a_check_that_expects_the_proven_pool_and_context():
    got = proof_level(live(), record(), now=NOW)
    assert got["level"] == "check"
    assert got["expect"] == {"pool_tokens": 200064, "context_length": 200000}
    assert got["last_full_at"] == "2026-11-30T09:00:00+00:00" and "2026-11-30T09:00:00+00:00" in got["reason"]


@pytest.mark.parametrize(("live_changes", "reason"), [
    ({"changed_this_run": True}, "changed the unit"),
    ({"restarted_this_run": True}, "(re)started"),
    ({"runtime_changed": True}, "changed the virtualenv"),
    ({"entry": None}, "match no entry"),
    ({"entry": "20261101T000000000000Z"}, "not the proven ones"),
    ({"files": dict(FILES, **{"sglang.yaml": "dd"})}, "not the proven ones"),
    ({"process": dict(PROCESS, invocation_id="9e9e")}, "InvocationID 1f2e -> 9e9e"),
    ({"process": dict(PROCESS, main_pid="5151")}, "MainPID 4242 -> 5151"),
    ({"process": dict(PROCESS, main_pid="0")}, "not running"),
    ({"versions": dict(VERSIONS, sglang="0.5.24")}, "sglang 0.5.23 -> 0.5.24"),
    ({"context_target": 150000}, "context target is 150000"),
])
def test_any_difference_from_the_proven_state_asks_for_the_full_proof_and_says_which(live_changes, reason):
    got = proof_level(live(**live_changes), record(), now=NOW)
    assert got["level"] == "full" and reason in got["reason"], got
    assert got["expect"] == {}


def test_asked_for_full_is_full_even_when_nothing_changed():
    got = proof_level(live(), record(), asked="full", now=NOW)
    assert got == {"level": "full", "reason": "asked for (sglang_proof=full)",
                   "last_full_at": "2026-11-30T09:00:00+00:00", "expect": {}}


def test_never_proven_is_full():
    for nothing in (None, {}):
        got = proof_level(live(), nothing, now=NOW)
        assert got["level"] == "full" and "no full proof recorded" in got["reason"] and got["last_full_at"] is None


def test_a_proof_older_than_the_knob_is_repeated_in_full():
    assert proof_level(live(), record(days_ago=6.9), now=NOW)["level"] == "check"
    got = proof_level(live(), record(days_ago=7.5), now=NOW)
    assert got["level"] == "full" and "7.5 days old" in got["reason"] and "sglang_reprove_after_days=7" in got["reason"]
    assert proof_level(live(), record(days_ago=2), reprove_after_days=1, now=NOW)["level"] == "full"
    assert proof_level(live(), record(days_ago=0.01), reprove_after_days=0, now=NOW)["level"] == "full"


def test_a_record_of_another_format_or_with_an_unreadable_time_is_full():
    assert "format 0" in proof_level(live(), record(format=0), now=NOW)["reason"]
    assert "cannot be read" in proof_level(live(), record(full_at="yesterday"), now=NOW)["reason"]


@pytest.mark.parametrize(("asked", "days", "named"), [
    ("check", 7, "sglang_proof is 'check'"), ("FULL", 7, "sglang_proof"),
    ("auto", -1, "sglang_reprove_after_days is -1"), ("auto", "weekly", "sglang_reprove_after_days is 'weekly'"),
    ("auto", True, "sglang_reprove_after_days is True"),
])
def test_bad_knobs_are_refused_by_name_with_the_fix(asked, days, named):
    with pytest.raises(ProofLevelError, match="give") as caught:
        proof_level(live(), record(), asked=asked, reprove_after_days=days, now=NOW)
    assert named in str(caught.value)


def test_the_record_holds_what_the_next_decision_compares():
    made = proof_record(live(), SMOKE, at="2026-12-01T09:00:00+00:00")
    assert made["entry"] == live()["entry"] and made["files"] == FILES and made["process"] == PROCESS
    assert made["versions"] == VERSIONS and made["pool_tokens"] == 200064 and made["context_length"] == 200000
    assert made["full_at"] == "2026-12-01T09:00:00+00:00"
    assert proof_record(live(), SMOKE)["full_at"].startswith(str(datetime.now(UTC).year))


def test_a_server_across_nodes_is_proven_in_full_when_any_node_needs_it():
    check = {"level": "check", "reason": "nothing changed"}
    full = {"level": "full", "reason": "this run (re)started SGLang"}
    assert server_proof_level(check, [check, full, check]) == full
    assert server_proof_level(check, [check, check]) == check
    assert server_proof_level(check, []) == check


def test_the_proof_that_ran_is_the_full_one_a_check_escalated_to_with_its_reason():
    planned = {"level": "check", "reason": "nothing changed", "last_full_at": "x", "expect": {"pool_tokens": 1}}
    got = proof_ran(planned, {"level": "full", "escalated": "the pool is 100, the proof had 200"})
    # the full proof that ran is the last one: its time is its record's, not the one before
    assert got == dict(planned, level="full", reason="the pool is 100, the proof had 200", last_full_at=None)
    assert proof_ran(planned, {"level": "check", "escalated": None}) == planned
    assert proof_ran(dict(planned, level="full"), {"failed": True}) == dict(planned, level="full", last_full_at=None)


def test_the_serving_process_is_the_proven_one_only_when_the_same_start_still_runs():
    props = {"InvocationID": "1f2e", "MainPID": "4242", "ExecMainStartTimestamp": "Tue 2026-12-01 08:00:00 UTC"}
    got = serving_process(props, record())
    assert got == {"process": PROCESS, "proven": True}
    assert serving_process(dict(props, MainPID="4343"), record())["proven"] is False
    assert serving_process(props, {})["proven"] is False


def test_a_unit_not_installed_yet_runs_nothing_proven():
    got = serving_process({"InvocationID": "", "MainPID": "0", "ExecMainStartTimestamp": ""}, record(process={
        "invocation_id": "", "main_pid": "0", "exec_main_start": ""}))
    assert got == {"process": {"invocation_id": "", "main_pid": "0", "exec_main_start": ""}, "proven": False}
    assert serving_process({}, None)["process"]["main_pid"] == "0"


ENTRY = {"name": "20261201T080000000000Z", "current": True, "files": dict(FILES)}


BEFORE = {"entries": [{"name": "20261101T000000000000Z", "current": False}, ENTRY]}


def test_the_live_state_is_what_the_deploy_noted_and_the_entry_marked_current():
    assert live_state(BEFORE, False, False, False, dict(PROCESS), dict(VERSIONS), "200000") == \
        dict(live(), changed_this_run=False, restarted_this_run=False, runtime_changed=False)
    got = live_state(BEFORE, True, True, True, dict(PROCESS), dict(VERSIONS), 200000)
    assert got["changed_this_run"] and got["restarted_this_run"] and got["runtime_changed"]


def test_a_rollback_that_ran_no_deploy_has_no_entry_to_compare():
    got = live_state({}, False, True, False, dict(PROCESS), None, 200000)
    assert got["entry"] is None and got["files"] == {} and got["versions"] == {}


@pytest.mark.parametrize("flag", ["true", "False", 1, None])
def test_a_flag_that_is_not_a_boolean_is_refused_not_guessed(flag):
    # The role passes its flags through Ansible's bool; a string here means a caller forgot, and reading it as
    # Python truth would turn "False" into a change.
    with pytest.raises(ProofLevelError, match="changed_this_run"):
        live_state(BEFORE, flag, False, False, dict(PROCESS), dict(VERSIONS), 200000)


def level(changed=False, target=200000):
    own = live_state(BEFORE, changed, False, False, dict(PROCESS), dict(VERSIONS), target)
    return proof_level(own, record(), "auto", 7, NOW)


def test_a_node_that_changed_makes_the_whole_server_prove_in_full():
    got = server_proof_level(level(), [level(), level(changed=True)])
    assert got["level"] == "full" and got["reason"].startswith("this run changed")
    assert server_proof_level(level(), [level()])["level"] == "check"


def test_a_server_whose_nodes_changed_nothing_is_checked_against_this_node_s_record():
    got = server_proof_level(level(), [level(), level()])
    assert got["level"] == "check" and got["expect"] == {"pool_tokens": 200064, "context_length": 200000}
    assert server_proof_level(level(target=100000), [level(target=100000)])["level"] == "full"  # another target


