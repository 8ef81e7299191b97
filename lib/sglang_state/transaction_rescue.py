"""The transaction's rescue, for every failure of a run after its first changed file (a boot that fails, OOM, a bad
flag, a readiness timeout, a pool short of the target, a failed proof), run by the sglang_rescue action. Two phases,
because the nodes of a server across nodes decide together:

  look    this node's journal (its last lines, the key redacted), whether the server answers /health_generate, and
          its backup store
  rescue  the decision (lib/sglang_state/rescue.py: keep, leave for inspection, restore, stop; every node of a server
          the same), then the restore or the stop, and the run's last message: the failure, what was done, and the
          journal. It always fails: the run failed.
"""

from __future__ import annotations

from sglang_state.rescue import rescue_action, rescue_message, rescue_node
from sglang_state.transaction import PhaseFailed, restore


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
            run["restored_serves"] = True  # the last proven state answers: its replica may rejoin its routers
        except PhaseFailed as failure:
            decided = dict(decided, action="restore-failed")
            facts["restore_failure"] = str(failure)
    elif decided["action"] == "stop":
        ex.module("ansible.builtin.systemd_service", {"name": args["service"], "state": "stopped"})
    if decided["action"] == "restore":
        after = _store(ex, args["restore"]["store"]["dir"], args["restore"]["files"])
        facts.update(current=after["current"],
                     entry=next((each for each in after["entries"] if each.get("name") == decided["target"]), {}))
    else:
        facts.update(current=store.get("current"), entry={})
    raise PhaseFailed(rescue_message(decided, facts))
