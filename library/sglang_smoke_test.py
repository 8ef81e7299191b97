#!/usr/bin/python
"""Ansible module: prove a running SGLang server's KV pool and a long prompt."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: sglang_smoke_test
short_description: Prove that a running SGLang server holds its context in its KV pool and answers from all of it
description:
  - Reads the server's real KV pool (C(max_total_num_tokens)) and its context length (C(max_model_len) of
    C(/v1/models), the model config's C(context_len) in SGLang 0.5.x). Fails when the pool is under the
    context length (or under I(min_pool_tokens)) and when the context length is under I(context_target).
    SGLang starts "healthy" with a pool smaller than C(--context-length) and only rejects a long prompt when
    one arrives; this module makes that a deploy-time failure.
  - Builds a long prompt on the host itself (never shipped over SSH), by default filling at least 95% of the
    context target as the server counts tokens (calibrated with the server's C(/tokenize), or with the usage
    of short requests), sends it once, in one streamed C(/generate) of I(decode_tokens) tokens, checks the
    server-counted length and the answer, and measures time to first token, elapsed time, prefill throughput
    and, from the same request, decode at the full context - so a full proof prefills the full context once.
    A server without C(/generate) gets it through C(/v1/completions) instead, and decode is not measured.
  - The default question (C(needle)) states a random number once at the very start of the prompt and asks
    for it at the end, so a server that dropped or truncated early context fails the proof.
  - Refuses bad parameters and a prompt longer than the server accepts before sending anything; each request
    has one deadline (I(timeout)) from connecting to its last byte.
  - Changes nothing on the host or the server; C(changed) is always false and it runs in check mode. With
    I(progress_file), it writes its stage there while it runs and removes the file when it ends.
  - Every failure is a message naming the parameter or the number at fault, with the evidence gathered so
    far, never a traceback.
version_added: "1.0.0"
author: sglang-longctx maintainers (!UNKNOWN)
options:
  url:
    description: Base URL of the SGLang server, C(http://) or C(https://) with a host.
    type: str
    default: http://127.0.0.1:30000
  info_url:
    description:
      - Where to read the pool, the context length and the tokenizer (C(/server_info), C(/v1/models),
        C(/tokenize)) and wait for C(/health_generate), when the long request goes elsewhere - e.g. the prompt
        through a router in I(url) and the pool from the worker behind it (a router's own server information
        describes the router, not the worker). Default - I(url).
    type: str
  api_key:
    description: The server's C(--api-key), sent as a bearer token.
    type: str
  min_pool_tokens:
    description:
      - The least KV pool (tokens) the server must hold, a positive number.
      - Unset, the pool must hold the server's own context length. The pool must hold the context length
        in any case.
    type: int
  context_target:
    description:
      - The context (tokens) the deployment promises (the role's C(sglang_context_target)), a positive number.
      - When set, the server's context length must be at least this, and C(prompt_tokens=target) fills it.
    type: int
  prompt_tokens:
    description:
      - Size of the long prompt, in tokens as the server counts them.
      - C(target) (default) fills 98% of I(context_target) (of the server's context length when unset),
        kept under what the server accepts, and fails unless the server counted at least 95% of it.
      - C(full) asks for as close to min(context length, pool) as the server accepts.
      - A number asks for that many tokens; more than the server accepts is refused before sending.
      - What the server accepts is its context length less the larger of I(max_tokens) and I(decode_tokens) (the
        output the long request may take) and, with an EAGLE-family draft, the
        draft-token slots SGLang reserves per request (read from its server info), and under its
        C(max_req_input_len).
    type: str
    default: target
  question:
    description:
      - C(needle) states a random number once at the start of the prompt and asks for it at the end; the
        answer must contain that number (digit separators ignored). The number is new on every call and
        returned as RV(needle).
      - C(fox) asks which animal the repeated filler mentions (the first releases' check; the answer sits
        in every line, so it does not prove the start of the prompt was kept).
    type: str
    choices: [needle, fox]
    default: needle
  filler:
    description: Text repeated to build the prompt. With C(question=needle) it must hold no digit.
    type: str
    default: "The quick brown fox jumps over the lazy dog. "
  expect:
    description:
      - A regular expression the answer must match (searched, case-insensitive).
      - Default is the question's own answer, the needle number or C(\bdog\b).
    type: str
  max_tokens:
    description:
      - Tokens to generate for the answer (kept out of the prompt's room in the context).
      - The full proof's long prompt answers in its C(/generate) of I(decode_tokens) tokens; the answer checked is
        the text of its first I(max_tokens) tokens (so at most I(decode_tokens) of them). I(max_tokens) is all the
        answer takes for the check's short prompt, the concurrent prompts, and the long prompt on a server without
        C(/generate).
    type: int
    default: 32
  level:
    description:
      - C(full) (default) proves the pool, the context and the long prompt, then measures decode at that context.
      - C(check) costs the server well under a second - the pool and context length read back and compared
        with I(expect_pool_tokens) and I(expect_context_length) (the proven ones), and one short needle
        prompt (at most 64 tokens) answered. A check that finds any difference runs the full proof instead
        and says why (RV(escalated)).
    type: str
    choices: [full, check]
    default: full
  expect_pool_tokens:
    description: For C(level=check), the pool the proven state reported; another pool runs the full proof.
    type: int
  expect_context_length:
    description: For C(level=check), the context length the proven state reported; another runs the full proof.
    type: int
  decode_tokens:
    description:
      - For the full proof, tokens the long prompt's own request decodes (at least 8) - one streamed C(/generate)
        with C(ignore_eos), whose text is also the answer, so the full context is prefilled once (each prefill of
        a ~196k-token prompt takes minutes on a large model). Its streamed events give the time per output token at
        the full context and, with speculative decoding, the accept length from the request's own counters
        (C(meta_info.spec_verify_ct) against C(completion_tokens), SGLang 0.5.23
        managers/tokenizer_manager.py).
    type: int
    default: 16
  concurrent_requests:
    description:
      - For the full proof, after the long prompt, this many short needle prompts (a few hundred tokens each, each
        with its own number) sent at once - the role passes the planned C(--max-running-requests). Every one must
        be answered with its own number (or, with I(expect) given, match I(expect) as the long prompt's answer must),
        or the proof fails. The time to the last answer and the aggregate decode
        tokens/s are returned as RV(concurrency). At most 64 are sent; 0 (default) sends none. The check level
        never sends them.
    type: int
    default: 0
  timeout:
    description: Seconds any one request may take in all, from connecting to its last byte (one deadline).
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
    description:
      - Stream the long request, which measures the time to first token (RV(ttft_s)) and the time per output token
        (RV(decode)'s C(tpot_ms)). Not streamed, the C(/generate) answers once and RV(decode) has its counts only.
    type: bool
    default: true
  validate_certs:
    description: Verify TLS certificates for an https URL.
    type: bool
    default: true
  progress_file:
    description:
      - A file to keep the current stage in while the module runs (replaced atomically at each stage, removed
        at the end), for a task started with C(async) and C(poll=0) and followed by library/async_progress.py,
        which prints it once per try. A JSON object - C(line) (e.g. C(proof - prefill started, 196,004 prompt
        tokens)) and C(since) (epoch seconds the stage began).
      - Its folder must exist (a file that cannot be written is skipped; the proof goes on). Unset, nothing is
        written. It never holds the prompt, the answer or the API key.
    type: path
notes:
  - Needs nothing on the host beyond what Ansible ships (it uses C(ansible.module_utils.urls)).
  - Supports check mode. It is read-only, it sends requests but changes no state.
  - Endpoints and messages as in SGLang 0.5.9 and 0.5.23 (C(/server_info), C(/get_server_info),
    C(/v1/models), C(/tokenize), C(/generate), C(/v1/completions)); 0.4.x servers without C(/tokenize) are sized
    with short completions.
"""

