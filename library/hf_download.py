#!/usr/bin/python
"""Ansible module: download a Hugging Face Hub repository into a folder, resuming partial files."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: hf_download
short_description: Download a Hugging Face Hub model repository into a folder, resuming what an earlier run left
description:
  - Resolves the revision to a commit (C(/api/models/<repo>/revision/<revision>?blobs=true), which lists every
    file with its size), then fetches the files from C(/<repo>/resolve/<commit>/<file>), I(connections) of them
    side by side (a CDN gives one connection about 40 MB/s; many fill the link).
  - Each file's bytes are hashed as they arrive (a resumed C(.part)'s prefix first), so a whole file is checked
    against the listed sha256 (a plain file, not in Git LFS, against its git blob id) without being read again. A
    file the listing gives no size and hash for is refused by name before anything is fetched, unless
    I(allow_unverified) names it.
  - A listed name this module keeps for itself (anything ending C(.part), a top-level C(.sglang-*)) is refused.
  - A redirect is followed only to https (and to http only from an http I(endpoint)); an answer shorter than the
    length its server announced keeps its C(.part) for the next run. A full disk names the file, what its C(.part)
    keeps, and how to resume.
  - A file is written to C(<file>.part) and renamed only once it has the size the Hub lists; a C(.part) left by an
    interrupted run is continued with an HTTP C(Range) request. Files already present at their listed size are kept.
  - Written because huggingface_hub 2.x no longer resumes across processes (each process downloads to its own
    temporary file and deletes it on failure, huggingface_hub PR 4228).
  - The token is read from I(token_file) on the host, so it never appears in the module's arguments, the
    environment or the logs; it is sent to the Hub only, never along a redirect to a storage host.
  - With I(poll), one call downloads for about that many seconds and returns how far the whole download has come
    (RV(bytes_done) of RV(bytes_total), this call's rate, RV(progress)) with RV(done=false); the next call
    continues the C(.part) where it stopped. Meant to run as a retried task (C(until) with C(retries)), so that
    callback_plugins/sglang_progress.py prints one line per try; a failure fails that try, which ends the loop.
version_added: "1.1.0"
author: sglang-longctx maintainers (!UNKNOWN)
options:
  repo:
    description: Model repository, C(org/name).
    type: str
    required: true
  revision:
    description: Branch, tag or commit.
    type: str
    default: main
  path:
    description: Folder to download into.
    type: path
    required: true
  token_file:
    description: File holding the Hub token (absent or empty - anonymous).
    type: path
  endpoint:
    description: The Hub, or a mirror of it.
    type: str
    default: https://huggingface.co
  timeout:
    description: Seconds without data before a request fails.
    type: int
    default: 60
  connections:
    description:
      - Files downloaded side by side, one HTTP connection and at most 8 MiB in memory each (1 to 64).
    type: int
    default: 16
  max_bytes_per_s:
    description:
      - A cap on the download's rate in bytes per second, all connections together (0 - none), so that a download
        beside a live server (a new revision fetched while the old one serves) leaves it the link.
    type: int
    default: 0
  poll:
    description:
      - Seconds one call downloads before it returns with RV(done=false), leaving the rest to the next call.
      - A file from a server that ignored the C(Range) of a resumed request is finished in the same call
        (stopping would lose it again).
      - Unset, one call downloads everything (no progress until it ends).
      - While the early download (I(background)) runs, a call fetches nothing, it waits up to I(poll) seconds for it
        to end and returns its progress (RV(joined)); once it has ended (done, failed, or killed by a reboot), the
        call continues its C(.part) files itself.
    type: int
  allow_unverified:
    description:
      - Files fetched although the listing gives no size and sha256 (or, for a plain file, git blob id) for them,
        by name or shell pattern (C(*) also crosses C(/)); such a file could be cut off or altered unnoticed.
      - Any other file without them is refused by name before anything is fetched. The Hub lists both for every
        file; a mirror may not.
    type: list
    elements: str
    default: []
  background:
    description:
      - The early download, started before the driver, CUDA and the runtime build so that it runs beside them.
        Fetches every file but the weights (C(config.json), the index, the tokenizer; the plan reads them) before it
        returns, then the weights in a detached process (its own session, as Ansible's C(async_wrapper) starts one)
        that holds the folder's lock and notes its progress in C(<path>/.sglang-download.json) every 2 s.
      - Returns at once; a folder already being downloaded (the lock is held) or marked complete by
        C(hf_checkpoint_status) starts nothing. Nothing starts in check mode.
      - The folder must exist. One downloader at a time per folder - C(flock) on the folder, released when its process
        dies, so a reboot leaves no stale lock and the next call resumes its C(.part) files.
    type: bool
    default: false
notes:
  - Supports check mode (lists what would be fetched).
"""

