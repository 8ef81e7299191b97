"""Targets that cannot be served fail with the numbers, and the unit that served before still serves."""

import json
import re


def test_400k_fails_in_the_planner_before_the_unit_is_touched(host):
    message = host.file("/root/refusal-400k.txt").content_string
    assert "context_target 400,000 does not fit" in message
    assert "GiB of KV cache per GPU" in message and "fp8_e4m3" in message
    before, after = host.file("/root/invocations-400k.txt").content_string.split()
    assert before == after  # not restarted
    assert host.file("/etc/systemd/system/sglang.service").content_string == \
        host.file("/root/unit-before.service").content_string


def test_missed_after_calibration_fails_naming_both_numbers(host):
    message = host.file("/root/refusal-240k.txt").content_string
    assert "context_target 240,000 does not fit" in message  # the calibrated re-plan refuses it
    largest = re.search(r"lower sglang_context_target to at most ([0-9,]+)", message)  # what fits, measured
    # ct200 with its DFlash drafter: A 19.42 GiB less 4 GiB headroom, the draft's 0.55 GiB of weights and 0.5.23's
    # 0.1 GiB multimodal reserve, at 72,832 B/token (2,560 of them the draft's): 217,712
    assert largest and 217_000 < int(largest.group(1).replace(",", "")) < 221_000, message
    assert not message.startswith("Task failed")  # the planner's sentence, not Ansible's wrapping
    # The one rescue put the last proven state back (or found that the deploy's calibrate phase already had), and
    # the journal's last lines follow.
    assert re.search(r"Restored the last proven state [0-9T]+Z \(context 200000\), which serves again "
                     r"\(always, for a failed deploy\)|The live state is the proven entry [0-9T]+Z, and it serves",
                     message), message
    assert "Last lines of sglang's journal before the rescue:" in message


def test_the_previous_unit_still_serves(host):
    assert host.file("/etc/systemd/system/sglang.service").content_string == \
        host.file("/root/unit-before.service").content_string
    assert host.service("sglang").is_running
    info = json.loads(host.check_output("curl -s -H 'Authorization: Bearer molecule-not-a-secret' http://127.0.0.1:30000/server_info"))
    assert info["max_total_num_tokens"] >= 200_000 and info["context_length"] == 200_000


def test_a_failed_first_install_says_so_and_leaves_the_unit_stopped(host):
    message = host.file("/root/first-install.txt").content_string
    assert "unrecognized arguments: --no-such-flag" in message
    assert "There is no earlier proven state to restore (a first install?), so sglang is left stopped." in message
    assert host.file("/root/first-install-state.txt").content_string.strip() in ("inactive", "failed")
