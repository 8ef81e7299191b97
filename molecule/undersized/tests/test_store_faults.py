"""The backup store under faults (side_effect.yml's last plays, issue 17 item 3): corrupt manifests are named and
skipped, a second run is refused naming the run that holds the store, a full disk mid-restore leaves the live state
whole; the proven 200k state serves throughout (never restarted) and every entry is as it was."""

import json

import pytest

NAMES = {1: "holds null", 2: "holds a list", 3: "holds a string", 4: "is not JSON"}


@pytest.fixture
def runs(host):
    return json.loads(host.file("/root/store-faults/runs.json").content_string)


def said(run):
    """What a run printed, with Ansible's line wrapping undone."""
    return " ".join((run["stdout"] + run["stderr"]).split())


def test_a_listing_names_each_corrupt_manifest_and_lists_the_rest(runs):
    out = said(runs["list"])
    assert runs["list"]["rc"] == 0, out
    for number, problem in NAMES.items():
        assert "/var/backups/sglang/20200101T00000000000%dZ skipped: backup.json %s" % (number, problem) in out
    assert "[serving now]" in out and "20200101T000000000000Z: context 200000, not proven" in out
    assert "Traceback" not in out


def test_a_second_run_is_refused_naming_the_one_that_holds_the_store(host, runs):
    out = said(runs["locked"])
    pid = host.file("/root/store-faults/holder.pid").content_string.strip()
    assert runs["locked"]["rc"] != 0
    assert "The backup store /var/backups/sglang is in use by another run: a rollback.yml run in the middle of " \
           "its restore; molecule's holder, pid %s on " % pid in out, out
    assert "Errno" not in out and "Traceback" not in out


def test_a_full_disk_mid_restore_touches_no_live_file(runs):
    out = said(runs["full"])
    assert runs["full"]["rc"] != 0
    assert "The restore of 20200101T000000000000Z failed: writing the new files failed ([Errno 28] No space left " \
           "on device)" in out, out
    assert "the live files were not touched. The store still holds every entry." in out


def test_the_proven_state_served_throughout_and_every_entry_is_intact(host):
    def read(phase, name):
        return host.file("/root/store-faults/%s/%s" % (phase, name)).content_string

    assert host.file("/root/store-faults/live-entry.txt").content_string.split()[1] == "proven"
    assert read("after", "live.sha") == read("before", "live.sha")  # unit, env, config byte for byte
    assert read("after", "store.sha") == read("before", "store.sha")  # every entry, the planted ones too
    assert read("after", "invocation.txt") == read("before", "invocation.txt")  # never restarted
    assert "sglang-restore" not in read("after", "ls.txt") and ".tmp" not in read("after", "ls.txt")
    info = json.loads(read("after", "server_info.json"))
    assert info["context_length"] == 200_000 and info["max_total_num_tokens"] >= 200_000
    assert not host.file("/var/backups/sglang/20200101T000000000000Z").exists  # the plants are gone
