"""The run lock's decisions as plain functions (module_utils/sglang_run_lease.py): when another run's record is
stale (stale_reason, with every clock given explicitly), how a holder field is printed (shown), and how the record
is written (a temp file created exclusively under a random name, removed when the write fails)."""

import errno
import json
import os

import pytest
from ansible.module_utils import sglang_run_lease as lease_mod
from ansible.module_utils.sglang_run_lease import LeaseError, acquire, shown, stale_reason

NOW, UP, BOOT, LEASE = 1_800_000_000.0, 50_000.0, "boot-1", 21_600


def rec(**fields):
    return dict({"run_id": "ctl-a:1:1", "boot_id": BOOT, "renewed_at": NOW - 10, "renewed_uptime": UP - 10}, **fields)


def test_probe6_d4_on_this_boot_the_uptime_clock_alone_decides():
    assert stale_reason(rec(), NOW, UP, BOOT, LEASE) is None
    # the wall clock jumped 7 h forward, or back a year: a live run keeps its lock, a dead one is still let go
    assert stale_reason(rec(renewed_at=NOW - 7 * 3600), NOW, UP, BOOT, LEASE) is None
    assert stale_reason(rec(renewed_at=NOW + 365 * 86400), NOW, UP, BOOT, LEASE) is None
    assert "not renewed for 21601 s" in stale_reason(rec(renewed_uptime=UP - LEASE - 1, renewed_at=NOW + 365 * 86400),
                                                     NOW, UP, BOOT, LEASE)
    assert stale_reason(rec(renewed_uptime=UP - LEASE), NOW, UP, BOOT, LEASE) is None  # a lease is not yet past it


@pytest.mark.parametrize("mark", [float("nan"), float("inf"), -1.0, UP + 1, "10", None, True])
def test_probe6_d4_an_uptime_mark_this_boot_has_not_reached_is_stale(mark):
    assert "not one this boot has reached" in stale_reason(rec(renewed_uptime=mark), NOW, UP, BOOT, LEASE)


@pytest.mark.parametrize("renewed", [float("nan"), float("inf"), float("-inf"), "yesterday", None, True, [1]])
def test_probe6_d4_a_renewal_time_that_is_not_a_finite_number_is_stale(renewed):
    assert "is not a time" in stale_reason(rec(renewed_at=renewed), NOW, UP, BOOT, LEASE)


def test_probe6_d4_a_renewal_on_an_earlier_boot_is_stale_once_the_host_has_been_up_a_lease():
    earlier = rec(boot_id="boot-0", renewed_at=NOW - 30 * 86400)
    assert stale_reason(earlier, NOW, LEASE - 1, BOOT, LEASE) is None  # the driver's reboot: its run renews soon
    assert "before the host's last boot" in stale_reason(earlier, NOW, LEASE + 1, BOOT, LEASE)
    # the wall clock says nothing after a reboot, either way
    assert stale_reason(rec(boot_id="boot-0", renewed_at=NOW + 1e9), NOW, LEASE - 1, BOOT, LEASE) is None
    assert stale_reason(rec(boot_id="boot-0", renewed_at=NOW + 1e9), NOW, LEASE + 1, BOOT, LEASE)


@pytest.mark.parametrize("record", [
    {"run_id": "EVIL:1:1", "renewed_at": NOW + 1e9},  # the probe's poisoned record: no boot id
    rec(renewed_uptime=None) | {"renewed_at": NOW + LEASE + 1},  # this boot's, from a module without the mark
    rec(boot_id="") | {"renewed_at": NOW + 1e9},
])
def test_probe6_d4_a_record_of_an_unknown_boot_far_in_the_future_is_stale(record):
    record = {k: v for k, v in record.items() if v is not None}
    assert "in the future" in stale_reason(record, NOW, UP, BOOT, LEASE)


def test_a_record_of_an_unknown_boot_is_timed_on_the_wall_clock():
    old = {"run_id": "ctl-a:1:1", "boot_id": BOOT, "renewed_at": NOW - LEASE - 1}  # an older module: no mark
    assert "wall clock" in stale_reason(old, NOW, UP, BOOT, LEASE)
    assert stale_reason(dict(old, renewed_at=NOW - 60), NOW, UP, BOOT, LEASE) is None
    assert stale_reason(dict(old, renewed_at=NOW + 60), NOW, UP, BOOT, LEASE) is None  # a small step back
    # this host has no boot id: no record counts as this boot's
    assert "wall clock" in stale_reason(rec(renewed_at=NOW - LEASE - 1), NOW, UP, "", LEASE)


