"""HTTP for the modules: Ansible's open_url (its proxy, CA and validate_certs handling), a bearer token that a
redirect never carries, and answers read up to a size limit and a deadline, so that a wrong or hostile peer can
neither learn the key nor make a module read without end."""

from __future__ import annotations

import re
import time
from http.client import BadStatusLine, HTTPException, IncompleteRead, LineTooLong, RemoteDisconnected

from ansible.module_utils.urls import open_url

# Enough for any JSON answer of SGLang, its router or the Hub's listing of a model (a few hundred KiB at most).
JSON_LIMIT = 16 * 2**20
# An error page is read for its message only.
ERROR_LIMIT = 64 * 2**10
_BLOCK = 2**16


class ResponseTooLarge(ValueError):
    """An answer over its limit: reading on would only fill the memory."""


def open_bearer(url, token=None, headers=None, **kwargs):
    """open_url with `Authorization: Bearer <token>` sent to url only: the header is unredirected (urllib's
    add_unredirected_header), so a redirect, to the same origin or another, goes without it. Any other
    open_url keyword passes through (method, data, timeout, validate_certs, follow_redirects)."""
    headers = dict(headers or {})
    unredirected = []
    if token:
        headers["Authorization"] = "Bearer " + token
        unredirected.append("Authorization")
    return open_url(url, headers=headers, unredirected_headers=unredirected, use_netrc=False, **kwargs)


def _declared_length(response):
    headers = getattr(response, "headers", None)
    value = headers.get("Content-Length") if headers is not None else None
    return int(value) if value and value.strip().isdigit() else None


def too_large(what, limit):
    return ResponseTooLarge("%s answered more than %d bytes, more than any answer expected there: check that the "
                            "URL points at the right server" % (what, limit))


def read_bounded(response, limit=JSON_LIMIT, what="the server", deadline=None):
    """The whole body, refused with ResponseTooLarge past `limit` bytes (before reading, when Content-Length says
    so) and with TimeoutError past `deadline` (time.monotonic())."""
    declared = _declared_length(response)
    if declared is not None and declared > limit:
        raise too_large(what, limit)
    chunks, total = [], 0
    while True:
        chunk = response.read(min(_BLOCK, limit + 1 - total))
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        total += len(chunk)
        if total > limit:
            raise too_large(what, limit)
        if deadline is not None and time.monotonic() > deadline:
            raise TimeoutError("%s was still sending after the deadline" % what)


def error_body(error):
    """The text of an HTTPError's body, at most ERROR_LIMIT bytes; '' when it cannot be read."""
    try:
        return read_bounded(error, ERROR_LIMIT, "the error page").decode("utf-8", "replace")
    except (OSError, ValueError, AttributeError):
        return ""


def protocol_fault(error):
    """What an http.client.HTTPException says about the peer, in words, or None when it is not one.

    http.client stops reading an answer whose head no HTTP server sends (more than its _MAXHEADERS, 100, header
    lines: a plain HTTPException "got more than 100 headers"; a status, header, chunk-size or trailer line over
    _MAXLINE, 65,536 bytes: LineTooLong "got more than 65536 bytes when reading header line"). Those are the
    peer's answer, not a connection that closed: named as such, so the operator looks at what answers at the URL
    (a proxy, another service), not at the network. IncompleteRead is the answer broken off: None, the caller's
    "broke off" sentence is the right one."""
    if not isinstance(error, HTTPException) or isinstance(error, IncompleteRead):
        return None
    text = str(error)
    if isinstance(error, LineTooLong):
        found = re.search(r"got more than (\d+) bytes when reading (.+)", text)
        limit, what = (found.group(1), found.group(2)) if found else ("65536", text or "a line")
        return "its answer had a %s longer than %s bytes (an HTTP client reads no longer line)" % (what, limit)
    if isinstance(error, BadStatusLine) and not isinstance(error, RemoteDisconnected):
        # its text is the peer's first line: not repeated (a hostile peer chooses it)
        return "its answer did not begin with an HTTP status line (is it an HTTP server at all?)"
    found = re.search(r"got more than (\d+) headers", text)
    if found:
        return ("its answer had more than %s header lines (an HTTP client reads no more; SGLang sends a handful)"
                % found.group(1))
    return None
