"""What the rescue does after a run's failure (transaction_rescue.py performs it), and what it says.

The cases (docs/when-things-go-wrong.md, "What the rescue does"):
  - nothing changed this run: the failure as it is (rescue.yml fails before deciding: nothing to undo);
  - the live state is proven on every node of the server and answers: kept;
  - a rollback (playbooks/rollback.yml) is not rescued by another one: none;
  - a failed proof of a state that answers, sglang_rollback_on_failure false: left running for inspection;
  - otherwise, with a state to go back to: restore it (always after a failed deploy or a start never healthy), then
    prove it as a rollback does (restored_proof(): the check at least) and say whether it proved;
  - no state to go back to (a first install): stop the unit.
"""

from __future__ import annotations

import json
import os

from sglang_state.module_utils_file import load as load_module_utils

# module_utils/sglang_journal.py writes the excerpt the failure's message ends with: the one place that knows its shape
without_excerpt = load_module_utils("sglang_journal").without_excerpt


def failure_reason(failed_result, failed_task=None):
    """One sentence for the failure: the task's message (or its name), its stderr, without the journal excerpt of a
    failed wait (the rescue shows the journal once, at the end)."""
    result = failed_result if isinstance(failed_result, dict) else {}
    task = failed_task if isinstance(failed_task, dict) else {}
    if "msg" in result:
        text = str(result["msg"])
    else:
        text = 'the task "%s" failed' % (task.get("name") or "?")
    stderr = str(result.get("stderr") or "").strip()
    if result.get("stderr"):
        text += " (%s)" % stderr
    return without_excerpt(text)


def rescue_node(health, backups, last_proven, run_backup, failure=""):
    """This node's part of the decision: {failure, healthy, current_proven, target}.

    health: the /health_generate answer of the server's rank 0 (its HTTP API; the other nodes answer a health-only
    server); backups: the store's entries; last_proven: the newest proven entry's name; run_backup: the path of the
    entry that held the state serving before this run (a host whose store has no proof yet goes back to that).
    """
    health = health if isinstance(health, dict) else {}
    entries = [entry for entry in backups or [] if isinstance(entry, dict)]
    return {"failure": failure, "healthy": health.get("status", -1) == 200,
            "current_proven": any(entry.get("current") and entry.get("proven") for entry in entries),
            "target": last_proven or os.path.basename(str(run_backup or "")) or ""}


def _action(node, nodes_current_proven, rolling_back, rescue_from, rollback_on_failure):
    if all(nodes_current_proven) and node["healthy"]:
        return "kept"
    if rolling_back:
        return "none"
    if rescue_from == "proof" and node["healthy"] and not rollback_on_failure:
        return "left"
    return "restore" if node["target"] else "stop"


def nodes_current_proven(node, nodes_backups):
    """Whether the live state is proven on each node of the server in this batch, by each node's store entries.
    nodes_backups: {node: its store entries} (rescue.yml gathers them after backups.yml read them on every node of
    the rescue); a node whose entries are None (not read) counts as this one."""
    return [node["current_proven"] if backups is None else rescue_node({}, backups, None, "")["current_proven"]
            for backups in (nodes_backups or {}).values()]


def rescue_action(node, nodes_backups, rolling_back=False, rescue_from="", rollback_on_failure=False):
    """rescue_node()'s dict with its action: kept | none | left | restore | stop. Across nodes (nodes_backups: the
    store entries of the server's nodes in this batch, by node) every node decides the same: the live state is
    kept only when it is proven on all of them, else each node restores its last proven entry, unchanged ones
    too, so that all restart together."""
    return dict(node, action=_action(node, nodes_current_proven(node, nodes_backups), bool(rolling_back),
                                     rescue_from or "", bool(rollback_on_failure)))


def _whole(value):
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def restored_proof(entry):
    """The proof of the state the rescue restored, as a rollback proves its restore (roles/sglang/tasks/rescue.yml
    gives it to sglang_prove's prove phase): {planned, smoke}. The check a re-run makes of a proven state: SGLang's
    pool and context length read back and compared with the entry's proven ones, then one short prompt answered;
    a check that finds a difference runs the full proof itself (library/sglang_smoke_test.py). The server is held
    to the entry's own target (smoke: what replaces the role's smoke arguments; None leaves one out), and its
    answer to the check's own needle: this run's sglang_smoke_expect was asked of the state this run deployed (a
    wrong one may be what failed), not of the state the rescue put back."""
    proven = entry.get("proven") if isinstance(entry.get("proven"), dict) else {}
    expect = {key: proven[key] for key in ("pool_tokens", "context_length") if _whole(proven.get(key))}
    target = entry.get("context_target") if _whole(entry.get("context_target")) else None
    return {"planned": {"level": "check", "reason": "the rescue restored %s" % entry.get("name"),
                        "last_full_at": proven.get("at"), "expect": expect},
            "smoke": {"context_target": target, "min_pool_tokens": target, "expect": None}}


