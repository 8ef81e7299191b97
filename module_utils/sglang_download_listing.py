"""hf_download's view of a Hub revision: the listing (/api/models/<repo>/revision/<revision>?blobs=true) read into
its commit, every file's size and the proof of its content, refusing a listing that names files outside the folder,
files this module keeps for itself, or a commit that is not one; and which files of it could not be checked."""

from __future__ import annotations

import fnmatch
import json
import re
import urllib.parse

from ansible.module_utils.sglang_http import open_following, read_bounded

# A commit as the Hub names it: it goes into every file's URL, so nothing else (a listing's "../x" would reach
# another path on the mirror).
COMMIT_RE = re.compile(r"^[0-9a-f]{40}\Z")
SHA256_RE = re.compile(r"^[0-9a-f]{64}\Z")


class FinalError(Exception):
    """A download that running again cannot fix: the Hub's listing and what is served disagree."""


def request(url, token, timeout, offset=0):
    """GET url; the token goes to url only, never along a redirect (the Hub sends files to a storage host)."""
    headers = {"Range": "bytes=%d-" % offset} if offset else {}
    # decompress=False: the bytes on disk must be the bytes the Hub lists (size, sha256), ranges included.
    # open_following: a redirect only to https (http only from an http endpoint), never ftp://, file:// or data:.
    return open_following(url, token, headers=headers, timeout=timeout, decompress=False)


# Writes of hf_download's own files go through <name>.tmp (sglang_download_records.write_mapping).
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


def unverified(files, digests, todo, allowed):
    """The files of todo that the listing gives no size and proof for (nothing could tell a cut or altered copy from
    the file) and that no name or pattern of `allowed` (fnmatch: * also crosses /) lets through."""
    return [name for name in todo if (files[name] is None or name not in digests)
            and not any(name == each or fnmatch.fnmatchcase(name, each) for each in allowed)]
