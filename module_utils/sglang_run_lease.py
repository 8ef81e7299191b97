"""The host's run lock (library/sglang_run_lock.py explains the design): a lease record in <dir>/.run-lock.json,
read, decided and replaced under a short flock on <dir>/.run-lock (the store's lock helper: never through a link,
only a regular file).

What keeps it from being stolen or poisoned:
  - the folder, and every folder above it, can be changed only by root or the user the run runs as (safe_folder):
    another user could otherwise write a record that refuses every run, or remove a live run's;
  - the record is replaced through a temp file of a random name created exclusively (O_EXCL|O_NOFOLLOW), so a
    planted link is never written through;
  - a record is read whole or refused by name, never taken as absent (a live run would lose its lock);
  - staleness is decided on the host's uptime clock where the wall clock can jump (stale_reason);
  - what a record says about its run is printed escaped (shown): no newline or terminal escape reaches a message.
"""

from __future__ import annotations

import errno
import json
import math
import os
import pwd
import secrets
import stat
import time
from datetime import datetime, timezone

from ansible.module_utils.sglang_files import SMALL_FILE_LIMIT, NotPlainFile, read_plain
from ansible.module_utils.sglang_store_lock import LockBusy, LockNotAFile, held

UTC = timezone.utc  # noqa: UP017 (the hosts' Python can be 3.10)
RECORD = ".run-lock.json"
GUARD = ".run-lock"
RECORD_LIMIT = SMALL_FILE_LIMIT  # a record is a few hundred bytes; this module writes none bigger than it reads
MIN_LEASE = 60  # the check phase refuses a smaller sglang_run_lock_lease too: no phase renews that often
SHOWN_CHARS = 200  # a holder field is cut to this in a message (the whole of it stays in the record)


class LeaseError(Exception):
    pass


class LeaseHeld(LeaseError):
    def __init__(self, message, record):
        super().__init__(message)
        self.record = record


def boot_id():
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as handle:
            return handle.read().strip()
    except OSError:
        return ""


def uptime():
    """Seconds since this boot, suspend included (CLOCK_BOOTTIME): no one sets this clock, so it cannot jump."""
    return time.clock_gettime(getattr(time, "CLOCK_BOOTTIME", time.CLOCK_MONOTONIC))


def shown(value, limit=SHOWN_CHARS):
    """A value from a record as a message prints it: every character that is not printable (newline, the ANSI
    escape, a Unicode line separator) written as its Python escape, so another run's record cannot start a line or
    colour the operator's terminal, and at most limit characters."""
    text = value if isinstance(value, str) else str(value)
    out = "".join(ch if ch.isprintable() else ch.encode("unicode_escape").decode("ascii") for ch in text[:limit])
    return out if len(text) <= limit else "%s... (%d characters)" % (out, len(text))


def _renewed_iso(record):
    renewed = record.get("renewed_at")
    if _finite(renewed) and abs(renewed) < 1e11:  # datetime refuses years past 9999
        return datetime.fromtimestamp(renewed, UTC).isoformat(timespec="seconds")
    return record.get("renewed_at_iso") or "?"


def describe(record):
    """One sentence naming the run in a record, as the operator needs it to find that run."""
    return ("run %s (play '%s', controller %s, pid %s, user %s, started %s; last renewed %s)"
            % tuple(shown(value) for value in (
                record.get("run_id", "?"), record.get("play") or "?", record.get("controller") or "?",
                record.get("pid") or "?", record.get("user") or "?", record.get("started") or "?",
                _renewed_iso(record))))


