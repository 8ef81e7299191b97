"""The host's run lock (library/sglang_run_lock.py explains the design): a lease record in <dir>/.run-lock.json,
read, decided and replaced under a short flock on <dir>/.run-lock (the store's lock helper: never through a link,
only a regular file)."""

from __future__ import annotations

import json
import os
import time
from datetime import datetime, timezone

from ansible.module_utils.sglang_store_lock import LockBusy, LockNotAFile, held, read_holder

UTC = timezone.utc  # noqa: UP017 (the hosts' Python can be 3.10)
RECORD = ".run-lock.json"
GUARD = ".run-lock"


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


def describe(record):
    """One sentence naming the run in a record, as the operator needs it to find that run."""
    return ("run %s (play '%s', controller %s, pid %s, user %s, started %s; last renewed %s)"
            % (record.get("run_id", "?"), record.get("play") or "?", record.get("controller") or "?",
               record.get("pid") or "?", record.get("user") or "?", record.get("started") or "?",
               record.get("renewed_at_iso") or "?"))


def _read(folder):
    path = os.path.join(folder, RECORD)
    if os.path.islink(path) or (os.path.exists(path) and not os.path.isfile(path)):
        raise LeaseError("%s is not a regular file (the run lock writes it itself): move it away" % path)
    if not os.path.exists(path):
        return None
    record = read_holder(path)
    # An unreadable or foreign record cannot name a live run, so it is treated as no record (and replaced).
    return record if isinstance(record, dict) and record.get("run_id") else None


def _write(folder, record):
    path = os.path.join(folder, RECORD)
    temp = "%s.%d.tmp" % (path, os.getpid())
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    try:
        os.write(fd, (json.dumps(record, sort_keys=True) + "\n").encode("utf-8"))
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(temp, path)  # a kill leaves the old record or this one, never half of one


def _guarded(folder, doing):
    os.makedirs(folder, mode=0o700, exist_ok=True)
    return held(os.path.join(folder, GUARD), doing, timeout=30.0)


def _try(folder, run_id, holder, lease, take_over, check):
    """(record now in place, stale record replaced) or raise LeaseHeld naming the holder."""
    now = time.time()
    try:
        with _guarded(folder, "sglang_run_lock acquire by %s" % run_id):
            record = _read(folder)
            stale = None
            if record and record["run_id"] != run_id:
                age = now - float(record.get("renewed_at") or 0)
                if record["run_id"] == take_over or age > lease:
                    stale = record
                else:
                    raise LeaseHeld("held by " + describe(record), record)
            mine = dict(holder, run_id=run_id, boot_id=boot_id(), renewed_at=now,
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
            return mine, stale
    except LockBusy as busy:  # the guard is held for milliseconds; 30 s of it is a hung run
        raise LeaseError("the run lock's guard %s is held by %s" % (os.path.join(folder, GUARD), busy)) from None
    except LockNotAFile as error:
        raise LeaseError(str(error)) from None


def acquire(folder, run_id, holder, wait, lease, take_over="", check=False, poll=1.0):
    if check and not os.path.isdir(folder):
        return dict(holder, run_id=run_id), None  # --check creates nothing, and no run holds a lock there
    deadline = time.monotonic() + wait
    while True:
        try:
            return _try(folder, run_id, holder, lease, take_over, check)
        except LeaseHeld as busy:
            if check:
                return busy.record, None  # --check changes nothing, so it does not wait for the run that does
            if time.monotonic() >= deadline:
                message = ("This host is being changed by another run: %s. Waited %d s (sglang_run_lock_wait). "
                           "Let that run finish; if it is gone, its lock is taken over %d s after its last renewal "
                           "(sglang_run_lock_lease), or at once by a run from the same controller, or remove %s "
                           "after checking no run changes this host."
                           % (describe(busy.record), wait, lease, os.path.join(folder, RECORD)))
                raise LeaseHeld(message, busy.record) from None
            time.sleep(poll)


def release(folder, run_id, check=False):
    """Give back this run's lock: None when it held it or no run does; another run's record is left as it is and
    returned (a run refused at its start, or one whose role gave the lock back already, has nothing to give back, so
    a playbook's `always` releases without remembering whether it held it). LeaseHeld when that other run took this
    one's lock over: then two runs may have changed the host at once, which the run must not end quietly on."""
    if not os.path.isdir(folder):
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
                                    % (run_id, describe(record)), record)
                return record
            if not check:
                os.unlink(os.path.join(folder, RECORD))
            return None
    except LockBusy as busy:
        raise LeaseError("the run lock's guard %s is held by %s" % (os.path.join(folder, GUARD), busy)) from None
    except LockNotAFile as error:
        raise LeaseError(str(error)) from None
