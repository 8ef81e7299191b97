"""The console's summary is the report's (lib/sglang_report/summary.py over build_report): it names the state that
serves, with that state's plan, topology and calibration (a rollback's restored entry, not this run's inventory
plan; a stored calibration's own boot, not this run's), which proof ran, and what it measured."""

from hostile_render import render_all
from sglang_report.report import build_report
from sglang_report.summary import summary_lines

CALIBRATION = {"pre_load_avail_gib": 85.33, "post_load_avail_gib": 19.42, "mem_fraction_static": 0.958,
               "pool_tokens": 200064, "headroom_gib": 5.2, "measured_at": "2026-11-30T10:00:00+00:00",
               "tp_size": 8, "pp_size": 1, "dp_size": 1, "sglang_version": "0.5.23"}
FULL = {"level": "full", "ok": True, "pool_tokens": 150016, "min_pool_tokens": 150000, "prompt_tokens": 146004,
        "elapsed_s": 9.1, "prefill_tokens_per_s": 16045.5, "completion": " 5352611.",
        "decode": {"tokens": 16, "tpot_ms": 40.1, "spec_verify_ct": 6, "accept_length": 2.667},
        "concurrency": {"requests": 8, "answered": 8, "seconds": 1.9, "decode_tokens_per_s": 120.0}}


def _lines(**facts):
    base = {"host": "ct200", "sglang_starts": 1, "sglang_restarted_this_run": True, "sglang_corrective_restarts": 0,
            "sglang_kv_spec": {"tp_size": 8, "pp_size": 1, "dp_size": 1, "context_target": 150000},
            "sglang_kv_plan_result": {"explanation": "target 150,000 -> pool 150,016 tokens, calibrated",
                                      "calibrated": True, "pre_load_avail_gib": 85.33, "post_load_avail_gib": 19.42,
                                      "tradeoff": ["8 requests at once, up to 18,752 tokens each", "speed: x"]},
            "calibration_in_use": CALIBRATION, "calibration_source": "stored on the host: ansible_local.sglang_kv",
            "sglang_smoke": FULL, "sglang_proof_level": {"level": "full", "reason": "this run changed the unit"},
            "sglang_proof_record": {"full_at": "2026-12-02T01:00:00+00:00"}}
    return summary_lines(build_report(dict(base, **facts), "now"))


BOOT_150K = {"pre_load_avail_gib": 85.31, "post_load_avail_gib": 19.4, "pool_tokens": 150016}


def test_a_150k_run_on_a_200k_calibration_names_the_boot_the_calibration_was_measured_in():
    # a re-target: the plan from the 200k boot's calibration, and this run's own boot at 150k, each named
    lines = _lines(sglang_boot=BOOT_150K)
    assert lines[0] == "serving: this run's deploy (tp / pp / dp 8 / 1 / 1)"
    assert lines[1] == "plan: target 150,000 -> pool 150,016 tokens, calibrated"
    assert lines[2] == ("calibration: P 85.33 GiB, A 19.42 GiB (stored on the host: ansible_local.sglang_kv); the "
                        "stored calibration's boot of 2026-11-30T10:00:00+00:00: --mem-fraction-static 0.958, pool "
                        "200,064 tokens, headroom 5.2 GiB; this run's boot measured P 85.31 GiB, A 19.4 GiB, pool "
                        "150,016 tokens")
    assert "proof: full (this run changed the unit); last full proof 2026-12-02T01:00:00+00:00" in lines
    assert "trade-off: 8 requests at once, up to 18,752 tokens each" in lines
    assert not any(line.startswith("trade-off: speed") for line in lines)
    # the proof's lines keep the module's own figures, as docs/when-things-go-wrong.md shows them
    assert 'smoke: pool 150016 >= 150000, prompt 146004 tokens in 9.1 s (16045.5 tokens/s), answer " 5352611."' in lines
    assert "decode: 16 tokens at 146004 tokens of context, 40.1 ms per token, accept length 2.667 " \
           "(16 tokens / spec_verify_ct 6)" in lines
    assert lines[-1].startswith("concurrency: 8 short prompts at once, 8 answered")


