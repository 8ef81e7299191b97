"""What a deploy notes and restarts (lib/sglang_state/restarts.py) and whether a short pool is corrected
(lib/sglang_state/correction.py)."""

import pytest
from sglang_state import correction, deploy_changes, peer_restart, server_boot

BEFORE = {"name": "20261130T080000000000Z",
          "entries": [{"name": "20261129T080000000000Z", "path": "/b/20261129T080000000000Z"},
                      {"name": "20261130T080000000000Z", "path": "/b/20261130T080000000000Z"}]}


def test_a_change_notes_the_state_it_replaces_for_the_rescue():
    assert deploy_changes(True, False, "", BEFORE) == {"files_changed": True, "changed_this_run": True,
                                                      "run_backup": "/b/20261130T080000000000Z"}


def test_the_corrective_deploy_keeps_the_state_from_before_the_run_not_its_own_first_deploy():
    got = deploy_changes(True, True, "/b/20261129T080000000000Z", BEFORE)
    assert got["run_backup"] == "/b/20261129T080000000000Z"


def test_a_re_run_that_changes_nothing_notes_nothing():
    assert deploy_changes(False, False, "", BEFORE) == {"files_changed": False, "changed_this_run": False,
                                                       "run_backup": ""}
    # ... and keeps what an earlier deploy of the run noted
    assert deploy_changes(False, True, "/b/x", BEFORE)["changed_this_run"] is True


def test_a_first_install_has_no_state_to_note():
    assert deploy_changes(True, False, "", {"name": None, "entries": []})["run_backup"] == ""


# whether each node's deploy changed its files (deploy.yml gathers it from every node's renders): a and c did
CHANGED = {"a": True, "b": False, "c": True}


def test_a_node_that_changed_nothing_restarts_with_the_peers_that_changed():
    assert peer_restart(CHANGED, "b", True, False) == {"restart": True, "changed": ["a", "c"]}


def test_a_node_that_changed_restarts_by_its_own_change_not_again_as_a_peer():
    assert peer_restart(CHANGED, "a", True, True) == {"restart": False, "changed": ["c"]}
    # ... as after a corrective deploy's start: the run changed it already
    assert peer_restart(CHANGED, "b", True, True)["restart"] is False


def test_nothing_changed_anywhere_or_one_node_restarts_nothing_more():
    assert peer_restart({"a": False, "b": False}, "b", True, False) == {"restart": False, "changed": []}
    assert peer_restart({"a": True}, "a", False, False) == {"restart": False, "changed": []}
    assert peer_restart(CHANGED, "b", False, False) == {"restart": False, "changed": []}  # one node: no peers


def test_only_the_nodes_given_are_waited_for():
    # The caller passes this batch's nodes (vars/main.yml _sglang_batch_nodes): a changed peer "a" left out of the
    # dict restarts nothing here.
    assert peer_restart({"b": False}, "b", True, False)["restart"] is False
    assert peer_restart({"b": False, "z": False}, "b", True, False)["restart"] is False


def boot(pre, post, end=None, pool=200064):
    return {"found": True, "pre_load_avail_gib": pre, "post_load_avail_gib": post, "pool_end_avail_gib": end,
            "pool_tokens": pool, "changed": False}


def test_one_node_s_boot_is_its_own():
    assert server_boot({}, "h", False, boot(79.1, 40.2, 6.0)) == boot(79.1, 40.2, 6.0)


def test_a_run_that_started_nothing_read_no_boot():
    assert server_boot({}, "h", False, {"skipped": True, "changed": False}) == {"found": False}
    assert server_boot({"a": {"skipped": True}, "b": {}}, "a", True, None) == {"found": False}
    assert server_boot({}, "a", True, None) == {"found": False}  # rank 0 not gathered


def test_across_nodes_the_server_takes_the_least_free_node_and_names_it():
    boots = {"a": boot(79.5, 41.0, 7.0), "b": boot(79.0, 40.5, None), "c": boot(79.9, 40.1, 6.5),
             "d": {"found": False}, "e": {"skipped": True}}
    got = server_boot(boots, "a", True, boots["b"])
    assert got["pre_load_avail_gib"] == 79.0 and got["post_load_avail_gib"] == 40.1
    assert got["pool_end_avail_gib"] == 6.5 and got["limiting_node"] == "c"
    assert got["pool_tokens"] == 200064  # rank 0's pool: the one server's


PLAN = {"max_total_tokens": 200064, "calibrated": False, "args": ["--max-total-tokens", "200064"]}
STORED = {"pre_load_avail_gib": 79.10, "post_load_avail_gib": 40.20}
OWN = {"pre_load_avail_gib": 79.10, "post_load_avail_gib": 40.20}


def test_an_estimate_that_fell_short_is_corrected_once_and_stored():
    got = correction({"p": 1}, OWN, {}, 190000, PLAN, 200000)
    assert got["correct"] is True and got["store"] is True and got["stale"] is False
    assert got["previous_args"] == PLAN["args"] and got["previous_required"] == 200064


def test_a_calibrated_plan_that_falls_short_is_not_retried_but_fails_with_the_numbers():
    assert correction({}, OWN, STORED, 190000, dict(PLAN, calibrated=True), 200000)["correct"] is False


@pytest.mark.parametrize(("moved", "stale"), [(0.01, False), (0.02, True)])
def test_a_stored_calibration_is_stale_when_the_boot_moved_more_than_the_log_s_rounding(moved, stale):
    own = dict(OWN, post_load_avail_gib=OWN["post_load_avail_gib"] - moved)
    got = correction({}, own, STORED, 190000, dict(PLAN, calibrated=True), 200000)
    assert got["stale"] is stale and got["store"] is stale and got["correct"] is stale


def test_the_stored_post_load_number_compared_is_the_logged_one():
    stored = dict(STORED, post_load_avail_gib=39.0, logged_post_load_avail_gib=40.20)
    assert correction({}, OWN, stored, 200064, PLAN, 200000)["stale"] is False


def test_a_pool_that_holds_the_plan_is_not_corrected_and_without_a_pin_the_target_counts():
    assert correction({}, OWN, STORED, 200064, PLAN, 200000)["correct"] is False
    unpinned = dict(PLAN, max_total_tokens=None)
    assert correction({}, OWN, STORED, 199999, unpinned, 200000)["correct"] is True
    assert correction({}, OWN, STORED, 199999, unpinned, 200000)["previous_required"] == 200000
