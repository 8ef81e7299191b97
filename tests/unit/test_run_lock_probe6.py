"""Probe 6's run lock reproductions (shared/reference/probe-6.md D2, D3, D4), run as Ansible runs the module: a
planted hard link is never written through; a lock folder another user can change is refused by name; a record is
read whole or refused, never taken as absent; a clock jump, a lease of 0 or a record's absurd times take no live
run's lock and hold no host for good; another run's holder fields are printed escaped."""

import json
import os
import subprocess
import sys
import tempfile
import time

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RUN1 = {"play": "Deploy SGLang", "controller": "ctl-a", "pid": 4242, "user": "alice"}
RUN2 = {"play": "Roll SGLang back", "controller": "ctl-b", "pid": 777, "user": "bob"}
A, B = "ctl-a:4242:100", "ctl-b:777:200"


def lock(folder, run_id, holder=None, **args):
    """The module's result for one call, run as Ansible runs it (an args file, its own process)."""
    fd, path = tempfile.mkstemp(suffix=".json")
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        json.dump({"ANSIBLE_MODULE_ARGS": dict({"dir": str(folder), "run_id": run_id, "holder": holder or {},
                                                "wait": 0}, **args)}, handle)
    try:
        proc = subprocess.run([sys.executable, os.path.join(REPO, "library", "sglang_run_lock.py"), path],
                              capture_output=True, text=True, timeout=120)
    finally:
        os.unlink(path)
    assert "Traceback" not in proc.stdout + proc.stderr, proc.stdout + proc.stderr
    return json.loads(proc.stdout)


def uptime():
    return time.clock_gettime(time.CLOCK_BOOTTIME)


@pytest.fixture
def lockdir(tmp_path):
    folder = tmp_path / "backups"
    folder.mkdir(mode=0o700)
    return folder


def record_of(folder):
    return json.loads((folder / ".run-lock.json").read_text())


def put(folder, rec):
    (folder / ".run-lock.json").write_text(json.dumps(rec))


# --- D2: the temp file is created exclusively, under a name no one can guess --------------------------------------

