"""The run in a few console lines, taken from the run's report (report.py's build_report), so that the console and
report.json say the same: the state that serves (a rollback's restored entry, a check's proven state), its plan and
calibration, the starts, which proof ran and why, and what it measured (a full proof: prefill, decode at the full
context and the short requests at once; a check: the short prompt, and the last full proof's figures named as such).
"""

import json

from . import clock
from .report import _fmt, measured_tradeoff


def _raw(value):
    """A measured number as the module returned it (the proof's lines keep the module's own figures)."""
    return "?" if value is None else str(value)


def _calibration(report):
    plan, calibration = report["plan"], report.get("calibration") or {}
    source = plan.get("calibration_source") or "not recorded"

    def figure(name):  # the plan's (what it used), else the calibration's (a rollback's plan has none)
        return plan.get(name) if plan.get(name) is not None else calibration.get(name)

    if figure("pre_load_avail_gib") is None:
        return "calibration: none (%s)" % source
    line = "calibration: P %s GiB, A %s GiB (%s)" % (_fmt(figure("pre_load_avail_gib")),
                                                     _fmt(figure("post_load_avail_gib")), source)
    # the boot a stored calibration was measured in: its own pool and headroom, not this run's
    if calibration.get("measured_at"):
        line += "; the stored calibration's boot of %s: --mem-fraction-static %s, pool %s tokens, headroom %s GiB" % (
            calibration["measured_at"], _fmt(calibration.get("mem_fraction_static")),
            _fmt(calibration.get("pool_tokens")), _fmt(calibration.get("headroom_gib")))
    # what this run's own boot measured (stored for the next plan), apart from what the plan used
    boot = report.get("boot") or {}
    if report.get("started_this_run") and boot.get("pre_load_avail_gib") is not None:
        line += "; this run's boot measured P %s GiB, A %s GiB, pool %s tokens" % (
            _fmt(boot["pre_load_avail_gib"]), _fmt(boot.get("post_load_avail_gib")), _fmt(boot.get("pool_tokens")))
    return line


def _proof(report):
    proof = report["proof"]
    if proof.get("level") == "check":
        return ["smoke (check): pool %s and context %s as proven, a %s-token prompt answered %s in %s s" % (
            _raw(proof.get("pool_tokens")), _raw(proof.get("context_length")), _raw(proof.get("prompt_tokens")),
            json.dumps(proof.get("completion")), _raw(proof.get("elapsed_s")))]
    decode = proof.get("decode") or {}
    lines = ["smoke: pool %s >= %s, prompt %s tokens in %s s (%s tokens/s), answer %s" % (
        _raw(proof.get("pool_tokens")), _raw(proof.get("min_pool_tokens")), _raw(proof.get("prompt_tokens")),
        _raw(proof.get("elapsed_s")), _raw(proof.get("prefill_tokens_per_s")), json.dumps(proof.get("completion")))]
    accept = (", accept length %s (%s tokens / spec_verify_ct %s)" % (
        decode["accept_length"], decode.get("tokens"), decode["spec_verify_ct"])
        if decode.get("spec_verify_ct") is not None else "")
    lines.append("decode: %s tokens at %s tokens of context, %s ms per token%s%s" % (
        _raw(decode.get("tokens")), _raw(proof.get("prompt_tokens")), _raw(decode.get("tpot_ms")), accept,
        decode.get("note") or ""))
    together = proof.get("concurrency") or {}
    if together:
        lines.append("concurrency: %s short prompts at once, %s answered with their own needle, the last after %s s "
                     "(%s completion tokens/s in all)" % (
                         _raw(together.get("requests")), _raw(together.get("answered")),
                         _raw(together.get("seconds")), _raw(together.get("decode_tokens_per_s"))))
    return lines


def summary_lines(report):
    """The console's summary of one run's report."""
    plan, proof = report["plan"], report["proof"]
    inputs = plan.get("inputs") or {}
    restarts = report["restarts"]
    # the release as the proof's server named itself (a double says so: 0.5.23+double)
    release = "SGLang %s; " % proof["server_version"] if proof.get("server_version") else ""
    topology = "tp / pp / dp %s / %s / %s" % tuple(_fmt(inputs.get(k)) for k in ("tp_size", "pp_size", "dp_size"))
    lines = ["serving: %s (%s%s)" % (report.get("serving_state"), release, topology),
             "plan: %s" % _fmt(plan.get("explanation")),
             _calibration(report),
             "starts this run: %s, corrective restarts: %s" % (restarts["starts"], restarts["corrective"]),
             "proof: %s (%s); last full proof %s" % (
                 proof.get("level") or "not recorded", proof.get("level_reason") or "",
                 proof.get("last_full_at") or "never")]
    lines += ["trade-off: " + line for line in plan.get("tradeoff") or [] if not line.startswith("speed:")]
    if proof.get("level") == "check":  # a check measures no speed: the last full proof's, named as such
        lines += ["trade-off: " + line for line in measured_tradeoff(report)]
    day1 = report.get("clock")
    if day1 and day1.get("error"):
        lines.append("day-1 clock: not shown: " + day1["error"])
    elif day1:
        lines.append(clock.line(day1))
    return lines + _proof(report)
