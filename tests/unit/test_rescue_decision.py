"""What the rescue does (lib/sglang_state/rescue.py), over the cases docs/when-things-go-wrong.md documents."""

import pytest
from sglang_state import failure_reason, rescue_action, rescue_message, rescue_node, without_excerpt

PROVEN = {"name": "20261130T080000000000Z", "proven": {"at": "2026-11-30T08:00:00"}, "current": False,
          "context_target": 150000, "versions": {"sglang": "0.5.22"}}
NEW = {"name": "20261201T080000000000Z", "proven": None, "current": True, "context_target": 200000}
HEALTHY, DOWN = {"status": 200}, {"status": -1, "msg": "Connection refused"}


def node(health=HEALTHY, backups=(PROVEN, NEW), last_proven=PROVEN["name"], run_backup="", failure="boom"):
    return rescue_node(health, list(backups), last_proven, run_backup, failure)


def action(part, nodes_backups=None, **kwargs):
    """The action on host "h" of a server whose nodes' store entries are nodes_backups (by default h alone,
    not read again: its part as read)."""
    return rescue_action(part, {"h": None} if nodes_backups is None else nodes_backups, **kwargs)["action"]


def test_a_start_that_never_became_healthy_always_restores_the_last_proven_state():
    part = node(health=DOWN)
    assert part["healthy"] is False and part["target"] == PROVEN["name"]
    assert action(part, rollback_on_failure=False) == "restore"


def test_a_failed_deploy_of_a_server_that_still_answers_restores_too():
    # a pool still short after the one correction, a re-plan the planner refuses: not from the proof
    assert action(node(), rescue_from="") == "restore"


def test_a_failed_proof_leaves_a_state_that_boots_for_inspection_by_default():
    assert action(node(), rescue_from="proof", rollback_on_failure=False) == "left"


def test_a_failed_proof_restores_when_sglang_rollback_on_failure_or_when_the_server_no_longer_answers():
    assert action(node(), rescue_from="proof", rollback_on_failure=True) == "restore"
    assert action(node(health=DOWN), rescue_from="proof", rollback_on_failure=False) == "restore"


def test_a_first_install_has_nothing_to_restore_and_stops():
    assert action(node(backups=[NEW], last_proven=None)) == "stop"


def test_a_store_without_proofs_goes_back_to_the_state_that_served_before_the_run():
    part = node(backups=[dict(PROVEN, proven=None), NEW], last_proven=None,
                run_backup="/var/lib/sglang/backups/20261130T080000000000Z")
    assert part["target"] == "20261130T080000000000Z" and action(part) == "restore"


LIVE_PROVEN = [dict(PROVEN, current=True)]


def test_a_live_state_proven_on_every_node_that_answers_is_kept():
    part = node(backups=LIVE_PROVEN)
    assert part["current_proven"] is True
    assert action(part, {"a": LIVE_PROVEN, "b": LIVE_PROVEN},
                  rescue_from="proof") == "kept"


def test_across_nodes_one_unproven_node_makes_every_node_restore():
    part = node(backups=LIVE_PROVEN)
    assert action(part, {"a": LIVE_PROVEN, "b": [PROVEN, NEW]}) == "restore"


def test_a_node_whose_store_was_not_read_counts_as_this_one():
    assert action(node(backups=LIVE_PROVEN), {"a": LIVE_PROVEN, "b": None}) == "kept"
    assert action(node(), {"a": LIVE_PROVEN, "b": None}) == "restore"


def test_a_rollback_is_not_rescued_by_another():
    assert action(node(health=DOWN), rolling_back=True) == "none"


def test_the_reason_drops_the_wait_s_journal_excerpt_and_keeps_the_rest_as_it_is():
    # the planner runs before the first change (plan.yml), so no planner wrapper reaches the rescue: kept as said
    wrapped = {"msg": "Task failed: The filter plugin 'sglang_kv_plan' failed: the pool does not fit."}
    assert failure_reason(wrapped) == wrapped["msg"]
    waited = {"msg": "sglang is failed: SGLang stopped while starting. Its last lines:\nTraceback\nOOM"}
    assert failure_reason(waited) == "sglang is failed: SGLang stopped while starting."
    assert failure_reason({"stderr": " no such unit \n"}, {"name": "Restart"}) == \
        'the task "Restart" failed (no such unit)'
    assert failure_reason({}, {}) == 'the task "?" failed'


def test_a_timed_out_wait_loses_its_excerpt_whatever_its_title():
    message = "http://h:30000 did not answer /health_generate within 600 s (stage: loading weights). Last lines:\nx"
    assert without_excerpt(message) == \
        "http://h:30000 did not answer /health_generate within 600 s (stage: loading weights)."
    assert without_excerpt("no excerpt here") == "no excerpt here"


FACTS = {"service": "sglang", "current": NEW["name"], "entry": PROVEN, "versions_now": {"sglang": "0.5.22"},
         "journal": "started with api_key=s3cret", "api_key": "s3cret"}


def message(part, **facts):
    return rescue_message(part, dict(FACTS, **facts))


def test_the_message_says_what_was_restored_and_why_and_redacts_the_key_in_the_journal():
    part = rescue_action(node(health=DOWN), {"h": None})
    text = message(part)
    assert text.startswith("boom Restored the last proven state 20261130T080000000000Z (context 150000), which "
                           "serves again (always, for a start that never became healthy).\n")
    assert text.endswith("Last lines of sglang's journal before the rescue:\nstarted with api_key=<api key>")
    assert "s3cret" not in text and "virtualenv" not in text


def test_the_message_names_a_virtualenv_that_differs_from_the_restored_state():
    part = rescue_action(node(), {"h": None}, rescue_from="proof", rollback_on_failure=True)
    text = message(part, rescue_from="proof", versions_now={"sglang": "0.5.23"})
    assert "(sglang_rollback_on_failure). Its virtualenv now has {\"sglang\": \"0.5.23\"} where that state ran " \
           "{\"sglang\": \"0.5.22\"} (an entry from before runtimes" in text and "rollback.yml -e" not in text


@pytest.mark.parametrize(("part", "expected"), [
    (dict(node(), action="left"), "stays running for inspection (sglang_rollback_on_failure is false); "
                                  "`ansible-playbook playbooks/rollback.yml` restores the last proven state "
                                  "20261130T080000000000Z."),
    (dict(node(backups=[NEW], last_proven=None), action="stop"),
     "There is no earlier proven state to restore (a first install?), so sglang is left stopped."),
    (dict(node(), action="kept"), "The live state is the proven entry 20261201T080000000000Z, and it serves."),
    (dict(node(), action="none"), "(A rollback is not rescued by another one;"),
    (dict(node(), action="restore-failed"), "Restoring 20261130T080000000000Z failed as well: disk full"),
])
def test_each_action_says_what_it_left(part, expected):
    assert expected in message(part, restore_failure="disk full")


def test_an_unproven_fallback_is_called_known_not_proven():
    part = rescue_action(node(backups=[NEW], last_proven=None, run_backup="/b/20261130T080000000000Z"), {"h": None})
    text = message(part, entry={"name": "20261130T080000000000Z"}, api_key="")
    assert "Restored the last known (unproven) state 20261130T080000000000Z (context ?)" in text
    assert "(always, for a failed deploy)" in text and "api_key=s3cret" in text
