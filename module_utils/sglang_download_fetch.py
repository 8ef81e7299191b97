"""hf_download's fetcher: one file from the Hub into <file>.part, resumed with a Range request where an earlier run
stopped, hashed as its bytes arrive and renamed only once whole and checked against the listing; and the files of a
call side by side, under one shared rate cap."""

from __future__ import annotations

import concurrent.futures
import errno
import hashlib
import http.client
import os
import threading
import time
import urllib.error

from ansible.module_utils.sglang_download_listing import PART, FinalError, request


def unwatched():
    """The `moved` of a download no watchdog listens to (only the early download's process has one)."""


CHUNK = 8 * 2**20
# At most this many files at once: each holds a connection and at most CHUNK in memory.
MAX_CONNECTIONS = 64


def new_digest(proof, size):
    """The running hash that checks a file against its listed proof: sha256 of the bytes, or git's blob sha1 (which
    begins with "blob <size>\\0")."""
    if proof[0] == "git":
        return hashlib.sha1(b"blob %d\x00" % size)  # git's content id, as the Hub lists it
    return hashlib.sha256()


def proof_words(proof):
    return "git blob id" if proof[0] == "git" else "sha256"


def digest_of(path, proof, moved=unwatched):
    """The hex digest of the file at path, as listed_proof's kind computes it (moved(): a block was hashed)."""
    digest = new_digest(proof, os.path.getsize(path))
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(CHUNK), b""):
            digest.update(block)
            moved()
    return digest.hexdigest()


def _served_total(response, offset):
    """The file's whole size as the server states it (Content-Range's total, or offset + Content-Length)."""
    content_range = response.headers.get("Content-Range") or ""
    if "/" in content_range and content_range.rsplit("/", 1)[1].strip().isdigit():
        return int(content_range.rsplit("/", 1)[1])
    length = response.headers.get("Content-Length") or ""
    return offset + int(length) if length.strip().isdigit() else None


def _refuse(part, name, served, size):
    """A final size error: the .part goes (resuming it would only repeat the error)."""
    if os.path.exists(part):
        os.unlink(part)
    raise FinalError("%s: the server sent %d bytes but the Hub's listing says %d: the mirror and the listing disagree, "
                     "so no run can complete it; the partial file was removed. Check sglang_hf_endpoint and the "
                     "revision" % (name, served, size))


def _prefix_digest(part, offset, proof, size, moved):
    """The hash of the first `offset` bytes of a .part an earlier call left (its hash state died with that
    process)."""
    digest = new_digest(proof, size)
    if offset:
        with open(part, "rb") as handle:
            left = offset
            while left:
                block = handle.read(min(CHUNK, left))
                if not block:
                    break
                digest.update(block)
                left -= len(block)
                moved()
    return digest


class BrokenOff(Exception):
    """An answer that ended before the length its server announced (a connection cut): the .part is kept for the
    next run to resume."""


class DiskFull(OSError):
    """The disk (or the user's quota) ran out while writing a file: the .part keeps what was written."""


