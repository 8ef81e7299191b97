#!/usr/bin/python
"""Ansible module: prove a running SGLang server's KV pool and a long prompt."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: sglang_smoke_test
short_description: Prove that a running SGLang server holds a KV pool and answers a long prompt
description:
  - Reads the server's real KV pool (C(max_total_num_tokens)) and fails when it is under I(min_pool_tokens).
    SGLang starts "healthy" with a pool smaller than C(--context-length) and only rejects a long prompt
    when one arrives; this module makes that a deploy-time failure.
  - Builds a long prompt on the host itself (never shipped over SSH), sized to I(prompt_tokens) as the
    server counts them (calibrated with the server's C(/tokenize), or with the usage of short requests),
    sends it in one C(/v1/completions) request, checks the server-counted length and the answer, and
    measures elapsed time and prefill throughput.
  - Changes nothing on the host or the server; C(changed) is always false and it runs in check mode.
  - Every failure is a message a person can act on, with the evidence gathered so far, never a traceback.
version_added: "1.0.0"
author: sglang-longctx maintainers
options:
  url:
    description: Base URL of the SGLang server.
    type: str
    default: http://127.0.0.1:30000
  api_key:
    description: The server's C(--api-key), sent as a bearer token.
    type: str
  min_pool_tokens:
    description: The least KV pool (tokens) the server must hold; normally the context target.
    type: int
    required: true
  prompt_tokens:
    description:
      - Size of the long prompt, in tokens as the server counts them.
      - C(full) asks for as close to min(context length, pool) as the server accepts.
    type: str
    default: "60000"
  filler:
    description: Text repeated to build the prompt.
    type: str
    default: "The quick brown fox jumps over the lazy dog. "
  question:
    description: The question asked after the filler.
    type: str
    default: In one word, what animal is mentioned?
  expect:
    description: A regular expression the answer must match (searched, case-insensitive).
    type: str
    default: \bdog\b
  max_tokens:
    description: Tokens to generate for the answer.
    type: int
    default: 4
  timeout:
    description: Seconds to wait for any one request (the long one prefills the whole prompt).
    type: int
    default: 900
  wait_ready:
    description: Seconds to wait for C(/health_generate) to answer 200 before testing; 0 checks once.
    type: int
    default: 300
  model:
    description: Model name for the requests; default is the first one C(/v1/models) lists.
    type: str
  stream:
    description: Stream the long request, which also measures time to first token.
    type: bool
    default: false
  validate_certs:
    description: Verify TLS certificates for an https URL.
    type: bool
    default: true
notes:
  - Needs nothing on the host beyond what Ansible ships (it uses C(ansible.module_utils.urls)).
  - Supports check mode. It is read-only, it sends requests but changes no state.
"""

EXAMPLES = r"""
- name: Prove the 200k pool with a 60k-token prompt
  sglang_smoke_test:
    min_pool_tokens: 200000
  register: smoke

- name: Fill the whole context, through an API key
  sglang_smoke_test:
    url: http://127.0.0.1:30000
    api_key: "{{ sglang_api_key }}"
    min_pool_tokens: "{{ sglang_context_target }}"
    prompt_tokens: full
    timeout: 1800
"""