EXAMPLES = r"""
- name: Fetch the weights
  hf_download:
    repo: moonshotai/Kimi-K2.6
    revision: main
    path: /srv/models/kimi-k2.6
    token_file: /var/lib/sglang/.cache/huggingface/token
  become: true
  become_user: sglang

- name: Start fetching the weights beside the other work (config.json before it returns)
  hf_download:
    repo: moonshotai/Kimi-K2.6
    path: /srv/models/kimi-k2.6
    background: true
  become: true
  become_user: sglang

- name: Fetch the weights, reporting bytes done / total every 30 s
  hf_download:
    repo: moonshotai/Kimi-K2.6
    path: /srv/models/kimi-k2.6
    poll: 30
  register: fetch
  until: fetch is failed or fetch.done
  retries: 2880
  delay: 1
"""

RETURN = r"""
commit:
  description: The commit the revision resolved to.
  returned: success
  type: str
fetched:
  description: Files completed (or, in check mode, to download) by this call.
  returned: success
  type: list
  elements: str
resumed:
  description: Files continued from a partial download, with the byte offset they resumed at.
  returned: success
  type: dict
done:
  description: Whether every file of the revision is now there at its listed size (always true without I(poll)).
  returned: success
  type: bool
bytes_done:
  description: Bytes of the revision's files on disk, whole files and C(.part) files together.
  returned: success
  type: int
bytes_total:
  description: Bytes of the revision's files, as the Hub lists them (files listed without a size count as 0).
  returned: success
  type: int
files_done:
  description: Files of the revision there at their listed size.
  returned: success
  type: int
files_total:
  description: Files of the revision.
  returned: success
  type: int
connections:
  description: The files this call downloaded side by side at most.
  returned: success
  type: int
bytes_fetched:
  description: Bytes this call downloaded (what a resume fetched again shows here).
  returned: success
  type: int
bytes_per_s:
  description: This call's download rate (bytes written / seconds spent downloading), null when it wrote nothing.
  returned: success
  type: float
download_fetched:
  description:
    - Bytes the whole download fetched, the early download's and every call's, once it is done (its ledger is then
      removed); else this call's.
  returned: success
  type: int
download_started:
  description: When the download began (epoch seconds; the early start when there was one), null without a ledger.
  returned: success
  type: float
started:
  description: With I(background), whether this call started the early download.
  returned: with background
  type: bool
running:
  description: With I(background), whether the early download is running now (started by this call or before).
  returned: with background
  type: bool
pid:
  description: With I(background), the early download's process id, null when none runs.
  returned: with background
  type: int
joined:
  description: The early download's process id when this call only waited for it (it holds the folder's lock).
  returned: when the early download runs
  type: int
progress:
  description: One line for people, without a clock (RV(progress_clock) asks the callback for the task's).
  returned: success
  type: str
  sample: "downloading moonshotai/Kimi-K2.6: 112.4 of 595.2 GiB (19%), 14/64 files, 412.0 MiB/s (about 20m left)"
progress_clock:
  description: C(task) - callback_plugins/sglang_progress.py appends the time since the task began on this host.
  returned: success
  type: str
"""

import concurrent.futures
import errno
import fcntl
import fnmatch
import hashlib
import http.client
import json
import os
import re
import threading
import time
import urllib.error
import urllib.parse

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.sglang_errors import failures_as_sentences
from ansible.module_utils.sglang_http import RedirectRefused, open_following, read_bounded
from ansible.module_utils.sglang_text import duration
from ansible.module_utils.sglang_text import human_bytes as human

CHUNK = 8 * 2**20
# At most this many files at once: each holds a connection and at most CHUNK in memory.
MAX_CONNECTIONS = 64
# A commit as the Hub names it: it goes into every file's URL, so nothing else (a listing's "../x" would reach
# another path on the mirror).
COMMIT_RE = re.compile(r"^[0-9a-f]{40}\Z")
SHA256_RE = re.compile(r"^[0-9a-f]{64}\Z")
# Beside the files: {name: [size, mtime_ns, sha256 or git blob id]} of files whose content was checked against the
# listing, so that a file already there at its listed size is hashed once, not on every run (hundreds of GiB).
VERIFIED = ".sglang-verified.json"
# The ledger of the download under way (one downloader per folder at a time: take_lock): when it began, the bytes every
# call of it fetched, and the early download's pid, progress and end.
LEDGER = ".sglang-download.json"
LEDGER_EVERY = 2
# When the bytes of this process last moved (read from the Hub, or hashed from a .part): the early download's watchdog
# reads it. A healthy fetch moves bytes at least every `timeout` seconds (a socket that waits longer raises).
_MOVED = [time.monotonic()]
# The early download's process name (ps -C sglang-download).
PROCESS_NAME = "sglang-download"
# hf_checkpoint_status's mark of a whole checkpoint (repo and revision): the early start has nothing to do then.
COMPLETE_MARKER = ".sglang-download-complete"
# The files the early start fetches before it returns: all but the weights (config.json, the index, the tokenizer; the
# plan reads them), each at most SMALL.
SMALL = 16 * 2**20
WEIGHTS = (".safetensors", ".bin", ".pt", ".pth", ".ckpt", ".gguf", ".h5", ".msgpack", ".onnx")


class FinalError(Exception):
    """A download that running again cannot fix: the Hub's listing and what is served disagree."""


