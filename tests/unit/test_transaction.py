"""The deploy transaction's paths (lib/sglang_state/transaction.py) over a fake host: first boot, a re-run that
changes nothing, a correction, a calibrated plan that falls short, a boot that never answers, a server across nodes
(peer restart, a node down, the least-free node), and what the rescue then decides from the run."""

import json

import pytest
import sglang_kvplan as kv
from sglang_state import rescue_action, rescue_node, transaction
from sglang_state.transaction import PhaseFailed

KIMI = {"model": "kimi-k2.6", "tp_size": 8, "context_target": 200_000, "pool_rules": "0.5.9", "gpu_memory_mib": 97887}
TRUE_P, TRUE_A = 85.334, 19.419  # ct200


def boot_on(p, a, fraction, pin=None, end=6.3):
    """What SGLang logs on a host with P and A at `fraction`: the pool is the profile's, capped by the pin."""
    pool = kv.pool_tokens(dict(KIMI, pre_load_avail_gib=p, post_load_avail_gib=a), fraction)
    return {"found": True, "pre_load_avail_gib": round(p, 2), "post_load_avail_gib": round(a, 2),
            "pool_tokens": min(pool, pin) if pin else pool, "pool_end_avail_gib": end}


class FakeHost:
    """A host as the transaction sees it: files rendered from the plan, a unit that starts and logs a boot, a store."""

    def __init__(self, boots=(), ready=True, files=None, running=False, journal="", failed_unit=False, runtimes=None):
        self.files = dict(files or {})
        self.boots = list(boots)
        self.ready, self.running, self.failed_unit, self.journal_text = ready, running, failed_unit, journal
        self.calls, self.said, self.snapshots, self.facts_file = [], [], [], None
        self.store_ops, self.runtimes = [], dict(runtimes or {})
        self.check_mode = False  # the executor's --check (the render phase says what a real run would do)
        self.unit_file_state = "enabled"

    def module(self, name, args, secret=False):
        self.calls.append(name if name != "ansible.builtin.command" else " ".join(args["argv"][:2]))
        if name == transaction.STORE_MODULE and args["state"] != "snapshot":
            self.store_ops.append((args["state"], args.get("name")))
            self.runtimes[FILES[0]["dest"]] = self.runtimes.get("/b/%s/sglang.service" % args["name"])
            return {"changed": True}
        if name == transaction.STORE_MODULE:
            self.snapshots.append(args["manifest"])
            self.store_ops.append(("snapshot", tuple(args.get("protect") or ())))
            # the first snapshot finds the serving state in the entry "old"; later ones add entries
            name = "old" if len(self.snapshots) == 1 else "entry%d" % len(self.snapshots)
            return {"changed": name != "old", "name": name,
                    "entries": [{"name": "old", "path": "/b/old", "current": True}]}
        if name == "ansible.builtin.file":  # the local facts folder
            return {"changed": False}
        if name == transaction.UNIT_MODULE:
            state = "failed" if self.failed_unit else "active" if self.running else "inactive"
            return {"properties": {"Id": "sglang.service", "ActiveState": state,
                                   "UnitFileState": self.unit_file_state,
                                   "InvocationID": "1f2e" if self.running else "",
                                   "MainPID": "4242" if self.running else "0",
                                   "ExecMainStartTimestamp": "Tue 2026-12-01 08:00:00 UTC"}}
        if name == transaction.FILES_MODULE:
            assert secret  # the env file and the config hold keys: the call is never logged
            written = []
            for item in args["files"]:
                content = item.get("content", item.get("secret_content"))
                assert ("secret_content" in item) == any(f["dest"] == item["dest"] and f.get("secret") for f in FILES)
                if self.files.get(item["dest"]) != content:
                    self.files[item["dest"]] = content
                    written.append(item["dest"])
            return {"changed": bool(written), "changed_files": written, "folder_changed": False}
        if name == "ansible.builtin.command":
            verb = args["argv"][1]
            if verb == "reset-failed":
                return {"rc": 0}
            return {"rc": 0, "stdout": self.journal_text}
        if name == "ansible.builtin.systemd_service":
            if args["state"] == "restarted" or not self.running:
                self.running = True
                self.boot_now = self.boots.pop(0) if self.boots else {"found": False}
                return {"changed": True}
            return {"changed": False}
        if name == transaction.WAIT_MODULE:
            if self.ready is True:
                return {"ready": True}
            if self.ready == "slow":
                self.ready = True
                return {"ready": False, "progress": "loading weights 24/64 (37%)"}
            return {"failed": True, "msg": "sglang is failed: SGLang stopped while starting"}
        if name == transaction.BOOT_MODULE:
            return dict(self.boot_now)
        if name == transaction.RUNTIME_MODULE:
            runtime = self.runtimes.get(args["unit"])
            if runtime is None:
                return {"failed": True, "msg": "%s names a runtime that is not on this host" % args["unit"]}
            return {"path": runtime["path"], "versions": runtime["versions"]}
        raise AssertionError("unexpected module %s" % name)

    def render_template(self, src, overrides=None):
        plan = (overrides or {}).get("sglang_kv_plan_result") or self.task_plan
        return "%s %s" % (src, " ".join(plan["args"]))

    def copy(self, args):
        self.facts_file = json.loads(args["content"])
        return {"changed": True}

    def say(self, line):
        self.said.append(line)

    @staticmethod
    def now():
        return "2026-12-02T00:00:00+00:00"

    @staticmethod
    def to_json(value):
        return json.dumps(value)