def _finite(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def stale_reason(record, now, up, boot, lease):
    """Why another run's record no longer holds the host (a phrase), or None while it may be a live run's.

    now: the wall clock, up: seconds since this boot (uptime()), boot: this boot's id, lease: seconds. The holder
    renews at each phase and the lease is longer than any step, so a live run renews within a lease of its last
    renewal. The wall clock cannot measure that (a jump forward would take a live run's lock; a jump back would keep
    a dead one's), so:
      - renewed on this boot (same boot id, with its uptime mark): the uptime clock alone decides; it never jumps;
      - renewed on an earlier boot (the driver reboots the host in the middle of a run): the renewal came before
        this boot began, so once the host has been up for a lease a live holder would have renewed since; the wall
        clock is no evidence either way;
      - a record of an unknown boot (no boot id or no uptime mark: written by an older module or by hand, or this
        host has no boot id): only the wall clock is left; a renewal time further ahead than a lease is no clock's
        small error and would hold the host for good: stale.
    A renewal time or mark that is not a finite number, or a mark this boot has not reached, is no renewal this
    module wrote: stale."""
    renewed = record.get("renewed_at")
    if not _finite(renewed):
        return "its renewal time %s is not a time" % shown(renewed, 40)
    theirs = record.get("boot_id")
    if boot and theirs == boot and "renewed_uptime" in record:
        mark = record["renewed_uptime"]
        if not _finite(mark) or not 0 <= mark <= up:
            return "its renewal mark %s is not one this boot has reached (up %d s)" % (shown(mark, 40), up)
        if up - mark > lease:
            return "not renewed for %d s on this host's uptime clock" % (up - mark)
        return None
    if boot and isinstance(theirs, str) and theirs and theirs != boot:
        if up > lease:
            return "renewed before the host's last boot, %d s ago, and not since" % up
        return None
    if now - renewed > lease:
        return "not renewed for %d s on the wall clock (a record of an unknown boot)" % (now - renewed)
    if renewed - now > lease:
        return "its renewal time is %d s in the future (a record of an unknown boot)" % (renewed - now)
    return None


def _name(uid):
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)


def _user(uid):
    return "uid %d (%s)" % (uid, _name(uid))


def _refuse(folder, problem, fix):
    raise LeaseError("sglang_run_lock: the lock folder %s (sglang_backup_dir) %s: %s." % (shown(folder), problem, fix))


def _check_above(folder, above):
    """Refuse a folder above the lock folder that a user other than root or the run's could rename or replace."""
    status = os.stat(above)
    me = os.geteuid()
    if status.st_uid not in (0, me):
        _refuse(folder, "lies in %s, owned by %s: that user could put another folder in its place" % (
            shown(above), _user(status.st_uid)), "choose an sglang_backup_dir whose folders are all owned by root")
    if status.st_mode & 0o022 and not status.st_mode & stat.S_ISVTX:
        _refuse(folder, "lies in %s, mode %04o: any user could put another folder in its place" % (
            shown(above), stat.S_IMODE(status.st_mode)),
            "chmod go-w %s, or choose another sglang_backup_dir" % shown(above))


def _folders_above(path):
    parts = path.split("/")[1:-1]
    return ["/"] + ["/" + "/".join(parts[:n]) for n in range(1, len(parts) + 1)]


def safe_folder(folder, create):
    """The lock folder as an absolute normal path, checked (and made, with create, when missing): owned by the user
    the run runs as, not writable by group or others, not a symbolic link, and in folders only root or that user
    can change; None when it is missing and not made. LeaseError names the folder, what is wrong and the fix."""
    if not isinstance(folder, str) or not folder:
        _refuse(str(folder), "is empty", "set sglang_backup_dir to an absolute path such as /var/backups/sglang")
    if not folder.isprintable():
        _refuse(folder, "holds a control character (a newline?)", "give sglang_backup_dir as a plain absolute path")
    plain = folder.rstrip("/") or "/"
    if not plain.startswith("/") or plain.startswith("//") or os.path.normpath(plain) != plain:
        _refuse(folder, "is not an absolute path in its plain form (no '..', '.' or '//')",
                "give sglang_backup_dir as an absolute path such as /var/backups/sglang")
    above = _folders_above(plain)
    real = os.path.realpath(above[-1])
    above += [f for f in _folders_above(real + "/x") if f not in above]  # and where a link above leads
    for each in above:
        if not os.path.lexists(each):
            break  # made below, then checked whole
        _check_above(plain, each)
    if not os.path.lexists(plain):
        if not create:
            return None
        os.makedirs(plain, mode=0o700, exist_ok=True)
        return safe_folder(plain, create=False)
    status = os.lstat(plain)
    if stat.S_ISLNK(status.st_mode):
        _refuse(plain, "is a symbolic link (to %s), not the folder itself" % shown(
            os.readlink(plain)), "give the folder it leads to as sglang_backup_dir, or make it a real folder")
    if not stat.S_ISDIR(status.st_mode):
        _refuse(plain, "is not a folder", "move that file away, or choose another sglang_backup_dir")
    if status.st_uid != os.geteuid():
        _refuse(plain, "is owned by %s, not by %s, the user this run changes the host as: that user could write or "
                "remove the run lock's record" % (_user(status.st_uid), _user(os.geteuid())),
                "check what that user put there, then chown %s %s" % (_name(os.geteuid()), plain))
    if status.st_mode & 0o022:
        _refuse(plain, "is mode %04o, writable by other users, who could write or remove the run lock's record"
                % stat.S_IMODE(status.st_mode), "check what is in it, then chmod go-w %s" % plain)
    return plain


