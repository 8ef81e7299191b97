"""hf_download's records beside the files: the checks of content done (.sglang-verified.json), the ledger of the
download under way (.sglang-download.json) with the folder's lock that makes one downloader at a time, and what of
the listed files is on disk."""

from __future__ import annotations

import errno
import fcntl
import json
import os
import time

# Beside the files: {name: [size, mtime_ns, sha256 or git blob id]} of files whose content was checked against the
# listing, so that a file already there at its listed size is hashed once, not on every run (hundreds of GiB).
VERIFIED = ".sglang-verified.json"
# The ledger of the download under way (one downloader per folder at a time: take_lock): when it began, the bytes every
# call of it fetched, and the early download's pid, progress and end.
LEDGER = ".sglang-download.json"

# hf_checkpoint_status's mark of a whole checkpoint (repo and revision): the early start has nothing to do then.
COMPLETE_MARKER = ".sglang-download-complete"


def read_mapping(folder, name):
    """The JSON object in folder/name (one of this module's own files there), or {} when it is absent or not one."""
    try:
        with open(os.path.join(folder, name), encoding="utf-8") as handle:
            data = json.load(handle)
    except (OSError, ValueError, RecursionError):
        return {}
    return data if isinstance(data, dict) else {}


def write_mapping(folder, name, data):
    """folder/name holding data as JSON, replaced whole (a reader sees the old file or the new one); a write that
    fails (a full disk) leaves no .tmp behind."""
    tmp = os.path.join(folder, name + ".tmp")
    try:
        with open(tmp, "w", encoding="utf-8") as handle:
            json.dump(data, handle, sort_keys=True)
        os.replace(tmp, os.path.join(folder, name))
    except OSError:
        if os.path.lexists(tmp):
            os.unlink(tmp)
        raise


def read_verified(folder):
    return read_mapping(folder, VERIFIED)


def stamp(path):
    """[size, mtime_ns] of the file: what a recorded check of its content holds it to."""
    status = os.stat(path)
    return [status.st_size, status.st_mtime_ns]


def write_verified(folder, verified):
    write_mapping(folder, VERIFIED, verified)


def on_disk(folder, files):
    """(bytes, whole files) of the listed files in folder: a whole file counts its size, a .part what it holds."""
    have, whole = 0, 0
    for name, size in files.items():
        path = os.path.join(folder, name)
        if os.path.exists(path) and (size is None or os.path.getsize(path) == size):
            have += size or 0
            whole += 1
        elif os.path.exists(path + ".part"):
            have += min(os.path.getsize(path + ".part"), size if size is not None else float("inf"))
    return int(have), whole


# -- the download's lock and ledger: one downloader per folder, and what every call of one download did ----------
def take_lock(folder, wait):
    """The folder's download lock (flock on the folder itself: nothing is written for it), waiting up to `wait`
    seconds (None: as long as it takes); None when another process (the early download) still holds it then. The
    lock dies with its process, so a download killed by a reboot leaves none behind. Returns the fd to close."""
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    until = None if wait is None else time.monotonic() + wait
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return Held(fd)
        except BlockingIOError:
            if until is not None and time.monotonic() >= until:
                os.close(fd)
                return None
            time.sleep(1)


class Held:
    """An open descriptor holding the lock; close() gives this process's copy up (a forked worker keeps its own)."""

    def __init__(self, fd):
        self.fd = fd

    def close(self):
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


def read_ledger(folder):
    """{started, bytes_fetched, pid, state, error, ...} of the download under way in folder, or {}."""
    return read_mapping(folder, LEDGER)


def write_ledger(folder, ledger):
    """The ledger written, except on a full disk (or quota): it is only the download's tally, and the fetch that
    meets the full disk says what it means for the files (disk_full_sentence)."""
    try:
        write_mapping(folder, LEDGER, ledger)
    except OSError as err:
        if err.errno not in (errno.ENOSPC, errno.EDQUOT):
            raise


def number(value):
    """A count read from a ledger or a report: the value when it is a non-negative number, else 0."""
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0 else 0


def marked_complete(folder, repo, revision):
    """Whether hf_checkpoint_status marked the folder complete for this repository and revision."""
    marker = read_mapping(folder, COMPLETE_MARKER)
    return marker.get("repo") == repo and marker.get("revision") == revision


def settle(folder, ledger, files):
    """The ledger of an early download that died (a reboot, a kill: it is not running, since this process holds the
    lock) with what it wrote after its last note, which is on disk."""
    if ledger.get("state") != "running" or ledger.get("bytes_done") is None:
        return ledger
    grew = on_disk(folder, files)[0] - number(ledger["bytes_done"])
    return add_to_ledger(folder, ledger, max(0, grew), state="stopped")


def add_to_ledger(folder, ledger, written, **state):
    """The ledger with this call's bytes added (every call of one download, early or joining, adds its own)."""
    ledger = dict(ledger, updated=time.time(), **state)
    ledger["bytes_fetched"] = number(ledger.get("bytes_fetched")) + written
    ledger.setdefault("started", time.time())
    write_ledger(folder, ledger)
    return ledger
