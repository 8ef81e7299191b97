"""The sglang_router role: its refusals (before any host change), and the unit it renders, run for real."""

import json
import os
import pathlib
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

import pytest
import yaml
from router_helpers import LAUNCHER, REPO, free_port, http

PLAYBOOK_BIN = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")


def inventory(tmp_path, workers, router_vars):
    """An inventory with the given worker hosts and one router host (router-1, this machine)."""
    data = {"all": {"children": {
        "sglang_servers": {"hosts": workers},
        "sglang_routers": {"hosts": {"router-1": dict({"ansible_connection": "local",
                                                       "ansible_python_interpreter": sys.executable},
                                                      **router_vars)}},
    }}}
    path = tmp_path / "hosts.yml"
    path.write_text(yaml.safe_dump(data))
    return path


def play(tmp_path, workers, router_vars, extra=None):
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg"), ANSIBLE_NOCOLOR="1")
    args = [PLAYBOOK_BIN, "-i", str(inventory(tmp_path, workers, router_vars)), "tests/router/role_localhost.yml"]
    if extra:
        args += ["-e", json.dumps(extra)]
    return subprocess.run(args, cwd=REPO, env=env, capture_output=True, text=True, timeout=120)


def worker(port, key="k-1", **more):
    return dict({"ansible_host": "10.0.0.%d" % (port % 250 + 1), "sglang_port": port, "sglang_host": "0.0.0.0",
                 "sglang_api_key": key}, **more)


GOOD = {"w1": worker(30000), "w2": worker(30001)}


def test_good_settings_pass(tmp_path):
    result = play(tmp_path, GOOD, {"sglang_router_workers": ["w1", "w2"]})
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("workers, router_vars, words", [
    (GOOD, {"sglang_router_workers": ["w1"], "sglang_router_health_interval_s": 5},
     ["unknown variable sglang_router_health_interval_s", "Did you mean sglang_router_health_check_interval_s?"]),
    (GOOD, {"sglang_router_workers": ["w1", "ct999"]}, ["ct999 not in the inventory"]),
    (GOOD, {"sglang_router_workers": []}, ["sglang_router_workers is [] on router-1"]),
    ({"a": worker(30000, sglang_nodes=["a", "b"]), "b": worker(30000, sglang_nodes=["a", "b"])},
     {"sglang_router_workers": ["b"]}, ["names b, which is node 1 of its server", "List a instead"]),
    ({"w1": {"ansible_host": "10.0.0.1", "sglang_api_key": "k-1"}}, {"sglang_router_workers": ["w1"]},
     ["w1 listens on 127.0.0.1", "sglang_host: 0.0.0.0"]),
    ({"w1": worker(30000, key="first-key"), "w2": worker(30001, key="second-key")},
     {"sglang_router_workers": ["w1", "w2"]}, ["w2 differ from w1", "single --api-key"]),
    ({"w1": worker(30000, key="")}, {"sglang_router_workers": ["w1"]},
     ["neither sglang_router_admin_api_key nor the workers' sglang_api_key", "anyone's worker"]),
    (GOOD, {"sglang_router_workers": ["w1"], "sglang_router_extra_args": ["--api-key=leak-3", "--port", "1"]},
     ["sglang_router_extra_args holds '--api-key=<hidden>': it sets --api-key",
      "sglang_router_extra_args holds '--port': it sets --port"]),
    ({"w1": worker(30000), "w1-alias": worker(30000)}, {"sglang_router_workers": ["w1", "w1-alias"]},
     ["each must appear once"]),
])
def test_refusals_name_the_variable_and_never_a_key(tmp_path, workers, router_vars, words):
    result = play(tmp_path, workers, router_vars)
    assert result.returncode != 0
    for word in words:
        assert word in result.stdout, result.stdout
    for secret in ("first-key", "second-key", "leak-3", "k-1"):
        assert secret not in result.stdout + result.stderr


def exec_start(unit_text):
    """The unit's ExecStart as argv, unquoted as systemd does for the role's quoting (C escapes, $$ and %%)."""
    line = re.search(r"^ExecStart=(.*?)(?<!\\)$", unit_text.replace("\\\n", " "), re.M).group(1)
    for token in re.findall(r'"(?:[^"\\]|\\.)*"|\S+', line):
        assert token.startswith('"') and token.endswith('"'), "unquoted ExecStart argument: " + token
    return [arg.replace("$$", "$").replace("%%", "%") for arg in shlex.split(line)]


@pytest.fixture()
def outside_tmp():
    """A folder outside /tmp, which the role refuses for its paths (world-writable; PrivateTmp= hides it): the
    repository's .cache, or the user's when the checkout itself is under /tmp (CI clones anywhere)."""
    candidates = [os.path.join(REPO, ".cache"), os.path.join(os.path.expanduser("~"), ".cache"), "/var/lib"]
    base = next(c for c in candidates if not os.path.realpath(c).startswith(("/tmp/", "/var/tmp/")))
    os.makedirs(base, exist_ok=True)
    path = tempfile.mkdtemp(prefix="router-role-", dir=base)
    yield pathlib.Path(path)
    shutil.rmtree(path)


