"""Answers of a shape SGLang never sends, and a key no HTTP header can carry, end the proof with a sentence that
names the server (or the parameter) and the fix, never a bare Python error or the key itself (issue 27; probe
day 2: `internal_states {a: 1}` gave "unexpected KeyError: 0", an API key with a line break was echoed)."""

import contextlib
import json
from http.server import BaseHTTPRequestHandler

import pytest
from conftest import serving


@contextlib.contextmanager
def answering(info, models=None):
    """A server on 127.0.0.1 whose /health_generate answers 200, /server_info `info` and /v1/models `models`
    (404 when None)."""

    class Answer(BaseHTTPRequestHandler):
        def do_GET(self):  # the name http.server calls
            status, body = 200, b""
            if self.path.startswith("/server_info"):
                body = json.dumps(info).encode()
            elif self.path.startswith("/v1/models"):
                status, body = (404, b"") if models is None else (200, json.dumps(models).encode())
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    with serving(Answer) as url:
        yield url


@pytest.mark.parametrize("info", [
    {"internal_states": {"a": 1}},
    {"internal_states": ["x"]},
    {"internal_states": [{"memory_usage": [1, 2]}]},
    {"internal_states": [{"memory_usage": {"token_capacity": "lots"}}]},
], ids=["states a mapping", "state a string", "memory_usage a list", "capacity a string"])
def test_a_server_info_of_another_shape_is_named(smoke, info):
    with answering(info) as url:
        rc, result = smoke(url=url, wait_ready=0, context_target=1000)
    assert rc == 1 and result["failed"]
    assert "is this an SGLang server?" in result["msg"], result["msg"]
    assert "unexpected" not in result["msg"]


def test_an_api_key_with_a_line_break_is_refused_without_echoing_it(smoke):
    key = "k\r\nX-Evil: 1"
    rc, result = smoke(url="http://127.0.0.1:9", wait_ready=0, api_key=key)
    assert rc == 1 and result["failed"]
    assert "api_key holds a control character" in result["msg"]
    assert "X-Evil" not in json.dumps(result) and "Bearer" not in result["msg"]
    assert result.get("checks", []) == []  # refused before any request


def test_a_model_listing_of_another_shape_names_the_server_and_the_fix(smoke):
    # /v1/models' data a string, not a list of objects: read as SGLang's, it raises deep in the module
    with answering({"max_total_num_tokens": 218485}, models={"data": "x"}) as url:
        rc, result = smoke(url=url, wait_ready=0, context_target=1000)
    assert rc == 1 and result["failed"]
    assert "an answer from %s is not shaped as SGLang's answers are" % url in result["msg"], result["msg"]
    assert "Fix: point url at an SGLang server" in result["msg"]
    assert "unexpected" not in result["msg"]


@contextlib.contextmanager
def heading(head):
    """A server on 127.0.0.1 that answers every request with the raw bytes `head` (a status line and headers no
    HTTP server sends) and a small JSON body."""

    class Head(BaseHTTPRequestHandler):
        def do_GET(self):  # the name http.server calls
            body = b'{"max_total_num_tokens": 218485}'
            try:
                self.wfile.write(head + b"content-length: %d\r\n\r\n" % len(body) + body)
            except OSError:  # the client stopped reading at its limit
                pass
            self.close_connection = True

        def log_message(self, *args):
            pass

    with serving(Head) as url:
        yield url


@pytest.mark.parametrize(("head", "named"), [
    (b"HTTP/1.1 200 OK\r\n" + b"".join(b"x-h%d: v\r\n" % i for i in range(150)), "more than 100 header lines"),
    (b"HTTP/1.1 200 OK\r\nx-big: " + b"a" * 2**20 + b"\r\n", "a header line longer than 65536 bytes"),
    (b"HTTP/1.1 200 " + b"O" * 2**17 + b"\r\n", "a status line longer than 65536 bytes"),
    (b"SSH-2.0-OpenSSH_9.6\r\n", "did not begin with an HTTP status line"),
], ids=["150 headers", "a 1 MiB header line", "a 128 KiB status line", "not HTTP"])
def test_an_answer_head_no_http_server_sends_is_named_not_taken_for_a_closed_connection(smoke, head, named):
    # probe day 2 N16: 150 headers or a 1 MB header line read "broke off mid-answer (HTTPException): the server
    # closed the connection", the wrong cause; it is the answer's head, and no retry fixes it
    with heading(head) as url:
        rc, result = smoke(url=url, wait_ready=30, context_target=1000)
    assert rc == 1 and result["failed"]
    assert named in result["msg"], result["msg"]
    assert "Is url an SGLang server?" in result["msg"], result["msg"]
    assert "broke off" not in result["msg"] and "closed the connection" not in result["msg"]
    # refused at once, not retried until wait_ready ran out
    assert "was not ready within" not in result["msg"]
