"""The transaction's rescue (lib/sglang_state/transaction_rescue.py) over a fake host: what it reads, what it does
(restore, leave, stop, keep), and the run's one message; a server across nodes decides as one."""

import pytest
from sglang_state import transaction_rescue as rescue
from sglang_state.transaction import PhaseFailed, new_run

KEY = "sk-rescue-secret"
PROVEN = {"name": "20261129T0800Z", "path": "/b/20261129T0800Z", "context_target": 150000,
          "proven": {"at": "2026-11-29T08:00:00Z"}, "current": False, "versions": {"sglang": "0.5.23"}}
NEW = {"name": "20261201T0800Z", "path": "/b/20261201T0800Z", "context_target": 200000, "proven": None,
       "current": True}
RESTORE = {"runtimes": {"dir": "/opt/sglang/runtimes", "names": ["sglang"]},
           "store": {"dir": "/b", "keep": 5, "lock_owner": "t"}, "files": ["/etc/systemd/system/sglang.service"],
           "unit_name": "sglang.service", "service": "sglang",
           "wait": {"url": "http://127.0.0.1:30000", "unit": "sglang", "timeout": 60, "api_key": KEY}}


class FakeHost:
    def __init__(self, status=503, entries=(NEW, PROVEN), runtime=True):
        self.status, self.entries, self.runtime, self.calls = status, [dict(e) for e in entries], runtime, []

    def module(self, name, args, secret=False):
        self.calls.append((name, args.get("state")))
        if name == "ansible.builtin.command":  # the journal (and systemctl reset-failed, which reads nothing)
            return {"rc": 0, "stdout": "server_args api_key='%s'\nTraceback: unrecognized arguments" % KEY}
        if name == "ansible.builtin.uri":
            return {"status": self.status, "failed": self.status != 200}
        if name == "sglang_backup_store_info":
            current = next((e["name"] for e in self.entries if e.get("current")), None)
            proven = next((e["name"] for e in self.entries if e.get("proven") and not e.get("current")), None)
            return {"entries": self.entries, "current": current, "last_proven": proven}
        if name == "sglang_runtime":
            if not self.runtime:
                return {"failed": True, "msg": "the runtime of %s is not on this host" % args.get("entry")}
            return {"path": "/opt/sglang/runtimes/x", "versions": {"sglang": "0.5.23"}}
        if name == "sglang_backup_store":
            if args["state"] == "restore":
                for entry in self.entries:
                    entry["current"] = entry["name"] == args["name"]
            return {"changed": True, "name": "snap", "entries": self.entries}
        if name == "ansible.builtin.systemd_service":
            return {"changed": True}
        if name == "sglang_wait_ready":
            return {"ready": True}
        if name == "sglang_boot_facts":
            return {"found": True, "pool_tokens": 150016, "pre_load_avail_gib": 85.33, "post_load_avail_gib": 19.42}
        raise AssertionError(name)

    @staticmethod
    def say(line):
        pass


def looked(host, run):
    return rescue.look(host, {"service": "sglang", "url": "http://127.0.0.1:30000", "api_key": KEY,
                              "store": RESTORE["store"], "files": RESTORE["files"]}, run)


CHECKED = {"phase": "prove", "smoke": {"level": "check", "pool_tokens": 150016, "context_length": 150000,
                                        "prompt_tokens": 38, "failed": False}}


def act(host, nodes, run, failed_in="", rollback_on_failure=False, me="ct200", proved=CHECKED):
    """The rescue phase; after a restore, the end phase with rank 0's proof of the restored state (rescue.yml runs
    sglang_prove's prove phase between them). The run's message."""
    with pytest.raises(PhaseFailed) as failed:
        done = rescue.rescue(host, {"failure": "sglang is failed: SGLang stopped while starting.",
                                    "failed_in": failed_in, "nodes": nodes, "host": me, "rank0": sorted(nodes)[0],
                                    "rollback_on_failure": rollback_on_failure, "service": "sglang", "api_key": KEY,
                                    "versions": {"sglang": "0.5.23"}, "restore": RESTORE}, run)
        assert KEY not in str(done) and done["proof"]["planned"]["level"] == "check"
        rescue.end(host, {"said": done["said"], "proved": proved, "rank0": sorted(nodes)[0],
                          "store": RESTORE["store"], "files": RESTORE["files"], "api_key": KEY}, done["run"])
    return str(failed.value)