def test_the_rendered_unit_runs_the_real_router_with_the_boot_list_and_the_keys(tmp_path, outside_tmp, upstreams):
    a, b = upstreams(2, key="worker-key-1")
    etc, opt = tmp_path / "etc", outside_tmp / "opt"
    etc.mkdir()
    opt.mkdir()
    port = free_port()
    workers = {name: {"ansible_host": "127.0.0.1", "sglang_port": int(up.url.rsplit(":", 1)[1]),
                      "sglang_host": "0.0.0.0", "sglang_api_key": "worker-key-1"}
               for name, up in (("w1", a), ("w2", b))}
    result = play(tmp_path, workers, {
        "sglang_router_workers": ["w1", "w2"], "sglang_router_host": "127.0.0.1", "sglang_router_port": port,
        "sglang_router_prometheus_port": free_port(), "sglang_router_admin_api_key": "admin-key-2",
        "sglang_router_policy": "round_robin", "sglang_router_health_check_interval_s": 1,
        "sglang_router_shutdown_grace_period_s": 1, "sglang_router_extra_args": ["--cache-threshold", "0.5"],
    }, extra={"out_dir": str(etc), "sglang_router_venv": str(opt / "venv")})
    assert result.returncode == 0, result.stdout + result.stderr
    assert "worker-key-1" not in result.stdout and "admin-key-2" not in result.stdout
    unit = (etc / "sglang-router.service").read_text()
    assert "worker-key-1" not in unit and "admin-key-2" not in unit
    assert (etc / "api-key").read_text().strip() == "worker-key-1"
    assert (etc / "admin-api-key").read_text().strip() == "admin-key-2"
    argv = exec_start(unit)
    assert argv[0] == str(opt / "venv" / "bin" / "python") and argv[1] == str(opt / "sglang_router_launch.py")
    assert argv[argv.index("--worker-urls") + 1:] == [a.url, b.url]
    # install.yml's job, done here: the launcher next to the venv; the venv's python is this interpreter,
    # which has sglang-router 0.3.2 (requirements.txt).
    shutil.copy(LAUNCHER, opt / "sglang_router_launch.py")
    proc = subprocess.Popen([sys.executable] + argv[1:], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    url = "http://127.0.0.1:%d" % port
    try:
        deadline = time.monotonic() + 15
        listed = []
        while time.monotonic() < deadline and len(listed) < 2:
            assert proc.poll() is None, proc.stdout.read().decode()[-3000:]
            try:
                status, body = http("GET", url + "/workers", key="admin-key-2", timeout=1)
                listed = [w["url"] for w in body["workers"] if w["is_healthy"]] if status == 200 else []
            except OSError:
                pass
            time.sleep(0.2)
        assert sorted(listed) == sorted([a.url, b.url])
        assert http("GET", url + "/workers", key="worker-key-1")[0] == 401
        assert http("POST", url + "/generate", key="worker-key-1", body={"text": "x"})[0] == 200
    finally:
        proc.terminate()
        proc.wait(timeout=15)
    assert a.auth["Bearer worker-key-1"] + b.auth["Bearer worker-key-1"] >= 2


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="needs systemd-analyze (Debian: systemd)")
def test_systemd_reads_every_line_of_the_unit(tmp_path):
    """systemd-analyze verify warns (rc 0) about unknown keys and bad values: its output must be empty."""
    etc = tmp_path / "etc"
    etc.mkdir()
    result = play(tmp_path, GOOD, {"sglang_router_workers": ["w1", "w2"], "sglang_router_admin_api_key": "a-1",
                                   "sglang_router_port": 80},
                  extra={"out_dir": str(etc)})
    assert result.returncode == 0, result.stdout + result.stderr
    unit = (etc / "sglang-router.service").read_text()
    assert "AmbientCapabilities=CAP_NET_BIND_SERVICE" in unit  # port 80 needs it, and only that
    # verify checks that the first argument is an executable here: this interpreter stands in for the venv's.
    unit = re.sub(r'^ExecStart="[^"]*"', 'ExecStart="%s"' % sys.executable, unit, flags=re.M)
    (tmp_path / "sglang-router.service").write_text(unit)
    proc = subprocess.run(["systemd-analyze", "verify", str(tmp_path / "sglang-router.service")],
                          capture_output=True, text=True, timeout=60, env=dict(os.environ, SYSTEMD_LOG_LEVEL="notice"))
    assert proc.returncode == 0 and proc.stdout + proc.stderr == "", proc.stdout + proc.stderr


@pytest.mark.parametrize("listen, rendered", [("::1", "[::1]"), ("::", "[::]"), ("127.0.0.2", "127.0.0.2")])
def test_an_ipv6_listen_address_reaches_the_router_in_brackets(tmp_path, listen, rendered):
    """sglang-router 0.3.2 parses "<--host>:<--port>" as one socket address: --host ::1 exits at start ("Invalid
    address: invalid socket address syntax"), --host [::1] listens on ::1 (tests/router/test_membership.py starts
    it so). --prometheus-host takes the bare address."""
    etc = tmp_path / "etc"
    etc.mkdir()
    result = play(tmp_path, GOOD, {"sglang_router_workers": ["w1"], "sglang_router_host": listen,
                                   "sglang_router_admin_api_key": "a-1", "sglang_router_prometheus_host": "::1"},
                  extra={"out_dir": str(etc)})
    assert result.returncode == 0, result.stdout + result.stderr
    argv = exec_start((etc / "sglang-router.service").read_text())
    assert argv[argv.index("--host") + 1] == rendered
    assert argv[argv.index("--prometheus-host") + 1] == "::1"