RETURN = r"""
ok:
  description: Whether every check passed (the module fails otherwise).
  type: bool
  returned: always
pool_tokens:
  description: The server's KV pool, C(max_total_num_tokens).
  type: int
  returned: when the server answered
  sample: 218484
context_length:
  description: The server's context length (C(max_model_len) of C(/v1/models)).
  type: int
  returned: when the server answered
max_req_input_len:
  description: The longest input the scheduler accepts, min(context, pool) - 6.
  type: int
  returned: when the server answered
prompt_tokens:
  description: The long prompt's length as the server counted it (usage.prompt_tokens).
  type: int
  returned: when the long request ran
  sample: 60010
completion_tokens:
  description: Tokens generated.
  type: int
  returned: when the long request ran
completion:
  description: The answer text.
  type: str
  returned: when the long request ran
  sample: " Dog."
elapsed_s:
  description: Seconds the long request took, end to end.
  type: float
  returned: when the long request ran
prefill_tokens_per_s:
  description: Prompt tokens divided by the time to first token (streaming) or by the elapsed time.
  type: float
  returned: when the long request ran
ttft_s:
  description: Time to first token, when I(stream) is true.
  type: float
  returned: when streamed
calibration_calls:
  description: Requests it took to size the prompt (tokenize or short completions).
  type: int
  returned: when the long request ran
checks:
  description: Each check, with its name, whether it passed, and what it saw.
  type: list
  elements: dict
  returned: always
  sample: [{"name": "pool", "ok": true, "detail": "pool 218,484 tokens >= 200,000"}]
"""

import json
import math
import re
import socket
import time
import traceback
from urllib.error import HTTPError, URLError

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.urls import open_url


class SmokeFailure(Exception):
    """A failed step; the message says what happened and what to do."""


class Client:
    """JSON over HTTP to one SGLang server, with errors turned into sentences."""

    def __init__(self, url, api_key=None, timeout=900, validate_certs=True):
        self.url, self.api_key, self.timeout, self.validate_certs = url.rstrip("/"), api_key, timeout, validate_certs
        self.calls = 0

    def _open(self, method, path, payload=None, timeout=None):
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self.api_key:
            headers["Authorization"] = "Bearer " + self.api_key
        data = None if payload is None else json.dumps(payload)
        self.calls += 1
        try:
            return open_url(self.url + path, method=method, data=data, headers=headers, timeout=timeout or self.timeout,
                            validate_certs=self.validate_certs, follow_redirects="safe")
        except HTTPError as error:
            raise HTTPFailure(path, error.code, _read_error_body(error)) from None
        except TimeoutError:
            raise SmokeFailure("%s %s got no answer within %d s (timeout); the server may be overloaded or the "
                               "prompt too long for that time: raise the module's timeout."
                               % (method, self.url + path, timeout or self.timeout)) from None
        except URLError as error:
            reason = getattr(error, "reason", error)
            if isinstance(reason, (socket.timeout, TimeoutError)):
                raise SmokeFailure("%s %s got no answer within %d s (timeout): raise the module's timeout."
                                   % (method, self.url + path, timeout or self.timeout)) from None
            raise SmokeFailure("Nothing is answering at %s (%s). Is the SGLang service running and listening "
                               "there? Check: systemctl status sglang; journalctl -u sglang -n 50."
                               % (self.url, reason)) from None
        except (ConnectionError, OSError) as error:
            raise SmokeFailure("The connection to %s failed: %s. Is the SGLang service running?"
                               % (self.url, error)) from None

    def json(self, method, path, payload=None, timeout=None):
        response = self._open(method, path, payload, timeout)
        try:
            raw = response.read()
        except TimeoutError:
            raise SmokeFailure("%s %s stopped answering within %d s (timeout): raise the module's timeout."
                               % (method, self.url + path, timeout or self.timeout)) from None
        return _parse_json(self.url + path, raw)

    def stream(self, path, payload):
        """POST with stream=true; returns (chunks, seconds to first text chunk)."""
        start = time.monotonic()
        response = self._open("POST", path, payload)
        chunks, ttft = [], None
        for raw in response:
            line = raw.decode("utf-8", "replace").strip()
            if not line.startswith("data:"):
                continue
            data = line[5:].strip()
            if data == "[DONE]":
                break
            chunk = _parse_json(self.url + path, data.encode())
            if ttft is None and any(c.get("text") for c in chunk.get("choices") or []):
                ttft = time.monotonic() - start
            chunks.append(chunk)
        return chunks, ttft


class HTTPFailure(SmokeFailure):
    def __init__(self, path, status, message):
        self.status, self.server_message = status, message
        super().__init__("%s answered HTTP %d: %s" % (path, status, message))


