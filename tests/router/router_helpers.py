"""The REAL sglang-router 0.3.2 (requirements.txt) on localhost, in front of small counting upstreams.

The router is started through the role's launcher (roles/sglang_router/files/sglang_router_launch.py), as
its unit starts it; the module is run as Ansible runs it on a host: python <module> <args file>.
"""

import collections
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODULE = os.path.join(REPO, "library", "sglang_router_workers.py")
INFO_MODULE = os.path.join(REPO, "library", "sglang_router_workers_info.py")
LAUNCHER = os.path.join(REPO, "roles", "sglang_router", "files", "sglang_router_launch.py")


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Upstream:
    """A worker stand-in on 127.0.0.1 that counts what reaches it. It answers what sglang-router 0.3.2 asks a
    worker while adding it (/health, /model_info, /server_info: seen in its requests) and the generation
    routes. With a key it refuses requests without `Authorization: Bearer KEY`, except /health*, /ready* and
    /metrics*, which real SGLang lets through (0.5.23 sglang/srt/utils/auth.py decide_request_auth)."""

    def __init__(self, name, key="", delay=0.0):
        self.name, self.key, self.delay = name, key, delay
        self.healthy = True
        self.calls = collections.Counter()  # (method, path) -> count
        self.auth = collections.Counter()  # the Authorization header of each counted request
        self.lock = threading.Lock()
        upstream = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _answer(self, code, body):
                data = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _handle(self):
                path = self.path.split("?")[0]
                if self.command == "POST":
                    self.rfile.read(int(self.headers.get("content-length") or 0))
                with upstream.lock:
                    upstream.calls[(self.command, path)] += 1
                    upstream.auth[self.headers.get("authorization")] += 1
                if path.startswith(("/health", "/ready", "/metrics")):
                    return self._answer(200 if upstream.healthy else 503, {})
                if upstream.key and self.headers.get("authorization") != "Bearer " + upstream.key:
                    return self._answer(401, {"error": "Unauthorized"})
                if path == "/v1/loads":  # SGLang's load report, as a drain reads it: idle
                    return self._answer(200, {"loads": [{"num_running_reqs": 0, "num_waiting_reqs": 0}]})
                if path in ("/model_info", "/get_model_info"):
                    return self._answer(200, {"model_path": "m", "tokenizer_path": "m", "is_generation": True})
                if path in ("/server_info", "/get_server_info"):
                    return self._answer(200, {"dp_size": 1, "tp_size": 1})
                if path == "/v1/models":
                    return self._answer(200, {"object": "list", "data": [{"id": "m", "object": "model"}]})
                if self.command == "POST":
                    time.sleep(upstream.delay)
                    return self._answer(200, {"text": upstream.name, "meta_info": {}})
                return self._answer(404, {"error": "not found"})

            do_GET = do_POST = _handle  # the names http.server calls

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = "http://127.0.0.1:%d" % self.httpd.server_port
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def generated(self):
        with self.lock:
            return self.calls[("POST", "/generate")]

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def http(method, url, key="", body=None, timeout=10):
    """(status, parsed JSON or text) of one request."""
    headers = {"content-type": "application/json"}
    if key:
        headers["authorization"] = "Bearer " + key
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, headers=headers, method=method)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            status, text = response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        status, text = error.code, error.read().decode()
    try:
        return status, json.loads(text)
    except ValueError:
        return status, text


@contextlib.contextmanager
def running_router(worker_urls, api_key="", admin_key="", extra=(), host="127.0.0.1", key_dir=None, port=None):
    """Yield (url, process, log path) of the real router started through the role's launcher, listening on
    host:port (a free port when none; IPv6 in brackets, as the role's unit renders --host), once it answers /health
    and lists every boot worker as healthy; stop it afterwards. key_dir: where its key files go (api-key,
    admin-api-key), as the role lays them out."""
    with tempfile.TemporaryDirectory() as root:
        key_dir = key_dir or root
        key_file, admin_file = os.path.join(key_dir, "api-key"), os.path.join(key_dir, "admin-api-key")
        log_path = os.path.join(root, "log")
        for path, value in ((key_file, api_key), (admin_file, admin_key)):
            with open(path, "w", encoding="utf-8") as handle:
                handle.write(value + "\n")
        port = port or free_port()
        args = [sys.executable, LAUNCHER, "--api-key-file", key_file, "--admin-api-key-file", admin_file, "--",
                "--host", host, "--port", str(port), "--prometheus-host", "127.0.0.1",
                "--prometheus-port", str(free_port()), "--policy", "round_robin",
                "--health-check-interval-secs", "1", "--shutdown-grace-period-secs", "1", *extra]
        if worker_urls:
            args += ["--worker-urls", *worker_urls]
        with open(log_path, "w", encoding="utf-8") as log:
            proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT)
        url = "http://%s:%d" % (host, port)  # an IPv6 host comes in brackets, as the role's unit gives it
        try:
            deadline = time.monotonic() + 15
            while True:
                assert proc.poll() is None, "the router exited: " + open(log_path, encoding="utf-8").read()[-3000:]
                assert time.monotonic() < deadline, "the router did not get ready: " + open(log_path).read()[-3000:]
                try:
                    status, body = http("GET", url + "/readiness", timeout=1)
                    if isinstance(body, dict) and body.get("healthy_workers", 0) >= len(worker_urls):
                        break
                except (urllib.error.URLError, OSError):
                    pass
                time.sleep(0.1)
            yield url, proc, log_path
        finally:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def run_module(tmp_path, check_mode=False, **args):
    """Run the module as Ansible runs it on a host; return (rc, result). state="list" runs the module that lists,
    sglang_router_workers_info (Ansible's _info convention), with the other arguments."""
    module = MODULE
    if args.get("state") == "list":
        module = INFO_MODULE
        del args["state"]
    path = tmp_path / "args.json"
    payload = dict(args, _ansible_check_mode=check_mode)
    path.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": payload}))
    proc = subprocess.run([sys.executable, module, str(path)], capture_output=True, text=True, timeout=60)
    assert "Traceback" not in proc.stdout + proc.stderr, proc.stdout + proc.stderr
    return proc.returncode, json.loads(proc.stdout)
