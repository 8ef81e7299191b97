"""One run's report for one host: report.json and a self-contained report.html (the picture inside).

Input: the role's facts as one mapping (roles/sglang/tasks/report.yml sends them). Every key may be
missing (a rollback has no plan, a failed boot no proof); the report says "not recorded" instead.
"""

import base64
import glob
import hashlib
import html
import json
import math
import os
import re

from . import clock
from .inputs import check_name, check_path_text, folder_in, read_json, read_regular, report_root, write_file
from .picture import curves, draw

REPORT_VERSION = 1


def _get(mapping, *keys):
    for key in keys:
        if not isinstance(mapping, dict):
            return None
        mapping = mapping.get(key)
    return mapping


def _number(value):
    """value as an int or a float, or None when it is not a finite number (inf, nan and 1e999 are not measurements;
    int() of them raises OverflowError or ValueError)."""
    try:
        number = float(value) if "." in str(value) or isinstance(value, float) else int(value)
    except (TypeError, ValueError, OverflowError):
        return None
    return number if math.isfinite(number) else None


def measured_boots(facts):
    """The host's measured boots: the inventory's list, the stored calibration's boot, this run's boot."""
    boots = []
    for boot in facts.get("sglang_measured_boots") or []:
        if _number(boot.get("mem_fraction_static")) and _number(boot.get("pool_tokens")):
            boots.append({"mem_fraction_static": float(boot["mem_fraction_static"]),
                          "pool_tokens": int(boot["pool_tokens"]), "source": boot.get("source", "inventory"),
                          "setup": boot.get("setup") or {}})
    # A pool pinned by --max-total-tokens is the pin, not a point of the profile line: not drawn as one.
    stored = facts.get("calibration_stored") or {}
    if _number(stored.get("mem_fraction_static")) and _number(stored.get("pool_tokens")) and not stored.get("pinned"):
        boots.append({"mem_fraction_static": float(stored["mem_fraction_static"]),
                      "pool_tokens": int(stored["pool_tokens"]),
                      "source": "calibration boot %s" % stored.get("measured_at", "")})
    plan, boot = facts.get("sglang_kv_plan_result") or {}, facts.get("sglang_boot") or {}
    pinned = _number(plan.get("max_total_tokens")) and _number(boot.get("pool_tokens")) and \
        int(boot["pool_tokens"]) >= int(plan["max_total_tokens"])
    if _number(plan.get("mem_fraction_static")) and _number(boot.get("pool_tokens")) and not pinned:
        boots.append({"mem_fraction_static": float(plan["mem_fraction_static"]),
                      "pool_tokens": int(boot["pool_tokens"]), "source": "this run's boot"})
    unique = {}
    for boot in boots:
        unique.setdefault((boot["mem_fraction_static"], boot["pool_tokens"]), boot)
    return sorted(unique.values(), key=lambda b: b["mem_fraction_static"])


def previous_report(host_dir, exclude=None):
    """The newest earlier report.json for this host, or None."""
    paths = sorted(glob.glob(os.path.join(host_dir, "*", "report.json")))
    paths = [p for p in paths if exclude is None or os.path.dirname(os.path.abspath(p)) != os.path.abspath(exclude)]
    for path in reversed(paths):
        # read only a regular file (a FIFO put there is not waited on), and a JSON object
        found = read_json(path)
        if isinstance(found, dict):
            return path, found
    return None, None


def _difference(now, before):
    if now is None or before is None:
        return None
    return {"now": now, "before": before, "change": round(now - before, 3),
            "change_pct": round((now - before) / before * 100, 2) if before else None}


LAST_FULL_PROOF = ("full_at", "pool_tokens", "context_length", "prompt_tokens", "elapsed_s", "prefill_tokens_per_s",
                   "decode", "concurrency")
RESTORED_FLAGS = {"tp_size": "--tp-size", "pp_size": "--pp-size", "dp_size": "--dp-size",
                  "context_target": "--context-length", "mem_fraction_static": "--mem-fraction-static",
                  "max_total_tokens": "--max-total-tokens"}