def request(url, token, timeout, offset=0):
    """GET url; the token goes to url only, never along a redirect (the Hub sends files to a storage host)."""
    headers = {"Range": "bytes=%d-" % offset} if offset else {}
    # decompress=False: the bytes on disk must be the bytes the Hub lists (size, sha256), ranges included.
    # open_following: a redirect only to https (http only from an http endpoint), never ftp://, file:// or data:.
    return open_following(url, token, headers=headers, timeout=timeout, decompress=False)


# Writes of this module's own files go through <name>.tmp (write_mapping).
OWN_PREFIX = ".sglang-"
PART = ".part"


def own_name(name):
    """Whether a listed name is, or is inside, one this module writes itself: a partial download (any part ending
    .part, in any folder: x.part is x's partial) or a record in the folder's top level (.sglang-verified.json, the
    ledger, the completion mark, their .tmp writes: every one begins .sglang-). The Hub must not overwrite those,
    nor make a folder of that name."""
    parts = name.split("/")
    return parts[0].startswith(OWN_PREFIX) or any(part.endswith(PART) for part in parts)


def confined(name):
    """The listing's file name when it stays inside the download folder, else None: no absolute name, no '..', no
    empty part, no NUL or backslash (a peer's listing names the files; it must not name where they go)."""
    if not isinstance(name, str) or not name or "\x00" in name or "\\" in name or name.startswith("/"):
        return None
    return name if all(part not in ("", ".", "..") for part in name.split("/")) else None


def listed_proof(sibling, size):
    """How the file's content can be checked, from its listing entry: ("sha256", hex) for a Git LFS file (the
    weights), ("git", hex) for a plain one (config.json, the tokenizer: the Hub lists its git blob id, the sha1 of
    "blob <size>\\0" and its bytes); None when the listing gives neither with a size."""
    lfs = sibling.get("lfs")
    if isinstance(lfs, dict):
        digest = lfs.get("sha256")
        return ("sha256", digest.lower()) if isinstance(digest, str) and SHA256_RE.match(digest.lower()) else None
    blob = sibling.get("blobId")
    if size is not None and isinstance(blob, str) and COMMIT_RE.match(blob.lower()):
        return "git", blob.lower()
    return None


def parse_listing(info, where):
    """(commit, {file: size or None}, {file: proof}) from the Hub's answer (listed_proof: what checks the file's
    content); FinalError or ValueError naming what is wrong."""
    if not isinstance(info, dict) or not isinstance(info.get("sha"), str) or not isinstance(
            info.get("siblings", []), list):
        raise ValueError("%s is not a Hub revision listing (no commit sha or siblings list)" % where)
    if not COMMIT_RE.match(info["sha"]):
        raise FinalError("%s gives the commit %r, not 40 hex digits: refused, nothing was downloaded; check the "
                         "endpoint is the Hub or a faithful mirror" % (where, info["sha"][:80]))
    sizes, digests = {}, {}
    for sibling in info.get("siblings", []):
        name = confined(sibling.get("rfilename")) if isinstance(sibling, dict) else None
        if name is None:
            raise FinalError("%s names a file outside the download folder or no file at all (%r): refused, nothing "
                             "was downloaded; check the endpoint is the Hub or a faithful mirror" % (where, sibling))
        if own_name(name):
            raise FinalError("%s lists %r, a name this module keeps for its own files (a .part download, the "
                             ".sglang-* records beside the checkpoint): refused, nothing was downloaded; check the "
                             "endpoint is the Hub or a faithful mirror" % (where, name[:200]))
        if name in sizes:
            raise FinalError("%s lists %r twice: refused, nothing was downloaded" % (where, name[:200]))
        size = sibling.get("size")
        if size is not None and (not isinstance(size, int) or isinstance(size, bool) or size < 0):
            raise FinalError("%s lists %s with size %r, not a byte count" % (where, name, size))
        sizes[name] = size
        proof = listed_proof(sibling, size)
        if proof is not None:
            digests[name] = proof
    return info["sha"], sizes, digests


def listing(endpoint, repo, revision, token, timeout):
    """(commit, {file: size or None}, {file: proof where the Hub gives one (listed_proof)}) of the revision."""
    url = "%s/api/models/%s/revision/%s?blobs=true" % (endpoint, repo, urllib.parse.quote(revision, safe=""))
    with request(url, token, timeout) as response:
        info = json.loads(read_bounded(response, what=url))
    return parse_listing(info, url)


def new_digest(proof, size):
    """The running hash that checks a file against its listed proof: sha256 of the bytes, or git's blob sha1 (which
    begins with "blob <size>\\0")."""
    if proof[0] == "git":
        return hashlib.sha1(b"blob %d\x00" % size)  # noqa: S324 - git's content id, as the Hub lists it
    return hashlib.sha256()


def proof_words(proof):
    return "git blob id" if proof[0] == "git" else "sha256"


def digest_of(path, proof):
    """The hex digest of the file at path, as listed_proof's kind computes it."""
    digest = new_digest(proof, os.path.getsize(path))
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(CHUNK), b""):
            digest.update(block)
            _MOVED[0] = time.monotonic()
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