def _read(folder):
    """The record in the folder, None when there is none. A record is read whole or refused by name: one taken
    as absent would let the next run take a live run's lock."""
    path = os.path.join(folder, RECORD)
    fix = ("the run lock writes it itself, JSON of a few hundred bytes. Sure that no run changes this host (ps on "
           "its controller)? Then move it away and run again")
    try:
        data = read_plain(path, RECORD_LIMIT)
    except FileNotFoundError:
        return None
    except NotPlainFile as error:
        raise LeaseError("%s %s (not a regular file of the run lock's): %s" % (path, error.strerror, fix)) from None
    try:
        record = json.loads(data.decode("utf-8"))
    except (ValueError, RecursionError):  # UnicodeDecodeError is a ValueError
        raise LeaseError("%s is not a run lock record (not JSON): %s" % (path, fix)) from None
    if not isinstance(record, dict) or not isinstance(record.get("run_id"), str) or not record["run_id"]:
        raise LeaseError("%s is not a run lock record (it names no run_id): %s" % (path, fix))
    return record


def _write(folder, record):
    """Replace the record whole: a temp file of a random name, created by this call (O_EXCL: a planted file or
    hard link there is refused, never written through; O_NOFOLLOW: nor a link), flushed, then renamed over the
    record. A failure removes the temp file and leaves the old record."""
    data = (json.dumps(record, sort_keys=True) + "\n").encode("utf-8")
    if len(data) > RECORD_LIMIT:
        raise LeaseError("sglang_run_lock: this run's record would be %d bytes, more than the %d the run lock reads "
                         "back; the holder fields (play name...) are too long: shorten the play's name"
                         % (len(data), RECORD_LIMIT))
    path = os.path.join(folder, RECORD)
    temp = "%s.%s.tmp" % (path, secrets.token_hex(8))
    try:
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0), 0o600)
    except OSError as error:
        if error.errno in (errno.EEXIST, errno.ELOOP):
            raise LeaseError("sglang_run_lock: %s exists already, and the run lock never reuses a temp file: "
                             "something else made it; move it away and run again" % temp) from None
        raise
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temp, path)  # a kill leaves the old record or this one, never half of one
    except BaseException:
        try:
            os.unlink(temp)
        except OSError:
            pass
        raise


def _guarded(folder, doing):
    """The short flock around each read-decide-write. The guard file is truncated when taken, so one with another
    name for the same file (a hard link left from before the folder was safe) or another owner (who could hold its
    flock for good) is refused, not used; the folder is safe by now, so no one can plant one after this look."""
    guard = os.path.join(folder, GUARD)
    try:
        status = os.lstat(guard)
    except FileNotFoundError:
        status = None
    if status and stat.S_ISREG(status.st_mode) and (status.st_nlink != 1 or status.st_uid != os.geteuid()):
        raise LeaseError("sglang_run_lock: the run lock's guard %s has %d names (hard links) and belongs to %s: "
                         "the run lock makes it itself, one name, its own. Move it away and run again"
                         % (guard, status.st_nlink, _user(status.st_uid)))
    return held(guard, doing, timeout=30.0)


