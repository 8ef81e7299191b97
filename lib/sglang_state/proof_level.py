"""Which proof a run needs: the full one (the long prompt at the target) or a check that costs the server nothing.

A full proof fills 98% of the context target with one prompt: minutes of GPU on a real server, while every
user request waits. It is needed when something could have changed what was proven; otherwise a check
(the same files, the same process, the same versions; then the server's pool and context read back and one
short generation) shows the proven state is the one serving. The record of the last full proof lives on the
host (the role keeps it beside the backup store); proof_record() builds it, proof_level() reads it.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

PROOF_CHOICES = ("auto", "full")
RECORD_FORMAT = 1


class ProofLevelError(ValueError):
    pass


def _parse_time(text):
    try:
        when = datetime.fromisoformat(str(text))
    except ValueError:
        return None
    return when if when.tzinfo else when.replace(tzinfo=UTC)


def _record_problem(record):
    """Why a proof record cannot be compared (a phrase), or None. Fields of the wrong type are a record this module
    did not write: the full proof runs (never a bare Python error)."""
    if record in (None, {}):
        return None
    if not isinstance(record, dict):
        return "is %s, not an object" % type(record).__name__
    for key in ("process", "versions", "files"):
        if record.get(key) is not None and not isinstance(record[key], dict):
            return "has %s of type %s, not an object" % (key, type(record[key]).__name__)
    target = record.get("context_target")
    if target is not None and (isinstance(target, bool) or not isinstance(target, int)):
        return "has context_target %r, not a whole number" % (target,)
    return None


def _process_differences(proven, live):
    """What tells that the serving process is not the one proven (systemd's InvocationID changes on every start)."""
    if not live.get("main_pid") or str(live.get("main_pid")) == "0":
        return "SGLang is not running (MainPID 0)"
    names = (("invocation_id", "InvocationID"), ("main_pid", "MainPID"), ("exec_main_start", "ExecMainStartTimestamp"))
    changed = ["%s %s -> %s" % (label, proven.get(key), live.get(key)) for key, label in names
               if str(proven.get(key)) != str(live.get(key))]
    return "SGLang restarted since the proof (%s)" % ", ".join(changed) if changed else None


def _version_differences(proven, live):
    changed = ["%s %s -> %s" % (name, proven.get(name), live.get(name))
               for name in sorted(set(proven) | set(live)) if proven.get(name) != live.get(name)]
    return "the virtualenv's versions differ from the proven ones (%s)" % ", ".join(changed) if changed else None


def _check_inputs(asked, reprove_after_days):
    if asked not in PROOF_CHOICES:
        raise ProofLevelError("sglang_proof is %r: give 'auto' (a full proof when something changed, a check "
                              "otherwise) or 'full' (e.g. -e sglang_proof=full)." % (asked,))
    try:
        days = float(reprove_after_days)
    except (TypeError, ValueError):
        days = -1.0
    if not math.isfinite(days) or not 0 <= days <= 36_500 or isinstance(reprove_after_days, bool):
        raise ProofLevelError("sglang_reprove_after_days is %r: give the days after which a full proof is repeated "
                              "although nothing changed, a number >= 0 (0: always the full proof; default 7)."
                              % (reprove_after_days,))
    return days


def proof_level(live, record, asked="auto", reprove_after_days=7, now=None):
    """{level: full|check, reason, last_full_at, expect}.

    live: what this run found (all optional but entry/files/process/versions):
      changed_this_run, restarted_this_run, runtime_changed (bools from the role's tasks);
      entry (the backup store's entry holding the live unit, env file and config, or None) and files (its
      digests); process ({invocation_id, main_pid, exec_main_start} from systemctl show); versions (the
      virtualenv's {name: version}); context_target.
    record: the last full proof's record (proof_record()'s output), or {} / None when never proven.
    expect: for a check, the pool and context length the server must report (the proven ones).
    """
    days = _check_inputs(asked, reprove_after_days)
    now = now or datetime.now(UTC)
    odd = _record_problem(record)
    record = {} if odd else record or {}
    last = record.get("full_at")

    def full(reason):
        return {"level": "full", "reason": reason, "last_full_at": last, "expect": {}}

    if asked == "full":
        return full("asked for (sglang_proof=full)")
    if live.get("changed_this_run"):
        return full("this run changed the unit, the env file or the config")
    if live.get("restarted_this_run"):
        return full("this run (re)started SGLang")
    if live.get("runtime_changed"):
        return full("this run changed the virtualenv (SGLang or a kernel was installed)")
    if odd:
        return full("the proof record %s (a hand edit or damage): it proves nothing" % odd)
    if not record:
        return full("no full proof recorded on this host yet")
    if record.get("format") != RECORD_FORMAT:
        return full("the proof record has format %r, not %d (written by another release of the role)"
                    % (record.get("format"), RECORD_FORMAT))
    if not live.get("entry"):
        return full("the live unit, env file and config match no entry of the backup store")
    if live.get("entry") != record.get("entry") or live.get("files") != record.get("files"):
        return full("the live unit, env file and config are not the proven ones (live entry %s, proven %s)"
                    % (live.get("entry"), record.get("entry")))
    process = _process_differences(record.get("process") or {}, live.get("process") or {})
    if process:
        return full(process)
    versions = _version_differences(record.get("versions") or {}, live.get("versions") or {})
    if versions:
        return full(versions)
    target = live.get("context_target")
    if target is not None and record.get("context_target") is not None and \
            int(target) != int(record["context_target"]):
        return full("the context target is %s, the proof was for %s" % (target, record["context_target"]))
    when = _parse_time(last)
    if when is None:
        return full("the proof record's time %r cannot be read" % (last,))
    age = now - when
    if age < -timedelta(hours=1):  # a clock that was wrong at proof time would skip the periodic proof forever
        return full("the last full proof's time (%s) is in the future: the clock was wrong then or is now" % last)
    if age > timedelta(days=days):
        return full("the last full proof (%s) is %.1f days old, more than sglang_reprove_after_days=%g"
                    % (last, age.total_seconds() / 86400.0, days))
    return {"level": "check", "last_full_at": last,
            "reason": "nothing changed since the full proof of %s (same files, process and versions)" % last,
            "expect": {"pool_tokens": record.get("pool_tokens"), "context_length": record.get("context_length")}}


def proof_record(live, smoke, at=None):
    """The record a passed full proof leaves: what proof_level() compares the next run with."""
    return {"format": RECORD_FORMAT, "entry": live.get("entry"), "files": live.get("files") or {},
            "process": live.get("process") or {}, "versions": live.get("versions") or {},
            "context_target": live.get("context_target"), "pool_tokens": smoke.get("pool_tokens"),
            "context_length": smoke.get("context_length"), "prompt_tokens": smoke.get("prompt_tokens"),
            "elapsed_s": smoke.get("elapsed_s"), "prefill_tokens_per_s": smoke.get("prefill_tokens_per_s"),
            "decode": smoke.get("decode"), "concurrency": smoke.get("concurrency"),
            "full_at": at or datetime.now(UTC).isoformat(timespec="seconds")}


def serving_process(properties, record=None):
    """{process, proven}: the serving process from the unit's systemd properties (InvocationID, MainPID,
    ExecMainStartTimestamp, as library/sglang_unit_state.py reads them; a unit not installed yet: empty InvocationID,
    MainPID 0), and whether it is the process the last full proof saw (the install skips its runtime check then)."""
    props = properties or {}
    process = {"invocation_id": props.get("InvocationID", ""), "main_pid": props.get("MainPID", "0"),
               "exec_main_start": props.get("ExecMainStartTimestamp", "")}
    proven = process["main_pid"] != "0" and (record or {}).get("process", {}) == process
    return {"process": process, "proven": proven}


def server_proof_level(own, nodes_levels):
    """A server across nodes is proven as one: in full when any of its nodes needs it (that node's reason)."""
    return next((level for level in nodes_levels or [] if isinstance(level, dict) and level.get("level") == "full"),
                own)


def proof_ran(planned, smoke):
    """The proof that ran: the planned one, unless a check found a difference and ran the full proof itself
    (the module's level and its escalated reason say so). A full proof that ran is the last full one: its time is
    the record it leaves (proof_record(), made once), not the planned level's, which is the one before."""
    smoke = smoke or {}
    level = smoke.get("level", planned.get("level"))
    return dict(planned, level=level, reason=smoke.get("escalated") or planned.get("reason"),
                last_full_at=None if level == "full" else planned.get("last_full_at"))


def live_state(before, changed_this_run, restarted_this_run, runtime_changed, process, versions, context_target):
    """What this run knows of a node's live state (proof_level()'s live), each part an argument:
    before: the store's snapshot the render phase took ({entries}; the entry marked current holds the live
    files; {} when no deploy ran, as in a rollback); changed_this_run / restarted_this_run: the flags the deploy
    (or a restore) noted; runtime_changed: whether this run switched the runtime; process: the serving process
    (transaction_proof.decide); versions: the runtime's versions; context_target: the server's proof target."""
    flags = {"changed_this_run": changed_this_run, "restarted_this_run": restarted_this_run,
             "runtime_changed": runtime_changed}
    for name, value in flags.items():
        if not isinstance(value, bool):
            raise ProofLevelError("live_state: %s is %r, not a boolean (the role passes it through | bool)"
                                  % (name, value))
    current = next((entry for entry in (before or {}).get("entries") or []
                    if isinstance(entry, dict) and entry.get("current")), {})
    return {**flags,
            "entry": current.get("name"), "files": current.get("files", {}),
            "process": process, "versions": versions or {}, "context_target": int(context_target)}