def _read_error_body(error):
    """SGLang's own message from an error response: OpenAI {"message"}, native {"error":{"message"}}."""
    try:
        raw = error.read().decode("utf-8", "replace")
    except Exception:  # noqa: BLE001 - a body we cannot read is reported as empty
        raw = ""
    try:
        body = json.loads(raw)
    except ValueError:
        return raw.strip()[:300] or getattr(error, "reason", "") or "(no body)"
    if isinstance(body, dict):
        inner = body.get("error")
        if isinstance(inner, dict) and inner.get("message"):
            return inner["message"]
        for key in ("message", "detail", "error"):
            if body.get(key):
                return body[key] if isinstance(body[key], str) else json.dumps(body[key])
    return raw.strip()[:300]


def _parse_json(url, raw):
    try:
        return json.loads(raw)
    except ValueError:
        text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)
        raise SmokeFailure("%s did not answer JSON (is this an SGLang server?): %r" % (url, text[:200])) from None


def fmt(number):
    return f"{number:,}"


def wait_ready(client, seconds):
    """Poll /health_generate (a real one-token generation) until it answers 200."""
    deadline = time.monotonic() + seconds
    last = None
    while True:
        try:
            client._open("GET", "/health_generate", timeout=min(client.timeout, 60))
            return
        except HTTPFailure as error:
            if error.status in (401, 403):
                raise SmokeFailure("/health_generate refused the request (HTTP %d: %s): check api_key."
                                   % (error.status, error.server_message)) from None
            last = "HTTP %d %s" % (error.status, error.server_message)
        except SmokeFailure as error:
            last = str(error)
            if "Nothing is answering" in last and seconds <= 0:
                raise
        if time.monotonic() >= deadline:
            raise SmokeFailure("The server at %s was not ready within %d s: /health_generate last gave %s. It may "
                               "still be loading weights (journalctl -u sglang shows progress): raise wait_ready."
                               % (client.url, seconds, last))
        time.sleep(min(2.0, max(0.1, deadline - time.monotonic())))


def server_info(client):
    """/server_info (0.5.9+), else /get_server_info (older): (pool, max_req_input_len, info)."""
    try:
        info = client.json("GET", "/server_info")
    except HTTPFailure as error:
        if error.status != 404:
            raise
        info = client.json("GET", "/get_server_info")
    return pool_from_info(info), info.get("max_req_input_len"), info


def pool_from_info(info):
    if not isinstance(info, dict):
        raise SmokeFailure("The server info is not a JSON object: %r" % (info,))
    if isinstance(info.get("max_total_num_tokens"), int):
        return info["max_total_num_tokens"]
    states = info.get("internal_states") or [{}]
    capacity = ((states[0] or {}).get("memory_usage") or {}).get("token_capacity")
    if isinstance(capacity, int):
        return capacity
    raise SmokeFailure("The server info has neither max_total_num_tokens nor "
                       "internal_states[0].memory_usage.token_capacity; is this an SGLang server?")


def served_model(client, info):
    """(model name, context length) from /v1/models, else from the server info's server args."""
    try:
        data = client.json("GET", "/v1/models").get("data") or []
    except HTTPFailure as error:
        if error.status != 404:
            raise
        data = []
    if data:
        return data[0].get("id"), data[0].get("max_model_len") or info.get("context_length")
    name = info.get("served_model_name") or info.get("model_path")
    if not name:
        raise SmokeFailure("/v1/models lists no model and the server info names none; is the server still starting?")
    return name, info.get("context_length")


