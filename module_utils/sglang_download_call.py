"""One call of hf_download: the token, the survey of what the revision lists against what the folder holds (files
refused before anything is fetched when nothing could check them), the download of what is left and the sentence
each failure ends in (Failed), and the progress line for people."""

from __future__ import annotations

import http.client
import os
import urllib.error
import urllib.parse
from typing import NamedTuple

from ansible.module_utils.sglang_download_fetch import (
    DiskFull,
    digest_of,
    fetch_all,
    proof_words,
    unwatched,
)
from ansible.module_utils.sglang_download_listing import PART, FinalError, listing, unverified
from ansible.module_utils.sglang_download_records import read_verified, stamp, write_verified
from ansible.module_utils.sglang_http import RedirectRefused
from ansible.module_utils.sglang_text import duration
from ansible.module_utils.sglang_text import human_bytes as human


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


def read_token(token_file):
    """The Hub token from token_file, None when there is none (a public model); Failed when it cannot be read."""
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


class Survey(NamedTuple):
    """What survey found: the commit the revision resolved to, {file: size or None}, {file: proof (listed_proof)},
    the files still to fetch (sorted), and those of them there at their listed size but with other bytes."""

    commit: str
    files: dict
    digests: dict
    todo: list
    differs: list


def survey(p, endpoint, token, moved=unwatched):
    """The revision's listing and the files still to fetch (Survey); a file there at its listed size but with other
    bytes (a copy from elsewhere, a bad mirror) is in differs, and in todo. moved(): a block of a file was hashed."""
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
        if not content_ok(p["path"], name, digests.get(name), verified, moved):
            differs.append(name)
    if verified != read_verified(p["path"]) and os.path.isdir(p["path"]):
        try:
            write_verified(p["path"], verified)
        except OSError:  # a full disk: only the record of checks done is lost (the next run hashes them again);
            pass  # the download that follows says what the full disk means for the files
    return Survey(commit, files, digests, sorted(set(todo) | set(differs)), differs)


def content_ok(folder, name, proof, verified, moved=unwatched):
    """Whether the file there holds the listed content (proof: listed_proof): by its recorded check when its size
    and mtime are unchanged, else by hashing it (and recording the check). A file already there without a listed
    proof (fetched before under allow_unverified, or put there by the operator) is taken by its size."""
    if not proof:
        return True
    path = os.path.join(folder, name)
    record = verified.get(name)
    if isinstance(record, list) and record[:2] == stamp(path) and record[2:] == [proof[1]]:
        return True
    if digest_of(path, proof, moved) != proof[1]:
        return False
    verified[name] = stamp(path) + [proof[1]]
    return True


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


def download(p, endpoint, token, found, todo, deadline, warn, moved=unwatched):
    """Fetch `todo` (of survey's `found`, a Survey) until done or `deadline`: (fetched, resumed, bytes written);
    Failed. moved(): bytes moved (the early download's watchdog)."""
    commit, files, digests, differs = found.commit, found.files, found.digests, found.differs
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
                                     p["connections"], p["max_bytes_per_s"], moved)
    fetched = [name for name in todo if done_files.get(name, (0, 0, False))[2]]
    resumed = {name: got[0] for name, got in done_files.items() if got[0]}
    written = sum(got[1] for got in done_files.values())
    verified = read_verified(p["path"])
    for name in fetched:
        if digests.get(name):  # fetch() checked its content
            verified[name] = stamp(os.path.join(p["path"], name)) + [digests[name][1]]
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
