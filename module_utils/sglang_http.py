"""HTTP for the modules: Ansible's open_url (its proxy, CA and validate_certs handling), a bearer token that a
redirect never carries, and answers read up to a size limit and a deadline, so that a wrong or hostile peer can
neither learn the key nor make a module read without end."""

from __future__ import annotations

import time

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
