"""The report names the state that serves and what this run measured of it: a rollback's restored unit read as the
role renders it (a TP8 server restored is reported as TP8), and a check run's decode figures marked as the last full
proof's (a check measures no decode)."""

import html

from hostile_render import render_all
from sglang_report.report import build_report, render_html, restored_plan

DECODE = {"tokens": 16, "tpot_ms": 41.3, "prompt_tokens": 196004, "accept_length": 2.667}


def test_the_restored_units_own_flags_are_read_from_the_rendered_unit():
    unit = render_all(sglang_tp_size=8, sglang_pp_size=2, sglang_dp_size=1)["unit"]
    assert '"--tp-size" \\\n' in unit  # the shape under test: each value on the next line
    inputs, _calibration = restored_plan({"unit": unit, "versions": {"sglang": "0.5.23"}}, {})
    assert inputs == {"tp_size": 8, "pp_size": 2, "dp_size": 1, "context_target": 200000,
                      "mem_fraction_static": 0.958, "max_total_tokens": 200064}


def _headline(smoke):
    facts = {"host": "ct200", "sglang_starts": 0, "sglang_restarted_this_run": False, "sglang_smoke": smoke,
             "sglang_proof_level": {"level": smoke["level"], "reason": "nothing changed"},
             "sglang_proof_record": {"full_at": "2026-11-28T07:00:00+00:00", "pool_tokens": 200064,
                                     "decode": DECODE}}
    report = build_report(facts, "now")
    text = render_html(report, None)
    return report["headline"], html.unescape(text[text.index('id="headline">'):].split("</p>")[0])


def test_a_check_runs_headline_marks_decode_as_the_last_full_proofs():
    head, shown = _headline({"level": "check", "pool_tokens": 200064})
    assert head["tpot_ms"] == 41.3 and head["decode_measured_at"] == "the full proof of 2026-11-28T07:00:00+00:00"
    assert "decode 41.3 ms per token at 196,004 tokens of context, accept length 2.667 " \
           "(the full proof of 2026-11-28T07:00:00+00:00)" in shown


def test_a_full_proofs_headline_says_this_run_measured_decode():
    head, shown = _headline({"level": "full", "pool_tokens": 200064, "decode": dict(DECODE, tpot_ms=40.0)})
    assert head["tpot_ms"] == 40.0 and head["decode_measured_at"] == "this run's proof"
    assert "(this run's proof)" in shown


def test_a_rollback_reports_the_restored_state_not_this_runs_inventory_plan():
    """The check play plans every host from the inventory (here TP1, estimated); the server serves the restored TP8
    entry: its plan, flags and calibration are the report's, and this run's plan and calibration are not."""
    unit = render_all(sglang_tp_size=8)["unit"]
    entries = {"tp8": {"tp_size": 8, "pp_size": 1, "dp_size": 1, "sglang_version": "0.5.23",
                       "measured_at": "2026-11-20T10:00:00+00:00", "headroom_gib": 4.2},
               "tp1": {"tp_size": 1, "pp_size": 1, "dp_size": 1, "sglang_version": "0.5.23",
                       "measured_at": "2026-11-27T10:00:00+00:00", "headroom_gib": 9.9}}
    facts = {"host": "ct200", "sglang_starts": 1, "sglang_restarted_this_run": True,
             "sglang_kv_spec": {"tp_size": 1, "pp_size": 1, "dp_size": 1, "context_target": 150000},
             "sglang_kv_plan_result": {"explanation": "estimated: 150,000 tokens on TP1", "calibrated": False,
                                       "context_length": 150000, "mem_fraction_static": 0.9},
             "calibration_in_use": entries["tp1"], "calibration_key": "tp1",
             "restored": {"name": "20261120T100000-200000", "plan": "calibrated: 200,000 tokens on TP8",
                          "calibrated": True, "unit": unit, "versions": {"sglang": "0.5.23"}},
             "calibration_entries": entries,
             "sglang_smoke": {"level": "full", "pool_tokens": 200064}}
    report = build_report(facts, "now")
    plan = report["plan"]
    assert (plan["inputs"]["tp_size"], plan["inputs"]["pp_size"], plan["inputs"]["dp_size"]) == (8, 1, 1)
    assert plan["explanation"] == "calibrated: 200,000 tokens on TP8" and plan["calibrated"] is True
    assert plan["context_length"] == 200000 and plan["mem_fraction_static"] == 0.958
    assert report["calibration"] == entries["tp8"] and report["calibration_key"] is None
    assert plan["calibration_source"] == "the restored state 20261120T100000-200000, planned from a calibration"
    assert report["serving_state"] == "the restored entry 20261120T100000-200000"
    shown = html.unescape(render_html(report, None))
    assert "8 / 1 / 1" in shown and "1 / 1 / 1" not in shown and "TP1" not in shown
    assert "serving: the restored entry 20261120T100000-200000" in shown


def test_a_check_runs_headline_says_the_decode_was_not_measured_by_this_run():
    head, shown = _headline({"level": "check", "pool_tokens": 200064})
    assert shown.startswith('id="headline">serving: the proven state of 2026-11-28T07:00:00+00:00 (this check changed '
                            "nothing);")
    assert "; not measured by this run: decode 41.3 ms per token" in shown
    _, full = _headline({"level": "full", "pool_tokens": 200064, "decode": dict(DECODE, tpot_ms=40.0)})
    assert "not measured" not in full and ", decode 40 ms per token" in full.replace("40.0", "40")