class PromptSizer:
    """Sizes filler * k + question to a token count as the server counts it.

    The count is linear in k for a repeated filler (tokenizers see the same pieces each time), so two
    short measurements give the slope and intercept; /tokenize, where the server has it, then checks
    and corrects the long prompt itself (a few cheap calls). Without /tokenize, each measurement is a
    1-token completion and the long request's own usage is the final word.
    """

    def __init__(self, client, model, filler, question):
        self.client, self.model, self.filler, self.question = client, model, filler, question
        self.has_tokenize = True

    def text(self, repeats):
        return self.filler * repeats + "\n" + self.question

    def count(self, repeats):
        prompt = self.text(repeats)
        if self.has_tokenize:
            try:
                return int(self.client.json("POST", "/tokenize", {"model": self.model, "prompt": prompt})["count"])
            except HTTPFailure as error:
                if error.status not in (404, 405):
                    raise
                self.has_tokenize = False
            except (KeyError, TypeError, ValueError):
                self.has_tokenize = False
        response = self.client.json("POST", "/v1/completions",
                                    {"model": self.model, "prompt": prompt, "max_tokens": 1, "temperature": 0})
        return int(response["usage"]["prompt_tokens"])

    def size(self, target):
        small, large = 8, 64
        base_small, base_large = self.count(small), self.count(large)
        per_repeat = (base_large - base_small) / float(large - small)
        if per_repeat <= 0:
            raise SmokeFailure("The server counts the same tokens for %d and %d fillers; cannot size a prompt."
                               % (small, large))
        intercept = base_small - per_repeat * small
        repeats = max(1, int(round((target - intercept) / per_repeat)))
        counted = None
        if self.has_tokenize:
            for _ in range(4):
                counted = self.count(repeats)
                if abs(counted - target) <= max(1, target * 0.002):
                    break
                repeats = max(1, repeats + int(round((target - counted) / per_repeat)))
        return self.text(repeats), counted


def long_request(client, model, prompt, max_tokens, stream):
    payload = {"model": model, "prompt": prompt, "max_tokens": max_tokens, "temperature": 0}
    start = time.monotonic()
    ttft = None
    if stream:
        payload.update(stream=True, stream_options={"include_usage": True})
        chunks, ttft = client.stream("/v1/completions", payload)
        text = "".join(c.get("text") or "" for chunk in chunks for c in chunk.get("choices") or [])
        usage = next((chunk["usage"] for chunk in reversed(chunks) if chunk.get("usage")), None)
    else:
        response = client.json("POST", "/v1/completions", payload)
        text = "".join(c.get("text") or "" for c in response.get("choices") or [])
        usage = response.get("usage")
    elapsed = time.monotonic() - start
    if not usage or "prompt_tokens" not in usage:
        raise SmokeFailure("The completion carried no usage.prompt_tokens, so the prompt length cannot be proven.")
    return text, usage, elapsed, ttft


def target_tokens(asked, pool, max_req_input_len, context_length, max_tokens):
    """The prompt size to build: a number, or 'full' = just under what the server accepts."""
    limits = [pool - 6]
    if max_req_input_len:
        limits.append(max_req_input_len - 1)
    if context_length:
        limits.append(context_length - max_tokens - 1)
    accepted = min(limits)
    if str(asked).strip().lower() == "full":
        return int(accepted - math.ceil(accepted * 0.005)), accepted
    try:
        value = int(str(asked).replace("_", "").replace(",", ""))
    except ValueError:
        raise SmokeFailure("prompt_tokens must be a number of tokens or 'full', got %r." % (asked,)) from None
    if value <= 0:
        raise SmokeFailure("prompt_tokens must be positive, got %r." % (asked,))
    return value, accepted