def restored_plan(restored, entries):
    """A rollback has no plan of this run: the restored state's own (its manifest and its unit's flags), and
    the calibration stored for its setup (tp/pp/dp and SGLang version), else {} for each."""
    if not restored:
        return {}, {}
    flags = dict(restored.get("flags") or {})
    for key, flag in RESTORED_FLAGS.items():  # the restored unit's own command line (quoted or not, its value
        # on the same line or, as sglang.service.j2 writes it, after a " \" continuation on the next)
        found = re.search(r'%s"?(?:\s|\\\n)+"?([0-9.]+)' % re.escape(flag), restored.get("unit") or "")
        if found and key not in flags:
            flags[key] = found.group(1)
    inputs = {k: _number(flags.get(k)) for k in RESTORED_FLAGS if flags.get(k) not in (None, "")}
    inputs.setdefault("tp_size", 1)
    inputs.setdefault("pp_size", 1)
    inputs.setdefault("dp_size", 1)
    if inputs.get("context_target") is None:
        inputs["context_target"] = _number(restored.get("context_target"))
    version = (restored.get("versions") or {}).get("sglang")
    matches = [e for e in (entries or {}).values() if isinstance(e, dict)
               and all(_number(e.get(k)) == inputs[k] for k in ("tp_size", "pp_size", "dp_size"))
               and (version is None or e.get("sglang_version") == version)]
    calibration = max(matches, key=lambda e: str(e.get("measured_at") or ""), default={})
    return inputs, calibration


def headline(report, facts):
    """What this run measured, first: the pool the proof saw, the headroom SGLang logged after the pool (this
    run's boot, else the boot of the calibration in use), and decode at the full context."""
    proof, boot = report["proof"], facts.get("sglang_boot") or {}
    if report["started_this_run"] and _number(boot.get("pool_end_avail_gib")) is not None:
        headroom, source = _number(boot["pool_end_avail_gib"]), "this run's boot"
    else:
        headroom = _number(report["calibration"].get("headroom_gib"))
        source = ("the calibration boot of %s" % report["calibration"].get("measured_at", "?")) \
            if headroom is not None else None
    # A check measures no decode: the figures are then the last full proof's, and say so.
    last = report.get("last_full_proof") or {}
    decode = proof.get("decode") or last.get("decode") or {}
    decode_source = None if not decode else "this run's proof" if proof.get("decode") else \
        "the full proof of %s" % last.get("full_at", "?")
    return {"pool_tokens": proof.get("pool_tokens"), "headroom_gib": headroom, "headroom_measured_at": source,
            "decode_measured_at": decode_source, "proof_level": proof.get("level"), "tpot_ms": decode.get("tpot_ms"),
            "accept_length": decode.get("accept_length"), "decode_context_tokens": decode.get("prompt_tokens")}


def day1_clock(raw, boot):
    """report.json's clock: where this run's time went; a clock the report cannot read is named, never fatal."""
    try:
        return clock.section(raw, boot)
    except clock.ClockError as error:
        return {"error": str(error)}


