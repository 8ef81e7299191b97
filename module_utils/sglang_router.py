"""The admin API of sglang-router 0.3.2 as the router modules use it: sglang_router_workers (which adds and removes a
worker) and sglang_router_workers_info (which lists them). Keys read from files are handed to the caller so that
Ansible masks them in every output, like the no_log options."""

from __future__ import annotations

import json
from http.client import HTTPException
from urllib.error import HTTPError, URLError
from urllib.parse import quote, urlsplit

from ansible.module_utils.sglang_http import ResponseTooLarge, error_body, open_bearer, protocol_fault, read_bounded


class RouterError(Exception):
    """A failure to report as the task's message."""


def normalize(url):
    """The URL as compared and registered: no surrounding space, no trailing slash."""
    return url.strip().rstrip("/")


def check_url(name, url, schemes):
    parts = urlsplit(url)
    if parts.scheme not in schemes or not parts.hostname:
        raise RouterError("%s=%r is not a URL like %s://HOST:PORT; give the scheme, host and port"
                          % (name, url, schemes[0]))


def read_key(value, path, name):
    """The key given inline or in a file on the host ('' when neither)."""
    if value and path:
        raise RouterError("give %s or %s_file, not both" % (name, name))
    if not path:
        return value or ""
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read().strip()
    except OSError as error:
        raise RouterError("cannot read %s_file %s: %s" % (name, path, error.strerror)) from None


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
        except ValueError:
            return status, text

    def workers(self):
        status, body = self.call("GET", "/workers")
        if status != 200 or not isinstance(body, dict) or not isinstance(body.get("workers"), list):
            raise RouterError("GET %s/workers answered HTTP %d %s: not the admin API of sglang-router 0.3.x. "
                              "Check router_url points at the router" % (self.url, status, str(body)[:200]))
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
    return worker_key, admin_key


def connect(params, secret=None):
    """(Router, worker key) for the options: the router's URL and request_timeout checked, the keys read
    (secret(key) is told each one), the admin key sent or, without one, the worker key."""
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
