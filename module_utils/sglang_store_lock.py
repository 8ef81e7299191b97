"""The backup store's lock: one run at a time changes the store. An flock on <store>/.lock, taken with a short bounded
wait (the store's critical sections last milliseconds, so a second run normally just waits its turn) and refused with
a sentence naming the run that holds it. The kernel releases an flock when its process dies, so a run that died never
leaves the store locked; the holder's description in the file is only for the message."""

from __future__ import annotations

import errno
import fcntl
import json
import os
import socket
import stat
import time
from contextlib import contextmanager
from datetime import datetime, timezone

from ansible.module_utils.sglang_files import read_plain

# datetime.UTC is Python 3.11+: this runs on the hosts, whose Python can be older (Ubuntu 22.04: 3.10)
UTC = timezone.utc  # noqa: UP017

LOCK = ".lock"


class LockBusy(Exception):
    pass


class LockNotAFile(Exception):
    """The lock's path holds something the store did not make (a symbolic link, a FIFO, a folder)."""


def describe(holder):
    """One phrase for the run described in a lock file ({} when it has not written itself in yet)."""
    if not isinstance(holder, dict) or not holder.get("pid"):
        return "a run that has not described itself yet (it has just taken the lock)"
    who = "; ".join(str(holder[k]) for k in ("doing", "owner") if holder.get(k))
    return "%spid %s on %s since %s" % (who + ", " if who else "", holder.get("pid"), holder.get("host", "?"),
                                        holder.get("started_at", "?"))


def read_holder(path):
    try:
        return json.loads(read_plain(path, 64 * 1024).decode("utf-8") or "{}")
    except (OSError, ValueError, RecursionError):
        return {}


def open_lock(path):
    """The lock file's descriptor. Never through a symbolic link (O_NOFOLLOW: the lock is truncated, so a link would
    truncate its target) and only a regular file (a FIFO or device there is named, not opened for writing)."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0),
                     0o600)
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise LockNotAFile("%s is a symbolic link, not the store's lock file (the store never makes one)"
                               % path) from None
        if error.errno == errno.EISDIR:
            raise LockNotAFile("%s is a folder, not the store's lock file" % path) from None
        raise
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise LockNotAFile("%s is not a regular file (the store makes its lock file itself)" % path)
    return fd


@contextmanager
def held(path, doing, owner=None, timeout=10.0, poll=0.1):
    """Hold the lock at path for the block, waiting at most timeout seconds; LockBusy names the holder."""
    fd = open_lock(path)
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError as error:
                if error.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
                    raise
                if time.monotonic() >= deadline:
                    raise LockBusy(describe(read_holder(path))) from None
                time.sleep(poll)
        holder = {"pid": os.getpid(), "host": socket.gethostname(), "doing": doing, "owner": owner,
                  "started_at": datetime.now(UTC).isoformat(timespec="seconds")}
        os.ftruncate(fd, 0)
        os.pwrite(fd, (json.dumps(holder, sort_keys=True) + "\n").encode("utf-8"), 0)
        try:
            yield holder
        finally:
            os.ftruncate(fd, 0)  # released: the next refusal must not name a run that has finished
    finally:
        os.close(fd)  # closing the descriptor releases the flock