FILES = [{"src": "sglang.service.j2", "dest": "/etc/systemd/system/sglang.service", "mode": "0644"},
         {"src": "sglang.env.j2", "dest": "/etc/sglang/sglang.env", "mode": "0600", "secret": True}]
STORE = {"dir": "/var/lib/sglang/backups", "keep": 5, "lock_owner": "test"}
WAIT = {"url": "http://127.0.0.1:30000", "unit": "sglang", "timeout": 600, "api_key": "sk-secret"}


def render_args():
    return {"files": FILES, "etc_dir": "/etc/sglang", "etc_group": "sglang", "store": STORE,
            "before_manifest": {"reason": "found"}}


def start_args(host, render_result, nodes=None, multinode=False):
    return {"host": host, "multinode": multinode, "service": "sglang", "files_changed": render_result["files_changed"],
            "nodes": nodes or {host: render_result}, "store": STORE, "files": FILES,
            "state_manifest": {"reason": "deployed", "plan": "x"}, "wait": WAIT}


def plan_for(spec):
    planned = kv.plan(spec)
    return {"spec": spec, "plan": planned}


def calibrate_args(host, nodes, spec, plan, stored=None, order=None, replans=None):
    order = order or [host]

    def replan(calibrations):
        replans.append(calibrations) if replans is not None else None
        least = min(calibrations.values(), key=lambda c: c["post_load_avail_gib"])
        return plan_for(dict(spec, pre_load_avail_gib=least["pre_load_avail_gib"],
                             post_load_avail_gib=least["post_load_avail_gib"]))

    return {"host": host, "server": "ct200", "rank0": order[0], "order": order, "multinode": len(order) > 1,
            "nodes": nodes, "spec": spec, "plan": plan, "context_target": spec.get("context_target", 200_000),
            "stored": stored or {},
            "in_use": {}, "calibration_store": {"folder": "/etc/ansible/facts.d", "path": "/etc/ansible/facts.d/x.fact",
                                                "key": "kimi|tp8", "entries": {"other": {}}, "setup": {"tp_size": 8}},
            "replan": replan, "files": FILES, "etc_dir": "/etc/sglang", "etc_group": "sglang", "store": STORE,
            "state_manifest": {"reason": "deployed"}, "service": "sglang", "wait": WAIT}


def verify_args(host, nodes, order=None, headroom=2.0, context_target=200_000):
    order = order or [host]
    return {"host": host, "server": "ct200", "rank0": order[0], "order": order, "multinode": len(order) > 1,
            "nodes": nodes, "context_target": context_target, "min_headroom_gib": headroom}


def deploy(host, spec, plan, stored=None, replans=None):
    """One node's whole transaction, as the role runs it."""
    host.task_plan = plan
    run = transaction.new_run()
    rendered = transaction.render(host, render_args(), run)
    started = transaction.start(host, start_args("ct200", rendered), run)
    calibrated = transaction.calibrate(host, calibrate_args("ct200", {"ct200": started}, spec, plan, stored,
                                                            replans=replans), run)
    return transaction.verify(verify_args("ct200", {"ct200": calibrated},
                                          context_target=spec.get("context_target", 200_000)), run)