EXAMPLES = r"""
- name: Prove the 200k target with a needle prompt that fills it
  sglang_smoke_test:
    context_target: 200000
  register: smoke

- name: Fill the whole context, through an API key, with the fox question
  sglang_smoke_test:
    url: http://127.0.0.1:30000
    api_key: "{{ sglang_api_key }}"
    context_target: "{{ sglang_context_target }}"
    prompt_tokens: full
    question: fox
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
  sample: 218485
context_length:
  description: The server's context length (C(max_model_len) of C(/v1/models), else C(context_length) of the
    server info).
  type: int
  returned: when the server answered
  sample: 200000
max_req_input_len:
  description: The longest input the scheduler accepts, min(context, pool) - 6.
  type: int
  returned: when the server answered
server_version:
  description: The SGLang release the server says it runs (C(version) of its server info, SGLang's own
    C(__version__)); null when it gives none or one that is not a version.
  type: str
  returned: when the server answered
  sample: 0.5.23
context_target:
  description: The I(context_target) checked, or null.
  type: int
  returned: always
min_pool_tokens:
  description: The pool the server had to hold (I(min_pool_tokens), else the context length).
  type: int
  returned: when the server answered
prompt_target:
  description: The prompt size asked for, in tokens.
  type: int
  returned: when the long request ran
prompt_tokens:
  description: The long prompt's length as the server counted it (usage.prompt_tokens).
  type: int
  returned: when the long request ran
  sample: 196003
completion_tokens:
  description: Tokens generated (the full proof's long prompt, through C(/generate) - I(decode_tokens)).
  type: int
  returned: when the long request ran
completion:
  description:
    - The answer text. The full proof's, from its C(/generate) with C(ignore_eos), goes on past the answer's end up to
      I(decode_tokens) tokens (the answer is searched in it).
  type: str
  returned: when the long request ran
  sample: " 4821937."
question:
  description: The question asked, C(needle) or C(fox).
  type: str
  returned: always
needle:
  description: The random number stated at the start of the prompt (C(question=needle)), else null.
  type: int
  returned: always
  sample: 4821937
expect:
  description: The regular expression the answer had to match.
  type: str
  returned: always
elapsed_s:
  description: Seconds the long request took, end to end.
  type: float
  returned: when the long request ran
ttft_s:
  description: Seconds to the first generated text (streaming), null when I(stream) is false.
  type: float
  returned: when the long request ran
prefill_tokens_per_s:
  description: Prompt tokens divided by the time to first token (streaming) or by the elapsed time.
  type: float
  returned: when the long request ran
calibration_calls:
  description: Requests it took to size the prompt (tokenize or short completions).
  type: int
  returned: when the long request ran
level:
  description: The proof that ran, C(full) or C(check) (C(full) also when a check escalated).
  type: str
  returned: always
escalated:
  description: Why a check ran the full proof instead (the difference it found), else null.
  type: str
  returned: always
decode:
  description:
    - The full proof's decode at the full context, measured on the long prompt's own streamed C(/generate) (one
      prefill of the context) - C(tokens) decoded, C(tpot_ms) (ms per output token after the first streamed
      event), C(seconds) (from the first streamed event to the last), C(prompt_tokens), C(cached_tokens) (of the
      prompt, by the radix cache) and, when a draft runs, C(spec_verify_ct) and C(accept_length)
      (completion_tokens / spec_verify_ct) with the server's own C(spec_accept_length) and C(spec_accept_rate).
    - Null for a check or a failed proof; C(tpot_ms) and C(seconds) null with a C(note) when I(stream) is false;
      only a C(note) when the server serves no C(/generate).
  type: dict
  returned: always
  sample: {"tokens": 16, "tpot_ms": 41.3, "seconds": 0.62, "spec_verify_ct": 6, "accept_length": 2.67}
concurrency:
  description:
    - The full proof's concurrent short prompts (I(concurrent_requests)) - C(requests) sent at once, C(answered)
      with their own needle, C(seconds) to the last answer, C(completion_tokens) in all, C(decode_tokens_per_s)
      (those tokens over those seconds), C(prompt_tokens) of each (the largest). Null for a check or when none
      were asked.
  type: dict
  returned: always
  sample: {"requests": 8, "answered": 8, "seconds": 1.9, "completion_tokens": 40, "decode_tokens_per_s": 21.1}
checks:
  description: Each check (ready, context, pool, prompt_tokens, answer, concurrency), with whether it passed and what
    it saw.
  type: list
  elements: dict
  returned: always
  sample: [{"name": "pool", "ok": true, "detail": "pool 218,485 tokens >= 200,000 (the context length)"}]
"""

import json
import math
import os
import random
import re
import socket
import tempfile
import threading
import time
import traceback
from http.client import HTTPException
from urllib.error import HTTPError, URLError
from urllib.parse import urlsplit

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.sglang_http import (
    JSON_LIMIT,
    ResponseTooLarge,
    error_body,
    open_bearer,
    protocol_fault,
    read_bounded,
    too_large,
)

FOX_FILLER = "The quick brown fox jumps over the lazy dog. "
FOX_QUESTION = "In one word, what animal is mentioned?"
# A completion prompt (no chat template): the last line ends where the answer starts, so a base or
# instruct model continues with the number. The double answers from the line that states it.
NEEDLE_HEAD = "The secret number is %d. Remember it: you will be asked for it at the end.\n"
NEEDLE_TAIL = ("\nQuestion: what is the secret number stated at the very beginning of this text? "
               "Answer: the secret number is")
