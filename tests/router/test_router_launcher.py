"""The role's launcher starts the real sglang-router 0.3.2 with its keys read from files, not from argv."""

import subprocess
import sys

from router_helpers import LAUNCHER, http


# (No look at /proc/PID/cmdline here: sglang-router's setproctitle rewrites it to "sglang::router" once it
# runs, so it could not show a key given on argv. The unit file is what would: tests/router/test_router_role.py.)
def test_keys_from_files_guard_both_apis_and_stay_out_of_the_log(router, upstreams):
    a, = upstreams(1, key="worker-secret-1")
    with router([a.url], api_key="worker-secret-1", admin_key="admin-secret-2") as (url, _, log_path):
        # 0.3.2: --api-key is what the router sends to the workers AND what it demands from clients.
        assert http("POST", url + "/generate", body={"text": "x"})[0] == 401
        assert http("POST", url + "/generate", key="worker-secret-1", body={"text": "x"})[0] == 200
        # With a control-plane admin key, the admin API takes that key and no other.
        assert http("GET", url + "/workers")[0] == 401
        assert http("GET", url + "/workers", key="worker-secret-1")[0] == 401
        assert http("GET", url + "/workers", key="admin-secret-2")[0] == 200
        # /health and /readiness stay open (the role and load balancers probe them without a key).
        assert http("GET", url + "/health")[0] == 200
        with open(log_path, encoding="utf-8") as handle:
            log = handle.read()
    assert a.auth["Bearer worker-secret-1"] >= 1  # the worker got the key (discovery, /generate)
    assert "worker-secret-1" not in log and "admin-secret-2" not in log
    assert "Router ready" in log  # the log is the router's own


def test_without_an_admin_key_the_admin_api_takes_the_workers_key(router, upstreams):
    a, = upstreams(1, key="worker-secret-1")
    with router([a.url], api_key="worker-secret-1") as (url, _, _):
        assert http("GET", url + "/workers")[0] == 401
        assert http("GET", url + "/workers", key="worker-secret-1")[0] == 200


def test_without_keys_everything_is_open(router, upstreams):
    a, = upstreams(1)
    with router([a.url]) as (url, _, _):
        assert http("GET", url + "/workers")[0] == 200
        assert http("POST", url + "/generate", body={"text": "x"})[0] == 200


def test_a_key_on_the_command_line_is_refused_without_echoing_it(tmp_path):
    empty = tmp_path / "empty"
    empty.write_text("")
    for flag in ("--api-key=leak-1", "--control-plane-api-keys"):
        proc = subprocess.run([sys.executable, LAUNCHER, "--api-key-file", str(empty), "--admin-api-key-file",
                               str(empty), "--", "--worker-urls", "http://127.0.0.1:1", flag, "x:y:admin:leak-2"],
                              capture_output=True, text=True, timeout=30)
        assert proc.returncode != 0
        assert "must not be given on the command line" in proc.stderr
        assert "leak-" not in proc.stderr + proc.stdout