def restored_proof_outcome(proved, rank0):
    """(passed, sentence) for the proof of the restored state. proved: rank 0's result of sglang_prove's prove phase
    (its `smoke`, sglang_smoke_test's result, failed or not), or None when rank 0 ran none."""
    smoke = proved.get("smoke") if isinstance(proved, dict) else None
    if not isinstance(smoke, dict):
        why = (proved or {}).get("msg") if isinstance(proved, dict) else None
        return False, "The restored state did not prove: %s, rank 0, ran no proof of it (%s)." % (
            rank0, why or "its own rescue failed")
    if smoke.get("failed"):
        return False, "The restored state did not prove: %s" % without_excerpt(
            str(smoke.get("msg") or "its proof failed"))
    numbers = "pool %s tokens, context length %s, a %s-token prompt answered" % (
        smoke.get("pool_tokens", "?"), smoke.get("context_length", "?"), smoke.get("prompt_tokens", "?"))
    if smoke.get("level") == "full":
        return True, "It proved again in full (%s): %s." % (smoke.get("escalated") or "the full proof ran", numbers)
    return True, "It proved again with the check (%s, as proven)." % numbers


def restored_proof_mark(smoke):
    """What the backup store records of a passed proof of the restored state (sglang_backup_store state=proven):
    its level (a check moves the time of a state proven in full, never proves one) and, for a full one, its
    measurements, as the role's own proof records them."""
    names = ("pool_tokens", "min_pool_tokens", "context_target", "context_length", "prompt_tokens", "elapsed_s",
             "decode")
    level = "full" if smoke.get("level") == "full" else "check"
    return dict({name: smoke.get(name) for name in names}, level=level)


def _drift(entry_versions, versions_now):
    return any(version and versions_now.get(name) != version for name, version in entry_versions.items())


def rescue_message(decision, facts):
    """The run's last message: the failure, what the rescue did, and the journal's last lines (the key redacted).

    decision: rescue_node()'s dict with failure and action; facts: service, rescue_from, current (the store's live
    entry), entry (the target's entry after the restore), versions_now, restore_failure, proof (after a restore,
    restored_proof_outcome()'s sentence), journal, api_key.
    """
    action, target = decision["action"], decision["target"]
    entry = facts.get("entry") or {}
    versions_now = facts.get("versions_now") or {}
    service = facts.get("service")
    if action == "kept":
        outcome = "The live state is the proven entry %s, and it serves." % facts.get("current")
    elif action == "none":
        outcome = "(A rollback is not rescued by another one; `-e sglang_rollback_list=true` lists the proven states.)"
    elif action == "left":
        outcome = ("The new state boots, so it stays running for inspection (sglang_rollback_on_failure is false); "
                   "`ansible-playbook playbooks/rollback.yml` restores the last proven state%s."
                   % (" " + target if target else ""))
    elif action == "restore":
        if facts.get("rescue_from") == "proof" and decision["healthy"]:
            why = " (sglang_rollback_on_failure)"
        elif not decision["healthy"]:
            why = " (always, for a start that never became healthy)"
        else:
            why = " (always, for a failed deploy)"
        outcome = "Restored the last %s state %s (context %s), which serves again%s." % (
            "proven" if entry.get("proven") else "known (unproven)", target, entry.get("context_target", "?"), why)
        if _drift(entry.get("versions") or {}, versions_now):
            # Only an entry stored before runtimes: its unit names the one virtualenv, upgraded in place since.
            # A runtime is never changed, so an entry that names one always gets back what it ran.
            outcome += (" Its virtualenv now has %s where that state ran %s (an entry from before runtimes, whose "
                        "virtualenv was upgraded in place): run site.yml with those versions to build a runtime of "
                        "them." % (json.dumps(versions_now), json.dumps(entry.get("versions"))))
        if facts.get("proof"):
            outcome += " " + facts["proof"]
    elif action == "restore-failed":
        outcome = "Restoring %s failed as well: %s" % (target, facts.get("restore_failure") or "")
    else:
        outcome = ("There is no earlier proven state to restore (a first install?), so %s is left stopped."
                   % service)
    journal = str(facts.get("journal") or "")
    if facts.get("api_key"):
        journal = journal.replace(facts["api_key"], "<api key>")
    title = "Last lines of %s's journal before the rescue:" % service
    return "%s %s\n%s\n%s" % (decision["failure"], outcome, title, journal)