def test_first_boot_renders_restarts_reads_the_boot_stores_the_calibration_and_verifies():
    estimate = plan_for(KIMI)["plan"]
    host = FakeHost(boots=[boot_on(TRUE_P, TRUE_A, estimate["mem_fraction_static"], pin=200_000)], ready="slow")
    verified = deploy(host, KIMI, estimate)
    facts = verified["facts"]
    assert facts["sglang_starts"] == 1 and facts["sglang_corrective_restarts"] == 0
    assert facts["sglang_changed_this_run"] is True and facts["sglang_restarted_this_run"] is True
    assert facts["sglang_boot"]["pool_tokens"] == 200_000
    assert host.said == ["loading weights 24/64 (37%)"]  # the wait's progress, one line per try
    # the state before and the new one are both kept, and the calibration is stored beside other setups'
    assert [m["reason"] for m in host.snapshots] == ["found", "deployed"]
    assert set(host.facts_file["entries"]) == {"other", "kimi|tp8"}
    assert host.facts_file["entries"]["kimi|tp8"]["tp_size"] == 8
    assert facts["calibration_stored"]["pre_load_avail_gib"] == pytest.approx(85.33, abs=0.01)


def test_a_re_run_that_changes_nothing_restarts_nothing_and_reads_no_boot_lines():
    plan = plan_for(dict(KIMI, pre_load_avail_gib=TRUE_P, post_load_avail_gib=TRUE_A))["plan"]
    files = {f["dest"]: "%s %s" % (f["src"], " ".join(plan["args"])) for f in FILES}
    host = FakeHost(files=files, running=True)
    verified = deploy(host, KIMI, plan, stored={"pre_load_avail_gib": TRUE_P, "post_load_avail_gib": TRUE_A})
    assert verified["facts"]["sglang_starts"] == 0 and verified["facts"]["sglang_changed_this_run"] is False
    assert transaction.BOOT_MODULE not in host.calls  # old log lines are never read
    assert "ansible.builtin.copy" not in host.calls and host.facts_file is None
    assert [m["reason"] for m in host.snapshots] == ["found"]  # the store adds nothing when an entry holds it
    # one read of the unit: running and enabled, nothing is started, and the process read is the proof's
    assert "ansible.builtin.systemd_service" not in host.calls and host.calls.count(transaction.UNIT_MODULE) == 1
    assert verified["run"]["process"] == {"invocation_id": "1f2e", "main_pid": "4242",
                                          "exec_main_start": "Tue 2026-12-01 08:00:00 UTC"}
    assert transaction.WAIT_MODULE in host.calls  # never proven: the wait asks /health_generate


def test_a_re_run_whose_process_is_the_proven_one_does_not_wait_and_another_process_waits():
    plan = plan_for(dict(KIMI, pre_load_avail_gib=TRUE_P, post_load_avail_gib=TRUE_A))["plan"]
    files = {f["dest"]: "%s %s" % (f["src"], " ".join(plan["args"])) for f in FILES}
    proven = {"invocation_id": "1f2e", "main_pid": "4242", "exec_main_start": "Tue 2026-12-01 08:00:00 UTC"}
    for recorded, waits in ((proven, False), (dict(proven, invocation_id="0a0b"), True), ({}, True)):
        host = FakeHost(files=files, running=True)
        host.task_plan = plan
        run = transaction.new_run()
        rendered = transaction.render(host, render_args(), run)
        started = transaction.start(host, dict(start_args("ct200", rendered), record={"process": recorded}), run)
        assert started["ready"] and (transaction.WAIT_MODULE in host.calls) is waits


def test_a_disabled_or_stopped_unit_with_its_files_unchanged_is_started_and_enabled_not_restarted():
    plan = plan_for(dict(KIMI, pre_load_avail_gib=TRUE_P, post_load_avail_gib=TRUE_A))["plan"]
    files = {f["dest"]: "%s %s" % (f["src"], " ".join(plan["args"])) for f in FILES}
    disabled = FakeHost(files=files, running=True)
    disabled.unit_file_state = "disabled"
    verified = deploy(disabled, KIMI, plan, stored={"pre_load_avail_gib": TRUE_P, "post_load_avail_gib": TRUE_A})
    assert "ansible.builtin.systemd_service" in disabled.calls and "process" not in verified["run"]
    assert verified["facts"]["sglang_starts"] == 0 and "systemctl reset-failed" not in disabled.calls
    stopped = FakeHost(files=files, running=False, boots=[boot_on(TRUE_P, TRUE_A, plan["mem_fraction_static"])])
    verified = deploy(stopped, KIMI, plan, stored={"pre_load_avail_gib": TRUE_P, "post_load_avail_gib": TRUE_A})
    assert verified["facts"]["sglang_restarted_this_run"] is True and "process" not in verified["run"]


