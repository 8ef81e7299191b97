"""The sglang_router role's membership entry point (tasks_from: membership) against the real sglang-router 0.3.2,
bound where the replica side used to miss it (a literal 127.0.0.1): ::1 and a single address (127.0.0.2). A rolling
restart's steps drain, remove and re-add the replica, and the router's own worker list shows each step. A deployed
router (its unit exists) that does not answer fails the run by name; one not deployed yet is left alone."""

import json
import os
import subprocess
import sys

import pytest
import yaml
from router_helpers import REPO, free_port, running_router

PLAYBOOK_BIN = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")
ADMIN_KEY, WORKER_KEY = "admin-key-7", "worker-key-7"
REPLICA = "127.0.0.1"  # the Upstreams listen there


def layout(tmp_path, deployed=True):
    """The router host's files below tmp_path/root as the role lays them out (root = _sglang_router_root): its unit
    (when deployed) and the folder of its key files."""
    root = tmp_path / "root"
    (root / "etc" / "sglang-router").mkdir(parents=True)
    if deployed:
        (root / "etc" / "systemd" / "system").mkdir(parents=True)
        (root / "etc" / "systemd" / "system" / "sglang-router.service").write_text("[Unit]\n")
    return root


def play(tmp_path, root, worker, router_host, router_port, router_url):
    local = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable, "ansible_become": False}
    inventory = {"all": {"children": {
        # the replica is named by its address and sets no ansible_host, as on a fleet reached by name: in a task
        # delegated to router-1, ansible_host is then router-1's, and a URL templated there names the router
        "sglang_servers": {"hosts": {REPLICA: dict(local, sglang_port=int(worker.url.rsplit(":", 1)[1]))}},
        "sglang_routers": {"hosts": {"router-1": dict(local, sglang_router_host=router_host,
                                                       sglang_router_port=router_port,
                                                       sglang_router_workers=[REPLICA])}},
    }}}
    (tmp_path / "hosts.yml").write_text(yaml.safe_dump(inventory))
    out_file = tmp_path / "listed.json"
    extra = {"_sglang_router_root": str(root), "worker_url": worker.url, "router_url": router_url,
             "admin_key_file": str(root / "etc" / "sglang-router" / "admin-api-key"), "out_file": str(out_file)}
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg"), ANSIBLE_NOCOLOR="1")
    proc = subprocess.run([PLAYBOOK_BIN, "-i", str(tmp_path / "hosts.yml"), "tests/router/membership_localhost.yml",
                           "-e", json.dumps(extra)], cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    listed = json.loads(out_file.read_text()) if out_file.exists() else None
    return proc, listed


@pytest.mark.parametrize("router_host, url_host", [("::1", "[::1]"), ("127.0.0.2", "127.0.0.2")])
def test_a_rolling_restart_drains_removes_and_readds_the_replica(tmp_path, upstreams, router_host, url_host):
    replica, other = upstreams(2, key=WORKER_KEY)
    root = layout(tmp_path)
    port = free_port()
    with running_router([replica.url, other.url], api_key=WORKER_KEY, admin_key=ADMIN_KEY, host=url_host,
                        key_dir=str(root / "etc" / "sglang-router"), port=port) as (url, _, _):
        assert url == "http://%s:%d" % (url_host, port)
        proc, listed = play(tmp_path, root, replica, router_host, port, url)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    # each step, as the router itself lists its workers
    assert listed["drain"] == [other.url] and listed["absent"] == [other.url], listed
    assert sorted(listed["present"]) == sorted([replica.url, other.url]), listed
    # the drain asked the replica itself for its load (after taking it out), on the replica's own URL
    assert replica.calls[("GET", "/v1/loads")] >= 1
    assert other.calls[("GET", "/v1/loads")] == 0
    # the drain and the re-add changed the router; the removal of a replica already out did not
    changed = [line for line in proc.stdout.splitlines() if line.startswith("changed: [%s -> router-1" % REPLICA)]
    assert len(changed) == 2, proc.stdout[-4000:]
    assert WORKER_KEY not in proc.stdout and ADMIN_KEY not in proc.stdout


def test_a_deployed_router_that_does_not_answer_fails_the_run_by_name(tmp_path, upstreams):
    (replica,) = upstreams(1)
    root = layout(tmp_path)
    port = free_port()  # nothing listens there
    proc, listed = play(tmp_path, root, replica, "::1", port, "http://[::1]:%d" % port)
    assert proc.returncode != 0 and listed is None
    text = " ".join(proc.stdout.split())
    assert "The router router-1 (unit %s/etc/systemd/system/sglang-router.service exists) does not answer at " \
        "http://[::1]:%d/health" % (root, port) in text, proc.stdout[-3000:]
    assert "%s (%s) cannot be taken out of it" % (REPLICA, replica.url) in text
    assert "systemctl start sglang-router on router-1" in text
    assert replica.calls[("GET", "/v1/loads")] == 0  # not drained: it still serves through the router


def test_a_router_not_deployed_yet_is_left_alone(tmp_path, upstreams):
    (replica,) = upstreams(1)
    root = layout(tmp_path, deployed=False)
    port = free_port()
    proc, listed = play(tmp_path, root, replica, "127.0.0.2", port, "http://127.0.0.2:%d" % port)
    # the membership steps skip the router (no probe, no change, no drain); the listing, a test step, is the first
    # task to try the router (and finds no key file there)
    steps = proc.stdout.split("TASK [")
    membership = [step for step in steps if step.startswith("sglang_router : ")]
    assert membership and not [step for step in membership if "failed" in step or "changed:" in step], proc.stdout
    assert all("skipping: [%s]" % REPLICA in step for step in membership if "deployed router" in step), proc.stdout
    failed = [step for step in steps if "fatal:" in step]
    assert len(failed) == 1 and failed[0].startswith("List the router's workers"), proc.stdout[-3000:]
    assert "The router router-1" not in proc.stdout
    assert replica.calls[("GET", "/v1/loads")] == 0
