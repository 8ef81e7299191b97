"""Each fault ends in one clear sentence, the last proven state serves again, no backup needed is lost,
and the API key appears in no process argument and in no output of a --diff -vvv run."""

import json
import os
import re

KEYS = ("molecule-not-a-secret", "molecule-rotated-secret", "molecule-wrong-key")
STORE = "/var/backups/sglang"


def read(host, path):
    return host.file(path).content_string


def entries(host):
    # the store's entries are its folders (the last full proof's record, last-full-proof.json, sits beside them)
    names = host.check_output("find %s -mindepth 1 -maxdepth 1 -type d -printf '%%f\\n'" % STORE).split()
    return {name: json.loads(read(host, "%s/%s/backup.json" % (STORE, name))) for name in names}


def proven_150k(host):
    unit = read(host, "/root/unit-150k.service")
    found = [n for n, m in entries(host).items()
             if m["context_target"] == 150_000 and m["proven"]
             and read(host, "%s/%s/sglang.service" % (STORE, n)) == unit]
    assert len(found) == 1, entries(host)
    return found[0]


def test_the_unit_takes_no_secret_and_is_hardened(host):
    unit = read(host, "/etc/systemd/system/sglang.service")
    assert '"--config" \\\n    "/etc/sglang/sglang.yaml"' in unit and "api-key" not in unit
    assert '"--context-length" \\\n    "150000"' in unit  # every argument quoted
    config = host.file("/etc/sglang/sglang.yaml")
    assert (config.user, config.group, config.mode) == ("root", "sglang", 0o640)
    assert config.contains('^api-key: "molecule-not-a-secret"$')
    assert host.file("/etc/sglang").mode == 0o750 and host.file("/etc/sglang/sglang.env").mode == 0o600
    shown = host.check_output("systemctl show sglang -p ProtectProc -p UMask -p CapabilityBoundingSet "
                              "-p StartLimitBurst -p After")
    assert "ProtectProc=invisible" in shown and "UMask=0077" in shown and "StartLimitBurst=3" in shown
    assert "CapabilityBoundingSet=\n" in shown + "\n" and "nvidia-fabricmanager.service" in shown


def test_the_key_is_in_no_process_argument(host):
    cmdlines = read(host, "/root/cmdlines.txt")
    assert "sglang.launch_server" in cmdlines and "--config /etc/sglang/sglang.yaml" in cmdlines
    for key in KEYS:
        assert key not in cmdlines


def test_bad_flag_run_fails_in_one_sentence_restores_and_leaks_nothing():
    path = os.path.join(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"], "bad-flag-run.txt")
    with open(path, encoding="utf-8") as handle:
        out = handle.read()
    assert out.rstrip().endswith("rc=2"), out[-3000:]
    assert "SGLang stopped while starting" in out and "unrecognized arguments: --no-such-flag" in out
    assert re.search(r"Restored the last proven state [0-9T]+Z \(context 150000\), which serves again "
                     r"\(always, for a start that never became healthy\)", out), out[-3000:]
    assert "Last lines of sglang's journal before the rescue" in out
    assert "ESTABLISH" in out or "EXEC" in out  # the run really was verbose
    assert "--- before" in out or "+++ after" in out  # and --diff showed the unit's change
    for key in KEYS:
        assert key not in out, "the API key %s is in the output of a --diff -vvv run" % key


def test_keep_1_with_an_automatic_restore_keeps_the_source_and_the_last_proven(host):
    left = read(host, "/root/store-after-keep1.txt").split()
    # keep 1 (the bad state, newest) plus the last proven one, which was also the restore's source; the
    # older 200k entries went, as sglang_backup_keep 1 asks
    assert proven_150k(host) in left and len(left) == 2, left


def test_oom_at_start_is_restored(host):
    message = read(host, "/root/oom.txt")
    assert "torch.OutOfMemoryError: CUDA out of memory" in message and "SGLang stopped while starting" in message
    assert "Restored the last proven state" in message and "which serves again" in message


def test_a_failed_proof_leaves_the_new_state_running_and_says_how_to_go_back(host):
    message = read(host, "/root/proof-failed.txt")
    assert "does not match /\\bcat\\b/" in message
    assert "stays running for inspection (sglang_rollback_on_failure is false)" in message
    assert "playbooks/rollback.yml" in message
    assert '"--context-length" \\\n    "180000"' in read(host, "/root/unit-180k.service")


def test_rollback_with_no_arguments_restores_the_last_proven_byte_for_byte(host):
    assert read(host, "/root/unit-after-rollback.service") == read(host, "/root/unit-150k.service")
    lines = read(host, "/root/store-lines.txt")
    assert "context 180000, not proven" in lines
    assert re.search(r"context 150000, PROVEN \S+ \(pool \d+, prompt \d+ tokens\), "
                     r"sglang 0\.5\.\d+\+double \[serving now\]", lines), lines


def test_a_rerun_after_the_journal_rotated_restarts_nothing_and_passes(host):
    assert read(host, "/root/rerun.txt").strip() == "ok restarted=False changed=False"
    before, after = read(host, "/root/rerun-invocations.txt").split()
    assert before == after


def test_a_wrong_api_key_fails_the_proof_and_restores_nothing(host):
    message = read(host, "/root/wrong-key.txt")
    assert "401" in message and "Restored" not in message
    for key in KEYS:
        assert key not in message


def test_a_crash_loop_stops_at_the_start_limit(host):
    shown = read(host, "/root/crash-loop.txt")
    # systemd 252: the first start and two automatic restarts run (burst 3); the third restart is refused
    assert "Start request repeated too quickly" in shown and "ActiveState=failed" in shown
    assert "NRestarts=3" in shown


def test_the_repair_run_serves_the_last_proven_state_again(host):
    assert read(host, "/root/repair.txt").strip() == "ok"
    assert read(host, "/etc/systemd/system/sglang.service") == read(host, "/root/unit-150k.service")
    assert host.service("sglang").is_running
    info = json.loads(host.check_output(
        "curl -s -H 'Authorization: Bearer molecule-not-a-secret' http://127.0.0.1:30000/server_info"))
    assert info["context_length"] == 150_000 and info["max_total_num_tokens"] >= 150_000


def test_no_proven_backup_is_lost(host):
    assert proven_150k(host)
    for meta in entries(host).values():
        assert meta["format"] == 1 and set(meta["files"]) == {"sglang.service", "sglang.env", "sglang.yaml"}
    assert host.file(STORE).mode == 0o700
