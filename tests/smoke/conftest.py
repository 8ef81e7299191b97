import contextlib
import json
import os
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "tests", "sglang_double"))

from run_double import running_double  # noqa: E402

MODULE = os.path.join(REPO, "library", "sglang_smoke_test.py")
CT200 = ["--tp", "8", "--trust-remote-code", "--context-length", "200000"]


def run_module(tmp_path, **args):
    """Run the module as Ansible runs it on a host: python <module> <args file>; return (rc, result)."""
    path = tmp_path / "args.json"
    path.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": args}))
    proc = subprocess.run([sys.executable, MODULE, str(path)], capture_output=True, text=True, timeout=120)
    assert "Traceback" not in proc.stdout + proc.stderr, proc.stdout + proc.stderr
    return proc.returncode, json.loads(proc.stdout)


@pytest.fixture
def smoke(tmp_path):
    return lambda **args: run_module(tmp_path, **args)


@pytest.fixture
def double():
    return running_double


@contextlib.contextmanager
def trickling_server(where):
    """A tiny HTTP server on 127.0.0.1 whose /server_info sends one byte a second: its status line and
    headers (where="headers") or a long JSON body after prompt headers (where="body"). /health_generate
    answers at once, so the module gets as far as the server info. Yields (url, seconds the last
    trickle ran, a list)."""
    spans = []

    class Trickle(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self):  # the name http.server calls
            if self.path.startswith("/health"):
                self.send_response(200)
                self.send_header("content-length", "0")
                self.end_headers()
                return
            body = b'{"max_total_num_tokens": 218485, "padding": "' + b"x" * 600 + b'"}'
            head = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n" % len(body)
            start = time.monotonic()
            if where == "body":
                self.wfile.write(head)
                slow = body
            else:
                slow = head + body
            try:
                for i in range(len(slow)):
                    self.wfile.write(slow[i:i + 1])
                    self.wfile.flush()
                    time.sleep(1.0)
            except OSError:  # the client hung up: what the deadline should do
                pass
            spans.append(time.monotonic() - start)
            self.close_connection = True

        def log_message(self, *args):
            pass

    with serving(Trickle) as url:
        yield url, spans


@contextlib.contextmanager
def serving(handler):
    """`handler` (a BaseHTTPRequestHandler) served on 127.0.0.1 in a thread; yields the server's URL."""
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield "http://127.0.0.1:%d" % httpd.server_port
    finally:
        httpd.shutdown()
        httpd.server_close()