TARGET_FILL = 0.98  # aim at 98% of the target, under what the server accepts
TARGET_MIN = 0.95  # under 95% of the target counted by the server fails the proof
CONCURRENT_MAX = 64  # the most short prompts the full proof sends at once (SGLang's unset default is 2,048)
CONCURRENT_REPEATS = 24  # filler sentences in each concurrent prompt: a few hundred tokens


class SmokeFailure(Exception):
    """A failed step; the message says what happened and what to do."""


class Retryable(SmokeFailure):
    """Nothing answered, or not in time: worth another try while waiting for the server."""


class HTTPFailure(SmokeFailure):
    def __init__(self, path, status, message):
        self.status, self.server_message = status, message
        super().__init__("%s answered HTTP %d: %s" % (path, status, message))


class Client:
    """JSON over HTTP to one SGLang server, with errors turned into sentences.

    Each request runs in a worker thread that the caller waits for at most `timeout` seconds: socket
    timeouts apply per read, so a server trickling a byte a second would otherwise hold the run forever.
    """

    def __init__(self, url, api_key=None, timeout=900, validate_certs=True):
        self.url, self.api_key, self.timeout, self.validate_certs = url.rstrip("/"), api_key, timeout, validate_certs
        self.calls = 0

    def _open(self, method, path, payload, seconds):
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        data = None if payload is None else json.dumps(payload)
        try:
            # The key goes to this URL only: a redirect, to this origin or another, is followed without it.
            return open_bearer(self.url + path, self.api_key, method=method, data=data, headers=headers,
                               timeout=seconds, validate_certs=self.validate_certs, follow_redirects="safe")
        except HTTPError as error:
            if error.code in (401, 403):
                raise SmokeFailure(self._auth_message(path, error.code, _read_error_body(error))) from None
            raise HTTPFailure(path, error.code, _read_error_body(error)) from None
        except TimeoutError:
            raise self._late(method, path, seconds) from None
        except URLError as error:
            reason = getattr(error, "reason", error)
            if isinstance(reason, (socket.timeout, TimeoutError)):
                raise self._late(method, path, seconds) from None
            raise Retryable("Nothing is answering at %s (%s). Is the SGLang service running and listening "
                            "there? Check: systemctl status sglang; journalctl -u sglang -n 50."
                            % (self.url, reason)) from None
        except ValueError as error:  # urllib's "unknown url type" and the like: no retry can fix it
            raise SmokeFailure("url=%r cannot be requested (%s): fix url." % (self.url, error)) from None
        except (ConnectionError, OSError) as error:
            raise Retryable("The connection to %s failed: %s. Is the SGLang service running?"
                            % (self.url, error)) from None

    def _auth_message(self, path, status, body):
        if self.api_key:
            return ("%s answered HTTP %d (%s): the server refused the api_key given; pass its --api-key as "
                    "api_key (the role passes sglang_api_key)." % (path, status, body))
        return ("%s answered HTTP %d (%s): the server requires an API key; pass it as api_key (the role passes "
                "sglang_api_key)." % (path, status, body))

    def _late(self, method, path, seconds):
        return Retryable("%s %s did not finish within %s s (timeout, one deadline per request): the server may "
                         "be overloaded, stalled, or the prompt too long for that time: raise the module's "
                         "timeout." % (method, self.url + path, _secs(seconds)))

    def request(self, method, path, payload=None, seconds=None, consume=None):
        """Open, then consume(response) in a worker; the whole exchange must end within `seconds`."""
        seconds = seconds or self.timeout
        consume = consume or (lambda response: _parse_json(self.url + path, read_bounded(response, what=path)))
        holder = {}
        self.calls += 1

        def work():
            try:
                holder["response"] = self._open(method, path, payload, seconds)
                holder["value"] = consume(holder["response"])
            except TimeoutError:
                holder["error"] = self._late(method, path, seconds)
            except ResponseTooLarge as error:
                holder["error"] = SmokeFailure("%s: is url an SGLang server?" % error)
            except HTTPException as error:
                fault = protocol_fault(error)
                if fault:  # an answer no HTTP server sends (too many headers, a line too long): no retry fixes it
                    holder["error"] = SmokeFailure(
                        "%s %s: %s. Is url an SGLang server? Check what listens there (a proxy in front of it, "
                        "another service) and point url at SGLang's port." % (method, self.url + path, fault))
                    return
                # IncompleteRead and the like: the answer broke off
                holder["error"] = Retryable("%s %s broke off mid-answer (%s): the server closed the connection"
                                            % (method, self.url + path, type(error).__name__))
            except ConnectionError as error:  # reset or broken while the answer was read: the same, said plainly
                holder["error"] = Retryable("%s %s broke off mid-answer (%s): the connection was reset"
                                            % (method, self.url + path, type(error).__name__))
            except BaseException as error:  # noqa: BLE001 - handed to the waiting caller
                holder["error"] = error

        worker = threading.Thread(target=work, name="sglang-smoke-request", daemon=True)
        worker.start()
        worker.join(seconds)
        if worker.is_alive():
            _abort(holder.get("response"))
            raise self._late(method, path, seconds)
        if "error" in holder:
            raise holder["error"]
        return holder["value"]

    def json(self, method, path, payload=None, seconds=None):
        return self.request(method, path, payload, seconds)

    def events(self, response, path, bound_stream=True):
        """The JSON events of a server-sent stream ("data: {...}" lines, up to "data: [DONE]" or the end).

        Bounded: a line at most JSON_LIMIT bytes and, with bound_stream, the whole stream too (an answer of
        max_tokens tokens is far less; more is not SGLang). SGLang streams errors as a data event (the tokenizer's in
        0.5.9, the scheduler's from 0.5.10, its type "BAD_REQUEST": serving_completions.py 0.5.23:356-371,
        serving_base.py:223-237; /generate's http_server.py 0.5.23:957-975): a SmokeFailure quoting it.
        """
        received = 0
        while True:
            raw = response.readline(JSON_LIMIT + 1)
            received += len(raw)
            if len(raw) > JSON_LIMIT or (bound_stream and received > JSON_LIMIT):
                raise too_large(path, JSON_LIMIT)
            if not raw:
                return
            line = raw.decode("utf-8", "replace").strip()
            if not line.startswith("data:"):
                continue
            data = line[5:].strip()
            if data == "[DONE]":
                return
            event = _parse_json(self.url + path, data.encode())
            if isinstance(event, dict) and event.get("error"):
                error = event["error"]
                raise SmokeFailure("%s streamed an error: %s" % (
                    path, error.get("message") if isinstance(error, dict) else error))
            yield event

    def stream(self, path, payload, on_first_text=None):
        """POST with stream=true; returns (chunks, seconds to first text chunk); on_first_text(ttft) is called then."""
        start = time.monotonic()

        def consume(response):
            chunks, ttft = [], None
            for chunk in self.events(response, path):
                aborted = next((c for c in chunk.get("choices") or [] if c.get("finish_reason") == "abort"), None)
                if aborted is not None:
                    # 0.5.9 passes a scheduler's refusal of a streamed request through as an empty chunk whose
                    # finish_reason is "abort" (entrypoints/openai/serving_completions.py:204-300; 0.5.10+ sends
                    # the error event events() raises): the words are only in the server's log
                    raise SmokeFailure("%s ended the streamed request with finish_reason abort: the server refused "
                                       "or aborted it; its log (journalctl -u sglang) says why." % path)
                if ttft is None and any(c.get("text") for c in chunk.get("choices") or []):
                    ttft = time.monotonic() - start
                    if on_first_text:
                        on_first_text(ttft)
                chunks.append(chunk)
            return chunks, ttft

        return self.request("POST", path, payload, consume=consume)