def changed_run():
    return dict(new_run(), changed_this_run=True, run_backup="/b/20261129T0800Z")


def test_a_start_that_never_became_healthy_is_restored_and_says_so_with_the_journal_redacted():
    host, run = FakeHost(), changed_run()
    seen = looked(host, run)
    assert KEY not in seen["journal"] and "<api key>" in seen["journal"] and seen["status"] == 503
    message = act(host, {"ct200": seen}, run)
    assert "Restored the last proven state 20261129T0800Z (context 150000), which serves again" in message
    assert "(always, for a start that never became healthy)" in message
    assert "Last lines of sglang's journal before the rescue" in message and KEY not in message
    assert ("sglang_backup_store", "restore") in host.calls and run["restored"] == "20261129T0800Z"
    assert run["restored_serves"] is True  # roles/sglang/tasks/routers_back.yml puts it back into its routers


def test_a_failed_proof_of_a_state_that_boots_is_left_for_inspection_by_default():
    host, run = FakeHost(status=200), changed_run()
    message = act(host, {"ct200": looked(host, run)}, run, failed_in="proof")
    assert "stays running for inspection" in message and "playbooks/rollback.yml" in message
    assert ("sglang_backup_store", "restore") not in host.calls
    assert "restored_serves" not in run  # an unproven state serving: out of its routers


def test_a_failed_proof_is_restored_when_asked():
    host, run = FakeHost(status=200), changed_run()
    message = act(host, {"ct200": looked(host, run)}, run, failed_in="proof", rollback_on_failure=True)
    assert "(sglang_rollback_on_failure)" in message


def test_a_first_install_with_nothing_to_go_back_to_is_stopped():
    host, run = FakeHost(entries=(NEW,)), dict(new_run(), changed_this_run=True)
    message = act(host, {"ct200": looked(host, run)}, run)
    assert "left stopped" in message and ("ansible.builtin.systemd_service", "stopped") in host.calls
    assert "restored_serves" not in run


def test_a_restore_that_fails_too_says_both():
    host, run = FakeHost(runtime=False), changed_run()
    message = act(host, {"ct200": looked(host, run)}, run)
    assert "Restoring 20261129T0800Z failed as well" in message and "not on this host" in message
    assert ("sglang_backup_store", "restore") not in host.calls  # refused before anything changed
    assert "restored_serves" not in run


def test_a_rollback_that_fails_its_proof_is_not_rescued_by_another():
    host, run = FakeHost(status=200), dict(changed_run(), restored="20261129T0800Z")
    message = act(host, {"ct200": looked(host, run)}, run, failed_in="proof", rollback_on_failure=True)
    assert "not rescued by another one" in message and ("sglang_backup_store", "restore") not in host.calls


@pytest.mark.parametrize(("failed_in", "outcome"), [("", "Restored"), ("proof", "stays running for inspection")])
def test_the_nodes_of_a_server_decide_together_from_every_node_s_store(failed_in, outcome):
    # a (rank 0) answers and its live state is proven, b's is not: the live state is not kept; both nodes take
    # rank 0's health and decide the same (a restore restarts all of them together)
    a = FakeHost(status=200, entries=(dict(NEW, proven={"at": "x"}), PROVEN))
    b = FakeHost(status=503)
    run = changed_run()
    nodes = {"a": looked(a, run), "b": looked(b, run)}
    for me, host in (("a", a), ("b", b)):
        assert outcome in act(host, nodes, dict(run), failed_in=failed_in, me=me)
        assert (("sglang_backup_store", "restore") in host.calls) == (outcome == "Restored")
