"""The proof's parameters refused before any request: a sentence naming the parameter, its value and the fix."""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from ansible.module_utils.sglang_proof_failures import SmokeFailure


def check_url(url, name="url"):
    """A malformed URL fails at once: waiting cannot fix it."""
    try:
        parts = urlsplit(url)
        port = parts.port  # raises ValueError on a port that is not a number in 0-65535
    except ValueError as error:
        raise SmokeFailure("%s=%r is not a valid URL (%s): give e.g. http://127.0.0.1:30000."
                           % (name, url, error)) from None
    if parts.scheme not in ("http", "https") or not parts.hostname or any(c.isspace() for c in url) or port == 0:
        raise SmokeFailure("%s=%r is not an http(s) URL with a host and port: give e.g. http://127.0.0.1:30000."
                           % (name, url))


def parse_prompt_tokens(asked):
    """'target', 'full' or a positive number of tokens (1_000 and 1,000 read as 1000)."""
    text = str(asked).strip().lower()
    if text in ("target", "full"):
        return text
    try:
        value = int(text.replace("_", "").replace(",", ""))
    except ValueError:
        raise SmokeFailure("prompt_tokens=%r is neither 'target', 'full' nor a number of tokens: give one of "
                           "them." % (asked,)) from None
    if value <= 0:
        raise SmokeFailure("prompt_tokens=%r must be a positive number of tokens (or 'target' or 'full')." % (asked,))
    return value


def validate(params):
    """Refuse bad parameters before any request; returns the parsed prompt size."""
    check_url(params["url"])
    if params.get("info_url") is not None:
        check_url(params["info_url"], "info_url")
    if params.get("api_key") and re.search(r"[\x00-\x1f\x7f]", params["api_key"]):
        # said without the key: no_log masks the key as given, not the repr an HTTP library would print
        raise SmokeFailure("api_key holds a control character (a line break, a tab or the like), which no HTTP "
                           "header can carry: set the key without it (the role's sglang_api_key).")
    for name, least, hint in (
            ("min_pool_tokens", 1, "leave it unset to require the server's own context length"),
            ("context_target", 1, "give the context the deployment promises, e.g. 200000"),
            ("timeout", 1, "give the seconds one request may take, e.g. 900"),
            ("wait_ready", 0, "give the seconds to wait for readiness; 0 checks once"),
            ("max_tokens", 1, "give the tokens the answer may take, e.g. 32"),
            ("decode_tokens", 8, "give the tokens to decode at the full context, e.g. 16 (the role's "
             "sglang_proof_decode_tokens)"),
            ("concurrent_requests", 0, "give the requests to send at once, e.g. the --max-running-requests planned; "
             "0 sends none")):
        value = params.get(name)
        if value is not None and value < least:
            raise SmokeFailure("%s=%r must be at least %d: %s." % (name, value, least, hint))
    if not params["filler"] or not params["filler"].strip():
        raise SmokeFailure("filler=%r is empty: give a sentence to repeat." % (params["filler"],))
    if params["question"] == "needle" and re.search(r"\d", params["filler"]):
        raise SmokeFailure("filler=%r holds a digit: with question=needle the needle must be the only number in "
                           "the prompt; use a filler without digits." % (params["filler"],))
    if params.get("expect") is not None:
        try:
            re.compile(params["expect"])
        except re.error as error:
            raise SmokeFailure("expect=%r is not a valid regular expression (%s): fix expect, or leave it unset."
                               % (params["expect"], error)) from None
    return parse_prompt_tokens(params["prompt_tokens"])