def fetch(url, dest, size, token, timeout, deadline=None, proof=None, stop=None, throttle=None, moved=unwatched):
    """Download url to dest through dest.part, continuing a partial one.

    Returns (offset resumed at, bytes written, whether dest is now whole). Past `deadline` (time.monotonic()), or once
    `stop` (a threading.Event: another file of the call failed) is set, it stops reading and keeps the .part for the
    next call, unless the server ignored the Range. The bytes are hashed as they arrive (a resumed .part's prefix
    first), so a whole file is checked against `proof` (listed_proof) without reading it again. A file served at
    another size than `size`, or whose content is not the proof's, raises FinalError; an answer shorter than the
    length its server announced raises BrokenOff (the .part stays); a full disk raises DiskFull.
    moved() is called as its bytes move (read, or hashed from the .part): the early download's watchdog listens.
    """
    name, part = os.path.basename(dest), dest + PART
    offset = os.path.getsize(part) if os.path.exists(part) else 0
    if size is not None and offset > size:
        offset = 0  # not a prefix of this file: start again
    resumed, written, stopped, served = offset, 0, False, None
    digest = _prefix_digest(part, offset, proof, size, moved) if proof else None
    if size is None or offset < size:
        try:
            response = request(url, token, timeout, offset)
        except urllib.error.HTTPError as err:
            if err.code != 416:  # 416: nothing left to send
                raise
            response = None
        if response is not None:
            with response:
                ranged = True
                if offset and response.getcode() != 206:
                    offset, resumed, ranged = 0, 0, False  # the server ignored the range: the whole file follows
                    digest = new_digest(proof, size) if proof else None
                served = _served_total(response, offset)
                if size is not None and served is not None and served != size:
                    _refuse(part, name, served, size)
                try:
                    with open(part, "ab" if offset else "wb") as handle:
                        while True:
                            # read1: what has arrived (up to CHUNK), so that a slow link still meets the deadline.
                            chunk = response.read1(CHUNK)
                            if not chunk:
                                break
                            handle.write(chunk)
                            moved()
                            if throttle is not None:
                                throttle(len(chunk))
                            if digest is not None:
                                digest.update(chunk)  # hashlib lets the other files' threads run meanwhile
                            written += len(chunk)
                            if size is not None and offset + written > size:
                                break  # more than listed: refused below, without reading the rest
                            if ranged and ((deadline is not None and time.monotonic() >= deadline)
                                           or (stop is not None and stop.is_set())):
                                stopped = True
                                break
                except OSError as err:
                    if err.errno in (errno.ENOSPC, errno.EDQUOT):
                        raise DiskFull(err.errno, err.strerror, part) from None
                    raise
    have = os.path.getsize(part)
    if stopped and (size is None or have < size):
        return resumed, written, False
    if size is not None and have > size:
        _refuse(part, name, have, size)
    if served is not None and have < served:
        # http.client's read1 returns b"" when the connection closes early, without an error: a cut, not the end
        raise BrokenOff("the server's answer broke off after %d of the %d bytes it announced" % (have, served))
    if size is not None and have != size:
        _refuse(part, name, have, size)
    if proof:
        # the running hash covers the file when it was written from `offset` on in this call; else read it whole
        got = digest.hexdigest() if digest is not None and offset + written == have else digest_of(part, proof, moved)
        if got != proof[1]:
            os.unlink(part)
            raise FinalError("%s: its content's %s is %s but the Hub lists %s: the copy served is not the file; it "
                             "was removed. Check sglang_hf_endpoint (a mirror serving other bytes)"
                             % (name, proof_words(proof), got, proof[1]))
    os.replace(part, dest)
    return resumed, written, True


class RateCap:
    """The download's cap in bytes per second, shared by its connections: a taker sleeps until its bytes fit (the
    sleep holds no lock, so the other connections go on)."""

    def __init__(self, rate):
        self.rate, self.lock, self.free_at = float(rate), threading.Lock(), time.monotonic()

    def __call__(self, count):
        with self.lock:
            now = time.monotonic()
            self.free_at = max(self.free_at, now) + count / self.rate
            wait = self.free_at - now - count / self.rate
        if wait > 0:
            time.sleep(wait)


def fetch_all(todo, urls, folder, files, digests, token, timeout, deadline, connections, max_bytes_per_s=0,
              moved=unwatched):
    """The files of `todo` side by side, `connections` at a time (one HTTP stream each, each resumable by its own
    .part): one stream is what a CDN gives a connection (about 40 MB/s), many fill the link.

    Returns ({name: (offset, written, whole)} of the files begun, [(name, error)] of the failures, first first). After
    a failure the other files stop at their next read and keep their .part; files not begun by the deadline are the
    next call's."""
    stop, results, failures = threading.Event(), {}, []
    throttle = RateCap(max_bytes_per_s) if max_bytes_per_s else None

    def one(name):
        if stop.is_set() or (deadline is not None and time.monotonic() >= deadline):
            return
        try:
            results[name] = fetch(urls[name], os.path.join(folder, name), files[name], token, timeout, deadline,
                                  digests.get(name), stop, throttle, moved)
        except (FinalError, BrokenOff, urllib.error.URLError, OSError, ValueError,
                http.client.HTTPException) as err:
            failures.append((name, err))
            stop.set()

    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, min(connections, len(todo) or 1))) as pool:
        list(pool.map(one, todo))
    return results, failures