def test_probe6_d4_shown_escapes_newlines_ansi_and_line_separators_and_cuts_long_fields():
    assert shown("ctl\n\x1b[31mEVIL\x1b[0m\r\t\u2028\u0085x") == "ctl\\n\\x1b[31mEVIL\\x1b[0m\\r\\t\\u2028\\x85x"
    assert shown(4242) == "4242" and shown(None) == "None"
    long = shown("P" * 70000)
    assert long.startswith("P" * 200 + "...") and long.endswith("(70000 characters)") and len(long) < 240
    assert shown("\x1b" * 300, 10) == "\\x1b" * 10 + "... (300 characters)"  # cut before escaping: bounded


# --- how the record is written -----------------------------------------------------------------------------------

@pytest.fixture
def lockdir(tmp_path):
    folder = tmp_path / "backups"
    folder.mkdir(mode=0o700)
    return folder


def test_probe6_d2_a_file_planted_at_the_temp_name_is_refused_never_written_through(lockdir, tmp_path, monkeypatch):
    acquire(str(lockdir), "ctl-a:1:1", {"play": "first"}, wait=0, lease=60)
    before = (lockdir / ".run-lock.json").read_bytes()
    victim = tmp_path / "victim.txt"
    victim.write_text("victim\n")
    monkeypatch.setattr(lease_mod.secrets, "token_hex", lambda n: "feedfacecafebeef")
    planted = lockdir / ".run-lock.json.feedfacecafebeef.tmp"
    for plant in (lambda: os.link(victim, planted), lambda: planted.symlink_to(victim)):
        plant()
        with pytest.raises(LeaseError, match="feedfacecafebeef.tmp exists already.*move it away"):
            acquire(str(lockdir), "ctl-a:1:1", {"play": "renewal"}, wait=0, lease=60)
        assert victim.read_text() == "victim\n" and (lockdir / ".run-lock.json").read_bytes() == before
        planted.unlink()


def test_probe6_d2_a_failed_write_removes_its_temp_file_and_keeps_the_old_record(lockdir, monkeypatch):
    acquire(str(lockdir), "ctl-a:1:1", {"play": "first"}, wait=0, lease=60)
    before = (lockdir / ".run-lock.json").read_bytes()

    def full_disk(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(lease_mod.os, "fsync", full_disk)
    with pytest.raises(OSError, match="No space left"):
        acquire(str(lockdir), "ctl-a:1:1", {"play": "renewal"}, wait=0, lease=60)
    assert sorted(os.listdir(lockdir)) == [".run-lock", ".run-lock.json"]
    assert (lockdir / ".run-lock.json").read_bytes() == before


def test_probe6_d2_the_record_is_written_mode_0600_under_a_fresh_name_each_time(lockdir, monkeypatch):
    names = []
    real = lease_mod.secrets.token_hex
    monkeypatch.setattr(lease_mod.secrets, "token_hex", lambda n: names.append(real(n)) or names[-1])
    for play in ("one", "two"):
        acquire(str(lockdir), "ctl-a:1:1", {"play": play}, wait=0, lease=60)
    assert len(set(names)) == 2 and all(len(n) == 16 for n in names)
    assert os.stat(lockdir / ".run-lock.json").st_mode & 0o777 == 0o600
    assert json.loads((lockdir / ".run-lock.json").read_text())["play"] == "two"


def test_a_record_bigger_than_the_run_lock_reads_back_is_refused_before_it_is_written(lockdir):
    with pytest.raises(LeaseError, match="would be .* bytes.*shorten the play's name"):
        acquire(str(lockdir), "ctl-a:1:1", {"play": "P" * (5 * 1024 * 1024)}, wait=0, lease=60)
    assert not (lockdir / ".run-lock.json").exists()


def test_probe6_d2_a_hard_link_at_the_guard_is_refused_never_truncated(lockdir, tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("victim\n")
    os.link(victim, lockdir / ".run-lock")  # the guard is truncated when taken
    with pytest.raises(LeaseError, match=r"guard .*\.run-lock has 2 names .*Move it away"):
        acquire(str(lockdir), "ctl-a:1:1", {"play": "first"}, wait=0, lease=60)
    with pytest.raises(LeaseError, match="has 2 names"):
        lease_mod.release(str(lockdir), "ctl-a:1:1")
    assert victim.read_text() == "victim\n" and not (lockdir / ".run-lock.json").exists()


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a file to another user needs root")
def test_probe6_d3_a_guard_of_another_user_is_refused_not_used(lockdir):
    (lockdir / ".run-lock").write_text("")
    os.chown(lockdir / ".run-lock", 65534, 65534)  # that user could hold its flock for good
    with pytest.raises(LeaseError, match=r"belongs to uid 65534"):
        acquire(str(lockdir), "ctl-a:1:1", {"play": "first"}, wait=0, lease=60)
