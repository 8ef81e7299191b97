"""The router modules against a peer that is not a well-behaved sglang-router: a key read from a file never appears
in the output, even when the peer echoes it, and an answer far larger than any admin API answer is refused."""

import json
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
KEY = "admin-key-from-a-file-0123456789"  # noqa: S105 - a test value


class Peer(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_GET(self):
        if self.server.headers_flood:  # an answer head no HTTP server sends
            self.wfile.write(b"HTTP/1.1 200 OK\r\n" + b"".join(b"x-h%d: v\r\n" % i for i in range(150)) + b"\r\n")
            self.close_connection = True
            return
        if self.server.huge:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()  # no Content-Length: the module cannot tell the size before reading
            try:
                for _ in range(40):
                    self.wfile.write(b" " * 2**20)
            except OSError:  # the module stopped reading
                pass
            return
        body = json.dumps({"error": "not here", "you sent": self.headers.get("Authorization")}).encode()
        self.send_response(404)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def peer():
    servers = []

    def start(huge=False, headers_flood=False):
        server = ThreadingHTTPServer(("127.0.0.1", 0), Peer)
        server.huge, server.headers_flood = huge, headers_flood
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return "http://127.0.0.1:%d" % server.server_port

    yield start
    for server in servers:
        server.shutdown()


def run(tmp_path, name, **args):
    path = tmp_path / "args.json"
    path.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": args}))
    proc = subprocess.run([sys.executable, os.path.join(REPO, "library", name + ".py"), str(path)],
                          capture_output=True, text=True, timeout=60)
    assert "Traceback" not in proc.stdout + proc.stderr
    return proc.returncode, proc.stdout


@pytest.mark.parametrize("name, extra", [("sglang_router_workers_info", {}),
                                         ("sglang_router_workers", {"worker_url": "http://10.0.0.1:30000"})])
def test_a_key_from_a_file_is_masked_even_when_the_peer_echoes_it(tmp_path, peer, name, extra):
    key_file = tmp_path / "admin-key"
    key_file.write_text(KEY + "\n")
    rc, out = run(tmp_path, name, router_url=peer(), admin_api_key_file=str(key_file), **extra)
    result = json.loads(out)
    assert rc == 1 and "not the admin API" in result["msg"], result
    assert "Bearer ********" in result["msg"]  # the echo is there, masked
    assert KEY not in out and str(key_file) not in out


def test_an_answer_larger_than_any_admin_answer_is_refused(tmp_path, peer):
    rc, out = run(tmp_path, "sglang_router_workers_info", router_url=peer(huge=True))
    result = json.loads(out)
    assert rc == 1 and "answered more than" in result["msg"] and "bytes" in result["msg"], result


def test_an_answer_head_no_http_server_sends_names_the_peer_not_the_network(tmp_path, peer):
    # probe day 2 N16, the router's side: 150 headers read "cannot reach the router", the wrong cause
    rc, out = run(tmp_path, "sglang_router_workers_info", router_url=peer(headers_flood=True))
    result = json.loads(out)
    assert rc == 1 and "answered, but its answer had more than 100 header lines" in result["msg"], result
    assert "cannot reach" not in result["msg"]
