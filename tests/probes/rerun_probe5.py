"""Re-run of probe 5's reproductions (../shared/reference/probe-5.md, "New defects"): each N-S5 defect's cases, as
the tests that reproduce them against the code as it is, tallied in the probe's verdicts.

A case that passes is **handled**: its test asserts what the probe found missing (a refusal by name before anything
changes, the live files kept, no secret in the output). A case that fails counts under the verdict probe 5 gave that
defect (lost, silent, unclear, leaked), so a regression shows in the column where the probe found it.

What this is not: the probe's 1,543 tries. Its harness (pw_probe.py, sf_probe.py, ...) is not in this repository;
these are its reproductions, one or more cases each, kept as standing tests.

    .venv/bin/python tests/probes/rerun_probe5.py          # ~2 minutes on 2 cores; prints the table
"""

from __future__ import annotations

import sys

import probe_rerun

# The test files, by what they test
LOCK, LOCK_PLAY = "tests/unit/test_sglang_run_lock.py", "tests/unit/test_run_lock_playbook.py"
PRUNE, TOKEN = "tests/unit/test_sglang_runtime_prune_units.py", "tests/unit/test_sglang_hf_token.py"
FILES, BUILD = "tests/unit/test_sglang_service_files.py", "tests/collection/test_build_script.py"
CHECK, CHECK_PLAY = "tests/unit/test_check_probe5.py", "tests/integration/test_check_phase_probe5.py"
REPORT_ACTION, REPORT = "tests/unit/test_run_report_read.py", "tests/unit/test_report_inputs.py"
UNIT, ROUTER = "tests/unit/test_sglang_unit_state.py", "tests/unit/test_router_module_hostile.py"

# N-S5 defect -> (what probe 5 found, its verdict, {test file: the names of its tests that reproduce it, by prefix;
# "" all of them})
REPRODUCTIONS = {
    "N-S5-1": ("two runs on one host: the prune removes the other's build", "lost", {LOCK_PLAY: [""], LOCK: [""]}),
    "N-S5-2": ("the prune removes the live runtime of a unit in another shape", "lost", {PRUNE: [""]}),
    "N-S5-3": ("sglang_hf_token walks '..', follows folder links, replaces another's token", "lost", {TOKEN: [
        "test_a_dotdot_or_odd_component", "test_a_folder_link_out_of", "test_a_home_that_is_a_link",
        "test_existing_folders_are_never_chowned", "test_another_users_token_file", "test_a_folder_of_another_user",
        "test_a_folder_swapped_for_a_link"]}),
    "N-S5-4": ("sglang_service_files writes file 1, then refuses file 2", "lost", {FILES: [
        "test_a_folder_where_the_env_file_goes", "test_a_missing_folder_of_the_third_file",
        "test_a_full_disk_on_the_second_file", "test_a_rename_refused_half_way", "test_a_really_full_disk",
        "test_a_bad_owner_group_or_mode_of_the_second_file"]}),
    "N-S5-5": ("a rollback beside a deploy reports success and does not stick", "silent", {LOCK_PLAY: [
        "test_site_and_rollback_take_the_lock", "test_two_runs_at_once"]}),
    "N-S5-6": ("router workers outside the inventory, colliding ports pass the check phase", "lost", {
        CHECK: ["test_a_worker", "test_the_router_s_metrics", "test_a_router_on_a_server_host", "test_the_health"],
        CHECK_PLAY: ["test_the_check_phase_refuses_a_router_s_bad_workers", "test_the_router_role_used_alone"]}),
    "N-S5-7": ("run facts from the inventory or -e switch the role's check off or replace its facts", "silent", {
        CHECK: ["test_a_run_fact", "test_the_old_switch"],
        CHECK_PLAY: ["test_the_role_s_own_check_runs", "test_a_run_fact_from", "test_a_private_name_from_e"]}),
    "N-S5-8": ("build.sh removes OUT/src and ships untracked files", "lost", {BUILD: [
        "test_a_folder_it_did_not_create", "test_a_file_or_a_link_as_the_output", "test_only_tracked_files"]}),
    "N-S5-9": ("sglang_service_files names a temporary file or none; modes never settle", "unclear", {FILES: [
        "test_a_missing_folder_is_named", "test_a_read_only_file_system", "test_the_same_destination_twice",
        "test_a_setuid_or_setgid_mode", "test_a_file_over_4_mib"]}),
    "N-S5-10": ("the report action returns bare Python texts and hangs on a FIFO", "unclear", {
        REPORT_ACTION: ["test_the_action_refuses_by_name", "test_a_fact_nested_past"],
        REPORT: ["test_each_argument_of_a_wrong_shape", "test_infinite_and_huge_numbers"]}),
    "N-S5-11": ("sglang_unit_state waits forever on a hung systemctl", "unclear", {UNIT: [
        "test_a_systemctl", "test_a_unit_name", "test_a_timeout_under_one_second"]}),
    "N-S5-12": ("a 252-character host name crashes plan.yml's picture", "unclear", {
        CHECK: ["test_a_host_name_too_long"], REPORT: ["test_a_252_character_host"],
        CHECK_PLAY: ["test_a_host_name_too_long"]}),
    "N-S5-13": ("the report action and CLI write outside the reports root", "silent", {REPORT: [
        "test_a_host_that_is_a_path", "test_a_stamp", "test_a_root_whose_parent", "test_a_root_that_is_a_file",
        "test_the_cli"]}),
    "N-S5-14": ("the check phase accepts a token in the stores, another's home, 0 GPUs, '..' in a package", "silent",
                {CHECK: ["test_questionable_acceptances", "test_the_role_s_own_check_sees_the_token_file"]}),
    "N-S5-15": ("the router client echoes URL credentials and a CR/LF key", "leaked", {ROUTER: [
        "test_credentials", "test_a_password", "test_an_inline_key", "test_a_token",
        "test_a_key_file_with_a_control"]}),
}


VERDICTS = probe_rerun.VERDICTS


def tally(cases):
    return probe_rerun.tally(REPRODUCTIONS, cases)


def main():
    return probe_rerun.report(REPRODUCTIONS, "probe 5")


if __name__ == "__main__":
    sys.exit(main())
