"""After site.yml on a new simulated ct200 (no calibration): the seed's setup, planned, filled and proven.

Kimi K2.6 + the DFlash drafter on SGLang 0.5.23 (the double), TP8, 200k, sglang_pool_policy fill (the default): no
--max-total-tokens, the fraction the most that leaves the 4 GiB headroom, so the pool holds the target (plus the
draft tokens) and the rest of the memory. converge.yml checked the first boot (from an estimate ~10 GiB off: no
corrective restart); side_effect.yml put back the plan from the stored calibration, the one checked here. Every
check prints the unit's journal when it fails.
"""

import glob
import json
import os
import re

import pytest

UNIT = "sglang"
NEEDED = 200_064  # 200,000 + --speculative-num-draft-tokens 16, rounded up to 64 (MLA)
HEADROOM = 4.0  # sglang_min_headroom_gib (inventory/group_vars/sglang_servers.yml)
KEY = "molecule-not-a-secret"


@pytest.fixture()
def journal(host):
    return host.run("journalctl -u %s --no-pager -o cat -n 60" % UNIT).stdout


def exec_start(host):
    """The unit's command line as systemd parsed it (quoting undone): one string of its argv."""
    prop = host.service(UNIT).systemd_properties["ExecStart"]
    return prop.split("argv[]=", 1)[1].split(" ;", 1)[0]


def test_service_runs_enabled_as_the_service_user(host, journal):
    service = host.service(UNIT)
    assert service.is_running and service.is_enabled, journal
    props = service.systemd_properties
    assert props["User"] == "sglang" and props["NoNewPrivileges"] == "yes", journal
    assert host.check_output("ps -o user= -C python3 -C python -C sglang-serve | sort -u").strip() == "sglang", journal


def served_pool(host):
    header = "-H 'Authorization: Bearer %s'" % KEY
    return json.loads(host.check_output("curl -s %s http://127.0.0.1:30000/server_info" % header))[
        "max_total_num_tokens"]


def test_the_unit_carries_the_filled_dflash_plan(host, journal):
    argv = exec_start(host)
    assert "--max-total-tokens" not in argv, (argv, journal)
    for flags in ("--context-length 200000", "--mem-fraction-static 0.9",
                  # the pool holds one 200k request; the headroom affords the seed's 8 side by side (concurrency.py)
                  "--max-running-requests 8", "--speculative-algorithm DFLASH",
                  "--speculative-draft-model-path /srv/models/kimi-k2.6-dflash", "--speculative-num-draft-tokens 16",
                  "--trust-remote-code", "--tool-call-parser kimi_k2", "--tp-size 8", "--enable-metrics"):
        assert flags in argv, (flags, argv, journal)


def test_the_boot_holds_the_target_and_leaves_the_headroom_and_no_more(host, journal):
    # converge.yml checked the first boot itself (one start, no corrective restart); side_effect.yml then
    # exercised the older scheme's corrective restart and put the default plan back: this is that boot.
    invocation = host.service(UNIT).systemd_properties["InvocationID"]
    text = host.check_output("journalctl --no-pager -o cat _SYSTEMD_INVOCATION_ID=%s" % invocation)
    assert text.count("max_total_num_tokens=") == 1, journal  # one boot, logged once by rank 0
    assert served_pool(host) >= NEEDED, journal
    # SGLang's own 'Memory pool end' of every rank: at least the headroom asked, and the rest in the pool (planned
    # from the measured P, the fraction floored to 3 decimals: at most 0.001 x P, 0.09 GiB, over it)
    # (the last of each rank's: the draft's own part of the pool is allocated after the target's)
    left = [float(x) for x in re.findall(r"Memory pool end\. avail mem=([0-9.]+) GB", text)][-8:]
    assert len(left) == 8 and all(HEADROOM - 0.01 <= x <= HEADROOM + 0.2 for x in left), (left, journal)


