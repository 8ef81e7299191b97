"""The admin API of sglang-router 0.3.2 as the router modules use it: sglang_router_workers (which adds and removes a
worker) and sglang_router_workers_info (which lists them). Keys read from files, and passwords given in a URL, are
handed to the caller so that Ansible masks them in every output, like the no_log options; the messages and results
show URLs without their credentials (sglang_http.without_credentials) and a bad key by its fault, never its text."""

from __future__ import annotations

import json
import os
import stat
from http.client import HTTPException
from urllib.error import HTTPError, URLError
from urllib.parse import quote, urlsplit

from ansible.module_utils.sglang_http import (
    ResponseTooLarge,
    error_body,
    header_problem,
    open_bearer,
    protocol_fault,
    read_bounded,
    url_credentials,
    without_credentials,
)

# sglang-router 0.3.2 lists a worker as a flat object with one level of metadata; anything nested far deeper is not
# its answer (and would only make every later walk of the result recurse without end).
MAX_ENTRY_DEPTH = 16
# A key file holds one key, a few hundred bytes at most.
KEY_FILE_LIMIT = 64 << 10


class RouterError(Exception):
    """A failure to report as the task's message, without the credentials of any URL in it (the router's URL, a
    worker's, or one the router's answer repeats): every message is made here, so none can forget it."""

    def __init__(self, message):
        super().__init__(without_credentials(message))


def normalize(url):
    """The URL as compared and registered: no surrounding space, no trailing slash."""
    return url.strip().rstrip("/")


def check_url(name, url, schemes):
    """A URL the modules can request: one of schemes, a host, a port that is a number, no space or control character
    (urllib would refuse those with a message that repeats the URL, credentials and all). Said without credentials."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError for a port that is not a number in 0-65535
    except ValueError as error:
        raise RouterError("%s=%r is not a valid URL (%s); give e.g. %s://HOST:PORT"
                          % (name, url, error, schemes[0])) from None
    if parts.scheme not in schemes or not parts.hostname or any(c.isspace() or ord(c) < 32 or ord(c) == 127
                                                                for c in url):
        raise RouterError("%s=%r is not a URL like %s://HOST:PORT; give the scheme, host and port"
                          % (name, url, schemes[0]))


def hide_url_credentials(params, secret):
    """Tell secret() the credentials in the URLs given (router_url, worker_url), before anything can fail: Ansible
    then masks them wherever they would appear, the task's own arguments (its invocation) included."""
    for name in ("router_url", "worker_url"):
        found = url_credentials(params.get(name) or "")
        # A user name given alone is masked only when it is long enough to be a token (https://TOKEN@host):
        # masking a short one (admin) would blank that word out of every line of the task's output. The messages
        # and results show no user information at all either way (RouterError, without_credentials).
        if found and secret is not None and (found != urlsplit(params[name]).username or len(found) >= 8):
            secret(found)


def check_key(name, key):
    """A key that an HTTP header can carry; refused by its fault, its type and length, never its text (no_log masks
    the key as given, not the forms an HTTP library's error would print)."""
    problem = header_problem(key) if key else ""
    if problem:
        raise RouterError("%s holds %s, which no HTTP header can carry (a key of %d characters, not shown): set the "
                          "key without it (the role's sglang_router_admin_api_key or sglang_api_key, or the key file)"
                          % (name, problem, len(key)))