def _abort(response):
    """Best effort: shut the socket of a request past its deadline so its worker stops reading."""
    raw = getattr(getattr(response, "fp", None), "raw", None)
    sock = getattr(raw, "_sock", None)
    try:
        if sock is not None:
            sock.shutdown(socket.SHUT_RDWR)
        if response is not None:
            response.close()
    except (OSError, ValueError, AttributeError):
        pass


def _secs(seconds):
    return ("%d" % seconds) if float(seconds).is_integer() else ("%.1f" % seconds)


def _read_error_body(error):
    """SGLang's own message from an error response: OpenAI {"message"}, native {"error":{"message"}}."""
    try:
        raw = error_body(error)
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


class Progress:
    """The stage, kept in progress_file for library/async_progress.py: {"line": ..., "since": epoch seconds}.

    Written to a new file in the same folder, then renamed over the old one, so a reader sees a whole stage or
    the previous one. Best effort: a file that cannot be written never fails the proof.
    """

    def __init__(self, path):
        self.path = path

    def stage(self, line, since=None):
        if not self.path:
            return
        tmp = None
        try:
            handle, tmp = tempfile.mkstemp(prefix=".sglang-smoke-", dir=os.path.dirname(self.path) or ".")
            with os.fdopen(handle, "w") as out:
                json.dump({"line": line, "since": time.time() if since is None else since}, out)
            os.replace(tmp, self.path)
        except OSError:
            if tmp and os.path.exists(tmp):
                os.unlink(tmp)

    def end(self):
        if self.path:
            try:
                os.unlink(self.path)
            except OSError:
                pass


# -- parameters ------------------------------------------------------------------------------------------
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


# -- the server ------------------------------------------------------------------------------------------
def wait_ready(client, seconds):
    """Poll /health_generate (a real one-token generation) until it answers 200."""
    deadline = time.monotonic() + seconds
    last = None
    while True:
        try:
            client.request("GET", "/health_generate", seconds=min(client.timeout, 60),
                           consume=lambda r: read_bounded(r, what="/health_generate"))
            return
        except HTTPFailure as error:
            last = "HTTP %d %s" % (error.status, error.server_message)
        except Retryable as error:
            last = str(error)
            if seconds <= 0 and last.startswith("Nothing is answering"):
                raise
        if time.monotonic() >= deadline:
            raise SmokeFailure("The server at %s was not ready within %d s: /health_generate last gave %s. It may "
                               "still be loading weights (journalctl -u sglang shows progress): raise wait_ready."
                               % (client.url, seconds, last))
        time.sleep(min(2.0, max(0.1, deadline - time.monotonic())))


VERSION = re.compile(r"[0-9][0-9A-Za-z.+_-]{0,39}")


def server_version(info):
    """The release the server names (SGLang's /server_info carries its __version__), shown in the report: a peer's
    answer, so only a short version-shaped string is taken."""
    version = info.get("version") if isinstance(info, dict) else None
    return version if isinstance(version, str) and VERSION.fullmatch(version) else None


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
    states = info.get("internal_states")
    state = states[0] if isinstance(states, list) and states else {}
    usage = state.get("memory_usage") if isinstance(state, dict) else None
    capacity = usage.get("token_capacity") if isinstance(usage, dict) else None
    if isinstance(capacity, int):
        return capacity
    raise SmokeFailure("The server info has neither max_total_num_tokens nor "
                       "internal_states[0].memory_usage.token_capacity; is this an SGLang server?")


def served_model(client, info):
    """(model name, context length).

    The context length is /v1/models' max_model_len: TokenizerManager's model_config.context_len in 0.5.9
    and 0.5.23, the number it refuses longer inputs by. The server info's context_length is the
    --context-length argument (null when the model config's length applies), the fallback.
    """
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


def check_capacity(params, checks, pool, context_length):
    """The context length holds the target, and the pool holds the context (and min_pool_tokens)."""
    target, least = params.get("context_target"), params.get("min_pool_tokens")
    if not isinstance(context_length, int) or context_length <= 0:
        raise SmokeFailure("The server reported no context length (/v1/models max_model_len, server info "
                           "context_length), so the pool cannot be compared with it; is this an SGLang server?")
    reasons = []
    if target is not None:
        ok = context_length >= target
        checks.append({"name": "context", "ok": ok, "detail": "context length %s tokens %s %s (context_target)"
                       % (fmt(context_length), ">=" if ok else "<", fmt(target))})
        if not ok:
            reasons.append(
                "The server's context length is %s tokens, under the context target of %s (context_target=%d): it "
                "refuses longer prompts. Start SGLang with --context-length %d (the role sets it from "
                "sglang_context_target) or lower context_target." % (fmt(context_length), fmt(target), target, target))
    need = max(context_length, least or 0)
    why = "the context length" if need == context_length else "min_pool_tokens=%d" % least
    ok = pool >= need
    checks.append({"name": "pool", "ok": ok, "detail": "pool %s tokens %s %s (%s)"
                   % (fmt(pool), ">=" if ok else "<", fmt(need), why)})
    if not ok:
        reasons.append(
            "The KV pool holds %s tokens (max_total_num_tokens=%d), under the %s required (%s; the server's "
            "context length is %s): a request that long would be rejected. Raise --mem-fraction-static (re-plan "
            "with this host's calibration: the planner does it), use an fp8 KV cache, or lower the context "
            "target." % (fmt(pool), pool, fmt(need), why, fmt(context_length)))
    if reasons:
        raise SmokeFailure(" ".join(reasons))