def test_the_draft_loaded_after_the_target_and_the_calibration_holds_the_targets_numbers(host, journal):
    text = host.check_output("journalctl -u %s --no-pager -o cat | grep 'TP0] Load weight end'" % UNIT)
    assert "type=KimiK25ForConditionalGeneration" in text.splitlines()[0], journal
    assert "type=DFlashDraftModel" in text.splitlines()[1], journal
    fact = json.loads(host.file("/etc/ansible/facts.d/sglang_calibration.fact").content_string)
    (key, entry), = fact["entries"].items()
    assert "tp8 pp1 dp1" in key and "sglang-0.5.23+double" in key
    assert "draft-DFLASH:/srv/models/kimi-k2.6-dflash@" in key
    assert entry["pre_load_avail_gib"] == 85.33  # the target's P, as logged
    # side_effect.yml's unpinned boot measured it: A refined from that pool (the draft's weights, which 0.5.23
    # loads before it profiles, added back), within the log's rounding of the target's logged 19.42
    assert abs(entry["post_load_avail_gib"] - 19.42) <= 0.011 and entry["logged_post_load_avail_gib"] == 19.42
    assert entry["draft_weights_gib"] == 0.55  # the draft's own load, apart
    assert entry["pinned"] is False and entry["pool_tokens"] < 200_000  # the estimate's short pool
    assert entry["boot_flags"]["pool_policy"] == "fraction"  # so fill plans afresh from it rather than keep it
    assert entry["headroom_gib"] > 0  # 'Memory pool end. avail mem', stored


def test_the_controller_keeps_the_calibration_the_role_plans_from(host):
    # issue 35 item 6: the check phase and make plan read it (lib/sglang_checks/kept.py), so they plan this host from
    # the numbers the role on it plans from, the entry stored on the host for its setup
    fact = json.loads(host.file("/etc/ansible/facts.d/sglang_calibration.fact").content_string)
    (key, entry), = fact["entries"].items()
    path = os.path.join(os.environ["MOLECULE_PROJECT_DIRECTORY"], "reports", "ct200-sim", "calibration.json")
    with open(path, encoding="utf-8") as handle:
        kept = json.load(handle)
    assert kept["calibration_key"] == key and kept["calibration"] == entry


def test_the_runtime_check_saw_torch_and_the_kernels(host):
    # the unit runs its runtime's launcher, bin/sglang-serve (one folder per package set under /opt/sglang/runtimes),
    # which starts SGLang with that runtime's bin/python
    unit = host.file("/etc/systemd/system/%s.service" % UNIT).content_string
    launcher = re.search(r'^ExecStart="([^"]+)"', unit, re.MULTILINE).group(1)
    assert re.match(r"^/opt/sglang/runtimes/0\.5\.23\+double-[0-9a-f]{12}/bin/sglang-serve$", launcher), launcher
    python = os.path.dirname(launcher) + "/python"
    assert host.check_output("%s -c 'import torch; print(torch.cuda.device_count())'" % python) == "8"
    assert host.run("%s -c 'import ddtree_kernels'" % python).rc == 0


def test_api_key_is_required(host):
    assert host.check_output("curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:30000/server_info") == "401"


def test_the_run_left_a_report_on_the_controller():
    reports = sorted(glob.glob(os.path.join(os.environ["MOLECULE_PROJECT_DIRECTORY"], "reports", "ct200-sim", "*",
                                            "report.json")))
    assert reports, "no report under reports/ct200-sim/"
    with open(reports[-1], encoding="utf-8") as handle:
        report = json.load(handle)
    assert report["plan"]["max_total_tokens"] is None  # sglang_pool_policy fill, from the stored calibration
    assert report["proof"]["pool_tokens"] >= NEEDED


def test_the_last_full_proof_is_recorded_for_the_next_run(host):
    # side_effect.yml's last run found the record eight months old and proved in full again: the record is that
    # proof's, of the process serving now, with decode at the full context and the draft's accept length.
    record_file = host.file("/var/backups/sglang/last-full-proof.json")
    assert record_file.user == "root" and record_file.mode == 0o600
    record = json.loads(record_file.content_string)
    assert not record["full_at"].startswith("2026-01-01")
    assert record["process"]["invocation_id"] == host.service(UNIT).systemd_properties["InvocationID"]
    assert record["pool_tokens"] == served_pool(host) >= NEEDED and record["prompt_tokens"] >= 190_000
    assert record["decode"]["tokens"] == 16 and record["decode"]["spec_verify_ct"] > 0
    assert record["decode"]["accept_length"] == pytest.approx(16 / record["decode"]["spec_verify_ct"], abs=0.001)


def test_the_last_report_says_which_proof_ran_and_what_decode_measured():
    reports = sorted(glob.glob(os.path.join(os.environ["MOLECULE_PROJECT_DIRECTORY"], "reports", "ct200-sim", "*",
                                            "report.json")))
    with open(reports[-1], encoding="utf-8") as handle:
        report = json.load(handle)
    assert report["proof"]["level"] == "full" and "days old" in report["proof"]["level_reason"]
    assert report["proof"]["decode"]["tpot_ms"] is not None and report["headline"]["accept_length"] > 1
    assert report["boot_wait_s"] is None  # that run started nothing
