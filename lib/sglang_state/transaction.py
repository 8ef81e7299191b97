"""The deploy transaction: render, restart, wait, read the boot, calibrate, correct once, verify.

Plain Python over an executor (lib/sglang_state/phase_action.py gives the sglang_deploy action Ansible's modules and
templates; the unit tests give it a fake host), so every path of a deploy is tested without YAML. It runs in phases
because the nodes of a server across nodes move in lockstep: between two phases every node has finished the earlier
one, and the next phase takes the nodes' results as one argument ({node: that node's result}, gathered by the role
from the documented `sglang_deploy` result each phase registers), never by reading another host's variables.

Two runs never interleave here: the store's lock covers each store call only, so the whole transaction (the
render's snapshot, the files it writes, the restart, a rescue's restore) runs under the host's run lock, taken by
every entry point that reaches it (site.yml, rollback.yml, the role's main; library/sglang_run_lock.py). The lock
is not checked again per phase: each phase is an action on the controller inside the run that holds it, and a
second check would only repeat a read that no other run can change while the lease is held.

  render     keep the serving state in the backup store, render the unit, env file and config
  start      restart when this server's files changed (a node of a server across nodes restarts with its peers),
             keep the new state in the store, wait for /health_generate, read what SGLang measured while booting
  calibrate  the server's boot (the least-free node), the calibration (stored when new or stale), and when an
             estimated plan fell short: re-plan from the measured boot, render, restart and read the boot once more
  verify     the server's pool holds the plan and the headroom is there; the facts the proof and report read

Each phase returns {phase, changed, run, ...}: `run` is what this run has done to the host so far (carried from
phase to phase, failed phases included, so the rescue knows whether there is anything to undo). A failure raises
PhaseFailed with one sentence; the action returns it as a failed result with `run`.
"""

from __future__ import annotations

import sglang_kvplan
from sglang_kvplan.spec import BOOT_FLAG_KEYS

from sglang_state.correction import correction
from sglang_state.proof_level import serving_process
from sglang_state.restarts import deploy_changes, peer_restart, server_boot

STORE_MODULE = "sglang_backup_store"
WAIT_MODULE = "sglang_wait_ready"
BOOT_MODULE = "sglang_boot_facts"
FILES_MODULE = "sglang_service_files"
UNIT_MODULE = "sglang_unit_state"
POLL_S = 8


class PhaseFailed(Exception):
    """A phase's failure: its message is the run's sentence (the rescue quotes it)."""


def new_run():
    """What a run has done to the host before its first phase."""
    return {"changed_this_run": False, "restarted_this_run": False, "run_backup": "", "starts": 0,
            "corrective_restarts": 0, "before": {}}


def succeeded(result, what):
    """The module's result, or PhaseFailed naming what failed and why."""
    if not isinstance(result, dict) or result.get("failed"):
        message = (result or {}).get("msg") if isinstance(result, dict) else None
        raise PhaseFailed("%s: %s" % (what, message or "failed"))
    return result


def _store(ex, store, files, **args):
    return succeeded(ex.module(STORE_MODULE, dict(store, files=files, **args)), "the backup store (%s)" % args["state"])


def _render(ex, files, etc_dir, etc_group, overrides=None):
    """Render the service's files on the controller and put them in place in one module call: (a file changed,
    the folder changed). The unit's diff is shown with --diff; the env file and the config may hold keys: sent as
    secret_content (never logged, no diff), and the call runs with no_log (the executor's `secret`)."""
    folder = {"path": etc_dir, "owner": "root", "group": etc_group, "mode": "0750"}
    sent = []
    for item in files:
        text = ex.render_template(item["src"], overrides)
        sent.append({"dest": item["dest"], "mode": item["mode"], "owner": "root", "group": item.get("group", "root"),
                     ("secret_content" if item.get("secret") else "content"): text})
    result = succeeded(ex.module(FILES_MODULE, {"folder": folder, "files": sent}, secret=True),
                       "putting the server's files in place")
    return bool(result.get("changed_files")), bool(result.get("folder_changed"))