# -- the prompt ------------------------------------------------------------------------------------------
def make_prompt_parts(question, filler):
    """(head, filler, tail, needle): the needle is new on every call, so no server can know it."""
    if question == "needle":
        needle = random.SystemRandom().randint(1_000_000, 9_999_999)
        return NEEDLE_HEAD % needle, filler, NEEDLE_TAIL, needle
    return "", filler, "\n" + FOX_QUESTION, None


class PromptSizer:
    """Sizes head + filler * k + tail to a token count as the server counts it.

    The count is linear in k for a repeated filler (tokenizers see the same pieces each time), so two
    short measurements give the slope and intercept; /tokenize, where the server has it, then checks
    and corrects the long prompt itself (a few cheap calls). Without /tokenize, each measurement is a
    1-token completion and the long request's own usage is the final word.
    """

    def __init__(self, client, model, head, filler, tail):
        self.client, self.model, self.head, self.filler, self.tail = client, model, head, filler, tail
        self.has_tokenize = True
        self.slope = self.intercept = None

    def text(self, repeats):
        return self.head + self.filler * repeats + self.tail

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
        """(prompt, its token count: the server's where /tokenize exists, else the linear estimate)."""
        small, large = 8, 64
        base_small, base_large = self.count(small), self.count(large)
        self.slope = (base_large - base_small) / float(large - small)
        if self.slope <= 0:
            raise SmokeFailure("The server counts the same tokens for %d and %d fillers; cannot size a prompt."
                               % (small, large))
        self.intercept = base_small - self.slope * small
        repeats = max(1, int(round((target - self.intercept) / self.slope)))
        counted = int(round(self.intercept + self.slope * repeats))
        if self.has_tokenize:
            for _attempt in range(4):
                counted = self.count(repeats)
                if abs(counted - target) <= max(1, target * 0.002):
                    break
                repeats = max(1, repeats + int(round((target - counted) / self.slope)))
        return self.text(repeats), counted


def reserved_tokens(info):
    """The output slots SGLang adds to every input before its length checks: EAGLE (EAGLE3, NEXTN, FROZEN_KV_MTP)
    keeps its draft tokens there, max(eagle_topk x num_steps, num_draft_tokens) (0.5.9
    managers/tokenizer_manager.py:250-261; 0.5.23 managers/utils.py:484-500 compute_num_reserved_tokens, with
    runtime_context.py:1982-2000 max_speculative_num_draft_tokens); every other algorithm reserves none. Read
    from the server info, whose server_args are the resolved ones (auto-chosen steps, topk, draft tokens)."""
    if not isinstance(info, dict):
        return 0
    algorithm = str(info.get("speculative_algorithm") or "").upper()
    if algorithm not in ("EAGLE", "EAGLE3", "NEXTN", "FROZEN_KV_MTP"):
        return 0

    def number(key):
        value = info.get(key)
        return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0
    return max(number("speculative_eagle_topk") * number("speculative_num_steps"),
               number("speculative_num_draft_tokens"), number("max_speculative_num_draft_tokens"))


def accepted_tokens(pool, max_req_input_len, context_length, max_tokens, reserved=0):
    """The longest prompt SGLang takes: TokenizerManager wants input + reserved < context length and
    max_tokens + input + reserved <= context length (< before 0.5.11: the stricter one is kept), the Scheduler
    input < max_req_input_len (which already holds min(context, pool) - 6)."""
    limits = [pool - 6, context_length - max_tokens - reserved - 1]
    if max_req_input_len:
        limits.append(max_req_input_len - 1)
    return min(limits)


def answer_room(params):
    """(tokens kept out of the prompt's room for the output, the parameter that sets them): the needle request asks
    /generate for decode_tokens tokens, its fallback /v1/completions for max_tokens; the prompt fits either."""
    decode_tokens = params.get("decode_tokens") or 0
    if decode_tokens > params["max_tokens"]:
        return decode_tokens, "decode_tokens=%d" % decode_tokens
    return params["max_tokens"], "max_tokens=%d" % params["max_tokens"]


def prompt_target(asked, accepted, params, context_length, max_req_input_len, reserved=0):
    """The prompt size to build; a number the server would refuse is refused here, before sending."""
    room = answer_room(params)[1]
    if asked == "full":
        return int(accepted - math.ceil(accepted * 0.005))
    if asked == "target":
        fill_to = params.get("context_target") or context_length
        aim = min(int(fill_to * TARGET_FILL), int(accepted - math.ceil(accepted * 0.005)))
        if aim < fill_to * TARGET_MIN:
            raise SmokeFailure(
                "prompt_tokens=target needs at least %s tokens (95%% of %s) but the server accepts %s (context "
                "length %s less %s%s, max_req_input_len %s): lower %s or raise the context."
                % (fmt(int(math.ceil(fill_to * TARGET_MIN))), fmt(fill_to), fmt(accepted), fmt(context_length),
                   room, " and %d the speculative draft reserves" % reserved if reserved else "",
                   fmt(max_req_input_len) if max_req_input_len else "unknown", room.split("=")[0]))
        return aim
    if asked > accepted:
        raise SmokeFailure(too_long("prompt_tokens=%d asks for %s tokens" % (asked, fmt(asked)), accepted,
                                    context_length, max_req_input_len, room, reserved))
    return asked


def too_long(what, accepted, context_length, max_req_input_len, room, reserved=0):
    """`room`: answer_room's words, e.g. "max_tokens=32"."""
    return ("%s, more than the %s this server accepts (context length %s tokens less %s for the "
            "answer%s; max_req_input_len %s), so SGLang would refuse it with HTTP 400. Not sent: lower "
            "prompt_tokens, or use 'target' or 'full'." % (
                what, fmt(accepted), fmt(context_length), room,
                " and %d the speculative draft reserves" % reserved if reserved else "",
                fmt(max_req_input_len) if max_req_input_len else "unknown"))


def long_request(client, model, prompt, max_tokens, stream, on_first_text=None):
    payload = {"model": model, "prompt": prompt, "max_tokens": max_tokens, "temperature": 0}
    start = time.monotonic()
    ttft = None
    if stream:
        payload.update(stream=True, stream_options={"include_usage": True})
        chunks, ttft = client.stream("/v1/completions", payload, on_first_text)
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


def answer_matches(expect, text):
    """Search the answer; digit-group separators (4,821,937 or 4 821 937) do not hide a number."""
    plain = re.sub(r"(?<=\d)[,.' _\u00a0\u202f](?=\d{3}\b)", "", text)
    return re.search(expect, text, re.IGNORECASE) is not None or re.search(expect, plain, re.IGNORECASE) is not None