def build_report(facts, generated_at, previous=None, previous_path=None):
    """report.json's content from the role's facts."""
    spec, plan = facts.get("sglang_kv_spec") or {}, facts.get("sglang_kv_plan_result") or {}
    boot, smoke = facts.get("sglang_boot") or {}, facts.get("sglang_smoke") or {}
    smoke = {k: v for k, v in smoke.items() if k not in ("invocation", "_ansible_no_log")}
    level, record = facts.get("sglang_proof_level") or {}, facts.get("sglang_proof_record") or {}
    restored = facts.get("restored") or None
    restored_inputs, restored_calibration = restored_plan(restored, facts.get("calibration_entries"))
    if restored:
        # A rollback serves the restored entry, not this run's inventory: any plan or calibration this run
        # computed (the check play plans every host) describes a state that does not serve, and is not reported.
        spec, plan = {}, {"context_length": restored_inputs.get("context_target"),
                          "mem_fraction_static": restored_inputs.get("mem_fraction_static"),
                          "max_total_tokens": restored_inputs.get("max_total_tokens"),
                          "calibrated": restored.get("calibrated"), "explanation": restored.get("plan")}
        calibration = restored_calibration
    else:
        calibration = facts.get("calibration_in_use") or facts.get("calibration_stored")
    starts = _number(facts.get("sglang_starts")) or 0
    # Whether this run (re)started SGLang: the flag the deploy or the restore noted (report.yml passes it).
    started = facts.get("sglang_restarted_this_run") is True
    report = {
        "version": REPORT_VERSION,
        "host": facts.get("host"),
        "generated_at": generated_at,
        "plan": {
            "inputs": {k: v for k, v in spec.items() if k != "model_config"} or restored_inputs,
            "model_config_keys": sorted(spec.get("model_config") or {}),
            "calibration_source": facts.get("calibration_source"),
            **{k: plan.get(k) for k in (
                "context_length", "mem_fraction_static", "max_running_requests", "max_total_tokens",
                "predicted_pool_tokens", "required_pool_tokens", "headroom_gib", "kv_bytes_per_token",
                "kv_cache_gib", "calibrated", "pre_load_avail_gib", "post_load_avail_gib", "args",
                "explanation", "assumptions", "running_requests_reason", "headroom_parts", "tradeoff")},
        },
        "restored": ({k: restored.get(k) for k in ("name", "plan", "calibrated", "created_at")}
                     if restored else None),
        # The state whose plan, calibration and topology this report shows: the one that serves after the run.
        "serving_state": (("the restored entry %s" % restored.get("name")) if restored else
                          "the proven state of %s (this check changed nothing)" % (
                              level.get("last_full_at") or record.get("full_at") or "?")
                          if smoke.get("level") == "check" else "this run's deploy" if started else
                          "the state that was serving (this run restarted nothing)"),
        "boot": {k: boot.get(k) for k in ("pre_load_avail_gib", "post_load_avail_gib", "pool_tokens", "context_len",
                                          "max_running_requests", "ranks", "error", "invocation_id")},
        # A run that started nothing waited for nothing: no boot time (the unit's age is not one).
        "boot_wait_s": _get(facts, "sglang_ready", "elapsed_s") if started else None,
        "started_this_run": bool(started),
        "calibration": calibration or {},
        "calibration_key": None if restored else facts.get("calibration_key"),
        "restarts": {"starts": starts,
                     "corrective": _number(facts.get("sglang_corrective_restarts")) or 0},
        "proof": {k: smoke.get(k) for k in (
            "ok", "pool_tokens", "min_pool_tokens", "context_length", "max_req_input_len", "server_version",
            "question", "needle", "expect", "prompt_tokens",
            "completion_tokens",
            "completion", "elapsed_s", "ttft_s", "prefill_tokens_per_s", "checks", "msg", "level", "escalated",
            "decode", "concurrency")},
        "last_full_proof": {k: record.get(k) for k in LAST_FULL_PROOF} if record else None,
        "measured_boots": measured_boots(facts),
        "clock": day1_clock(facts.get("sglang_day1_clock"), boot),
        "previous": None,
    }
    if report["restored"]:
        report["plan"]["calibration_source"] = "the restored state %s, planned from %s" % (
            report["restored"]["name"], "a calibration" if report["restored"]["calibrated"] else "an estimate")
    report["proof"]["level_reason"] = level.get("reason")
    report["proof"]["last_full_at"] = level.get("last_full_at") or record.get("full_at")
    report["headline"] = headline(report, facts)
    if previous:
        report["previous"] = {
            "path": previous_path,
            "generated_at": previous.get("generated_at"),
            "pool_tokens": _difference(_get(report, "proof", "pool_tokens"), _get(previous, "proof", "pool_tokens")),
            "prefill_tokens_per_s": _difference(_get(report, "proof", "prefill_tokens_per_s"),
                                                _get(previous, "proof", "prefill_tokens_per_s")),
            "mem_fraction_static": _difference(_get(report, "plan", "mem_fraction_static"),
                                               _get(previous, "plan", "mem_fraction_static")),
        }
    return report


