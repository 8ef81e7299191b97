"""HTTP for the modules: Ansible's open_url (its proxy, CA and validate_certs handling), a bearer token that a
redirect never carries, and answers read up to a size limit and a deadline, so that a wrong or hostile peer can
neither learn the key nor make a module read without end. Also what a message may show of a request: a URL without
its credentials, and a key's fault without the key."""

from __future__ import annotations

import re
import time
import urllib.error
from collections.abc import Mapping
from http.client import BadStatusLine, HTTPException, IncompleteRead, LineTooLong, RemoteDisconnected
from urllib.parse import urljoin, urlsplit

from ansible.module_utils.urls import open_url

# Enough for any JSON answer of SGLang, its router or the Hub's listing of a model (a few hundred KiB at most).
JSON_LIMIT = 16 * 2**20
# An error page is read for its message only.
ERROR_LIMIT = 64 * 2**10
_BLOCK = 2**16


# A URL's user information (scheme://user:password@host): greedy up to the last '@' before the path, as urllib takes
# the host after the last one, so a password holding an '@' is hidden whole. A quote ends it: in a repr or JSON text
# the URL ends there.
_CREDENTIALS = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/?#\s\"']*@")
# What no HTTP header value can carry: http.client refuses it with a ValueError that repeats the whole value (the
# key), in a form Ansible's no_log masking does not recognise (b'Bearer KEY\r\n...').
_NOT_IN_HEADER = re.compile(r"[\x00-\x1f\x7f]")


def without_credentials(value):
    """value with every URL's user information replaced by *** (http://admin:pw@h:1 -> http://***@h:1): a message
    or a module's result (str, or lists and mappings of them, walked) never repeats a password given in a URL."""
    if isinstance(value, str):
        return _CREDENTIALS.sub(r"\1***@", value)
    if isinstance(value, Mapping):
        return {key: without_credentials(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [without_credentials(item) for item in value]
    return value


def url_credentials(url):
    """The secret in url's user information, for Ansible's no_log masking: the password, else a user name given
    alone (a token, as in https://TOKEN@host); '' when there is none or url cannot be read."""
    try:
        parts = urlsplit(url)
        return parts.password or parts.username or ""
    except (ValueError, TypeError):
        return ""


def header_problem(value):
    """What in value no HTTP header can carry, in words that do not repeat it ('' when it can be sent): a line
    break or another control character (which would also add a header line), or a character outside Latin-1."""
    if _NOT_IN_HEADER.search(value):
        return "a line break, a tab or another control character"
    try:
        value.encode("latin-1")
    except UnicodeEncodeError:
        return "a character outside Latin-1"
    return ""


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


# The answers that send a GET elsewhere (303 included: a GET stays a GET).
REDIRECTS = (301, 302, 303, 307, 308)
# More hops than any Hub or mirror sends (the Hub: one, to its storage host).
MAX_REDIRECTS = 10


class RedirectRefused(ValueError):
    """A redirect this client does not follow: to a scheme other than the first URL's allows, or one too many."""


def redirect_schemes(url):
    """The schemes a redirect from url may go to: https always; http only when url itself is http (a mirror on a
    private network), so that an https endpoint is never sent down to plain http, ftp://, file:// or data:."""
    return ("http", "https") if urlsplit(url).scheme.lower() == "http" else ("https",)


def open_following(url, token=None, headers=None, **kwargs):
    """open_bearer(url, ...) with GET redirects followed here, not by urllib (which also follows ftp://): each
    Location is resolved against the URL that sent it and refused (RedirectRefused, naming the target without its
    credentials) unless its scheme is one of redirect_schemes(url); the token goes to url only, never to a hop."""
    allowed, current = redirect_schemes(url), url
    for hop in range(MAX_REDIRECTS + 1):
        try:
            return open_bearer(current, token if hop == 0 else None, headers, follow_redirects="none", **kwargs)
        except urllib.error.HTTPError as error:
            if error.code not in REDIRECTS:
                raise
            code, location = error.code, (error.headers.get("Location") or "") if error.headers is not None else ""
            error.close()
        if not location:
            raise RedirectRefused("%s answered %d without a Location to go to" % (without_credentials(current), code))
        target = urljoin(current, location.strip())
        if urlsplit(target).scheme.lower() not in allowed:
            raise RedirectRefused("%s sent the download to %s: refused, only %s is followed from %s"
                                  % (without_credentials(current), without_credentials(target)[:300],
                                     " or ".join(allowed), without_credentials(url)))
        current = target
    raise RedirectRefused("%s: more than %d redirects, refused (a loop?)" % (without_credentials(url),
                                                                             MAX_REDIRECTS))


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