# -- the check: the proven state still serving, for well under a second of GPU ------------------------------
CHECK_PROMPT_MAX = 64  # the check's whole prompt, in tokens as the server counts them


class CheckDifference(SmokeFailure):
    """What a check found different from the proven state: the full proof runs instead."""


def ready_server(params, result, progress, server, stage):
    """Wait for /health_generate, then read the server's pool and context into the result (both levels)."""
    progress.stage("%s: waiting for /health_generate" % stage)
    wait_ready(server, params["wait_ready"])
    result["checks"].append({"name": "ready", "ok": True, "detail": "/health_generate answered 200"})
    pool, max_req_input_len, info = server_info(server)
    model, context_length = served_model(server, info)
    result.update(pool_tokens=pool, max_req_input_len=max_req_input_len, context_length=context_length,
                  min_pool_tokens=max(context_length or 0, params.get("min_pool_tokens") or 0) or None,
                  server_version=server_version(info))
    return pool, max_req_input_len, model, context_length, reserved_tokens(info)


def check_proof(params, result, progress, client, server):
    """The pool and context as proven, and one short needle prompt answered; any difference: CheckDifference."""
    checks = result["checks"]
    pool, max_req_input_len, model, context_length, _reserved = ready_server(params, result, progress, server,
                                                                             "proof (check)")
    differences = []
    if params.get("expect_pool_tokens") not in (None, pool):
        differences.append("pool %s tokens, proven %s" % (fmt(pool), fmt(params["expect_pool_tokens"])))
    if params.get("expect_context_length") not in (None, context_length):
        differences.append("context length %s, proven %s" % (context_length, params["expect_context_length"]))
    if differences:
        raise CheckDifference("the server reports " + " and ".join(differences))
    check_capacity(params, checks, pool, context_length)
    checks.append({"name": "proven", "ok": True, "detail": "pool %s and context length %s tokens, as proven"
                   % (fmt(pool), fmt(context_length))})
    needle = random.SystemRandom().randint(1_000_000, 9_999_999)
    expect = params.get("expect") or r"\b%d\b" % needle
    result.update(question="needle", needle=needle, expect=expect)
    progress.stage("proof (check): one short prompt")
    prompt = NEEDLE_HEAD % needle + NEEDLE_TAIL.lstrip()
    text, usage, elapsed, _ttft = long_request(client, params["model"] or model, prompt, params["max_tokens"], False)
    counted = int(usage["prompt_tokens"])
    result.update(prompt_tokens=counted, completion_tokens=int(usage.get("completion_tokens") or 0),
                  completion=text, elapsed_s=round(elapsed, 3), ttft_s=None, prefill_tokens_per_s=None)
    if counted > CHECK_PROMPT_MAX:
        raise SmokeFailure("The check's short prompt counted %d tokens, over its %d; the server's tokenizer is not "
                           "what the check expects: run the full proof (sglang_proof=full)."
                           % (counted, CHECK_PROMPT_MAX))
    if not answer_matches(expect, text):
        raise CheckDifference("the short prompt's answer %r does not match /%s/" % (text, expect))
    checks.append({"name": "answer", "ok": True, "detail": "a %d-token prompt answered %r in %.2f s"
                   % (counted, text, elapsed)})


# -- the long prompt, answered and decoded in one request ---------------------------------------------------
def needle_generate(client, prompt, params, on_first_text=None, on_decoding=None):
    """The long prompt sent once, as one /generate of decode_tokens tokens (ignore_eos, temperature 0): its text is
    the answer and its pace the decode at the full context, so a full proof prefills the full context once (a
    prefill of ~196k tokens takes minutes on a large model). Returns (text, usage, elapsed, ttft, decode).

    Streamed, each event carries the text and meta_info so far (cumulative: SGLang 0.5.23
    entrypoints/http_server.py generate_request, managers/tokenizer_manager.py; spec_* only on the last event);
    the answer is the text of the first max_tokens tokens (the first event's at least), decode the time per output
    token between the first and the last event. Not streamed, one object: decode's counts without its pace.
    HTTP 404/405 (no /generate) is raised as HTTPFailure for the caller's fallback."""
    tokens, budget, streamed = params["decode_tokens"], params["max_tokens"], bool(params["stream"])
    payload = {"text": prompt, "stream": streamed,
               "sampling_params": {"max_new_tokens": tokens, "ignore_eos": True, "temperature": 0}}
    start = time.monotonic()

    def meta_of(event):
        meta = event.get("meta_info") if isinstance(event, dict) else None
        if not isinstance(meta, dict) or not isinstance(event.get("text", ""), str):
            raise SmokeFailure("/generate answered %r, not SGLang's {text, meta_info}: is url an SGLang server?"
                               % (str(event)[:200],))
        reason = meta.get("finish_reason")
        if isinstance(reason, dict) and reason.get("type") == "abort":
            # a scheduler's refusal of a /generate is its one output (tokenizer_manager.py: 0.5.9 :1153-1163,
            # 0.5.23 :1891-1922 _handle_abort_finish_reason)
            raise SmokeFailure("/generate aborted the request for the long prompt: %s" % (
                reason.get("message") or "no reason given (the server's log, journalctl -u sglang, says why)"))
        return meta

    def consume(response):
        """[(arrival, completion_tokens) per event], the last meta_info, the answer."""
        if not streamed:
            event = _parse_json(client.url + "/generate", read_bounded(response, what="/generate"))
            meta = meta_of(event)
            return [(time.monotonic(), int(meta.get("completion_tokens") or 0))], meta, event.get("text") or ""
        seen, meta, answer = [], None, None
        # the whole stream is not bounded: each event repeats the text so far (its bytes grow with the square of
        # decode_tokens) and only the last is kept; each line is, and the request's deadline ends it
        for event in client.events(response, "/generate", bound_stream=False):
            meta = meta_of(event)
            done = int(meta.get("completion_tokens") or 0)
            seen.append((time.monotonic(), done))
            if answer is None or done <= budget:
                answer = event.get("text") or ""
            if len(seen) == 1 and on_first_text:
                on_first_text(seen[0][0] - start)
            elif len(seen) == 2 and on_decoding:
                on_decoding(meta.get("prompt_tokens"))
        return seen, meta, answer

    seen, meta, text = client.request("POST", "/generate", payload, consume=consume)
    elapsed = time.monotonic() - start
    if meta is None:
        raise SmokeFailure("/generate's stream for the long prompt ended before its first token: the server closed "
                           "it (its log, journalctl -u sglang, says why); the prompt and the answer are not proven.")
    if "prompt_tokens" not in meta:
        raise SmokeFailure("/generate's answer carried no meta_info.prompt_tokens, so the prompt length cannot be "
                           "proven; is url an SGLang server?")
    count = int(meta.get("completion_tokens") or 0)
    if not meta.get("finish_reason"):
        raise SmokeFailure("/generate's stream for the long prompt ended after %d of its %d tokens without a "
                           "finish_reason: the server closed it early (its log, journalctl -u sglang, says why)."
                           % (count, tokens))
    usage = {"prompt_tokens": int(meta["prompt_tokens"]), "completion_tokens": count}
    decode = {"tokens": count, "prompt_tokens": usage["prompt_tokens"], "cached_tokens": meta.get("cached_tokens"),
              "seconds": None, "tpot_ms": None}
    if streamed:
        (first, first_count), (last, last_count) = seen[0], seen[-1]
        # the tokens after the first event's (one, or a first verify's several) took last - first
        decode.update(seconds=round(last - first, 3),
                      tpot_ms=round((last - first) * 1000.0 / (last_count - first_count), 2)
                      if last_count > first_count else None)
    else:
        decode["note"] = "stream is false: one answer, so no time per output token"
    verify = meta.get("spec_verify_ct")
    if verify:
        decode.update(spec_verify_ct=int(verify), accept_length=round(count / float(verify), 3),
                      spec_accept_length=meta.get("spec_accept_length"), spec_accept_rate=meta.get("spec_accept_rate"))
    ttft = seen[0][0] - start if streamed else None
    return text, usage, elapsed, ttft, decode


