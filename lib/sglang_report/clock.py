"""The day-1 clock: when each phase of a run began and ended, and where the time went.

The driver and CUDA phases are marked as they run (the filter sglang_clock_mark, `mark` below) into a host fact,
and the download's by its action into the run record (action_plugins/hf_download.py), {phase: {start, end, note}},
times in epoch seconds on the controller's clock; the download's figures ride along under `fetch`. The runtime,
the boot and the proof are read from the results of the actions that run them, each of which carries its own span
(`from_results`). The report turns the whole into `section` (report.json's `clock`) and the summary's line (`line`).
A phase this run did not reach has no entry; one it began and did not end (a failure) has no end.
"""

from __future__ import annotations

import datetime
import math

PHASES = ("driver", "cuda", "runtime", "download", "boot", "proof")
EDGES = ("start", "end")
DOWNLOAD_KEYS = ("bytes_total", "bytes_fetched", "connections", "bytes_per_s")


class ClockError(ValueError):
    """A clock that is not of the shape the role writes: one sentence naming the field."""


def mark(clock, phase, edge, when, note=None):
    """The clock with `phase`'s `edge` set to `when` (and its note, when one is given); `clock` is not changed."""
    if phase not in PHASES:
        raise ClockError("day-1 clock: unknown phase %r; the phases are %s" % (phase, ", ".join(PHASES)))
    if edge not in EDGES:
        raise ClockError("day-1 clock: the edge of %s must be start or end, not %r" % (phase, edge))
    out = {key: dict(value) if isinstance(value, dict) else value for key, value in (clock or {}).items()}
    entry = out.setdefault(phase, {})
    # a phase met twice in a run (the model's and the draft's download) spans both: the first start, the last end
    if edge == "end" or "start" not in entry:
        entry[edge] = float(when)
    if note is not None:
        entry["note"] = str(note)
    return out


def add_download(clock, result):
    """The clock with one hf_download result's figures added (a run may fetch the model and its draft)."""
    result = result if isinstance(result, dict) else {}
    out = dict(clock or {})
    got = dict(out.get("fetch") or {})
    # download_fetched: the whole download's bytes (the early download's and every try's), once it is done
    fetched = result.get("download_fetched", result.get("bytes_fetched"))
    for key, value in (("bytes_total", result.get("bytes_total")), ("bytes_fetched", fetched)):
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            got[key] = (got.get(key) or 0) + value
    if isinstance(result.get("connections"), int):
        got["connections"] = max(got.get("connections") or 0, result["connections"])
    out["fetch"] = got
    return out


# How the runtime's action says what it did, as the clock's note says it
RUNTIME_NOTES = {"build": "built", "use": "found complete", "adopt": "adopted"}
# The deploy's phases of a run that deploys (a restore is the rollback's, whose boot the clock does not time)
DEPLOY_PHASES = ("render", "start", "calibrate", "verify")


def _span(result):
    """A registered action result's {start, end} (action_plugins/, lib/sglang_state/phase_action.py), or {}."""
    span = result.get("clock")
    return span if isinstance(span, dict) else {}


def _ended(result, phase, span):
    """The end of a result's span when that phase ran and passed, else None (a phase begun and not ended)."""
    return span.get("end") if result.get("phase") == phase and not result.get("failed") else None


def from_results(runtime, deploy, decided, recorded):
    """The runtime's, the boot's and the proof's entries of the clock, from the results the role registered: the
    runtime's action (its span and what it did), the deploy's last phase (its run record began at render; the boot
    ends when verify passed), the proof's decide (its start) and record (its end, when it passed). A result that is
    missing (a step this run did not reach, or skipped by its tag) leaves its phase out; one that is not a mapping
    counts as missing."""
    runtime, deploy, decided, recorded = (part if isinstance(part, dict) else {}
                                          for part in (runtime, deploy, decided, recorded))
    out = {}
    span = _span(runtime)
    if span.get("start") is not None:
        note = RUNTIME_NOTES.get(runtime.get("action"), runtime.get("action")) or ""
        builder = " with %s" % runtime["builder"] if runtime.get("builder") else ""
        out["runtime"] = {"start": span["start"], "end": _ended(runtime, "install", span), "note": note + builder}
    run = deploy.get("run") if isinstance(deploy.get("run"), dict) else {}
    if deploy.get("phase") in DEPLOY_PHASES and run.get("began") is not None:
        out["boot"] = {"start": run["began"], "end": _ended(deploy, "verify", _span(deploy)),
                       "note": "started" if run.get("restarted_this_run") else "no start: nothing changed"}
    span = _span(decided)
    if span.get("start") is not None:
        level = recorded.get("level") if isinstance(recorded.get("level"), dict) else {}
        out["proof"] = {"start": span["start"], "end": _ended(recorded, "record", _span(recorded)),
                        "note": str(level.get("level") or "")}
    return {phase: {edge: value for edge, value in entry.items() if value is not None}
            for phase, entry in out.items()}


def _time(phase, edge, value):
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise ClockError("day-1 clock: %s.%s must be epoch seconds, got %r" % (phase, edge, value))
    return float(value)


