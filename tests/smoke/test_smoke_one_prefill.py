"""The full proof's long prompt is one request (issue 33): a streamed /generate whose text is the answer and whose
pace is decode at the full context. Its refusals are sentences; a server without /generate gets the long prompt
through /v1/completions, decode not measured, never a second long prefill."""

import json
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler

import pytest
from ansible.module_utils.sglang_proof_failures import SmokeFailure
from ansible.module_utils.sglang_proof_generate import needle_generate
from ansible.module_utils.sglang_proof_http import Client
from conftest import CT200, serving

FINE = CT200 + ["--mem-fraction-static", "0.94"]
PARAMS = {"decode_tokens": 16, "max_tokens": 32, "stream": True}


def without_generate(upstream):
    """A handler that passes every request on to `upstream` (the double) except POST /generate: HTTP 404, as a
    server that serves only the OpenAI routes answers it."""

    class Proxy(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _relay(self, method):
            length = int(self.headers.get("content-length") or 0)
            body = self.rfile.read(length) if length else None
            if method == "POST" and self.path.split("?")[0] == "/generate":
                status, data, kind = 404, b'{"detail":"Not Found"}', "application/json"
            else:
                request = urllib.request.Request(upstream + self.path, data=body, method=method,
                                                 headers={"Content-Type": "application/json"})
                try:
                    with urllib.request.urlopen(request, timeout=60) as response:
                        status, data, kind = response.status, response.read(), response.headers["content-type"]
                except urllib.error.HTTPError as error:
                    status, data, kind = error.code, error.read(), error.headers["content-type"]
            self.send_response(status)
            self.send_header("content-type", kind or "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):  # the name http.server calls
            self._relay("GET")

        def do_POST(self):
            self._relay("POST")

        def log_message(self, *args):
            pass

    return Proxy


def test_a_server_without_generate_answers_through_completions_and_decode_is_not_measured(smoke, double):
    with double(FINE) as (upstream, log), serving(without_generate(upstream)) as url:
        rc, result = smoke(url=url, context_target=200_000)
        with open(log, encoding="utf-8") as handle:
            access = handle.read()
    assert rc == 0, result.get("msg")
    assert result["decode"] == {"note": "the server serves no /generate (HTTP 404): decode not measured"}
    assert result["completion"] == " %d." % result["needle"]  # /v1/completions stops at the answer's end
    assert access.count('"POST /v1/completions HTTP/1.1" 200') == 1  # the long prompt, once
    assert '"POST /generate' not in access


def events_server(events, status=200):
    """A /generate that streams `events` (each a JSON object, or raw bytes) and then closes."""

    class Stream(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self):  # the name http.server calls
            self.rfile.read(int(self.headers.get("content-length") or 0))
            self.send_response(status)
            self.send_header("content-type", "text/event-stream")
            self.send_header("connection", "close")
            self.end_headers()
            for item in events:
                self.wfile.write(item if isinstance(item, bytes) else b"data: %s\n\n" % json.dumps(item).encode())
            self.close_connection = True

        def log_message(self, *args):
            pass

    return serving(Stream)


def event(text, count, done=False, **meta):
    return {"text": text, "meta_info": dict({"prompt_tokens": 1000, "completion_tokens": count,
                                             "finish_reason": {"type": "length"} if done else None}, **meta)}


def needle(events, **params):
    with events_server(events) as url:
        return needle_generate(Client(url, timeout=20), "prompt", dict(PARAMS, **params))


def test_the_answer_is_the_text_of_the_first_max_tokens_tokens_and_decode_the_whole_stream():
    pieces = [" 4821937", ".", " and", " and", " and", " and"]
    stream = [event("".join(pieces[:i]), i, i == 6, spec_verify_ct=2 if i == 6 else None) for i in range(1, 7)]
    text, usage, _, ttft, decode = needle(stream + [b"data: [DONE]\n\n"], decode_tokens=6, max_tokens=2)
    assert text == " 4821937." and usage == {"prompt_tokens": 1000, "completion_tokens": 6}
    assert ttft is not None and decode["tokens"] == 6 and decode["spec_verify_ct"] == 2
    assert decode["accept_length"] == 3.0 and decode["tpot_ms"] is not None


@pytest.mark.parametrize("events, words", [
    ([event("", 0, False, finish_reason={"type": "abort", "message": "Input length (199999 tokens) exceeds"})],
     ["/generate aborted the request for the long prompt", "Input length (199999 tokens) exceeds"]),
    ([{"error": {"message": "The input (200010 tokens) is longer than the model's context length"}}],
     ["/generate streamed an error", "longer than the model's context length"]),
    ([event(" 48", 1), event(" 4821", 2)], ["ended after 2 of its 16 tokens without a finish_reason"]),
    ([], ["ended before its first token"]),
    ([{"text": " 1", "meta_info": {"completion_tokens": 1, "finish_reason": {"type": "length"}}}],
     ["no meta_info.prompt_tokens"]),
    ([["not", "an", "event"]], ["not SGLang's {text, meta_info}"]),
])
def test_a_refused_or_broken_stream_is_a_sentence(events, words):
    with pytest.raises(SmokeFailure) as failure:
        needle(events)
    for word in words:
        assert word in str(failure.value), str(failure.value)


def test_a_full_prompt_leaves_room_for_decode_tokens_over_max_tokens(smoke, double):
    """The long request decodes decode_tokens tokens: 'full' keeps them out of the prompt's room (the double, as
    SGLang's TokenizerManager, refuses input + max_new_tokens over the context length)."""
    with double(FINE) as (url, _):
        rc, result = smoke(url=url, min_pool_tokens=200_000, prompt_tokens="full", decode_tokens=64, max_tokens=8)
        rc_over, over = smoke(url=url, prompt_tokens="199950", decode_tokens=64, max_tokens=8)
    assert rc == 0, result.get("msg")
    assert 0.99 * 199_935 <= result["prompt_tokens"] <= 199_935  # 200,000 - decode_tokens 64 - 1
    assert result["decode"]["tokens"] == 64 and result["completion"].startswith(" %d." % result["needle"])
    assert rc_over == 1 and "less decode_tokens=64 for the answer" in over["msg"] and "Not sent" in over["msg"]