def long_needle(client, model, prompt, params, on_first_text=None, on_decoding=None):
    """needle_generate; a server without /generate (HTTP 404/405) gets the long prompt through /v1/completions
    (max_tokens, stopping at the end of the answer) and decode is not measured: a second request would prefill the
    full context again."""
    status = 0  # set before the try: pylint sees it bound on every path
    try:
        return needle_generate(client, prompt, params, on_first_text, on_decoding)
    except HTTPFailure as error:
        if error.status not in (404, 405):
            raise
        status = error.status
    text, usage, elapsed, ttft = long_request(client, model, prompt, params["max_tokens"], params["stream"],
                                              on_first_text)
    return text, usage, elapsed, ttft, {"note": "the server serves no /generate (HTTP %d): decode not measured"
                                                % status}


# -- short requests side by side --------------------------------------------------------------------------
def concurrent_prompts(client, model, count, max_tokens, expect=None):
    """`count` short needle prompts sent at once, each with its own number: {requests, answered, seconds (to the
    last answer), completion_tokens, decode_tokens_per_s, prompt_tokens, check}. A server that serializes them
    shows it in the seconds; one that mixes them up, or drops one, fails the check. Each answer must hold its own
    number, or match `expect` when the operator gave one (a model that cannot answer the needle)."""
    draw = random.SystemRandom()
    needles = draw.sample(range(1_000_000, 10_000_000), count)
    answers = [None] * count

    def one(index):
        prompt = NEEDLE_HEAD % needles[index] + FOX_FILLER * CONCURRENT_REPEATS + NEEDLE_TAIL
        try:
            answers[index] = long_request(client, model, prompt, max_tokens, False)
        except SmokeFailure as error:
            answers[index] = error

    start = time.monotonic()
    threads = [threading.Thread(target=one, args=(i,), daemon=True) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    seconds = time.monotonic() - start
    wrong = []
    tokens = prompt_tokens = 0
    for index, needle in enumerate(needles):
        answer = answers[index]
        if not isinstance(answer, tuple):
            wrong.append("%d: %s" % (needle, answer))
            continue
        text, usage = answer[0], answer[1]
        tokens += int(usage.get("completion_tokens") or 0)
        prompt_tokens = max(prompt_tokens, int(usage.get("prompt_tokens") or 0))
        if not answer_matches(expect or r"\b%d\b" % needle, text):
            wrong.append("%d answered %r" % (needle, text))
    answered = count - len(wrong)
    detail = ("%d short prompts (%s tokens each) sent at once, %d answered %s; the last answer "
              "after %.2f s, %s completion tokens/s in all" % (count, fmt(prompt_tokens), answered,
                                                               "matching /%s/" % expect if expect else
                                                               "with their own number", seconds,
                                                               fmt(int(tokens / seconds)) if seconds > 0 else "?"))
    if wrong:
        detail += "; wrong: " + "; ".join(wrong[:4]) + (" (and %d more)" % (len(wrong) - 4) if len(wrong) > 4 else "")
    return {"requests": count, "answered": answered, "seconds": round(seconds, 3), "completion_tokens": tokens,
            "decode_tokens_per_s": round(tokens / seconds, 1) if seconds > 0 else None, "prompt_tokens": prompt_tokens,
            "check": {"name": "concurrency", "ok": not wrong, "detail": detail}}


# -- the proof -------------------------------------------------------------------------------------------
def run(params, result, progress=None):
    progress = progress or Progress(None)
    asked = validate(params)
    result.update(level=params.get("level") or "full", escalated=None, decode=None, concurrency=None)
    if result["level"] == "check":
        client = Client(params["url"], params["api_key"], params["timeout"], params["validate_certs"])
        server = (Client(params["info_url"], params["api_key"], params["timeout"], params["validate_certs"])
                  if params.get("info_url") else client)
        try:
            return check_proof(params, result, progress, client, server)
        except CheckDifference as difference:
            kept = {k: result[k] for k in ("changed", "ok") if k in result}
            result.clear()
            result.update(kept, checks=[], level="full", escalated="the check found %s" % difference, decode=None,
                          concurrency=None)
    full_proof(params, result, progress, asked)


def full_proof(params, result, progress, asked):
    head, filler, tail, needle = make_prompt_parts(params["question"], params["filler"])
    expect = params.get("expect")
    if expect is None:
        expect = r"\b%d\b" % needle if needle is not None else r"\bdog\b"
    result.update(question=params["question"], needle=needle, expect=expect,
                  context_target=params.get("context_target"))

    client = Client(params["url"], params["api_key"], params["timeout"], params["validate_certs"])
    # The server itself (pool, context, tokenizer), when the long request goes through a router at url.
    server = (Client(params["info_url"], params["api_key"], params["timeout"], params["validate_certs"])
              if params.get("info_url") else client)
    checks = result["checks"]
    pool, max_req_input_len, model, context_length, reserved = ready_server(params, result, progress, server,
                                                                            "proof")
    check_capacity(params, checks, pool, context_length)

    room, room_words = answer_room(params)
    accepted = accepted_tokens(pool, max_req_input_len, context_length, room, reserved)
    target = prompt_target(asked, accepted, params, context_length, max_req_input_len, reserved)
    result["prompt_target"] = target
    model = params["model"] or model
    sizer = PromptSizer(server, model, head, filler, tail)
    calls_before = server.calls
    progress.stage("proof: sizing the prompt to %s tokens (pool %s)" % (fmt(target), fmt(pool)))
    prompt, counted = sizer.size(target)
    result["calibration_calls"] = server.calls - calls_before
    if counted > accepted:
        how = "counted by the server's /tokenize" if sizer.has_tokenize else "estimated from short requests"
        raise SmokeFailure(too_long("The sized prompt has %s tokens (%s)" % (fmt(counted), how), accepted,
                                    context_length, max_req_input_len, room_words, reserved))

    sent = time.time()
    progress.stage("proof: prefill started, %s prompt tokens" % fmt(counted), sent)

    def first_text(ttft):
        progress.stage("proof: first token after %.1f s (%s prompt tokens/s), answering"
                       % (ttft, fmt(int(counted / ttft)) if ttft > 0 else "?"), sent)

    def decoding(prompt_tokens):  # the needle request's own tokens after its first: decode at the full context
        progress.stage("proof: decoding %d tokens at %s tokens of context"
                       % (params["decode_tokens"], fmt(int(prompt_tokens or counted))))
    text, usage, elapsed, ttft, decode = long_needle(client, model, prompt, params, first_text, decoding)
    counted = int(usage["prompt_tokens"])
    result.update(prompt_tokens=counted, completion_tokens=int(usage.get("completion_tokens") or 0),
                  completion=text, elapsed_s=round(elapsed, 3), ttft_s=round(ttft, 3) if ttft is not None else None,
                  prefill_tokens_per_s=round(counted / (ttft or elapsed), 1) if (ttft or elapsed) > 0 else None)
    off = abs(counted - target) / float(target)
    detail = ("server counted %s prompt tokens for %s asked (%.2f%% off; the server accepts up to %s)"
              % (fmt(counted), fmt(target), off * 100, fmt(accepted)))
    size_ok = off <= 0.01
    if asked == "target":
        fill_to = params.get("context_target") or context_length
        filled = counted / float(fill_to)
        size_ok = size_ok and filled >= TARGET_MIN
        detail += ", %.1f%% of the %s-token %s (95%% needed)" % (
            filled * 100, fmt(fill_to), "context target" if params.get("context_target") else "context length")
    checks.append({"name": "prompt_tokens", "ok": size_ok, "detail": detail})
    answer_ok = answer_matches(expect, text)
    where = (" (the needle stated once at the start of the prompt; a server that dropped early context cannot "
             "answer it)" if needle is not None and params.get("expect") is None else "")
    checks.append({"name": "answer", "ok": answer_ok, "detail": "answer %r %s /%s/%s" % (
        text, "matches" if answer_ok else "does not match", expect, where)})
    if answer_ok and size_ok:  # decode at a context the proof did not prove would say little
        result["decode"] = decode
        count = min(params.get("concurrent_requests") or 0, CONCURRENT_MAX)
        if count:
            progress.stage("proof: %d short prompts at once" % count)
            result["concurrency"] = concurrent_prompts(client, model, count, params["max_tokens"], params.get("expect"))
            checks.append(result["concurrency"].pop("check"))
    failed = [c for c in checks if not c["ok"]]
    if failed:
        raise SmokeFailure("Smoke test failed: " + "; ".join(c["detail"] for c in failed))


def main():
    module = AnsibleModule(
        argument_spec={
            "url": {"type": "str", "default": "http://127.0.0.1:30000"},
            "info_url": {"type": "str"},
            "api_key": {"type": "str", "no_log": True},
            # no_log False: "tokens" here are counts, not credentials (ansible-test's no-log-needed guesses by name)
            "min_pool_tokens": {"type": "int", "no_log": False},
            "context_target": {"type": "int"},
            "prompt_tokens": {"type": "str", "default": "target", "no_log": False},
            "question": {"type": "str", "default": "needle", "choices": ["needle", "fox"]},
            "filler": {"type": "str", "default": FOX_FILLER},
            "expect": {"type": "str"},
            "max_tokens": {"type": "int", "default": 32, "no_log": False},
            "level": {"type": "str", "default": "full", "choices": ["full", "check"]},
            "expect_pool_tokens": {"type": "int", "no_log": False},
            "expect_context_length": {"type": "int"},
            "decode_tokens": {"type": "int", "default": 16, "no_log": False},
            "concurrent_requests": {"type": "int", "default": 0},
            "timeout": {"type": "int", "default": 900},
            "wait_ready": {"type": "int", "default": 300},
            "model": {"type": "str"},
            "stream": {"type": "bool", "default": True},
            "validate_certs": {"type": "bool", "default": True},
            "progress_file": {"type": "path"},
        },
        supports_check_mode=True,
    )
    result = {"changed": False, "ok": False, "checks": [], "question": module.params["question"], "needle": None,
              "context_target": module.params["context_target"], "level": module.params["level"], "escalated": None,
              "decode": None, "concurrency": None}
    progress = Progress(module.params["progress_file"])
    try:
        run(module.params, result, progress)
    except SmokeFailure as error:
        progress.end()
        module.fail_json(msg=str(error), **result)
    except (KeyError, IndexError, TypeError, AttributeError, ValueError) as error:
        # The parameters were validated before any request, so these come from reading a server's answer of a
        # shape SGLang does not send (a list where it sends an object, a field missing, a string for a number).
        progress.end()
        module.fail_json(msg="Smoke test stopped: an answer from %s is not shaped as SGLang's answers are (%s: %s; "
                             "after the checks %s). Fix: point url at an SGLang server of a supported release "
                             "(curl %s/server_info); if its answers look right, this is a defect of the module "
                             "(-vvv shows where)."
                             % (module.params["url"], type(error).__name__, error,
                                [check.get("name") for check in result["checks"] if isinstance(check, dict)] or
                                "(none yet)", module.params["url"]),
                         exception=traceback.format_exc(), **result)
    except Exception as error:  # noqa: BLE001 - report, never a traceback, but keep it for -vvv
        progress.end()
        module.fail_json(msg="Smoke test stopped on an unexpected %s: %s" % (type(error).__name__, error),
                         exception=traceback.format_exc(), **result)
    progress.end()
    result["ok"] = True
    module.exit_json(**result)


if __name__ == "__main__":
    main()
