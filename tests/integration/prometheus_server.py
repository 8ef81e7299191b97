"""A real Prometheus (Debian's package: tests/integration/install_prometheus.sh) for the tests: promtool's checks and
a server on a free loopback port reading a folder lib/sglang_metrics rendered, queried through its HTTP API."""

import contextlib
import json
import os
import shutil
import socket
import subprocess
import time
import urllib.parse
import urllib.request

import pytest

PROMETHEUS = os.environ.get("PROMETHEUS", "prometheus")
PROMTOOL = os.environ.get("PROMTOOL", "promtool")


def require():
    """Fail with the fix when Debian's prometheus is not installed (make unit installs it as root): a check that skips
    where its tool is missing is a check nobody runs (docs/testing.md)."""
    missing = [tool for tool in (PROMETHEUS, PROMTOOL) if not shutil.which(tool)]
    if missing:
        pytest.fail("%s missing: run tests/integration/install_prometheus.sh as root (apt-get install -y "
                    "--no-install-recommends prometheus), or set PROMETHEUS and PROMTOOL to its binaries"
                    % ", ".join(missing))


def promtool(*args):
    """(exit status, output) of `promtool <args>`."""
    done = subprocess.run([PROMTOOL, *args], capture_output=True, text=True, timeout=60, check=False)
    return done.returncode, done.stdout + done.stderr


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def api(url, path, **params):
    """The `data` of a Prometheus HTTP API answer; fails the test on an error status."""
    with urllib.request.urlopen("%s%s?%s" % (url, path, urllib.parse.urlencode(params)), timeout=10) as response:
        body = json.loads(response.read())
    assert body["status"] == "success", body
    return body["data"]


@contextlib.contextmanager
def running_prometheus(folder, config="prometheus.yml"):
    """Yield the URL of a Prometheus reading `folder`/`config`, its data in `folder`/data; stop it afterwards."""
    port = free_port()
    log_path = os.path.join(folder, "prometheus.log")
    with open(log_path, "w", encoding="utf-8") as log:
        proc = subprocess.Popen([PROMETHEUS, "--config.file", os.path.join(folder, config),
                                 "--storage.tsdb.path", os.path.join(folder, "data"),
                                 "--web.listen-address", "127.0.0.1:%d" % port], stdout=log, stderr=subprocess.STDOUT)
    url = "http://127.0.0.1:%d" % port
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                with urllib.request.urlopen(url + "/-/ready", timeout=1):
                    break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    with open(log_path, encoding="utf-8") as handle:
                        pytest.fail("prometheus did not start:\n" + handle.read()[-3000:])
                time.sleep(0.1)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