def _iso(epoch):
    return datetime.datetime.fromtimestamp(epoch, datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _download(raw):
    if raw in (None, {}):
        return {}
    if not isinstance(raw, dict):
        raise ClockError("day-1 clock: fetch must be a mapping, got %r" % (raw,))
    out = {}
    for key in DOWNLOAD_KEYS:
        value = raw.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0):
            raise ClockError("day-1 clock: fetch.%s must be a number >= 0, got %r" % (key, value))
        out[key] = value
    return out


def section(clock, boot=None):
    """report.json's `clock`: phases in order with start (ISO, UTC), seconds and note; the run's wall time; the
    download beside the phases it overlapped and its rate per connection; the boot's own times (sglang_boot)."""
    if not clock:
        return None
    if not isinstance(clock, dict):
        raise ClockError("day-1 clock: expected a mapping of phases, got %r" % (clock,))
    unknown = sorted(set(clock) - set(PHASES) - {"fetch"})
    if unknown:
        raise ClockError("day-1 clock: unknown phase %s; the phases are %s" % (", ".join(unknown), ", ".join(PHASES)))
    phases = []
    for name in PHASES:
        entry = clock.get(name)
        if entry is None:
            continue
        if not isinstance(entry, dict):
            raise ClockError("day-1 clock: %s must be a mapping with start and end, got %r" % (name, entry))
        start, end = _time(name, "start", entry.get("start")), _time(name, "end", entry.get("end"))
        if start is None:
            raise ClockError("day-1 clock: %s has no start" % name)
        if end is not None and end < start:
            raise ClockError("day-1 clock: %s ends (%s) before it starts (%s)" % (name, end, start))
        phases.append({"name": name, "start": start, "end": end, "start_at": _iso(start),
                       "seconds": round(end - start, 1) if end is not None else None,
                       "note": str(entry.get("note") or "")})
    if not phases:
        return None
    first = min(p["start"] for p in phases)
    ends = [p["end"] for p in phases if p["end"] is not None]
    for p in phases:
        p["offset_s"] = round(p["start"] - first, 1)
    download = _download(clock.get("fetch"))
    fetched = next((p for p in phases if p["name"] == "download"), None)
    if fetched and fetched["seconds"] and download.get("bytes_fetched"):
        download["bytes_per_s"] = round(download["bytes_fetched"] / fetched["seconds"], 1)
    if download.get("bytes_per_s") and download.get("connections"):
        download["bytes_per_s_per_connection"] = round(download["bytes_per_s"] / download["connections"], 1)
    beside = []
    if fetched and fetched["end"] is not None:
        for p in phases:
            if p is fetched or p["end"] is None:
                continue
            overlap = min(p["end"], fetched["end"]) - max(p["start"], fetched["start"])
            if overlap > 0:
                beside.append({"phase": p["name"], "seconds": round(overlap, 1)})
    boot = boot or {}
    return {"phases": phases, "wall_s": round(max(ends) - first, 1) if ends else None,
            "download": download, "download_beside": beside,
            "boot": {key: boot.get(key) for key in ("weight_load_s", "graph_capture_s", "ready_s")}}


def duration(seconds):
    """1h02m, 5m30s, 12.4s: a person's reading of a span."""
    if seconds is None:
        return "not ended"
    seconds = float(seconds)
    if seconds < 60:
        return "%.1fs" % seconds
    minutes, rest = divmod(int(round(seconds)), 60)
    if minutes < 60:
        return "%dm%02ds" % (minutes, rest)
    return "%dh%02dm" % divmod(minutes, 60)


def _size(count):
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if count >= scale:
            return "%.2f %s" % (count / scale, unit)
    return "%d B" % count


def _label(name):
    return {"cuda": "CUDA"}.get(name, name)


def _phase_text(phase, clock):
    text = "%s %s" % (_label(phase["name"]), duration(phase["seconds"]))
    details = [phase["note"]] if phase["note"] else []
    if phase["name"] == "download":
        got = clock["download"]
        if got.get("bytes_fetched") is not None:
            rate = got.get("bytes_per_s")
            details.append("%s fetched%s%s" % (
                _size(got["bytes_fetched"]), ", %s/s" % _size(rate) if rate else "",
                ", %d connections: %s/s each" % (got["connections"], _size(got["bytes_per_s_per_connection"]))
                if got.get("bytes_per_s_per_connection") else ""))
        if clock["download_beside"]:
            details.append("beside " + ", ".join("%s %s" % (_label(b["phase"]), duration(b["seconds"]))
                                                 for b in clock["download_beside"]))
    if phase["name"] == "boot":
        boot = clock["boot"]
        times = [("weights", boot.get("weight_load_s")), ("CUDA graphs", boot.get("graph_capture_s")),
                 ("unit start to ready", boot.get("ready_s"))]
        details += ["%s %s" % (label, duration(value)) for label, value in times if value is not None]
    return text + (" (%s)" % "; ".join(details) if details else "")


def line(clock):
    """The summary's line from `section`'s result, or None when the run kept no clock."""
    if not clock:
        return None
    wall = "%s wall" % duration(clock["wall_s"]) if clock["wall_s"] is not None else "not ended"
    return "day-1 clock: %s; %s" % (wall, ", ".join(_phase_text(p, clock) for p in clock["phases"]))