def test_probe6_d2_hard_links_for_the_next_pids_are_never_written_through(lockdir, tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("the victim's own bytes\n")
    first = os.getpid()
    for pid in range(first, first + 2000):  # the probe planted the next 200 pids; this covers the child's
        os.link(victim, lockdir / (".run-lock.json.%d.tmp" % pid))
    out = lock(lockdir, A, RUN1)
    assert not out.get("failed"), out
    assert victim.read_text() == "the victim's own bytes\n"
    assert record_of(lockdir)["run_id"] == A
    assert os.stat(victim).st_nlink == 2001  # no planted link was replaced or removed either
    planted = {".run-lock.json.%d.tmp" % pid for pid in range(first, first + 2000)}
    assert {n for n in os.listdir(lockdir) if n.endswith(".tmp")} == planted  # its own temp file became the record


# --- D3: a lock folder only root (the run's user) can change, or refused by name -----------------------------------

@pytest.mark.skipif(os.geteuid() != 0, reason="making a folder another user's needs root")
def test_probe6_d3_a_folder_owned_by_nobody_mode_0777_is_refused_by_name(lockdir):
    os.chown(lockdir, 65534, 65534)
    os.chmod(lockdir, 0o777)
    out = lock(lockdir, A, RUN1)
    assert out["failed"] and str(lockdir) in out["msg"] and "sglang_backup_dir" in out["msg"], out
    assert "owned by uid 65534" in out["msg"] and "chown root %s" % lockdir in out["msg"], out
    assert not os.listdir(lockdir)  # refused before anything was written there
    # what nobody could then plant refuses nothing: the folder is refused first, at release too
    put(lockdir, {"run_id": "EVIL:1:1", "renewed_at": time.time() + 1e9})
    assert "owned by uid 65534" in lock(lockdir, A, RUN1, state="released")["msg"]


@pytest.mark.parametrize("mode", [0o777, 0o770, 0o702])
def test_probe6_d3_a_folder_writable_by_group_or_others_is_refused_by_name(lockdir, mode):
    os.chmod(lockdir, mode)
    out = lock(lockdir, A, RUN1)
    assert out["failed"] and "is mode %04o" % mode in out["msg"] and "chmod go-w %s" % lockdir in out["msg"], out
    assert not os.listdir(lockdir)


def test_probe6_d3_a_symlinked_folder_is_refused_and_its_target_untouched(tmp_path, lockdir):
    link = tmp_path / "linked"
    link.symlink_to(lockdir)
    out = lock(link, A, RUN1)
    assert out["failed"] and "is a symbolic link (to %s)" % lockdir in out["msg"], out
    assert not os.listdir(lockdir)


def test_probe6_d3_a_folder_in_a_parent_others_can_write_is_refused_unless_sticky(tmp_path):
    parent = tmp_path / "shared"
    parent.mkdir()
    os.chmod(parent, 0o777)
    out = lock(parent / "backups", A, RUN1)
    assert out["failed"] and "lies in %s, mode 0777" % parent in out["msg"], out
    assert not (parent / "backups").exists()  # refused before it was made
    os.chmod(parent, 0o1777)  # as /tmp: no one can rename another user's folder in it
    assert not lock(parent / "backups", A, RUN1).get("failed")
    assert record_of(parent / "backups")["run_id"] == A
    assert os.stat(parent / "backups").st_mode & 0o777 == 0o700


def test_probe6_d3_a_folder_reached_through_a_link_into_a_folder_others_can_write_is_refused(tmp_path):
    (tmp_path / "open").mkdir()
    os.chmod(tmp_path / "open", 0o777)
    (tmp_path / "open" / "real").mkdir(mode=0o755)
    (tmp_path / "via").symlink_to(tmp_path / "open" / "real")  # the link and the folder it names look safe
    out = lock(tmp_path / "via" / "backups", A, RUN1)
    assert out["failed"] and "lies in %s, mode 0777" % (tmp_path / "open") in out["msg"], out
    assert not os.listdir(tmp_path / "open" / "real")


@pytest.mark.skipif(os.geteuid() != 0, reason="making a folder another user's needs root")
def test_probe6_d3_a_folder_in_a_parent_of_another_user_is_refused(tmp_path):
    (tmp_path / "theirs").mkdir(mode=0o755)
    os.chown(tmp_path / "theirs", 65534, 65534)
    out = lock(tmp_path / "theirs" / "backups", A, RUN1)
    assert out["failed"] and "lies in %s, owned by uid 65534" % (tmp_path / "theirs") in out["msg"], out
    assert not os.listdir(tmp_path / "theirs")


@pytest.mark.parametrize("bad", ["backups", "{tmp}/x/../backups", "{tmp}/a\nb", "/{tmp}/backups", "{tmp}/./backups"])
def test_probe6_d3_a_relative_dotted_or_newline_dir_is_refused_by_name(tmp_path, bad, monkeypatch):
    monkeypatch.chdir(tmp_path)  # a relative dir would be made here
    out = lock(bad.format(tmp=tmp_path), A, RUN1)
    assert out["failed"] and "sglang_backup_dir" in out["msg"] and "\n" not in out["msg"], out
    assert not os.listdir(tmp_path), os.listdir(tmp_path)  # nothing made, wherever the path would lead


def test_a_trailing_slash_names_the_same_folder(lockdir):
    assert not lock(str(lockdir) + "/", A, RUN1).get("failed")
    assert record_of(lockdir)["run_id"] == A


# --- D4: a live run never loses its lock; no record holds a host for good ------------------------------------------

def test_probe6_d4_a_70000_char_holder_field_is_read_and_keeps_its_lock(lockdir):
    assert not lock(lockdir, A, dict(RUN1, play="P" * 70000)).get("failed")
    out = lock(lockdir, B, RUN2)
    assert out["failed"] and A in out["msg"] and "(70000 characters)" in out["msg"], out
    assert len(out["msg"]) < 2000  # the message names the run; the whole field stays in the record
    assert not lock(lockdir, A, dict(RUN1, play="P" * 70000)).get("failed")  # A renews: still its own
    assert record_of(lockdir)["run_id"] == A


@pytest.mark.parametrize("content", [b"x" * (5 * 1024 * 1024), b"{not json", b"[1, 2]", b'{"play": "no run id"}',
                                     b"", b"\xff\xfe"])
def test_probe6_d4_a_record_too_big_or_not_a_record_is_refused_by_name_never_taken_as_absent(lockdir, content):
    (lockdir / ".run-lock.json").write_bytes(content)
    out = lock(lockdir, B, RUN2)
    assert out["failed"] and str(lockdir / ".run-lock.json") in out["msg"] and "move it away" in out["msg"], out
    assert (lockdir / ".run-lock.json").read_bytes() == content
    assert lock(lockdir, B, state="released")["failed"]  # nor removed as if it were nobody's


def test_probe6_d4_a_clock_jump_forward_takes_no_live_run_lock(lockdir):
    assert not lock(lockdir, A, RUN1).get("failed")
    rec = record_of(lockdir)
    rec["renewed_at"] -= 7 * 3600  # the wall clock jumped 7 h forward since A renewed; the lease is 6 h
    put(lockdir, rec)
    out = lock(lockdir, B, RUN2, lease=21600)
    assert out["failed"] and "This host is being changed by another run: run %s" % A in out["msg"], out
    assert not lock(lockdir, A, RUN1, lease=21600).get("failed")  # A goes on renewing
    assert record_of(lockdir)["run_id"] == A


def test_probe6_d4_a_record_of_an_earlier_boot_is_kept_until_the_host_has_been_up_a_lease(lockdir):
    assert not lock(lockdir, A, RUN1).get("failed")
    rec = dict(record_of(lockdir), boot_id="an-earlier-boot")
    rec["renewed_at"] -= 7 * 3600  # and the wall clock says 7 h: no evidence after a reboot
    put(lockdir, rec)
    up = uptime()
    assert lock(lockdir, B, RUN2, lease=int(up) + 3600)["failed"]  # the driver's reboot: A renews after it
    assert up > 61, "this host has been up for less than 61 s"
    out = lock(lockdir, B, RUN2, lease=60)
    assert not out.get("failed") and out["taken_over"]["run_id"] == A, out
    assert "before the host's last boot" in out["taken_over_reason"]


@pytest.mark.parametrize("lease", [0, 59, -1])
def test_probe6_d4_a_module_lease_below_60_is_refused_by_name(lockdir, lease):
    assert not lock(lockdir, A, RUN1).get("failed")
    out = lock(lockdir, B, RUN2, lease=lease)
    assert out["failed"] and "lease is %d s" % lease in out["msg"] and "sglang_run_lock_lease" in out["msg"], out
    assert record_of(lockdir)["run_id"] == A  # B did not take A's fresh lock


@pytest.mark.parametrize("renewed", ["NaN", "Infinity", "-Infinity"])
def test_probe6_d4_a_nan_or_infinite_renewal_time_is_stale_not_held_forever(lockdir, renewed):
    (lockdir / ".run-lock.json").write_text('{"run_id": "EVIL:1:1", "renewed_at": %s}' % renewed)
    out = lock(lockdir, B, RUN2)
    assert not out.get("failed") and out["taken_over"]["run_id"] == "EVIL:1:1", out
    assert "is not a time" in out["taken_over_reason"]
    assert record_of(lockdir)["run_id"] == B


def test_probe6_d4_a_renewal_far_in_the_future_is_stale_not_held_forever(lockdir):
    put(lockdir, {"run_id": "EVIL:1:1", "renewed_at": time.time() + 1e9})  # the probe's poisoned record
    out = lock(lockdir, B, RUN2)
    assert not out.get("failed") and "in the future" in out["taken_over_reason"], out
    # and with this boot's id: an uptime mark this boot has not reached is no renewal the module wrote
    rec = dict(record_of(lockdir), run_id="EVIL:2:2", renewed_at=time.time() + 1e9, renewed_uptime=uptime() + 1e9)
    put(lockdir, rec)
    out = lock(lockdir, A, RUN1)
    assert not out.get("failed") and "not one this boot has reached" in out["taken_over_reason"], out


def test_probe6_d4_holder_fields_with_a_newline_or_ansi_escape_are_printed_escaped(lockdir):
    evil = "ctl\n\x1b[31mEVIL:1:1"
    assert not lock(lockdir, evil, dict(RUN1, play="P\nQ\x1b[0m", user="u\u2028v")).get("failed")
    out = lock(lockdir, B, RUN2)
    assert out["failed"] and "\x1b" not in out["msg"] and "\n" not in out["msg"] and "\u2028" not in out["msg"]
    assert "run ctl\\n\\x1b[31mEVIL:1:1 (play 'P\\nQ\\x1b[0m'" in out["msg"] and "user u\\u2028v" in out["msg"]
    assert out["holder"]["run_id"] == evil  # the data itself is returned as it is, JSON-escaped
    # and at the release of a run whose lock it took over
    rec = dict(record_of(lockdir), took_over=B)
    put(lockdir, rec)
    out = lock(lockdir, B, state="released")
    assert out["failed"] and "\x1b" not in out["msg"] and "\n" not in out["msg"] and "taken over by" in out["msg"]


def test_six_runs_at_once_give_exactly_one_holder_and_leave_no_temp_file(lockdir):
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(6) as pool:
        outs = list(pool.map(lambda n: lock(lockdir, "ctl-%d:%d:1" % (n, n), dict(RUN1, pid=n)), range(6)))
    won = [out["holder"]["run_id"] for out in outs if not out.get("failed")]
    assert len(won) == 1 and record_of(lockdir)["run_id"] == won[0], outs
    assert sorted(os.listdir(lockdir)) == [".run-lock", ".run-lock.json"]