def test_an_estimate_that_fell_short_is_re_planned_from_the_boot_and_restarted_once():
    spec = dict(KIMI, pool_policy="fraction")  # no pin: the pool is what the fraction gives
    estimate = plan_for(spec)["plan"]
    real_a = 19.0  # less free after the weights than the estimate assumed
    short = boot_on(TRUE_P, real_a, estimate["mem_fraction_static"])
    assert short["pool_tokens"] < 200_000
    corrected = plan_for(dict(spec, pre_load_avail_gib=85.33, post_load_avail_gib=real_a))["plan"]
    replans = []
    host = FakeHost(boots=[short, boot_on(TRUE_P, real_a, corrected["mem_fraction_static"])])
    verified = deploy(host, spec, estimate, replans=replans)
    facts = verified["facts"]
    assert facts["sglang_corrective_restarts"] == 1 and facts["sglang_starts"] == 2
    assert facts["sglang_kv_plan_result"]["mem_fraction_static"] == corrected["mem_fraction_static"] > 0.889
    assert facts["sglang_boot"]["pool_tokens"] >= 200_000
    assert len(replans) == 1 and replans[0]["ct200"]["post_load_avail_gib"] == pytest.approx(real_a, abs=0.01)
    assert any("Restarting once" in line for line in host.said)
    # the unit now carries the corrected flags, and the corrected state is kept in the store with its plan
    assert str(corrected["mem_fraction_static"]) in host.files["/etc/systemd/system/sglang.service"]
    assert [m["reason"] for m in host.snapshots] == ["found", "deployed", "deployed"]
    assert facts["calibration_in_use"]["post_load_avail_gib"] == pytest.approx(real_a, abs=0.01)


def test_an_unpinned_first_boot_short_of_the_headroom_is_re_planned_and_restarted_once():
    # pool_policy fill (the default) leaves 50k unpinned: its fraction keeps the headroom for P down to the
    # estimate over 1.2; a host with still less free before the weights leaves less, and is corrected once
    spec = dict(KIMI, context_target=50_000)
    estimate = plan_for(spec)["plan"]
    assert estimate["max_total_tokens"] is None
    true_p, true_a = 70.0, 8.0
    fraction = estimate["mem_fraction_static"]
    short = boot_on(true_p, true_a, fraction, end=round((1 - fraction) * true_p, 2))
    assert short["pool_tokens"] >= 50_000 and short["pool_end_avail_gib"] < 4.0
    corrected = plan_for(dict(spec, pre_load_avail_gib=true_p, post_load_avail_gib=true_a))["plan"]
    assert corrected["mem_fraction_static"] < fraction
    right = boot_on(true_p, true_a, corrected["mem_fraction_static"],
                    end=round((1 - corrected["mem_fraction_static"]) * true_p, 2))
    host = FakeHost(boots=[short, right])
    verified = deploy(host, spec, estimate)
    facts = verified["facts"]
    assert facts["sglang_corrective_restarts"] == 1 and facts["sglang_starts"] == 2
    assert facts["sglang_kv_plan_result"]["mem_fraction_static"] == corrected["mem_fraction_static"]
    assert facts["sglang_boot"]["pool_end_avail_gib"] >= 4.0
    assert any("leaving %s GiB free after it, under sglang_min_headroom_gib 4.0" % short["pool_end_avail_gib"] in line
               and "Restarting once" in line for line in host.said), host.said


def test_a_calibrated_plan_that_still_falls_short_fails_with_the_numbers_and_no_second_restart():
    stored = {"pre_load_avail_gib": TRUE_P, "post_load_avail_gib": TRUE_A}
    plan = plan_for(dict(KIMI, **stored))["plan"]
    short = dict(boot_on(TRUE_P, TRUE_A, plan["mem_fraction_static"], pin=200_000), pool_tokens=150_000)
    host = FakeHost(boots=[short])
    with pytest.raises(PhaseFailed, match="holds 150000 tokens, under the 200000 planned"):
        deploy(host, KIMI, plan, stored=stored)
    assert host.calls.count("ansible.builtin.systemd_service") == 1