def _prefix_digest(part, offset, proof, size):
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
                _MOVED[0] = time.monotonic()
    return digest


class BrokenOff(Exception):
    """An answer that ended before the length its server announced (a connection cut): the .part is kept for the
    next run to resume."""


class DiskFull(OSError):
    """The disk (or the user's quota) ran out while writing a file: the .part keeps what was written."""


def fetch(url, dest, size, token, timeout, deadline=None, proof=None, stop=None, throttle=None):
    """Download url to dest through dest.part, continuing a partial one.

    Returns (offset resumed at, bytes written, whether dest is now whole). Past `deadline` (time.monotonic()), or once
    `stop` (a threading.Event: another file of the call failed) is set, it stops reading and keeps the .part for the
    next call, unless the server ignored the Range. The bytes are hashed as they arrive (a resumed .part's prefix
    first), so a whole file is checked against `proof` (listed_proof) without reading it again. A file served at
    another size than `size`, or whose content is not the proof's, raises FinalError; an answer shorter than the
    length its server announced raises BrokenOff (the .part stays); a full disk raises DiskFull.
    """
    name, part = os.path.basename(dest), dest + PART
    offset = os.path.getsize(part) if os.path.exists(part) else 0
    if size is not None and offset > size:
        offset = 0  # not a prefix of this file: start again
    resumed, written, stopped, served = offset, 0, False, None
    digest = _prefix_digest(part, offset, proof, size) if proof else None
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
                            _MOVED[0] = time.monotonic()
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
        got = digest.hexdigest() if digest is not None and offset + written == have else digest_of(part, proof)
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


def fetch_all(todo, urls, folder, files, digests, token, timeout, deadline, connections, max_bytes_per_s=0):
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
                                  digests.get(name), stop, throttle)
        except (FinalError, BrokenOff, urllib.error.URLError, OSError, ValueError,
                http.client.HTTPException) as err:
            failures.append((name, err))
            stop.set()

    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, min(connections, len(todo) or 1))) as pool:
        list(pool.map(one, todo))
    return results, failures


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


def _stamp(path):
    status = os.stat(path)
    return [status.st_size, status.st_mtime_ns]


def content_ok(folder, name, proof, verified):
    """Whether the file there holds the listed content (proof: listed_proof): by its recorded check when its size
    and mtime are unchanged, else by hashing it (and recording the check). A file already there without a listed
    proof (fetched before under allow_unverified, or put there by the operator) is taken by its size."""
    if not proof:
        return True
    path = os.path.join(folder, name)
    record = verified.get(name)
    if isinstance(record, list) and record[:2] == _stamp(path) and record[2:] == [proof[1]]:
        return True
    if digest_of(path, proof) != proof[1]:
        return False
    verified[name] = _stamp(path) + [proof[1]]
    return True


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


