"""After converge (the role installed the REAL SGLang 0.5.23 as a runtime, booted it on SGLang's CPU engine with the
tiny Llama, calibrated and proved it), idempotence (a check, changed=0) and side_effect (new files at the
checkpoint's path restarted and proved in full; a change whose boot fails, rescued): what the host holds, and the
report the last full proof left on the controller (the needle asked of the real server and answered)."""

import glob
import json
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "module_utils"))
import sglang_journal

KEY = "molecule-not-a-secret"
CONTEXT = 2048


def read(host, path):
    return host.file(path).content_string


def test_the_runtime_is_the_real_release_built_by_uv(host):
    manifests = [json.loads(read(host, path)) for path in
                 host.run("ls /opt/sglang/runtimes/*.json").stdout.split()]
    assert len(manifests) == 1, manifests
    manifest = manifests[0]
    assert manifest["versions"]["sglang"] == "0.5.23", manifest
    assert manifest["builder"].startswith("uv "), manifest
    python = manifest["path"] + "/bin/python"
    torch = host.run("%s -c 'import torch; print(torch.__version__)'" % python)
    assert torch.rc == 0 and torch.stdout.strip().startswith("2.14.1+cu"), torch.stderr  # the real torch


def test_the_real_server_booted_under_the_unit_and_serves_the_plan(host):
    assert host.service("sglang").is_running
    journal = host.run("journalctl -u sglang --no-pager -o cat").stdout
    assert "Load weight end" in journal and "The server is fired up and ready to roll!" in journal
    assert re.search(r"KV Cache is allocated\. dtype: torch\.bfloat16, #tokens: %d" % CONTEXT, journal), journal[-3000:]
    assert KEY not in journal  # the launcher keeps the key out of the log
    models = host.run("curl -s -H 'Authorization: Bearer %s' http://127.0.0.1:30000/v1/models" % KEY)
    assert json.loads(models.stdout)["data"][0]["max_model_len"] == CONTEXT, models.stdout


def test_the_journal_reader_reads_the_real_boot_under_the_unit(host):
    """The role's reader (module_utils/sglang_journal.py) on the unit's own journal, its last boot (the rescue's):
    the pool, context and concurrency the plan set, every stage to ready, and the loading stage with the real shard
    bar ("Multi-thread loading shards" in 0.5.23) before the weights' end."""
    journal = host.run("journalctl -u sglang --no-pager -o cat").stdout
    boot = journal[journal.rindex("server_args="):]
    facts = sglang_journal.parse_boot_log(boot)
    assert facts["found"] and facts["error"] is None, facts
    assert (facts["pool_tokens"], facts["context_len"]) == (CONTEXT, CONTEXT), facts
    assert facts["pre_load_avail_gib"] >= facts["post_load_avail_gib"] > 0, facts
    assert sglang_journal.boot_progress(boot)["stage"] == "ready"
    loading = sglang_journal.boot_progress(boot.split("Load weight end")[0])
    assert loading["stage"] == "loading weights" and loading["shard"] == [1, 1], loading


def test_the_calibration_is_stored_from_the_real_boot(host):
    fact = json.loads(read(host, "/etc/ansible/facts.d/sglang_calibration.fact"))
    entries = list(fact["entries"].values())
    assert len(entries) == 1, fact
    assert entries[0]["pre_load_avail_gib"] >= entries[0]["post_load_avail_gib"] > 0, entries


def test_the_full_proof_passed_against_the_real_server(host):
    """The record the last full proof left (side_effect's re-run after the new tokenizer; a check and the rescue
    write none): the real pool and context, a prompt of at least 95% of the target, and the 8 concurrent prompts
    answered, each with its own needle."""
    record = json.loads(read(host, "/var/backups/sglang/last-full-proof.json"))
    assert (record["context_target"], record["pool_tokens"], record["context_length"]) == (CONTEXT,) * 3, record
    assert record["prompt_tokens"] >= 0.95 * CONTEXT and record["versions"]["sglang"] == "0.5.23", record
    assert record["concurrency"]["answered"] == record["concurrency"]["requests"] > 0, record


def test_the_real_server_answered_the_needle_at_the_full_context():
    """The report of each full proof (converge's, side_effect's after the new tokenizer): the needle stated once at
    the start of a prompt of the full context, and the real server's answer holding it (the model answers it:
    tests/contract/real/make_tiny.py)."""
    full = []
    for path in sorted(glob.glob(os.path.join(os.environ["MOLECULE_PROJECT_DIRECTORY"], "reports", "real-sglang",
                                              "*", "report.json"))):
        with open(path, encoding="utf-8") as handle:
            proof = json.load(handle)["proof"]
        if proof.get("level") == "full":
            full.append(proof)
    assert len(full) >= 2, "no report of converge's and side_effect's full proofs"
    for proof in full[-2:]:  # this run's (a checkout's reports/ keeps earlier runs' too)
        assert proof["question"] == "needle" and proof["expect"] == r"\b%d\b" % proof["needle"], proof
        assert str(proof["needle"]) in proof["completion"] and proof["prompt_tokens"] >= 0.95 * CONTEXT, proof


def test_new_files_at_the_checkpoint_s_path_restart_sglang_and_prove_it_in_full(host):
    assert read(host, "/root/checkpoint-rerun.txt").strip() == "restarted=True level=full"


def test_a_change_whose_boot_fails_is_rescued_onto_the_proven_unit(host):
    message = read(host, "/root/change-rescued.txt")
    assert "Restored the last proven state" in message and "serves again" in message, message
    assert read(host, "/root/unit-after-rescue.service") == read(host, "/root/unit-proven.service")
    assert "flashinfer" not in read(host, "/etc/systemd/system/sglang.service")