def _try(folder, run_id, holder, lease, take_over, check):
    """(record now in place, stale record replaced, why it was stale) or raise LeaseHeld naming the holder."""
    try:
        with _guarded(folder, "sglang_run_lock acquire by %s" % run_id):
            now, up, boot = time.time(), uptime(), boot_id()
            record = _read(folder)
            stale, why = None, None
            if record and record["run_id"] != run_id:
                why = "named by take_over (its ansible-playbook is gone)" if record["run_id"] == take_over else \
                    stale_reason(record, now, up, boot, lease)
                if why:
                    stale = record
                else:
                    raise LeaseHeld("held by " + describe(record), record)
            mine = dict(holder, run_id=run_id, boot_id=boot, renewed_at=now, renewed_uptime=up,
                        renewed_at_iso=datetime.fromtimestamp(now, UTC).isoformat(timespec="seconds"))
            if record and record["run_id"] == run_id:
                mine["acquired_at"] = record.get("acquired_at", mine["renewed_at_iso"])
                if record.get("took_over"):
                    mine["took_over"] = record["took_over"]
            else:
                mine["acquired_at"] = mine["renewed_at_iso"]
                if stale:  # the run it replaced learns it at its release (release() below)
                    mine["took_over"] = stale["run_id"]
            if not check:
                _write(folder, mine)
            return mine, stale, why
    except LockBusy as busy:  # the guard is held for milliseconds; 30 s of it is a hung run
        raise LeaseError("the run lock's guard %s is held by %s" % (os.path.join(folder, GUARD), busy)) from None
    except LockNotAFile as error:
        raise LeaseError(str(error)) from None


def acquire(folder, run_id, holder, wait, lease, take_over="", check=False, poll=1.0):
    """(this run's record, the stale record it replaced or None, why that one was stale or None)."""
    if lease < MIN_LEASE:
        raise LeaseError("sglang_run_lock: lease is %s s; a run lock's lease is at least %d s "
                         "(sglang_run_lock_lease), longer than any phase of a run" % (lease, MIN_LEASE))
    folder = safe_folder(folder, create=not check)
    if folder is None:
        return dict(holder, run_id=run_id), None, None  # --check creates nothing, and no run holds a lock there
    deadline = time.monotonic() + wait
    while True:
        try:
            return _try(folder, run_id, holder, lease, take_over, check)
        except LeaseHeld as busy:
            if check:
                return busy.record, None, None  # --check changes nothing, so it does not wait for the run that does
            if time.monotonic() >= deadline:
                message = ("This host is being changed by another run: %s. Waited %d s (sglang_run_lock_wait). "
                           "Let that run finish; if it is gone, its lock is taken over %d s after its last renewal "
                           "(sglang_run_lock_lease, timed on the host's uptime clock: a clock jump changes nothing), "
                           "or at once by a run from the same controller, or remove %s after checking no run "
                           "changes this host." % (describe(busy.record), wait, lease, os.path.join(folder, RECORD)))
                raise LeaseHeld(message, busy.record) from None
            time.sleep(poll)


def release(folder, run_id, check=False):
    """Give back this run's lock: None when it held it or no run does; another run's record is left as it is and
    returned (a run refused at its start, or one whose role gave the lock back already, has nothing to give back, so
    a playbook's `always` releases without remembering whether it held it). LeaseHeld when that other run took this
    one's lock over: then two runs may have changed the host at once, which the run must not end quietly on."""
    folder = safe_folder(folder, create=False)
    if folder is None:
        return None
    try:
        with _guarded(folder, "sglang_run_lock release by %s" % run_id):
            record = _read(folder)
            if record is None:
                return None
            if record["run_id"] != run_id:
                if record.get("took_over") == run_id:
                    raise LeaseHeld("Not released: this run's lock (%s) was taken over by %s, as stale (not renewed "
                                    "for sglang_run_lock_lease, or this run's ansible-playbook looked gone): both "
                                    "runs may have changed this host at once. Let that run finish, then run site.yml "
                                    "again to check the host; the lock is left as it is."
                                    % (shown(run_id), describe(record)), record)
                return record
            if not check:
                os.unlink(os.path.join(folder, RECORD))
            return None
    except LockBusy as busy:
        raise LeaseError("the run lock's guard %s is held by %s" % (os.path.join(folder, GUARD), busy)) from None
    except LockNotAFile as error:
        raise LeaseError(str(error)) from None