def run(params, result):
    client = Client(params["url"], params["api_key"], params["timeout"], params["validate_certs"])
    checks = result["checks"]
    wait_ready(client, params["wait_ready"])
    checks.append({"name": "ready", "ok": True, "detail": "/health_generate answered 200"})

    pool, max_req_input_len, info = server_info(client)
    model, context_length = served_model(client, info)
    result.update(pool_tokens=pool, max_req_input_len=max_req_input_len, context_length=context_length)
    want = params["min_pool_tokens"]
    pool_ok = pool >= want
    relation = ">=" if pool_ok else "<"
    checks.append({"name": "pool", "ok": pool_ok, "detail": "pool %s tokens %s %s" % (fmt(pool), relation, fmt(want))})
    if not pool_ok:
        raise SmokeFailure(
            "The KV pool holds %s tokens (max_total_num_tokens=%d), under the %s required (min_pool_tokens=%d): "
            "a request that long would be rejected. Raise --mem-fraction-static (re-plan with this host's "
            "calibration: the planner does it), use an fp8 KV cache, or lower the context target."
            % (fmt(pool), pool, fmt(want), want))

    target, accepted = target_tokens(params["prompt_tokens"], pool, max_req_input_len, context_length,
                                     params["max_tokens"])
    model = params["model"] or model
    sizer = PromptSizer(client, model, params["filler"], params["question"])
    calls_before = client.calls
    prompt, _ = sizer.size(target)
    result["calibration_calls"] = client.calls - calls_before

    text, usage, elapsed, ttft = long_request(client, model, prompt, params["max_tokens"], params["stream"])
    counted = int(usage["prompt_tokens"])
    result.update(prompt_tokens=counted, completion_tokens=int(usage.get("completion_tokens") or 0),
                  completion=text, elapsed_s=round(elapsed, 3),
                  prefill_tokens_per_s=round(counted / (ttft or elapsed), 1) if (ttft or elapsed) > 0 else None)
    if ttft is not None:
        result["ttft_s"] = round(ttft, 3)
    off = abs(counted - target) / float(target)
    checks.append({"name": "prompt_tokens", "ok": off <= 0.01,
                   "detail": "server counted %s prompt tokens for %s asked (%.2f%% off; the server accepts up to %s)"
                             % (fmt(counted), fmt(target), off * 100, fmt(accepted))})
    answer_ok = re.search(params["expect"], text, re.IGNORECASE) is not None
    verdict = "matches" if answer_ok else "does not match"
    checks.append({"name": "answer", "ok": answer_ok,
                   "detail": "answer %r %s /%s/" % (text, verdict, params["expect"])})
    failed = [c for c in checks if not c["ok"]]
    if failed:
        raise SmokeFailure("Smoke test failed: " + "; ".join(c["detail"] for c in failed))


def main():
    module = AnsibleModule(
        argument_spec={
            "url": {"type": "str", "default": "http://127.0.0.1:30000"},
            "api_key": {"type": "str", "no_log": True},
            "min_pool_tokens": {"type": "int", "required": True},
            "prompt_tokens": {"type": "str", "default": "60000"},
            "filler": {"type": "str", "default": "The quick brown fox jumps over the lazy dog. "},
            "question": {"type": "str", "default": "In one word, what animal is mentioned?"},
            "expect": {"type": "str", "default": r"\bdog\b"},
            "max_tokens": {"type": "int", "default": 4},
            "timeout": {"type": "int", "default": 900},
            "wait_ready": {"type": "int", "default": 300},
            "model": {"type": "str"},
            "stream": {"type": "bool", "default": False},
            "validate_certs": {"type": "bool", "default": True},
        },
        supports_check_mode=True,
    )
    result = {"changed": False, "ok": False, "checks": []}
    try:
        re.compile(module.params["expect"])
    except re.error as error:
        module.fail_json(msg="expect is not a valid regular expression (%s): %r" % (error, module.params["expect"]),
                         **result)
    try:
        run(module.params, result)
    except SmokeFailure as error:
        module.fail_json(msg=str(error), **result)
    except Exception as error:  # noqa: BLE001 - report, never a traceback, but keep it for -vvv
        module.fail_json(msg="Smoke test stopped on an unexpected %s: %s" % (type(error).__name__, error),
                         exception=traceback.format_exc(), **result)
    result["ok"] = True
    module.exit_json(**result)


if __name__ == "__main__":
    main()