def test_a_check_shows_the_short_prompt_and_names_the_last_full_proofs_speed():
    lines = _lines(sglang_smoke={"level": "check", "ok": True, "pool_tokens": 200064, "context_length": 200000,
                                 "prompt_tokens": 54, "elapsed_s": 0.2, "completion": " 42."},
                   sglang_starts=0, sglang_restarted_this_run=False,
                   sglang_proof_level={"level": "check", "reason": "nothing changed",
                                       "last_full_at": "2026-12-01T08:00:00+00:00"},
                   sglang_proof_record={"full_at": "2026-12-01T08:00:00+00:00", "prefill_tokens_per_s": 17438.6,
                                        "prompt_tokens": 196004, "decode": {"tpot_ms": 40.0}})
    assert lines[0].startswith("serving: the proven state of 2026-12-01T08:00:00+00:00 (this check changed nothing)")
    assert "trade-off: speed (the last full proof, 2026-12-01T08:00:00+00:00): prefill 17,438.6 tokens/s over " \
           "196,004 prompt tokens; decode 40.0 ms per token at the full context" in lines
    assert lines[-1] == ('smoke (check): pool 200064 and context 200000 as proven, a 54-token prompt answered " 42." '
                         "in 0.2 s")
    assert not any(line.startswith("decode:") for line in lines)


def test_a_rollback_summarises_the_restored_state_not_an_empty_calibration():
    unit = render_all(sglang_tp_size=8)["unit"]
    lines = _lines(sglang_kv_spec={"tp_size": 1}, sglang_kv_plan_result={"explanation": "estimated on TP1"},
                   calibration_in_use={}, calibration_source=None,
                   restored={"name": "20261120T100000Z", "plan": "calibrated: 200,000 tokens on TP8",
                             "calibrated": True, "unit": unit, "versions": {"sglang": "0.5.23"}},
                   calibration_entries={"tp8": CALIBRATION})
    assert lines[0] == "serving: the restored entry 20261120T100000Z (tp / pp / dp 8 / 1 / 1)"
    assert lines[1] == "plan: calibrated: 200,000 tokens on TP8"
    assert lines[2].startswith("calibration: P 85.33 GiB, A 19.42 GiB (the restored state 20261120T100000Z, "
                               "planned from a calibration); the stored calibration's boot of 2026-11-30")
    assert "estimated" not in " ".join(lines[:3])
    assert not any("{}" in line or "TP1" in line for line in lines)


def test_a_first_run_shows_the_estimate_it_planned_from_and_what_its_boot_measured():
    lines = _lines(sglang_kv_plan_result={"explanation": "target 150,000 -> pool 150,016 tokens, estimated",
                                          "calibrated": False, "pre_load_avail_gib": 85.0, "post_load_avail_gib": 19.0},
                   calibration_in_use={}, calibration_source="estimated from the GPU and the checkpoint",
                   sglang_boot=BOOT_150K)
    assert lines[2] == ("calibration: P 85.0 GiB, A 19.0 GiB (estimated from the GPU and the checkpoint); this run's "
                        "boot measured P 85.31 GiB, A 19.4 GiB, pool 150,016 tokens")


def test_a_forced_full_proof_that_restarted_nothing_does_not_claim_a_deploy():
    lines = _lines(sglang_starts=0, sglang_restarted_this_run=False, sglang_boot=BOOT_150K,
                   sglang_proof_level={"level": "full", "reason": "asked for (sglang_proof: full)"})
    assert lines[0] == "serving: the state that was serving (this run restarted nothing) (tp / pp / dp 8 / 1 / 1)"
    assert "this run's boot" not in lines[2]  # no boot this run: the journal's boot is an earlier run's


def test_the_serving_line_names_the_release_the_server_named_itself():
    # the double names itself as it is (0.5.23+double), so a demo's report cannot pass for a real server's
    lines = _lines(sglang_smoke=dict(FULL, server_version="0.5.23+double"))
    assert lines[0] == "serving: this run's deploy (SGLang 0.5.23+double; tp / pp / dp 8 / 1 / 1)"