def measured_tradeoff(report):
    """The trade-off's speed, from this run's full proof, else the last full proof: prefill at the target, decode per
    token at the full context, and the short requests sent at once (time to the last answer, tokens/s in all)."""
    this_run = report["proof"].get("level") != "check" and report["proof"].get("prompt_tokens")
    proof = report["proof"] if this_run else (report.get("last_full_proof") or {})
    if not proof:
        return ["speed: no full proof yet"]
    decode, together = proof.get("decode") or {}, proof.get("concurrency") or {}
    lines = ["speed (the %s): prefill %s tokens/s over %s prompt tokens; decode %s ms per token at the full context"
             % ("full proof of this run" if proof is report["proof"] else "last full proof, %s"
                % _fmt(proof.get("full_at")), _fmt(proof.get("prefill_tokens_per_s")),
                _fmt(proof.get("prompt_tokens")), _fmt(decode.get("tpot_ms")))]
    if together:
        lines.append("short requests at once: %s of %s answered with their own needle, the last after %s s, %s "
                     "completion tokens/s in all" % (_fmt(together.get("answered")), _fmt(together.get("requests")),
                                                     _fmt(together.get("seconds")),
                                                     _fmt(together.get("decode_tokens_per_s"))))
    return lines


PICTURE = "picture.png"


def picture(facts, title, previous_path=None, previous=None):
    """(png bytes, curve data, key) for the plan in `facts`, or (None, None, None) without a plan. The key is the
    digest of what the picture shows: when the previous report (previous_report()'s path and content) drew the same,
    the PNG beside it is taken as it is - a re-run that changed nothing draws nothing (matplotlib's import and
    drawing cost most of the report's time)."""
    spec, plan = facts.get("sglang_kv_spec"), facts.get("sglang_kv_plan_result")
    if not spec or not plan:
        return None, None, None
    data = curves(spec, plan, measured_boots(facts))
    key = hashlib.sha256(json.dumps([data, title], sort_keys=True, default=str).encode("utf-8")).hexdigest()
    if previous_path and ((previous or {}).get("picture") or {}).get("key") == key:
        png = read_regular(os.path.join(os.path.dirname(previous_path), PICTURE))
        if png:
            return png, data, key
        # else drawn again below
    png, _fig = draw(data, title)
    return png, data, key


def _fmt(value, digits=None):
    if value is None or value == "":
        return "not recorded"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return "{:,}".format(value)
    if isinstance(value, float):
        return ("{:,.%df}" % digits).format(value) if digits is not None else "{:,}".format(value)
    return str(value)


def _rows(pairs):
    return "".join("<tr><th>%s</th><td>%s</td></tr>" % (html.escape(k), html.escape(_fmt(v))) for k, v in pairs)


def _change(diff, unit=""):
    if not diff:
        return "not recorded"
    pct = "" if diff["change_pct"] is None else " (%+.1f%%)" % diff["change_pct"]
    return "%s -> %s%s, %+g%s" % (_fmt(diff["before"]), _fmt(diff["now"]), unit, diff["change"], pct)