def render(ex, args, run):
    """Phase 1. args: files [{src, dest, mode, group, secret}], etc_dir, etc_group, store {dir, keep, lock_owner},
    before_manifest (the manifest of the state found on the host), plan_args (the planned flags, said in --check);
    run: new_run(), filled in as it goes."""
    dests = [item["dest"] for item in args["files"]]
    # The store keeps the serving state before anything is rendered; it adds nothing when an entry already holds
    # those files (digests), so a re-run writes nothing.
    before = _store(ex, args["store"], dests, state="snapshot", manifest=args["before_manifest"])
    run["before"] = {"name": before.get("name"), "entries": before.get("entries") or []}
    changed, folder_changed = _render(ex, args["files"], args["etc_dir"], args["etc_group"])
    noted = deploy_changes(changed, False, "", before)
    run.update(changed_this_run=noted["changed_this_run"], run_backup=noted["run_backup"])
    if ex.check_mode:  # --check stops after this phase: say what a real run would do
        ex.say("check mode: " + ("the unit, env file or config would change, and SGLang would restart with "
                                 + " ".join(args.get("plan_args") or []) if changed
                                 else "the unit, env file and config are as planned: SGLang would not restart"))
    return {"phase": "render", "changed": changed or folder_changed or bool(before.get("changed")),
            "files_changed": changed, "run": run}


def read_unit(ex, service, record_path=None):
    """The unit read in one call (library/sglang_unit_state.py: one `systemctl show`): {properties, record}.
    properties: whether it failed, runs and is enabled (ActiveState, UnitFileState), and which process serves
    (proof_level.serving_process reads them); record: the last full proof's record at record_path ({} when none was
    asked for, or there is none)."""
    args = {"unit": service}
    if record_path:
        args["record"] = record_path
    result = succeeded(ex.module(UNIT_MODULE, args), "reading the unit %s" % service)
    properties, record = result.get("properties"), result.get("record")
    return {"properties": properties if isinstance(properties, dict) else {},
            "record": record if isinstance(record, dict) else {}}


def _systemctl(ex, verb, service):
    return ex.module("ansible.builtin.command", {"argv": ["systemctl", verb, service]})


def _restart(ex, service, run):
    """A deliberate (re)start: clear systemd's start limit first (a unit not loaded yet has nothing to reset)."""
    reset = _systemctl(ex, "reset-failed", service)
    if reset.get("rc", 0) != 0 and "not loaded" not in str(reset.get("stderr", "")):
        raise PhaseFailed("systemctl reset-failed %s: %s" % (service, reset.get("stderr") or reset.get("msg")))
    unit = {"name": service, "state": "restarted", "enabled": True, "daemon_reload": True}
    succeeded(ex.module("ansible.builtin.systemd_service", unit), "restarting %s" % service)
    run["starts"] += 1
    run["restarted_this_run"] = True
    run.pop("process", None)  # another process serves now: the proof reads it