def progress_line(repo, done, total, whole, count, rate, finished):
    """'downloading org/model: 112.4 of 595.2 GiB (19%), 14/64 files, 412.0 MiB/s (about 20m left)'."""
    if finished:
        return "downloaded %s: %s, %d files" % (repo, human(total), count)
    line = "downloading %s: %s of %s" % (repo, human(done), human(total))
    if total:
        line += " (%d%%)" % (100 * done // total)
    line += ", %d/%d files" % (whole, count)
    if rate:
        line += ", %s/s" % human(rate)
        if total > done:
            line += " (about %s left)" % duration((total - done) / rate)
    return line


class Failed(Exception):
    """A call that ends with fail_json: the sentence, and the files it completed and resumed."""

    def __init__(self, msg, fetched=(), resumed=None):
        super().__init__(msg)
        self.fetched, self.resumed = list(fetched), dict(resumed or {})


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


def _number(value):
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0 else 0


def marked_complete(folder, repo, revision):
    """Whether hf_checkpoint_status marked the folder complete for this repository and revision."""
    marker = read_mapping(folder, COMPLETE_MARKER)
    return marker.get("repo") == repo and marker.get("revision") == revision


# -- one call's work ---------------------------------------------------------------------------------------
def read_token(token_file):
    if not token_file or not os.path.exists(token_file):
        return None
    if not os.path.isfile(token_file):
        raise Failed("token_file=%s (sglang_hf_token_file) is not a file (a folder or a device): give the path of the "
                     "file holding the token, or leave sglang_hf_token empty for a public model." % token_file)
    try:
        with open(token_file, encoding="utf-8") as handle:
            return handle.read(64 * 1024).strip() or None
    except (OSError, ValueError) as err:
        raise Failed("token_file=%s (sglang_hf_token_file) cannot be read: %s."
                     % (token_file, getattr(err, "strerror", None) or type(err).__name__)) from None


def survey(p, endpoint, token):
    """(commit, files, digests, todo, differs): the revision's listing and the files still to fetch; a file there at
    its listed size but with other bytes (a copy from elsewhere, a bad mirror) is in differs, and in todo."""
    try:
        commit, files, digests = listing(endpoint, p["repo"], p["revision"], token, p["timeout"])
    except FinalError as err:
        raise Failed("Cannot download %s@%s: %s." % (p["repo"], p["revision"], err)) from None
    except (urllib.error.URLError, OSError, ValueError, http.client.HTTPException) as err:
        gated = getattr(err, "code", None) in (401, 403)
        hint = " (a gated or private model needs sglang_hf_token)" if gated else ""
        raise Failed("Cannot list %s@%s on %s: %s%s" % (p["repo"], p["revision"], endpoint, err, hint)) from None
    todo = [name for name, size in sorted(files.items())
            if not (os.path.exists(os.path.join(p["path"], name))
                    and (size is None or os.path.getsize(os.path.join(p["path"], name)) == size))]
    refuse_unverified(p, files, digests, todo)
    verified, differs = read_verified(p["path"]), []
    for name in sorted(set(files) - set(todo)):
        if not content_ok(p["path"], name, digests.get(name), verified):
            differs.append(name)
    if verified != read_verified(p["path"]) and os.path.isdir(p["path"]):
        try:
            write_verified(p["path"], verified)
        except OSError:  # a full disk: only the record of checks done is lost (the next run hashes them again);
            pass  # the download that follows says what the full disk means for the files
    return commit, files, digests, sorted(set(todo) | set(differs)), differs


def unverified(files, digests, todo, allowed):
    """The files of todo that the listing gives no size and proof for (nothing could tell a cut or altered copy from
    the file) and that no name or pattern of `allowed` (fnmatch: * also crosses /) lets through."""
    return [name for name in todo if (files[name] is None or name not in digests)
            and not any(name == each or fnmatch.fnmatchcase(name, each) for each in allowed)]


def refuse_unverified(p, files, digests, todo):
    """Failed, before anything is fetched, naming the files that could not be checked (unverified)."""
    refused = unverified(files, digests, todo, p["allow_unverified"] or [])
    if refused:
        shown = ", ".join(refused[:10]) + (" and %d more" % (len(refused) - 10) if len(refused) > 10 else "")
        raise Failed("Cannot download %s@%s: the listing of %s gives no size and sha256 (or git blob id) for %s, so "
                     "a cut or altered copy could not be told from the file: refused, nothing was downloaded. Point "
                     "sglang_hf_endpoint at the Hub or a mirror that lists them, or allow these files by name in "
                     "sglang_download_allow_unverified (allow_unverified) to fetch them unchecked."
                     % (p["repo"], p["revision"], p["endpoint"], shown))


def download(p, endpoint, token, found, todo, deadline, warn):
    """Fetch `todo` (of survey's `found`) until done or `deadline`: (fetched, resumed, bytes written); Failed."""
    commit, files, digests, _all, differs = found
    for name in differs:  # downloaded again below, whole
        if name in todo:
            os.unlink(os.path.join(p["path"], name))
            warn("%s in %s had the listed size but not the listed %s %s: it was removed and is downloaded again."
                 % (name, p["path"], proof_words(digests[name]), digests[name][1]))
    for name in todo:
        dest = os.path.join(p["path"], name)
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        if not os.path.realpath(dest).startswith(os.path.realpath(p["path"]) + os.sep):
            raise Failed("%s would be written outside path=%s (through a symbolic link there): refused; remove the "
                         "link" % (name, p["path"]))
    urls = {name: "%s/%s/resolve/%s/%s" % (endpoint, p["repo"], commit, urllib.parse.quote(name)) for name in todo}
    done_files, failures = fetch_all(todo, urls, p["path"], files, digests, token, p["timeout"], deadline,
                                     p["connections"], p["max_bytes_per_s"])
    fetched = [name for name in todo if done_files.get(name, (0, 0, False))[2]]
    resumed = {name: got[0] for name, got in done_files.items() if got[0]}
    written = sum(got[1] for got in done_files.values())
    verified = read_verified(p["path"])
    for name in fetched:
        if digests.get(name):  # fetch() checked its content
            verified[name] = _stamp(os.path.join(p["path"], name)) + [digests[name][1]]
    if verified != read_verified(p["path"]):
        try:
            write_verified(p["path"], verified)
        except OSError as err:  # only a record of checks done: the next run hashes those files again
            if not failures:
                warn("The record of checked files in %s could not be written (%s): the next run hashes them again."
                     % (p["path"], err.strerror or err))
    if failures:
        name, err = failures[0]
        if isinstance(err, DiskFull):
            raise Failed(disk_full_sentence(p, name, files.get(name), err), fetched, resumed)
        final = isinstance(err, (FinalError, RedirectRefused))
        again = "" if final else " The partial file is kept; run again to resume."
        raise Failed("Downloading %s from %s failed: %s.%s" % (name, p["repo"], err, again), fetched, resumed)
    return fetched, resumed, written


def disk_full_sentence(p, name, size, err):
    """What a full disk (or quota) means for the download: which file, what its .part keeps, how to go on."""
    part = os.path.join(p["path"], name) + PART
    kept = os.path.getsize(part) if os.path.exists(part) else 0
    try:
        stats = os.statvfs(p["path"])
        free = " (%s free there now)" % human(stats.f_bavail * stats.f_frsize)
    except OSError:
        free = ""
    need = ("; the file still needs %s, the files after it their own" % human(size - kept)
            if size is not None and size > kept else "")
    return ("Downloading %s from %s stopped: %s while writing %s%s. %s%s keeps %s, and the next run resumes there%s. "
            "Free space on that filesystem (or raise the quota, or put the checkpoint on a larger disk), then run "
            "again to resume." % (name, p["repo"], err.strerror or "the disk is full", part, free, name, PART,
                                  human(kept), need))


def settle(folder, ledger, files):
    """The ledger of an early download that died (a reboot, a kill: it is not running, since this process holds the
    lock) with what it wrote after its last note, which is on disk."""
    if ledger.get("state") != "running" or ledger.get("bytes_done") is None:
        return ledger
    grew = on_disk(folder, files)[0] - _number(ledger["bytes_done"])
    return add_to_ledger(folder, ledger, max(0, grew), state="stopped")


def add_to_ledger(folder, ledger, written, **state):
    """The ledger with this call's bytes added (every call of one download, early or joining, adds its own)."""
    ledger = dict(ledger, updated=time.time(), **state)
    ledger["bytes_fetched"] = _number(ledger.get("bytes_fetched")) + written
    ledger.setdefault("started", time.time())
    write_ledger(folder, ledger)
    return ledger


# -- the early download: started in the background, joined later ------------------------------------------
def detach(work):
    """Run work(send) in a grandchild that outlives this module (setsid, its own session; stdin, stdout and stderr on
    /dev/null so that Ansible's connection does not wait for it), as Ansible's async_wrapper does; send(mapping) is its
    one report to this process. Returns (its pid, the report: {} when it ended without one)."""
    read_end, write_end = os.pipe()
    child = os.fork()
    if child:
        os.close(write_end)
        with os.fdopen(read_end, "rb") as pipe:
            said = pipe.read().decode("utf-8", "replace").split("\n", 1)  # its pid, then its report (EOF: it sent)
        os.waitpid(child, 0)
        pid = int(said[0]) if said[0].strip().isdigit() else 0
        try:
            report = json.loads(said[1]) if len(said) > 1 and said[1].strip() else {}
        except ValueError:
            report = {}
        return pid, report if isinstance(report, dict) else {}
    os.close(read_end)
    os.setsid()
    grandchild = os.fork()
    if grandchild:
        os.write(write_end, b"%d\n" % grandchild)
        os.close(write_end)
        # a forked child must not run the module's exit handlers
        os._exit(0)  # pylint: disable=protected-access
    os.chdir("/")  # not the module's temporary folder, which Ansible removes
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    sent, once = [], threading.Lock()

    def send(report):
        with once:  # the watchdog's thread may send too
            if not sent:
                sent.append(True)
                os.write(write_end, json.dumps(report).encode())
                os.close(write_end)

    code = 1
    try:
        work(send)
        code = 0
    finally:
        os._exit(code)  # pylint: disable=protected-access


def watchdog(p, send):
    """A process whose bytes stopped moving for longer than any healthy fetch can wait (a hang the sockets' timeouts
    do not cover) ends itself, so that it does not hold the module, or the folder's lock and with it day 1, for good;
    the role's tries then fetch the rest themselves, continuing its .part files."""
    stalled_after = 2 * p["timeout"] + 30
    while time.monotonic() - _MOVED[0] <= stalled_after:
        time.sleep(LEDGER_EVERY)
    why = ("no byte moved for %d s (twice the timeout, %d s, and 30): the early download stopped itself; the "
           "download's tries fetch the rest" % (stalled_after, p["timeout"]))
    send({"error": why})  # the module, when it still waits for the small files
    ledger = read_ledger(p["path"])
    if ledger.get("state") == "running":
        write_ledger(p["path"], dict(ledger, state="failed", error=why, updated=time.time()))
    os._exit(1)  # pylint: disable=protected-access


def early_start(p, endpoint, token, lock, send):
    """The early download's process, from the start: the listing, then the small files (config.json and the index:
    the plan reads them; send() tells the module, which then returns), then the rest as long as it takes. All of it
    runs here, in a process forked before the module made a connection or a thread: OpenSSL set up in the module and
    then forked hung this process's fetch threads now and then (SSLContext.__new__ under py-spy, 9e09561; in CI also
    with that fixed: no byte in 180 s)."""
    warnings = []
    _MOVED[0] = time.monotonic()
    threading.Thread(target=watchdog, args=(p, send), daemon=True).start()
    try:
        found = survey(p, endpoint, token)
        files, todo = found[1], found[3]
        small = [name for name in todo if not name.endswith(WEIGHTS) and (files[name] or 0) <= SMALL]
        ledger = read_ledger(p["path"])
        if ledger.get("commit") != found[0]:
            ledger = {"commit": found[0], "repo": p["repo"]}  # another revision: a new download
        ledger = settle(p["path"], ledger, files)
        written = download(p, endpoint, token, found, small, None, warnings.append)[2]
        add_to_ledger(p["path"], ledger, written, started=ledger.get("started") or time.time())
    except Failed as err:
        send({"error": str(err), "fetched": err.fetched, "resumed": err.resumed, "warnings": warnings})
        lock.close()
        return
    except Exception as err:  # noqa: BLE001 - the module says it in a sentence; this process only reports
        send({"error": "the early download's start failed: %s: %s" % (type(err).__name__, err), "warnings": warnings})
        lock.close()
        return
    large = [name for name in todo if name not in small]
    have, whole = on_disk(p["path"], files)
    send({"written": written, "have": have, "whole": whole, "count": len(files), "large": len(large),
          "total": sum(size or 0 for size in files.values()), "warnings": warnings})
    if large:
        early_worker(p, endpoint, token, found, large, lock)
    else:
        lock.close()


def early_worker(p, endpoint, token, found, todo, lock):
    """The background download: everything left, as long as it takes; the ledger says how far it came (every
    LEDGER_EVERY seconds: what is on disk beyond where it began) and how it ended. It holds `lock` until it exits."""
    try:  # what ps, top and pkill show (the thread's name; the threads below inherit it)
        with open("/proc/self/comm", "w", encoding="ascii") as handle:
            handle.write(PROCESS_NAME)
    except OSError:
        pass
    files, ledger = found[1], read_ledger(p["path"])
    base, _whole = on_disk(p["path"], files)
    before = _number(ledger.get("bytes_fetched"))
    stop = threading.Event()

    def note(state, fetched=None, **extra):
        have, whole = on_disk(p["path"], files)
        got = max(0, have - base) if fetched is None else fetched
        write_ledger(p["path"], dict(ledger, pid=os.getpid(), state=state, updated=time.time(), bytes_done=have,
                                     bytes_total=sum(size or 0 for size in files.values()), files_done=whole,
                                     files_total=len(files), early_fetched=got, bytes_fetched=before + got, **extra))

    def beat():
        while not stop.wait(LEDGER_EVERY):
            note("running")

    note("running")
    threading.Thread(target=beat, daemon=True).start()
    try:
        written = download(p, endpoint, token, found, todo, None, lambda _text: None)[2]
        stop.set()
        note("done", fetched=written)
    except Exception as err:  # noqa: BLE001 - the ledger says why it stopped; the join fetches again itself
        stop.set()
        note("failed", error=str(err)[:2000])
    finally:
        lock.close()


def start_early(module, p, endpoint, token):
    """background=true: the small files now (config.json and the index: the plan reads them), the rest in a
    detached process that holds the folder's lock; returns once the small ones are there."""
    if marked_complete(p["path"], p["repo"], p["revision"]):
        module.exit_json(changed=False, started=False, running=False, done=True, pid=None,
                         progress="%s is complete in %s" % (p["repo"], p["path"]))
    if not os.path.isdir(p["path"]):
        raise Failed("path=%s is not a folder: create it first (the role's download_start does)" % p["path"])
    lock = take_lock(p["path"], 0)
    if lock is None:
        ledger = read_ledger(p["path"])
        module.exit_json(changed=False, started=False, running=True, done=False, pid=ledger.get("pid"),
                         progress="%s: already downloading (pid %s)" % (p["repo"], ledger.get("pid")))
    pid, report = detach(lambda send: early_start(p, endpoint, token, lock, send))
    lock.close()  # the worker holds its own copy of the lock
    for text in report.get("warnings") or []:
        module.warn(str(text))
    if report.get("error") or "large" not in report:
        raise Failed(str(report.get("error") or "the early download (pid %d) ended before it said how its start went"
                         % pid), report.get("fetched") or (), report.get("resumed"))
    have, total, whole = _number(report.get("have")), _number(report.get("total")), _number(report.get("whole"))
    if not report["large"]:
        module.exit_json(changed=bool(report.get("written")), started=False, running=False, done=True, pid=None,
                         bytes_done=have, bytes_total=total,
                         progress=progress_line(p["repo"], have, total, whole, _number(report.get("count")), None,
                                                True))
    module.exit_json(changed=True, started=True, running=True, done=False, pid=pid, bytes_done=have,
                     bytes_total=total, progress="%s: %d files of %s downloading in the background (pid %d)"
                     % (p["repo"], _number(report["large"]), human(total - have), pid))


def join_early(module, p, started):
    """A call while the early download holds the lock: how far it came, from its ledger (nothing is fetched)."""
    ledger = read_ledger(p["path"])
    have, total = _number(ledger.get("bytes_done")), _number(ledger.get("bytes_total"))
    seconds = time.monotonic() - started
    rate = None
    if ledger.get("started") and ledger.get("updated"):
        span = ledger["updated"] - ledger["started"]
        rate = round(_number(ledger.get("early_fetched")) / span, 1) if span > 0 else None
    line = progress_line(p["repo"], have, total, _number(ledger.get("files_done")),
                         _number(ledger.get("files_total")), rate, False)
    module.exit_json(changed=False, done=False, joined=ledger.get("pid"), fetched=[], resumed={},
                     bytes_done=have, bytes_total=total, files_done=_number(ledger.get("files_done")),
                     files_total=_number(ledger.get("files_total")), bytes_per_s=rate, bytes_fetched=0,
                     connections=p["connections"], progress_clock="task", waited_s=round(seconds, 1),
                     progress="%s (started early, pid %s)" % (line, ledger.get("pid")))


def main():
    module = AnsibleModule(argument_spec={
        "repo": {"type": "str", "required": True}, "revision": {"type": "str", "default": "main"},
        "path": {"type": "path", "required": True}, "token_file": {"type": "path"},
        "endpoint": {"type": "str", "default": "https://huggingface.co"}, "timeout": {"type": "int", "default": 60},
        "poll": {"type": "int"}, "connections": {"type": "int", "default": 16},
        "background": {"type": "bool", "default": False}, "max_bytes_per_s": {"type": "int", "default": 0},
        "allow_unverified": {"type": "list", "elements": "str", "default": []},
    }, supports_check_mode=True)
    with failures_as_sentences(module, "hf_download"):
        p = module.params
        if not 1 <= p["connections"] <= MAX_CONNECTIONS:
            module.fail_json(msg="connections=%r (sglang_download_connections) must be 1 to %d: the files downloaded "
                                 "side by side, e.g. 16 for a fast link." % (p["connections"], MAX_CONNECTIONS))
        if p["max_bytes_per_s"] < 0:
            module.fail_json(msg="max_bytes_per_s=%r (sglang_download_max_mb_per_s) must be 0 (no cap) or a rate in "
                                 "bytes per second, e.g. 200000000." % p["max_bytes_per_s"])
        bad = [each for each in p["allow_unverified"] if not each.strip() or "\x00" in each]
        if bad:
            module.fail_json(msg="allow_unverified (sglang_download_allow_unverified) holds %r, not a file name: give "
                                 "the names (or patterns such as '*.bin') of the files to fetch without a listed size "
                                 "and hash, or [] for none." % bad[0])
        if p["poll"] is not None and p["poll"] < 1:
            module.fail_json(msg="poll=%r must be at least 1 (seconds one call downloads), or unset to download all in "
                                 "one call." % p["poll"])
        try:
            run(module, p)
        except Failed as err:
            module.fail_json(msg=str(err), fetched=err.fetched, resumed=err.resumed)


def run(module, p):
    endpoint = p["endpoint"].rstrip("/")
    token = read_token(p["token_file"])
    if p["background"] and not module.check_mode:
        start_early(module, p, endpoint, token)
    start = time.monotonic()
    deadline = start + p["poll"] if p["poll"] else None
    lock = None
    if os.path.isdir(p["path"]) and not module.check_mode:
        lock = take_lock(p["path"], p["poll"])
        if lock is None:
            join_early(module, p, start)
    found = survey(p, endpoint, token)
    commit, files, todo = found[0], found[1], found[3]
    total = sum(size or 0 for size in files.values())
    if module.check_mode:
        module.exit_json(changed=bool(todo), commit=commit, fetched=todo, resumed={}, done=True,
                         bytes_done=on_disk(p["path"], files)[0], bytes_total=total,
                         files_done=len(files) - len(todo), files_total=len(files), bytes_per_s=None,
                         progress="%d of %d files to download from %s" % (len(todo), len(files), p["repo"]))
    ledger = read_ledger(p["path"]) if lock else {}
    if ledger.get("commit") != commit:
        ledger = {"commit": commit, "repo": p["repo"]}
    ledger = settle(p["path"], ledger, files)
    if ledger.get("state") == "failed":
        module.warn("The early download of %s stopped: %s. This run continues it." % (p["repo"], ledger.get("error")))
    try:
        fetched, resumed, written = download(p, endpoint, token, found, todo, deadline, module.warn)
    except Failed as err:
        if lock:
            add_to_ledger(p["path"], ledger, 0, state="joined")
        raise err
    stopped = len(fetched) < len(todo)
    if lock:
        ledger = add_to_ledger(p["path"], ledger, written, state="joined", pid=None)
        if not stopped:  # the download is whole: its ledger is spent (hf_checkpoint_status marks the folder complete)
            os.unlink(os.path.join(p["path"], LEDGER))
    seconds = time.monotonic() - start
    have, whole_files = on_disk(p["path"], files)
    rate = round(written / seconds, 1) if written and seconds > 0 else None
    module.exit_json(changed=bool(fetched or written), commit=commit, fetched=fetched, resumed=resumed,
                     done=not stopped, bytes_done=have, bytes_total=total, files_done=whole_files,
                     files_total=len(files), bytes_per_s=rate, progress_clock="task",
                     connections=p["connections"], bytes_fetched=written,
                     download_fetched=_number(ledger.get("bytes_fetched")) if lock else written,
                     download_started=ledger.get("started") if lock else None,
                     progress=progress_line(p["repo"], have, total, whole_files, len(files), rate, not stopped))


if __name__ == "__main__":
    main()