def clock_table(day1):
    """The day-1 clock: a row per phase (offset from the run's first phase, duration, note) and a bar on one time
    axis, so that what ran side by side shows side by side."""
    if not day1:
        return "<h2>Day-1 clock</h2><p id=\"clock\">This run kept no clock.</p>"
    if day1.get("error"):
        return "<h2>Day-1 clock</h2><p id=\"clock\">Not shown: %s</p>" % html.escape(day1["error"])
    span = day1.get("wall_s") or max((p["offset_s"] + (p["seconds"] or 0) for p in day1["phases"]), default=0) or 1
    rows = "".join(
        "<tr><th>%s</th><td>%s</td><td>%s</td><td>%s</td><td class=\"bar\"><span style=\"margin-left:%.1f%%;"
        "width:%.1f%%\"></span></td></tr>" % (
            html.escape(p["name"]), html.escape(clock.duration(p["offset_s"])),
            html.escape(clock.duration(p["seconds"])), html.escape(p["note"]),
            100.0 * p["offset_s"] / span, max(0.5, 100.0 * (p["seconds"] or 0) / span))
        for p in day1["phases"])
    return ("<h2>Day-1 clock</h2><p id=\"clock-line\">%s</p><table id=\"clock\"><tr><th>phase</th><th>began after"
            "</th><th>took</th><th>note</th><th>timeline</th></tr>%s</table>" % (html.escape(clock.line(day1)), rows))