def test_too_little_headroom_after_the_pool_fails():
    plan = plan_for(KIMI)["plan"]
    host = FakeHost(boots=[boot_on(TRUE_P, TRUE_A, plan["mem_fraction_static"], pin=200_000, end=0.8)])
    with pytest.raises(PhaseFailed, match="only 0.8 GiB free after it"):
        deploy(host, KIMI, plan)


def test_a_boot_whose_journal_lost_its_lines_fails_instead_of_calibrating_from_nothing():
    plan = plan_for(KIMI)["plan"]
    host = FakeHost(boots=[{"found": False}])
    with pytest.raises(PhaseFailed, match="journal has no 'Load weight begin/end'"):
        deploy(host, KIMI, plan)


def test_a_boot_that_never_answers_fails_and_the_rescue_restores_the_state_before_the_run():
    plan = plan_for(KIMI)["plan"]
    host = FakeHost(boots=[{"found": False}], ready=False)
    host.task_plan = plan
    run = transaction.new_run()
    rendered = transaction.render(host, render_args(), run)
    with pytest.raises(PhaseFailed, match="stopped while starting"):
        transaction.start(host, start_args("ct200", rendered), run)
    # what the rescue reads of the run record (the run): the host changed, and the state before it is in the store
    assert run["changed_this_run"] is True and run["run_backup"] == "/b/old"
    node = rescue_node({"status": 503}, [], None, run["run_backup"], "never healthy")
    assert rescue_action(node, {"ct200": []})["action"] == "restore"
    assert rescue_action(node, {"ct200": []})["target"] == "old"


def test_a_crash_looped_unit_is_reset_and_restarted_even_when_nothing_changed():
    plan = plan_for(KIMI)["plan"]
    files = {f["dest"]: "%s %s" % (f["src"], " ".join(plan["args"])) for f in FILES}
    host = FakeHost(files=files, running=True, failed_unit=True,
                    boots=[boot_on(TRUE_P, TRUE_A, plan["mem_fraction_static"], pin=200_000)])
    verified = deploy(host, KIMI, plan)
    assert "systemctl reset-failed" in host.calls and verified["facts"]["sglang_starts"] == 1


# A server across nodes: a and b, rank 0 is a. Each phase runs on both before the next; the nodes' results come in
# as one dict, as the action reads them from the run record.
def test_a_node_that_changed_nothing_restarts_with_the_peer_that_changed():
    plan = plan_for(KIMI)["plan"]
    files = {f["dest"]: "%s %s" % (f["src"], " ".join(plan["args"])) for f in FILES}
    a, b = FakeHost(boots=[{"found": False}]), FakeHost(files=files, running=True, boots=[{"found": False}])
    a.task_plan = b.task_plan = plan
    runs = {"a": transaction.new_run(), "b": transaction.new_run()}
    rendered = {node: transaction.render(host, render_args(), runs[node]) for node, host in (("a", a), ("b", b))}
    assert rendered["a"]["files_changed"] and not rendered["b"]["files_changed"]
    started = transaction.start(b, start_args("b", rendered["b"], rendered, multinode=True), runs["b"])
    assert started["run"]["changed_this_run"] is True and started["run"]["starts"] == 1
    assert b.said == ["a changed: b restarts with them"]
    assert [m["reason"] for m in b.snapshots] == ["found"]  # its files did not change: no new entry


def test_a_node_that_did_not_come_up_fails_the_whole_server_naming_it_with_its_journal_redacted():
    plan = plan_for(KIMI)["plan"]
    up = {"ready": True, "boot": boot_on(TRUE_P, TRUE_A, 0.958, pin=200_000)}
    host = FakeHost(ready=False, journal="server_args api_key='sk-secret'\nclients joined: 1/2")
    host.task_plan = plan
    run = transaction.new_run()
    rendered = transaction.render(host, render_args(), run)
    down = transaction.start(host, start_args("b", rendered, {"a": rendered, "b": rendered}, multinode=True), run)
    assert down["ready"] is False and "sk-secret" not in down["journal"] and "<api key>" in down["journal"]
    for node in ("a", "b"):
        with pytest.raises(PhaseFailed, match=r"ct200 did not come up: b \(node rank 1\).*clients joined"):
            transaction.calibrate(FakeHost(), calibrate_args(node, {"a": up, "b": down}, KIMI, plan, order=["a", "b"]),
                                  dict(run))


