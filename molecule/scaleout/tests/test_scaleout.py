"""After site.yml on the scale-out topologies, and a rolling redeploy of the replicas under load.

ct400 is one SGLang server across two nodes (TP16: ranks 0-7 on ct400-a, 8-15 on ct400-b); ct400-b's GPUs
have 4 GiB less free, so the pool (an all-reduce MIN in SGLang) and the calibration are set by it. ct400 and
replica-1 (one node) are the two replicas behind router-1, the real sglang-router; side_effect.yml rolled
them one server at a time (a new flag) while a client sent requests through the router. Every check prints
the journal of the unit it looks at when it fails.
"""

import json

import pytest

KEY = "molecule-not-a-secret"
ROLE = {"ct400-a": "node", "ct400-b": "node", "replica-1": "replica", "router-1": "router"}


def name(host):
    return host.backend.get_hostname()


def only(host, role):
    if ROLE[name(host)] != role:
        pytest.skip("a check of the %s hosts" % role)


def journal(host, unit):
    return host.run("journalctl -u %s --no-pager -o cat -n 40" % unit).stdout


def exec_start(host, unit):
    """The unit's command line as systemd parsed it (quoting undone): one string of its argv."""
    prop = host.service(unit).systemd_properties["ExecStart"]
    return prop.split("argv[]=", 1)[1].split(" ;", 1)[0]


def test_each_node_runs_its_rank_of_one_server(host):
    only(host, "node")
    log = journal(host, "sglang")
    assert host.service("sglang").is_running, log
    argv = exec_start(host, "sglang")
    rank = "0" if name(host) == "ct400-a" else "1"
    for flag in ("--tp-size 16", "--nnodes 2", "--node-rank " + rank, "--dist-init-addr ct400-a:20000",
                 "--dist-timeout 90"):
        assert flag in argv, (flag, argv, log)
    env = host.file("/etc/sglang/sglang.env").content_string
    assert "NCCL_SOCKET_IFNAME=eth0" in env and "GLOO_SOCKET_IFNAME=eth0" in env


def test_rank_0_serves_the_pool_the_least_free_node_allows(host):
    only(host, "node")
    log = journal(host, "sglang")
    header = "-H 'Authorization: Bearer %s'" % KEY
    if name(host) == "ct400-a":
        info = json.loads(host.check_output("curl -s %s http://127.0.0.1:30000/server_info" % header))
        assert info["max_total_num_tokens"] >= 200_000, log
    else:  # rank >= 1 answers SGLang's health-only server, not the API
        assert host.run("curl -sf http://127.0.0.1:30000/health").rc == 0, log
        assert host.run("curl -sf %s http://127.0.0.1:30000/server_info" % header).rc != 0, log


def test_each_node_stores_its_own_numbers_under_the_servers_key(host):
    only(host, "node")
    facts = json.loads(host.file("/etc/ansible/facts.d/sglang_calibration.fact").content_string)
    entries = {key: value for key, value in facts["entries"].items() if "nodes2" in key}
    assert len(entries) == 1, facts
    entry = next(iter(entries.values()))
    # ct400-b: 85.334 free less the 4 GiB another process holds; the plan takes the least over the nodes
    expected = 81.33 if name(host) == "ct400-b" else 85.33
    assert abs(entry["pre_load_avail_gib"] - expected) < 0.01, entry
    assert entry["nodes"] == ["ct400-a", "ct400-b"] and entry["limiting_node"] == "ct400-b", entry


def test_the_replicas_run_the_rolled_flag_and_were_proven(host):
    if ROLE[name(host)] == "router":
        pytest.skip("a check of the servers")
    log = journal(host, "sglang")
    assert "--log-requests" in exec_start(host, "sglang"), log
    store = host.check_output("python3 -c 'import glob, json; print(json.dumps([json.load(open(p)) for p in "
                              "sorted(glob.glob(\"/var/backups/sglang/*/backup.json\"))]))'")
    entries = json.loads(store)
    assert entries and entries[-1].get("proven"), store  # the newest entry: the rolled state, proven


def test_the_router_runs_hardened_and_lists_both_replicas(host):
    only(host, "router")
    log = journal(host, "sglang-router")
    service = host.service("sglang-router")
    assert service.is_running and service.is_enabled, log
    props = service.systemd_properties
    assert props["NoNewPrivileges"] == "yes" and props["ProtectSystem"] == "strict", (props, log)
    assert props["User"] != "root", (props, log)
    assert KEY not in exec_start(host, "sglang-router"), log  # the workers' key is not in the arguments
    header = "-H 'Authorization: Bearer %s'" % KEY
    workers = json.loads(host.check_output("curl -s %s http://127.0.0.1:30080/workers" % header))["workers"]
    assert sorted((w["url"], w["is_healthy"]) for w in workers) == [
        ("http://ct400-a:30000", True), ("http://replica-1:30000", True)], (workers, log)


def test_no_request_failed_during_the_roll(host):
    only(host, "router")
    counts = json.loads(host.file("/root/roll-client.json").content_string)
    assert counts["errors"] == 0 and counts["ok"] > 20, (counts, journal(host, "sglang-router"))