def render_html(report, png):
    """One self-contained page: no script, no external file; the picture is a data: URI."""
    plan, boot, proof = report["plan"], report["boot"], report["proof"]
    title = "%s: SGLang KV-pool plan and proof, %s" % (report["host"], report["generated_at"])
    image = ('<img id="picture" alt="pool tokens against --mem-fraction-static for %s" src="data:image/png;base64,%s">'
             % (html.escape(report["host"] or ""), base64.b64encode(png).decode()) if png else
             "<p>No picture: this run has no plan.</p>")
    checks = "".join("<li>%s %s: %s</li>" % ("&#10003;" if c.get("ok") else "&#10007;", html.escape(str(c.get("name"))),
                                              html.escape(str(c.get("detail"))))
                     for c in proof.get("checks") or [])
    previous = report.get("previous")
    if previous:
        diff = ("<p>Previous report: %s</p><table id=\"previous\">%s</table>" % (
            html.escape(str(previous["generated_at"])),
            "".join("<tr><th>%s</th><td>%s</td></tr>" % (k, html.escape(v)) for k, v in (
                ("pool (tokens)", _change(previous["pool_tokens"])),
                ("prefill (tokens/s)", _change(previous["prefill_tokens_per_s"])),
                ("--mem-fraction-static", _change(previous["mem_fraction_static"]))))))
    else:
        diff = "<p>No earlier report for this host.</p>"
    head = report.get("headline") or {}
    this_run = head.get("decode_measured_at") == "this run's proof"
    measured = "serving: %s; this run's proof saw a pool of %s tokens; headroom %s GiB (%s)%s; proof: %s" % (
        _fmt(report.get("serving_state")),
        _fmt(head.get("pool_tokens")), _fmt(head.get("headroom_gib")), _fmt(head.get("headroom_measured_at")),
        # a check measures no decode: the last full proof's figures are named as such, apart from this run's
        ("%s decode %s ms per token at %s tokens of context%s (%s)" % (
            "," if this_run else "; not measured by this run:",
            _fmt(head["tpot_ms"]), _fmt(head.get("decode_context_tokens")),
            ", accept length %s" % _fmt(head["accept_length"]) if head.get("accept_length") else "",
            _fmt(head.get("decode_measured_at"))))
        if head.get("tpot_ms") is not None else "", _fmt(proof.get("level")))
    decode = proof.get("decode") or {}
    last = report.get("last_full_proof") or {}
    sections = [
        "<h1>%s</h1>" % html.escape(title),
        '<p class="headline" id="headline">%s</p>' % html.escape(measured),
        '<p class="plan" id="explanation">%s</p>' % html.escape(_fmt(plan.get("explanation"))),
        image,
        "<h2>Plan</h2><table id=\"plan\">%s</table>" % _rows([
            ("context target", plan["inputs"].get("context_target")), ("model", plan["inputs"].get("model")),
            ("tp / pp / dp", "%s / %s / %s" % tuple(plan["inputs"].get(k) for k in ("tp_size", "pp_size", "dp_size"))),
            ("KV cache dtype", plan["inputs"].get("kv_cache_dtype")),
            ("P, free GiB before the weights", plan.get("pre_load_avail_gib")),
            ("A, free GiB after the weights", plan.get("post_load_avail_gib")),
            ("P and A came from", plan.get("calibration_source")),
            ("--mem-fraction-static", plan.get("mem_fraction_static")),
            ("predicted pool (tokens)", plan.get("predicted_pool_tokens")),
            ("required pool (tokens)", plan.get("required_pool_tokens")),
            ("--max-total-tokens", plan.get("max_total_tokens")),
            ("headroom (GiB)", plan.get("headroom_gib")),
            ("KV bytes per token", plan.get("kv_bytes_per_token")),
            ("flags", " ".join(plan.get("args") or []) or None)]),
        "<ul>%s</ul>" % "".join("<li>%s</li>" % html.escape(a) for a in plan.get("assumptions") or []),
        # The seed's weighing: what the server serves, what concurrency and the headroom cost, what else fits.
        "<h2>Trade-off</h2><ul id=\"tradeoff\">%s</ul>" % "".join(
            "<li>%s</li>" % html.escape(line) for line in
            [line for line in plan.get("tradeoff") or [] if not line.startswith("speed:")] + measured_tradeoff(report)),
        "<h2>Boot</h2><table id=\"boot\">%s</table>" % _rows([
            ("P logged (GiB)", boot.get("pre_load_avail_gib")), ("A logged (GiB)", boot.get("post_load_avail_gib")),
            ("pool allocated (tokens)", boot.get("pool_tokens")), ("context", boot.get("context_len")),
            ("max running requests", boot.get("max_running_requests")), ("ranks", boot.get("ranks")),
            ("boot time (s, unit start to ready)", report.get("boot_wait_s") if report.get("started_this_run")
             else "no start this run"),
            ("starts this run", report["restarts"]["starts"]),
            ("corrective restarts", report["restarts"]["corrective"])]),
        "<h2>Calibration in use</h2><p id=\"calibration-key\">%s</p><table id=\"calibration\">%s</table>" % (
            html.escape(_fmt(report.get("calibration_key"))),
            _rows(sorted(report["calibration"].items())) or "<tr><td>none stored</td></tr>"),
        "<h2>Proof</h2><table id=\"proof\">%s</table>" % _rows([
            ("level", proof.get("level")), ("why", proof.get("escalated") or proof.get("level_reason")),
            ("last full proof", proof.get("last_full_at")),
            ("passed", proof.get("ok")), ("SGLang (as the server names itself)", proof.get("server_version")),
            ("pool (tokens)", proof.get("pool_tokens")),
            ("prompt (tokens, server-counted)", proof.get("prompt_tokens")),
            ("time to first token (s)", proof.get("ttft_s")), ("request (s)", proof.get("elapsed_s")),
            ("prefill (tokens/s)", proof.get("prefill_tokens_per_s")), ("answer", proof.get("completion")),
            ("decode (tokens)", decode.get("tokens")),
            ("decode (ms per token, at the full context)", decode.get("tpot_ms")),
            ("accept length (completion tokens / spec_verify_ct)", decode.get("accept_length")),
            ("short requests at once (answered / sent)", "%s / %s" % (
                _fmt((proof.get("concurrency") or {}).get("answered")),
                _fmt((proof.get("concurrency") or {}).get("requests"))) if proof.get("concurrency") else None),
            ("short requests at once: time to the last answer (s)", (proof.get("concurrency") or {}).get("seconds")),
            ("short requests at once: decode (tokens/s in all)",
             (proof.get("concurrency") or {}).get("decode_tokens_per_s")),
            ("last full proof: prefill (tokens/s)", last.get("prefill_tokens_per_s")),
            ("last full proof: decode (ms per token)", (last.get("decode") or {}).get("tpot_ms"))]),
        "<ul id=\"checks\">%s</ul>" % checks,
        clock_table(report.get("clock")),
        "<h2>Since the previous report</h2>%s" % diff,
    ]
    style = ("body{font-family:sans-serif;max-width:1320px;margin:1em auto;color:#222}"
             "table{border-collapse:collapse;margin:.5em 0}th,td{border:1px solid #ccc;padding:.2em .6em;"
             "text-align:left}th{background:#f4f4f4;font-weight:normal}img{max-width:100%}"
             "td.bar{width:320px}td.bar span{display:block;height:.8em;background:#4a7fb5}")
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>%s</title><style>%s</style>"
            "</head><body>\n%s\n</body></html>\n" % (html.escape(title), style, "\n".join(sections)))


