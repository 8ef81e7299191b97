"""Rollback brings the earlier unit back byte for byte, and it passes its own smoke test."""

import json


def test_the_broken_change_failed_fast_with_sglangs_words(host):
    message = host.file("/root/broken-change.txt").content_string
    assert "SGLang stopped while starting" in message
    assert "unrecognized arguments: --no-such-flag" in message


def test_rollback_restored_the_150k_unit_byte_for_byte(host):
    assert host.file("/root/unit-after-rollback.service").content_string == \
        host.file("/root/unit-150k.service").content_string
    assert "--context-length 150000" in host.file("/root/unit-150k.service").content_string


def test_auto_rollback_after_a_failed_proof(host):
    message = host.file("/root/auto-rollback.txt").content_string
    assert "does not match /\\bcat\\b/" in message
    assert "Restored the unit from /var/backups/sglang/" in message and "sglang_rollback_on_failure" in message
    assert host.file("/etc/systemd/system/sglang.service").content_string == \
        host.file("/root/unit-150k.service").content_string


def test_the_restored_unit_serves_its_target(host):
    assert host.service("sglang").is_running
    info = json.loads(host.check_output("curl -s -H 'Authorization: Bearer molecule-not-a-secret' http://127.0.0.1:30000/server_info"))
    assert info["context_length"] == 150_000 and info["max_total_num_tokens"] >= 150_000


def test_backups_are_listed_and_kept(host):
    backups = host.check_output("ls /var/backups/sglang").split()
    assert 3 <= len(backups) <= 10
    for name in backups:
        assert host.file("/var/backups/sglang/%s/sglang.service" % name).exists
