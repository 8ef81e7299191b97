"""The proof's HTTP layer (module_utils/sglang_proof_http.py's Client) against hostile peers: the API key never
reaches a redirect's target, and an answer larger than any SGLang answer ends the proof with a sentence before it is
read."""

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from ansible.module_utils.sglang_http import JSON_LIMIT
from ansible.module_utils.sglang_proof_failures import Retryable, SmokeFailure
from ansible.module_utils.sglang_proof_http import Client
from ansible.module_utils.sglang_proof_server import server_version

KEY = "sk-proof-key-0123456789"  # a test value


class Peer(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_GET(self):
        self.server.seen.append((self.path, self.headers.get("Authorization")))
        # Read the body first, as a server does: closing with it unread makes the kernel reset the connection,
        # and the client then loses the answer it had not read yet (ECONNRESET instead of the answer).
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.server.answer(self)

    do_POST = do_GET


def start(answer):
    server = ThreadingHTTPServer(("127.0.0.1", 0), Peer)
    server.seen, server.answer = [], answer
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


@pytest.fixture
def peers():
    started = []

    def make(answer):
        started.append(start(answer))
        return started[-1]

    yield make
    for server in started:
        server.shutdown()


def open_ended(handler, content_type, pieces):
    """An answer without Content-Length, ended by closing the connection: the client cannot size it first."""
    handler.send_response(200)
    handler.send_header("Content-Type", content_type)
    handler.send_header("Connection", "close")
    handler.end_headers()
    try:
        for piece in pieces:
            handler.wfile.write(piece)
    except OSError:  # the client stopped reading
        pass


def json_answer(handler, body=b'{"ok": true}'):
    handler.send_response(200)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    handler.wfile.write(body)


def test_the_key_is_not_sent_to_a_redirects_other_origin(peers):
    other = peers(json_answer)

    def redirect(handler):
        handler.send_response(307)
        handler.send_header("Location", "http://localhost:%d%s" % (other.server_port, handler.path))
        handler.send_header("Content-Length", "0")
        handler.end_headers()

    first = peers(redirect)
    client = Client("http://127.0.0.1:%d" % first.server_port, api_key=KEY, timeout=20)
    assert client.json("GET", "/server_info") == {"ok": True}
    assert first.seen == [("/server_info", "Bearer " + KEY)]
    assert other.seen == [("/server_info", None)]


def test_a_declared_400_mb_answer_is_refused_unread(peers):
    def huge(handler):
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(400 * 2**20))
        handler.end_headers()
        try:
            handler.wfile.write(b"{" + b" " * 2**20)
            time.sleep(5)  # never sends the rest: a client that reads it all waits here
        except OSError:
            pass

    server = peers(huge)
    client = Client("http://127.0.0.1:%d" % server.server_port, timeout=20)
    began = time.monotonic()
    with pytest.raises(SmokeFailure, match="answered more than %d bytes" % JSON_LIMIT):
        client.json("GET", "/server_info")
    assert time.monotonic() - began < 4


def test_an_undeclared_endless_answer_stops_at_the_limit(peers):
    server = peers(lambda handler: open_ended(handler, "application/json", iter(lambda: b" " * 2**20, None)))
    client = Client("http://127.0.0.1:%d" % server.server_port, timeout=30)
    with pytest.raises(SmokeFailure, match="is url an SGLang server"):
        client.json("GET", "/server_info")


def test_a_stream_line_over_the_limit_is_refused(peers):
    first = b"data: " + json.dumps({"choices": [{"text": "x"}]}).encode() + b"\n\n"
    too_long = b"data: " + b"y" * (JSON_LIMIT + 10)
    server = peers(lambda handler: open_ended(handler, "text/event-stream", [first, too_long]))
    client = Client("http://127.0.0.1:%d" % server.server_port, timeout=30)
    with pytest.raises(SmokeFailure, match="answered more than"):
        client.stream("/v1/completions", {"prompt": "hi", "stream": True})


def test_a_connection_reset_mid_answer_is_a_sentence_to_retry(peers):
    import socket
    import struct

    def reset(handler):
        open_ended(handler, "text/event-stream", [b"data: " + json.dumps({"choices": [{"text": "x"}]}).encode()
                                                   + b"\n\n"])
        handler.wfile.flush()
        time.sleep(0.2)  # the client has the first chunk and waits for more
        handler.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        handler.connection.close()  # linger 0: the kernel sends RST

    server = peers(reset)
    client = Client("http://127.0.0.1:%d" % server.server_port, timeout=30)
    with pytest.raises(Retryable, match="broke off mid-answer"):
        client.stream("/v1/completions", {"prompt": "hi", "stream": True})


@pytest.mark.parametrize("answer, taken", [
    ({"version": "0.5.23"}, "0.5.23"), ({"version": "0.5.23+double"}, "0.5.23+double"),
    ({"version": "0.5.10.post1"}, "0.5.10.post1"), ({}, None), ({"version": 5}, None),
    ({"version": "<script>"}, None), ({"version": "0.5.23\nserving: forged"}, None), ({"version": "0.5.23\n"}, None),
    ({"version": "1" * 41}, None), ([], None)])
def test_the_server_s_version_is_taken_only_when_it_is_version_shaped(answer, taken):
    # a peer's answer reaches the report and the console: only a short version string gets there
    assert server_version(answer) == taken
