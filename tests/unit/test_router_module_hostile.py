"""The router modules against a peer that is not a well-behaved sglang-router: a key read from a file never appears
in the output, even when the peer echoes it, and an answer far larger than any admin API answer is refused. And
against hostile input (issue 36 item 5, probe 5 N-S5-15): credentials in a URL (user:password@) reach no message and
no result, and a key that no HTTP header can carry (CR/LF) is refused by its fault, without its text."""

import json
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
KEY = "admin-key-from-a-file-0123456789"  # a test value


class Peer(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_GET(self):
        if self.server.listing is not None:  # a router that lists these workers, as 0.3.2 does
            body = json.dumps({"workers": self.server.listing, "total": len(self.server.listing)}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
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

    def start(huge=False, headers_flood=False, listing=None):
        server = ThreadingHTTPServer(("127.0.0.1", 0), Peer)
        server.huge, server.headers_flood, server.listing = huge, headers_flood, listing
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


PASSWORD = "SEKRETpw1"  # a test value
WORKER_PASSWORD = "SEKRETw0rker"  # a test value


def test_credentials_in_the_router_url_reach_no_message(tmp_path):
    # the probe's reproduction: nothing listens on port 1
    for name, extra in (("sglang_router_workers_info", {}),
                        ("sglang_router_workers", {"worker_url": "http://10.0.0.1:30000"})):
        rc, out = run(tmp_path, name, router_url="http://admin:%s@127.0.0.1:1" % PASSWORD, **extra)
        result = json.loads(out)
        assert rc == 1 and "cannot reach the router at http://***@127.0.0.1:1 (GET /workers)" in result["msg"], result
        assert PASSWORD not in out  # nor in the task's invocation: the password is masked there too


def test_a_password_holding_an_at_sign_is_hidden_whole(tmp_path):
    rc, out = run(tmp_path, "sglang_router_workers_info", router_url="http://admin:pa@ss-%s@127.0.0.1:1" % PASSWORD)
    assert rc == 1 and "http://***@127.0.0.1:1" in json.loads(out)["msg"]
    assert PASSWORD not in out and "ss-" not in json.loads(out)["msg"]


def test_credentials_in_a_worker_url_reach_no_result_from_a_reachable_router(tmp_path, peer):
    worker = "http://user:%s@10.0.0.1:30000" % WORKER_PASSWORD
    router = peer(listing=[{"id": "w1", "url": worker, "is_healthy": True, "model_id": "m"}])
    rc, out = run(tmp_path, "sglang_router_workers", router_url=router, worker_url=worker)
    result = json.loads(out)
    assert rc == 0 and result["changed"] is False, result  # found as listed: compared with its credentials
    assert result["worker_url"] == result["urls"][0] == result["worker"]["url"] == "http://***@10.0.0.1:30000"
    assert WORKER_PASSWORD not in out
    rc, out = run(tmp_path, "sglang_router_workers_info", router_url=router)
    assert rc == 0 and json.loads(out)["urls"] == ["http://***@10.0.0.1:30000"] and WORKER_PASSWORD not in out


def test_credentials_in_a_malformed_worker_url_reach_no_message(tmp_path, peer):
    for worker in ("ftp://user:%s@10.0.0.1:30000" % WORKER_PASSWORD, "http://user:%s@10.0.0.1:port" % WORKER_PASSWORD,
                   "http://user:%s@10.0.0.1:30000/\r\nX: 1" % WORKER_PASSWORD):
        rc, out = run(tmp_path, "sglang_router_workers", router_url=peer(listing=[]), worker_url=worker)
        result = json.loads(out)
        assert rc == 1 and result["msg"].startswith("worker_url='") and "***@10.0.0.1" in result["msg"], result
        assert WORKER_PASSWORD not in out


@pytest.mark.parametrize("key", ["SEKRETadm\r\nX: 1", "SEKRETadm\n", "SEKRET\x00adm", "SEKRET\x7fadm"])
def test_an_inline_key_no_header_can_carry_is_refused_without_its_text(tmp_path, peer, key):
    # the probe's reproduction: http.client's "Invalid header value b'Bearer SEKRETadm\r\nX: 1'", a "defect"
    for option in ("admin_api_key", "worker_api_key"):
        rc, out = run(tmp_path, "sglang_router_workers", router_url=peer(listing=[]),
                      worker_url="http://10.0.0.1:30000", **{option: key})
        result = json.loads(out)
        assert rc == 1 and result["msg"].startswith(
            "%s holds a line break, a tab or another control character, which no HTTP header can carry (a key of %d "
            "characters, not shown)" % (option, len(key))), result
        assert "SEKRET" not in out and "defect" not in result["msg"]


def test_a_key_file_with_a_control_character_inside_or_not_text_is_refused_by_name(tmp_path, peer):
    key_file = tmp_path / "admin-key"
    key_file.write_bytes(b"SEKRET\x01adm\r\n")  # the CRLF at the end is stripped; the \x01 inside is not
    rc, out = run(tmp_path, "sglang_router_workers_info", router_url=peer(listing=[]),
                  admin_api_key_file=str(key_file))
    result = json.loads(out)
    assert rc == 1 and result["msg"].startswith("admin_api_key_file's key holds a line break"), result
    assert "SEKRET" not in out
    key_file.write_bytes(b"\xff\xfeSEKRET")
    rc, out = run(tmp_path, "sglang_router_workers_info", router_url=peer(listing=[]),
                  admin_api_key_file=str(key_file))
    assert rc == 1 and "is not UTF-8 text" in json.loads(out)["msg"] and "defect" not in out, out


def test_a_router_answer_nested_without_end_is_refused(tmp_path, peer):
    deep = {"id": "w1", "url": "http://10.0.0.1:30000"}
    leaf = deep
    for _ in range(200):
        leaf["metadata"] = {}
        leaf = leaf["metadata"]
    rc, out = run(tmp_path, "sglang_router_workers_info", router_url=peer(listing=[deep]))
    result = json.loads(out)
    assert rc == 1 and "nested more than 16 levels deep: not the admin API" in result["msg"], result


def test_a_key_file_that_is_a_fifo_a_device_or_a_folder_is_refused_without_waiting(tmp_path, peer):
    os.mkfifo(tmp_path / "fifo")
    for path, why in ((tmp_path / "fifo", "is not a regular file"), ("/dev/zero", "is not a regular file"),
                      (tmp_path, "is not a regular file")):
        rc, out = run(tmp_path, "sglang_router_workers_info", router_url=peer(listing=[]), admin_api_key_file=str(path))
        result = json.loads(out)
        assert rc == 1 and why in result["msg"] and "give the file that holds the key" in result["msg"], result
    (tmp_path / "big").write_bytes(b"k" * (65 * 1024))
    rc, out = run(tmp_path, "sglang_router_workers_info", router_url=peer(listing=[]),
                  admin_api_key_file=str(tmp_path / "big"))
    assert rc == 1 and "more than any key" in json.loads(out)["msg"]


def test_a_token_given_as_the_urls_user_is_masked_in_the_invocation_too(tmp_path):
    token = "tok-0123456789abcdef"  # a test value
    rc, out = run(tmp_path, "sglang_router_workers_info", router_url="http://%s@127.0.0.1:1" % token)
    assert rc == 1 and "http://***@127.0.0.1:1" in json.loads(out)["msg"] and token not in out