def calibration_source(plan, corrective_restarts, in_use, inventory, fact):
    """Where the plan's calibration came from, for people. plan: this run's (None when it planned nothing)."""
    if plan is None:
        return "not recorded (no plan this run)"
    if not plan.get("calibrated"):
        return "estimated from the GPU and the checkpoint"
    if (_number(corrective_restarts) or 0) > 0:
        return "this run's first boot (the estimate fell short: re-planned, restarted once)"
    if (in_use if in_use else inventory) == inventory:
        return "inventory: sglang_calibration in host_vars"
    return "stored on the host: ansible_local.%s" % fact


class BuiltReport:
    """A run's report built in memory (build_run_report): its folder, the report as report.json holds it, and the
    files to write there. write() writes them; until then nothing is on disk."""

    def __init__(self, root, out, report, files):
        self.root, self.out, self.report, self.files = root, out, report, files

    def write(self):
        """reports/<host>/<stamp>/ and its files; returns the folder. Writes under root only (inputs.py): root is
        created only when its parent exists, and a link or a file where a folder goes is refused (ReportInputError);
        a folder the controller cannot write raises OSError."""
        host_dir, stamp = os.path.split(self.out)
        folder_in(folder_in(report_root(self.root), os.path.basename(host_dir)), stamp)
        for name, data in self.files:
            write_file(os.path.join(self.out, name), data)
        return self.out


def build_run_report(facts, root, stamp, generated_at):
    """The report of reports/<host>/<stamp>/ (report.json + report.html, + picture.png, the picture it embeds),
    built and not written: a report that cannot be built raises before anything is on disk, and one that cannot be
    written (BuiltReport.write) is still whole in memory, for the console's summary. The host and the stamp are
    single names (they name folders)."""
    host = facts.get("host") or "unknown-host"
    check_name("host", host, "give the inventory host's name (or the server's); it names the report's folder")
    check_name("stamp", stamp, "give a timestamp such as 20260101T000000Z")
    check_path_text("root", root, "give the reports' folder on the controller")
    host_dir = os.path.join(os.path.abspath(root), host)
    out = os.path.join(host_dir, stamp)
    previous_path, previous = previous_report(host_dir, exclude=out)
    report = build_report(facts, generated_at, previous, previous_path)
    png, data, key = picture(facts, "%s: %s" % (report["host"], _fmt(report["plan"].get("explanation"))),
                             previous_path, previous)
    if data:
        report["picture"] = {"ceiling": data["ceiling"], "measured": data["measured"], "key": key,
                             "tradeoff": {k: v for k, v in data["tradeoff"].items() if not isinstance(v, list)}}
    html_text = render_html(report, png)
    json_text = json.dumps(report, indent=2, sort_keys=True, default=str) + "\n"
    files = ([(PICTURE, png)] if png else []) + [("report.json", json_text.encode("utf-8")),
                                                 ("report.html", html_text.encode("utf-8"))]
    return BuiltReport(root, out, json.loads(json_text), files)


def write_run_report(facts, root, stamp, generated_at):
    """reports/<host>/<stamp>/report.json + report.html (+ picture.png); returns the folder. Everything is built
    before the first folder is made: a report that cannot be built leaves nothing behind."""
    return build_run_report(facts, root, stamp, generated_at).write()
