"""The transaction's rescue, for every failure of a run after its first changed file (a boot that fails, OOM, a bad
flag, a readiness timeout, a pool short of the target, a failed proof), run by the sglang_rescue action. In phases,
because the nodes of a server across nodes decide together:

  look    this node's journal (its last lines, the key redacted), whether the server answers /health_generate, and
          its backup store
  rescue  the decision (lib/sglang_state/rescue.py: keep, leave for inspection, restore, stop; every node of a server
          the same), then the restore or the stop. Without a restore it fails with the run's last message: the
          failure, what was done, and the journal. After a restore it returns what that message says and the proof
          to run:
  (proof) roles/sglang/tasks/rescue.yml proves the restored state as a rollback does, with sglang_prove's prove
          phase on rank 0 (the check at least: the pool and context as proven, one short prompt answered)
  end     rank 0's proof read: a passed one moves the restored entry's proof time in the backup store (it is the
          state that served, proven, most recently) and lets the replica rejoin its routers; then the run's last
          message, which says whether the restored state proved. It always fails: the run failed.
"""

from __future__ import annotations

from sglang_state.rescue import (
    rescue_action,
    rescue_message,
    rescue_node,
    restored_proof,
    restored_proof_mark,
    restored_proof_outcome,
)
from sglang_state.transaction import STORE_MODULE, PhaseFailed, restore


def _store(ex, folder, files):
    read = ex.module("sglang_backup_store_info", {"dir": folder, "files": files})
    if read.get("failed"):
        return {"entries": [], "current": None, "last_proven": None, "problem": read.get("msg")}
    return {"entries": read.get("entries") or [], "current": read.get("current"),
            "last_proven": read.get("last_proven")}


def look(ex, args, run):
    """args: service, url (the server's, for /health_generate), api_key, store {dir, ...}, files (the service's)."""
    service, key = args["service"], args.get("api_key") or ""
    journal = ex.module("ansible.builtin.command", {"argv": ["journalctl", "-u", service, "-n", "15", "--no-pager",
                                                             "-o", "cat"]}, secret=True)
    text = str(journal.get("stdout") or "")
    # a server that does not answer is a failed request with status -1: only the status is read
    request = {"url": args["url"] + "/health_generate", "timeout": 30,
               "headers": {"Authorization": "Bearer " + key} if key else {}}
    health = ex.module("ansible.builtin.uri", request, secret=True)
    return {"phase": "look", "changed": False, "journal": text.replace(key, "<api key>") if key else text,
            "status": health.get("status", -1), "store": _store(ex, args["store"]["dir"], args["files"]), "run": run}


def rescue(ex, args, run):
    """args: failure (the failure's sentence), failed_in ('proof' after a verified deploy), nodes {node: its look},
    host, rank0, rollback_on_failure, and what restore() takes (its name is the decision's target)."""
    nodes, host = args["nodes"], args["host"]
    own = nodes.get(host) or {}
    store = own.get("store") or {}
    rank0 = nodes.get(args["rank0"]) or own
    node = rescue_node({"status": rank0.get("status", -1)}, store.get("entries"), store.get("last_proven"),
                       run.get("run_backup"), args["failure"])
    decided = rescue_action(node, {name: (each.get("store") or {}).get("entries") for name, each in nodes.items()},
                            bool(run.get("restored")), args.get("failed_in") or "", bool(args["rollback_on_failure"]))
    facts = {"service": args["service"], "rescue_from": args.get("failed_in") or "", "journal": own.get("journal"),
             "api_key": args.get("api_key") or "", "versions_now": args.get("versions") or {}}
    if decided["action"] == "restore":
        entry = next((each for each in store.get("entries") or [] if each.get("name") == decided["target"]), {})
        try:
            restored = restore(ex, dict(args["restore"], name=decided["target"],
                                        unit_path="%s/%s" % (entry.get("path"), args["restore"]["unit_name"])), run)
            facts["versions_now"] = restored["facts"]["sglang_venv_versions"]
        except PhaseFailed as failure:
            decided = dict(decided, action="restore-failed")
            facts["restore_failure"] = str(failure)
    elif decided["action"] == "stop":
        ex.module("ansible.builtin.systemd_service", {"name": args["service"], "state": "stopped"})
    if decided["action"] == "restore":
        after = _store(ex, args["restore"]["store"]["dir"], args["restore"]["files"])
        facts.update(current=after["current"],
                     entry=next((each for each in after["entries"] if each.get("name") == decided["target"]), {}))
        # the restored state is proven next (rescue.yml), then `end` says it all; the key stays out of the result
        said = {"decided": decided, "facts": {k: v for k, v in facts.items() if k != "api_key"}}
        return {"phase": "rescue", "changed": True, "run": run, "said": said,
                "proof": restored_proof(facts["entry"] or {"name": decided["target"]})}
    facts.update(current=store.get("current"), entry={})
    raise PhaseFailed(rescue_message(decided, facts))


def end(ex, args, run):
    """args: said (the rescue phase's), proved (rank 0's result of the proof of the restored state; None when rank 0
    ran none), rank0, store, files, api_key. A passed proof is recorded on the restored entry (its proof time moves
    forward: a check never proves an entry that was not) and lets the replica rejoin its routers
    (run.restored_serves, which roles/sglang/tasks/routers_back.yml reads). Always fails with the run's message."""
    said = args["said"]
    passed, sentence = restored_proof_outcome(args.get("proved"), args["rank0"])
    if passed:
        mark = dict(args["store"], files=args["files"], state="proven", manifest={},
                    proof=restored_proof_mark(args["proved"]["smoke"]))
        marked = ex.module(STORE_MODULE, mark)
        if marked.get("failed"):  # the state serves and proved: say what was not recorded, never hide the rest
            sentence += " Recording that proof in the backup store failed: %s" % marked.get("msg")
        run["restored_serves"] = True  # the restored state answers and proved: its replica may rejoin its routers
    facts = dict(said["facts"], proof=sentence, api_key=args.get("api_key") or "")
    raise PhaseFailed(rescue_message(said["decided"], facts))
