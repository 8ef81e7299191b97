"""The proof's client of one SGLang server: JSON over HTTP with one deadline per request (connect to last byte),
server-sent events read line by line within bounds, and every error of the exchange turned into a sentence."""

from __future__ import annotations

import json
import socket
import threading
import time
from http.client import HTTPException
from urllib.error import HTTPError, URLError

from ansible.module_utils.sglang_http import (
    JSON_LIMIT,
    ResponseTooLarge,
    error_body,
    open_bearer,
    protocol_fault,
    read_bounded,
    too_large,
)
from ansible.module_utils.sglang_proof_failures import HTTPFailure, Retryable, SmokeFailure


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
        consume = consume or (lambda response: parse_json(self.url + path, read_bounded(response, what=path)))
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
            except BaseException as error:  # handed to the waiting caller
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
            event = parse_json(self.url + path, data.encode())
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
    except Exception:  # a body we cannot read is reported as empty
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


def parse_json(url, raw):
    """`raw` read as JSON; anything else is a SmokeFailure quoting its start (not an SGLang server)."""
    try:
        return json.loads(raw)
    except ValueError:
        text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)
        raise SmokeFailure("%s did not answer JSON (is this an SGLang server?): %r" % (url, text[:200])) from None