def test_the_server_pool_is_checked_against_the_least_free_node_which_the_boot_names():
    plan = plan_for(KIMI)["plan"]
    boots = {"a": boot_on(TRUE_P, TRUE_A, 0.958, pin=200_000), "b": boot_on(81.33, 18.9, 0.958, pin=200_000)}
    nodes = {node: {"phase": "calibrate", "boot": boot, "plan": plan, "spec": KIMI} for node, boot in boots.items()}
    for node in ("a", "b"):
        verified = transaction.verify(verify_args(node, nodes, order=["a", "b"]), transaction.new_run())
        assert verified["boot"]["limiting_node"] == "b" and verified["boot"]["pre_load_avail_gib"] == 81.33


def test_verify_needs_no_host():
    plan = plan_for(KIMI)["plan"]
    nodes = {"ct200": {"boot": boot_on(TRUE_P, TRUE_A, 0.958, pin=200_000), "plan": plan, "spec": KIMI}}
    assert transaction.verify(verify_args("ct200", nodes), transaction.new_run())["phase"] == "verify"


RESTORE = {"name": "20261129T0800Z", "unit_path": "/b/20261129T0800Z/sglang.service",
           "runtimes": {"dir": "/opt/sglang/runtimes", "names": ["sglang"]}, "store": STORE,
           "files": [f["dest"] for f in FILES], "service": "sglang", "wait": WAIT}


def test_a_restore_whose_runtime_is_gone_changes_nothing():
    host = FakeHost()
    with pytest.raises(PhaseFailed, match="not on this host"):
        transaction.restore(host, RESTORE, transaction.new_run())
    assert host.store_ops == [] and "ansible.builtin.systemd_service" not in host.calls


def test_a_restore_keeps_the_live_state_first_puts_the_entry_back_and_serves_it():
    old = {"path": "/opt/sglang/runtimes/0.5.9-aaaa", "versions": {"sglang": "0.5.9"}}
    live = {"path": "/opt/sglang/runtimes/0.5.23-bbbb", "versions": {"sglang": "0.5.23"}}
    host = FakeHost(boots=[boot_on(TRUE_P, TRUE_A, 0.958, pin=200_000)],
                    runtimes={RESTORE["unit_path"]: old, FILES[0]["dest"]: live})
    run = transaction.new_run()
    restored = transaction.restore(host, RESTORE, run)
    # the live state is kept (never pruning the entry being restored) before the entry is put back
    assert host.store_ops == [("snapshot", ("20261129T0800Z",)), ("restore", "20261129T0800Z")]
    assert host.snapshots[0]["versions"] == {"sglang": "0.5.23"}
    assert restored["facts"]["sglang_venv_versions"] == {"sglang": "0.5.9"}  # the restored unit's runtime
    assert restored["facts"]["sglang_boot"]["pool_tokens"] == 200_000
    # what the rescue reads: the host changed, and this run is a restore (not rescued by another one)
    assert run["changed_this_run"] is True and run["restored"] == "20261129T0800Z" and run["starts"] == 1
    node = rescue_node({"status": 200}, [], None, "", "the proof failed")
    assert rescue_action(node, {"ct200": []}, rolling_back=bool(run.get("restored")),
                         rescue_from="proof")["action"] == "none"


def test_check_mode_says_whether_sglang_would_restart_with_which_flags():
    planned = plan_for(dict(KIMI, pre_load_avail_gib=TRUE_P, post_load_avail_gib=TRUE_A))["plan"]
    host = FakeHost()
    host.task_plan, host.check_mode = planned, True
    rendered = transaction.render(host, dict(render_args(), plan_args=planned["args"]), transaction.new_run())
    assert rendered["files_changed"]
    assert host.said == ["check mode: the unit, env file or config would change, and SGLang would restart with "
                         + " ".join(planned["args"])]
    same = FakeHost(files={item["dest"]: "%s %s" % (item["src"], " ".join(planned["args"])) for item in FILES})
    same.task_plan, same.check_mode = planned, True
    transaction.render(same, dict(render_args(), plan_args=planned["args"]), transaction.new_run())
    assert same.said == ["check mode: the unit, env file and config are as planned: SGLang would not restart"]