def _wait(ex, wait, multinode):
    """{ready, msg}: one module call per POLL_S seconds, each try's stage printed as a progress line, until SGLang
    answers /health_generate, dies or runs past its timeout (the module enforces it from the unit's start). Across
    nodes a node that did not come up is not a failure here: the server fails as one in calibrate()."""
    args = {name: value for name, value in dict(wait, poll=POLL_S).items() if name != "api_key" or value}
    for _try in range(int(wait["timeout"]) // POLL_S + 2):
        result = ex.module(WAIT_MODULE, args)
        if result.get("failed"):
            if multinode:
                return {"ready": False, "msg": result.get("msg") or "not ready"}
            raise PhaseFailed(result.get("msg") or "SGLang did not become ready")
        if result.get("ready"):
            return {"ready": True, "msg": "", "elapsed_s": result.get("elapsed_s")}
        if result.get("progress"):
            ex.say(result["progress"])
    if multinode:
        return {"ready": False, "msg": "not ready after %s s" % wait["timeout"]}
    raise PhaseFailed("SGLang did not answer /health_generate within %s s" % wait["timeout"])


def _boot(ex, service, restarted):
    """This node's boot lines, read only after a start of this run (a re-run that restarted nothing must not depend
    on lines the journal may have rotated away): {found: false} otherwise."""
    if not restarted:
        return {"found": False}
    return succeeded(ex.module(BOOT_MODULE, {"unit": service}), "reading what SGLang measured while booting")


def _journal(ex, service, api_key):
    result = ex.module("ansible.builtin.command", {"argv": ["journalctl", "-u", service, "-n", "12", "--no-pager",
                                                            "-o", "cat"]}, secret=True)
    lines = " | ".join(str(result.get("stdout") or "").splitlines()[-6:])
    return lines.replace(api_key, "<api key>") if api_key else lines


def start(ex, args, run):
    """Phase 2. args: host, multinode, service, files_changed, nodes {node: its render result} (the server's nodes in
    this batch), store, files, state_manifest, wait {url, unit, timeout, api_key}, record (the last full proof's, as
    observe read it: {} when never proven)."""
    service, multinode = args["service"], bool(args["multinode"])
    changed = {node: bool((result or {}).get("files_changed")) for node, result in (args.get("nodes") or {}).items()}
    peers = peer_restart(changed, args["host"], multinode, run["changed_this_run"])
    if peers["restart"]:
        # SGLang's ranks start together: a node left running the old state would wait for peers that restarted.
        run["changed_this_run"] = True
        ex.say("%s changed: %s restarts with them" % (", ".join(peers["changed"]), args["host"]))
    if args["files_changed"]:
        _store(ex, args["store"], [item["dest"] for item in args["files"]], state="snapshot",
               manifest=args["state_manifest"])
    unit = read_unit(ex, service)["properties"]
    serving = serving_process(unit, args.get("record"))
    if args["files_changed"] or peers["restart"] or unit.get("ActiveState") == "failed":
        _restart(ex, service, run)
    elif unit.get("ActiveState") == "active" and unit.get("UnitFileState") == "enabled":
        # running and enabled, its files as they were: nothing to start, and the process read is the serving one
        run["process"] = serving["process"]
    else:
        started = succeeded(ex.module("ansible.builtin.systemd_service",
                                      {"name": service, "state": "started", "enabled": True}),
                            "starting %s" % service)
        run["restarted_this_run"] = run["restarted_this_run"] or bool(started.get("changed"))
    if run.get("process") and serving["proven"]:
        # nothing started, and the process that serves is the one the last full proof saw: it has answered since
        # it booted, and the proof's check (a short prompt) asks it again; no /health_generate wait first
        ready = {"ready": True, "msg": "", "elapsed_s": None}
    else:
        ready = _wait(ex, args["wait"], multinode)
    run["ready_elapsed_s"] = ready.get("elapsed_s")
    journal = "" if ready["ready"] else _journal(ex, service, args["wait"].get("api_key"))
    boot = _boot(ex, service, run["restarted_this_run"]) if ready["ready"] else {"found": False}
    return {"phase": "start", "changed": run["restarted_this_run"], "ready": ready["ready"], "msg": ready["msg"],
            "journal": journal, "boot": boot, "run": run}


def _down(nodes, order):
    out = []
    for node in order:
        result = nodes.get(node) or {}
        if not result.get("ready"):
            out.append("%s (node rank %d): %s Its journal: %s." % (
                node, order.index(node), result.get("msg") or "not ready", result.get("journal") or ""))
    return out


def _calibration(spec, boot, plan, pool_tokens):
    draft = boot.get("draft") or {}
    return sglang_kvplan.calibrate(spec, {
        "pre_load_avail_gib": boot["pre_load_avail_gib"], "post_load_avail_gib": boot["post_load_avail_gib"],
        "mem_fraction_static": plan["mem_fraction_static"], "pool_tokens": pool_tokens,
        "max_total_tokens": plan["max_total_tokens"], "pool_end_avail_gib": boot.get("pool_end_avail_gib"),
        "after_graph_avail_gib": boot.get("after_graph_avail_gib"),
        "draft_pre_load_avail_gib": draft.get("pre_load_avail_gib"),
        "draft_post_load_avail_gib": draft.get("post_load_avail_gib"),
        # what the boot ran (its fraction is the calibration's own): the keys fill.py keeps, spelled once in spec.py
        "boot_flags": {key: plan.get(key) for key in BOOT_FLAG_KEYS if key != "mem_fraction_static"}})


def _facts_file(ex, store, calibration, boot, multinode, nodes, now):
    """Store the calibration as a local fact (ansible_local.<fact>), keyed by this setup, beside earlier ones."""
    entry = dict(calibration, measured_at=now, **store["setup"])
    if multinode:
        entry.update(nodes=nodes, limiting_node=boot.get("limiting_node"))
    entries = dict(store.get("entries") or {}, **{store["key"]: entry})
    succeeded(ex.module("ansible.builtin.file", {"path": store["folder"], "state": "directory", "mode": "0755"}),
              "the local facts folder")
    succeeded(ex.copy({"dest": store["path"], "mode": "0644", "backup": True,
                       "content": ex.to_json({"entries": entries})}), "storing the calibration")


def calibrate(ex, args, run):
    """Phase 3. args: host, rank0, order (the server's nodes in rank order), multinode, nodes {node: its start
    result}, spec, plan, context_target, stored (the calibration stored for this setup), calibration_store {folder,
    path, key, setup, entries}, replan (a callable: {node: calibration} -> the planner's {spec, plan} or {error}),
    and for a corrective pass what render() and start() take (files, etc_dir, etc_group, store, state_manifest,
    service, wait)."""
    nodes, order, multinode = args["nodes"], args["order"], bool(args["multinode"])
    down = _down(nodes, [node for node in order if node in nodes])
    if down:
        raise PhaseFailed("%s did not come up: %s" % (args["server"], " ".join(down)))
    own = (nodes.get(args["host"]) or {}).get("boot") or {"found": False}
    boot = server_boot({node: result.get("boot") for node, result in nodes.items()}, args["rank0"], multinode, own)
    spec, plan, stored = args["spec"], args["plan"], args.get("stored") or {}
    result = {"phase": "calibrate", "changed": False, "boot": own, "spec": spec, "plan": plan, "stored": stored,
              "in_use": args.get("in_use") or {}, "corrected": False, "run": run}
    if not boot.get("found"):
        if run["restarted_this_run"]:
            raise PhaseFailed(
                "%s started and answers, but its journal has no 'Load weight begin/end' and 'KV Cache is allocated' "
                "lines for this start: journald may be dropping them (rate limit, Storage=none). Check `journalctl "
                "-u %s`." % (args["service"], args["service"]))
        return result
    calibration = _calibration(spec, own, plan, boot["pool_tokens"])
    headroom = sglang_kvplan.normalize_spec(spec)["min_headroom_gib"]  # the knob, or the planner's default
    decided = correction(calibration, own, stored, boot["pool_tokens"], plan, args["context_target"], headroom)
    if decided["store"]:
        _facts_file(ex, args["calibration_store"], calibration, boot, multinode, order, ex.now())
        result.update(stored=calibration, changed=True)
    if not decided["correct"]:
        return result
    # Each node's calibration from its own journal: the planner takes the least over the nodes, as SGLang sizes
    # the pool from the least-free rank (an all-reduce MIN); every node computes the same plan from the same boots.
    calibrations = {node: _calibration(spec, each.get("boot") or {}, plan, boot["pool_tokens"])
                    for node, each in nodes.items() if (each.get("boot") or {}).get("found")}
    planned = args["replan"](calibrations)
    if "error" in planned:
        raise PhaseFailed(planned["error"])
    result.update(spec=planned["spec"], plan=planned["plan"], in_use=calibration)
    if planned["plan"]["args"] == decided["previous_args"]:
        return result
    short = ("under the %s planned" % decided["previous_required"] if decided["cause"] == "pool" else
             "leaving %s GiB free after it, under sglang_min_headroom_gib %s" % (own.get("pool_end_avail_gib"),
                                                                                 headroom))
    ex.say("The pool came out at %s tokens, %s: the %s was off. Re-planned with what SGLang measured (P %s GiB, "
           "A %s GiB): %s. Restarting once." % (
               boot["pool_tokens"], short, "stored calibration" if decided["stale"] else "estimate",
               calibration["pre_load_avail_gib"], calibration["post_load_avail_gib"],
               planned["plan"]["explanation"]))
    run["corrective_restarts"] += 1
    overrides = {"sglang_kv_plan_result": planned["plan"], "sglang_kv_spec": planned["spec"]}
    changed, _folder = _render(ex, args["files"], args["etc_dir"], args["etc_group"], overrides)
    if changed:
        manifest = dict(args["state_manifest"], plan=planned["plan"].get("explanation", ""),
                        calibrated=bool(planned["plan"].get("calibrated")))
        _store(ex, args["store"], [item["dest"] for item in args["files"]], state="snapshot", manifest=manifest)
    _restart(ex, args["service"], run)
    ready = _wait(ex, args["wait"], multinode)
    run["ready_elapsed_s"] = ready.get("elapsed_s")
    result.update(changed=True, corrected=True, ready=ready["ready"], msg=ready["msg"],
                  journal="" if ready["ready"] else _journal(ex, args["service"], args["wait"].get("api_key")),
                  boot=_boot(ex, args["service"], True) if ready["ready"] else {"found": False})
    return result


def verify(args, run):
    """Phase 4 (no host work). args: host, rank0, order, multinode, nodes {node: its calibrate result},
    context_target, min_headroom_gib, server. The server's boot after the last start of this run, checked against
    the plan it ran; returns the facts the proof, the summary and the report read."""
    nodes, multinode = args["nodes"], bool(args["multinode"])
    own = nodes.get(args["host"]) or {}
    if own.get("corrected"):
        down = _down(nodes, [node for node in args["order"] if node in nodes])
        if down:
            raise PhaseFailed("%s did not come up: %s" % (args["server"], " ".join(down)))
    boot = server_boot({node: each.get("boot") for node, each in nodes.items()}, args["rank0"], multinode,
                       own.get("boot"))
    plan = own["plan"]
    facts = {"sglang_boot": boot, "sglang_kv_plan_result": plan, "sglang_kv_spec": own["spec"],
             "sglang_changed_this_run": run["changed_this_run"],
             "sglang_restarted_this_run": run["restarted_this_run"], "sglang_run_backup": run["run_backup"],
             "sglang_ready": {"elapsed_s": run.get("ready_elapsed_s")}, "sglang_starts": run["starts"],
             "sglang_corrective_restarts": run["corrective_restarts"],
             "calibration_in_use": own.get("in_use") or {}, "calibration_stored": own.get("stored") or {}}
    if boot.get("found"):
        planned = plan.get("max_total_tokens") or args["context_target"]
        if int(boot["pool_tokens"]) < int(planned):
            raise PhaseFailed(
                "SGLang's KV pool holds %s tokens, under the %s planned for sglang_context_target %s: with what this "
                "host really has free (P %s GiB before the weights, A %s GiB after) the profile at "
                "--mem-fraction-static %s does not reach it. Lower sglang_context_target, set sglang_kv_cache_dtype "
                "fp8_e4m3, or use more GPUs." % (boot["pool_tokens"], planned, args["context_target"],
                                                 boot.get("pre_load_avail_gib"), boot.get("post_load_avail_gib"),
                                                 plan.get("mem_fraction_static")))
        end = boot.get("pool_end_avail_gib")
        if end is not None and float(end) < float(args["min_headroom_gib"]) - 0.01:
            raise PhaseFailed(
                "The pool holds %s tokens, but SGLang logged only %s GiB free after it ('Memory pool end'), under "
                "sglang_min_headroom_gib %s: CUDA graphs and long prefills would run out of memory. Lower "
                "sglang_context_target or set sglang_kv_cache_dtype fp8_e4m3." % (
                    boot["pool_tokens"], end, args["min_headroom_gib"]))
    return {"phase": "verify", "changed": False, "boot": boot, "run": run, "facts": facts}


RUNTIME_MODULE = "sglang_runtime"


def restore(ex, args, run):
    """Put a store entry back and serve it (the rescue's restore and playbooks/rollback.yml). A state is its unit, env
    file, config AND the runtime the unit names: the entry's runtime is checked to be on the host before anything
    changes (going back is a switch of runtime, no pip, no network); the live state is kept in the store first
    (never pruning the entry being restored), so a restore can be undone too.

    args: name (the entry), unit_path (the entry's copy of the unit), runtimes {dir, names}, store, files (the
    service's file paths), service, wait. Returns the facts a proof and the report read of the restored state;
    run.restored names the entry (the rescue does not restore again after a failed proof of a restored state)."""
    runtimes, name = args["runtimes"], args["name"]
    entry_runtime = {"state": "versions", "dir": runtimes["dir"], "unit": args["unit_path"],
                     "names": runtimes["names"], "entry": name}
    succeeded(ex.module(RUNTIME_MODULE, entry_runtime), "the runtime of %s" % name)
    live = ex.module(RUNTIME_MODULE, {"state": "versions", "dir": runtimes["dir"], "unit": args["files"][0],
                                      "names": runtimes["names"]})
    if live.get("failed"):  # a live unit that names no runtime (or a gone one) must not block going back
        live = {}
    _store(ex, args["store"], args["files"], state="snapshot", protect=[name],
           manifest={"reason": "replaced by a restore of %s" % name, "versions": live.get("versions") or {},
                     "runtime": live.get("path")})
    run.update(changed_this_run=True, restored=name)
    _store(ex, args["store"], args["files"], state="restore", name=name)
    versions = succeeded(ex.module(RUNTIME_MODULE, {"state": "versions", "dir": runtimes["dir"],
                                                    "unit": args["files"][0], "names": runtimes["names"]}),
                         "the restored runtime's versions")
    _restart(ex, args["service"], run)
    ready = _wait(ex, args["wait"], False)
    run["ready_elapsed_s"] = ready.get("elapsed_s")
    boot = _boot(ex, args["service"], True)
    return {"phase": "restore", "changed": True, "run": run,
            "facts": {"sglang_venv_versions": versions.get("versions") or {}, "sglang_boot": boot,
                      "sglang_restarted_this_run": True, "sglang_changed_this_run": True,
                      "sglang_starts": run["starts"],
                      "sglang_ready": {"elapsed_s": run.get("ready_elapsed_s")}}}