def _depth(value):
    """How deeply value nests lists and mappings (1 for a scalar), counted without recursion."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        deepest = max(deepest, level)
        if level <= MAX_ENTRY_DEPTH and isinstance(item, dict):
            stack.extend((child, level + 1) for child in item.values())
        elif level <= MAX_ENTRY_DEPTH and isinstance(item, list):
            stack.extend((child, level + 1) for child in item)
    return deepest


def read_key(value, path, name):
    """The key given inline or in a regular file on the host ('' when neither). The file is opened without blocking
    and refused unless it is a regular file of at most KEY_FILE_LIMIT bytes: a FIFO there would hold the task for
    ever, a device would be read without end."""
    if value and path:
        raise RouterError("give %s or %s_file, not both" % (name, name))
    if not path:
        return value or ""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as error:
        raise RouterError("cannot read %s_file %s: %s" % (name, path, error.strerror)) from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise RouterError("%s_file %s is not a regular file (a folder, a FIFO or a device): give the file that "
                              "holds the key" % (name, path))
        if info.st_size > KEY_FILE_LIMIT:
            raise RouterError("%s_file %s holds %d bytes, more than any key (%d at most): give the file that holds "
                              "the key alone" % (name, path, info.st_size, KEY_FILE_LIMIT))
        with os.fdopen(os.dup(fd), "rb") as handle:
            data = handle.read(KEY_FILE_LIMIT + 1)
    except OSError as error:
        raise RouterError("cannot read %s_file %s: %s" % (name, path, error.strerror)) from None
    finally:
        os.close(fd)
    try:
        return data.decode("utf-8").strip()
    except UnicodeDecodeError:
        raise RouterError("%s_file %s is not UTF-8 text: write the key in it as text" % (name, path)) from None


class Router:
    """The admin API of one sglang-router 0.3.2."""

    def __init__(self, url, token, timeout):
        self.url, self.token, self.timeout = normalize(url), token, timeout

    def call(self, method, path, body=None):
        """(status, JSON body or text) of one request; a refused connection or a bad key raises RouterError."""
        headers = {"Accept": "application/json"}
        data = None
        if body is not None:
            headers["Content-Type"] = "application/json"
            data = json.dumps(body)
        try:
            response = open_bearer(self.url + path, self.token, method=method, headers=headers, data=data,
                                   timeout=self.timeout, follow_redirects="none")
            status = response.getcode()
            text = read_bounded(response, what="%s %s%s" % (method, self.url, path)).decode("utf-8", "replace")
        except HTTPError as error:
            status, text = error.code, error_body(error)
        except ResponseTooLarge as error:
            raise RouterError(str(error)) from None
        except ValueError as error:  # urllib's "unknown url type", http.client's InvalidURL: no retry can fix them
            raise RouterError("router_url=%r cannot be requested (%s %s: %s); fix router_url"
                              % (self.url, method, path, error)) from None
        except (URLError, OSError, HTTPException) as error:
            fault = protocol_fault(getattr(error, "reason", error))
            if fault:  # an answer no HTTP server sends: the peer at the URL, not the network (probe day 2 N16)
                raise RouterError("the router at %s (%s %s) answered, but %s. Check router_url: is it sglang-router?"
                                  % (self.url, method, path, fault)) from None
            reason = getattr(error, "reason", error)
            raise RouterError("cannot reach the router at %s (%s %s): %s. Check router_url: is sglang-router running "
                              "and listening there?" % (self.url, method, path, reason)) from None
        if status in (401, 403):
            raise RouterError("the router at %s refused %s %s (HTTP %d): the admin API needs the router's admin key. "
                              "Set admin_api_key/admin_api_key_file to its control-plane admin key (or, when it has "
                              "none, to its --api-key)" % (self.url, method, path, status))
        try:
            return status, json.loads(text) if text else None
        except (ValueError, RecursionError):  # not JSON, or nested past Python's stack: the caller says "not the API"
            return status, text

    def workers(self):
        status, body = self.call("GET", "/workers")
        if status != 200 or not isinstance(body, dict) or not isinstance(body.get("workers"), list):
            raise RouterError("GET %s/workers answered HTTP %d %s: not the admin API of sglang-router 0.3.x. "
                              "Check router_url points at the router" % (self.url, status, str(body)[:200]))
        if any(_depth(entry) > MAX_ENTRY_DEPTH for entry in body["workers"]):
            raise RouterError("GET %s/workers answered workers nested more than %d levels deep: not the admin API "
                              "of sglang-router 0.3.x. Check router_url points at the router"
                              % (self.url, MAX_ENTRY_DEPTH))
        # 0.3.2 lists no worker's key; should a later release do so, it stays out of the task's result.
        return [{k: v for k, v in entry.items() if k != "api_key"} for entry in body["workers"]
                if isinstance(entry, dict)]

    def job(self, worker_id):
        """The router's entry for a worker id: the worker, or its queued job (job_status)."""
        status, body = self.call("GET", "/workers/" + quote(worker_id, safe=""))
        return body if status == 200 and isinstance(body, dict) else {}


def entries_of(workers, url):
    return [entry for entry in workers if normalize(str(entry.get("url", ""))) == url]


def router_keys(params, secret=None):
    """(worker key, admin key) from the options or their files; secret(key) is told each key found."""
    worker_key = read_key(params["worker_api_key"], params["worker_api_key_file"], "worker_api_key")
    admin_key = read_key(params["admin_api_key"], params["admin_api_key_file"], "admin_api_key")
    for key in (worker_key, admin_key):
        if key and secret is not None:
            secret(key)
    # The worker key is sent as a bearer too: by this module when there is no admin key, by the router to each worker.
    for name, key in (("worker_api_key", worker_key), ("admin_api_key", admin_key)):
        check_key(name + ("_file's key" if params[name + "_file"] else ""), key)
    return worker_key, admin_key


def connect(params, secret=None):
    """(Router, worker key) for the options: the router's URL and request_timeout checked, the keys read
    (secret(key) is told each one, and the URLs' credentials), the admin key sent or, without one, the worker key."""
    hide_url_credentials(params, secret)
    check_url("router_url", params["router_url"], ("http", "https"))
    if params["request_timeout"] <= 0:
        raise RouterError("request_timeout must be > 0 (got %s)" % params["request_timeout"])
    worker_key, admin_key = router_keys(params, secret)
    return Router(params["router_url"], admin_key or worker_key, params["request_timeout"]), worker_key


# The options both modules take to reach the router; no_log on the keys, and on the key files' paths too, so that
# where a key lives is not printed either.
ROUTER_OPTIONS = {
    "router_url": {"type": "str", "required": True},
    "admin_api_key": {"type": "str", "no_log": True},
    "admin_api_key_file": {"type": "path", "no_log": True},
    "worker_api_key": {"type": "str", "no_log": True},
    "worker_api_key_file": {"type": "path", "no_log": True},
    "request_timeout": {"type": "float", "default": 10},
}
ROUTER_EXCLUSIVE = [("admin_api_key", "admin_api_key_file"), ("worker_api_key", "worker_api_key_file")]
