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
