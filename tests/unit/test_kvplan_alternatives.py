"""Every alternative and fix the planner prints is a setup the release starts (issue 35 item 5): each is read back
from the printed line, applied to the spec, and planned on its own, where the release's launch refusals
(refusals.py: releases/rules.json `launch_refusals`, read from each wheel) would refuse it. Before, ct200's DFLASH
plan offered 'twice the GPUs (sglang_pp_size 2)', which SGLang 0.5.23 refuses at start
(sglang/srt/arg_groups/speculative_hook.py:321, 'Currently DFLASH speculative decoding only supports pp_size == 1.')."""

import re

import pytest
import sglang_kvplan as kv
from test_kvplan_speculative import CT200

QWEN = {"model": "qwen3-32b", "tp_size": 4, "gpu_memory_mib": 81_559, "checkpoint_gib": 65.0,
        "context_target": 40_000}
LLAMA = {"model": "llama-3.1-70b", "tp_size": 4, "gpu_memory_mib": 81_559, "context_target": 100_000}
NGRAM = {"algorithm": "NGRAM"}
LAUNCH_REFUSAL = re.compile(r"refuses .* when it starts|only supports pp_size|is not planned yet")

# A range of plans: releases with and without DFLASH, speculative and plain, DP attention, both KV dtypes.
PLANS = [dict(CT200, version=v) for v in ("0.5.12", "0.5.20", "0.5.23")] + [
    dict(CT200, version="0.5.23", kv_cache_dtype="fp8_e4m3"),
    dict(CT200, version="0.5.23", context_target=100_000),
    dict(CT200, version="0.5.23", dp_size=8, enable_dp_attention=True, enable_dp_lm_head=True,
         context_target=100_000),
    dict(QWEN, version="0.5.23"), dict(QWEN, version="0.5.9"), dict(QWEN, version="0.5.23", speculative=NGRAM),
    dict(LLAMA, version="0.5.23"), dict(LLAMA, version="0.5.23", tp_size=8, kv_cache_dtype="fp8_e4m3"),
]
# Plans that do not fit: their refusal's fixes are printed suggestions too.
REFUSED = [dict(CT200, version="0.5.23", context_target=400_000),
           dict(CT200, version="0.5.23", context_target=900_000, kv_cache_dtype="fp8_e4m3"),
           dict(QWEN, version="0.5.23", tp_size=1, context_target=40_000),
           dict(LLAMA, version="0.5.23", tp_size=2, context_target=120_000)]


def _suggested(spec, text):
    """The specs that the printed lines name: each 'sglang_<knob> <n>' or 'sglang_<knob>: <value>' applied."""
    found = []
    for knob, value in re.findall(r"sglang_(pp_size|tp_size|context_target)(?::| to at most)? ([\d,]+)", text):
        found.append(dict(spec, **{knob: int(value.replace(",", ""))}))
    for value in re.findall(r"sglang_kv_cache_dtype(?::|;) ?(fp8_e4m3)?", text):
        found.append(dict(spec, kv_cache_dtype=value or "fp8_e4m3"))
    return found


def _launch_refusal(spec):
    """The sentence of a launch refusal when SGLang would refuse `spec` at start; None otherwise (a spec that merely
    does not fit is a different matter: the alternative is an estimate)."""
    try:
        kv.plan(spec)
    except kv.KVPlanError as error:
        return str(error) if LAUNCH_REFUSAL.search(str(error)) else None
    return None


@pytest.mark.parametrize("spec", PLANS, ids=lambda s: "%s-%s-tp%d" % (s["model"], s["version"], s["tp_size"]))
def test_no_printed_alternative_is_refused_at_launch(spec):
    lines = [line for line in kv.plan(spec)["tradeoff"] if line.startswith("instead: ")]
    suggested = [s for line in lines for s in _suggested(spec, line)]
    assert suggested, lines
    refused = [(s, _launch_refusal(s)) for s in suggested if _launch_refusal(s)]
    assert not refused, refused


@pytest.mark.parametrize("spec", REFUSED, ids=lambda s: "%s-%s" % (s["model"], s["context_target"]))
def test_no_fix_of_a_refusal_is_refused_at_launch(spec):
    with pytest.raises(kv.KVPlanError) as error:
        kv.plan(spec)
    text = str(error.value)
    assert "Fixes: " in text, text
    suggested = _suggested(spec, text.split("Fixes: ", 1)[1])
    assert suggested, text
    refused = [(s, _launch_refusal(s)) for s in suggested if _launch_refusal(s)]
    assert not refused, refused


def test_ct200_dflash_plan_offers_more_gpus_as_tp_not_pp():
    lines = kv.plan(dict(CT200, version="0.5.23"))["tradeoff"]
    assert not [line for line in lines if "sglang_pp_size" in line], lines
    (wider,) = [line for line in lines if line.startswith("instead: twice the GPUs")]
    assert wider.startswith("instead: twice the GPUs (sglang_tp_size 16): about "), wider


def test_a_plain_plan_still_gets_the_pp_alternative():
    lines = kv.plan(dict(QWEN, version="0.5.23"))["tradeoff"]
    assert [line for line in lines if line.startswith("instead: twice the GPUs (sglang_pp_size 2): about ")], lines
    assert kv.plan(dict(QWEN, version="0.5.23", pp_size=2))  # and the release starts it


def test_no_more_gpus_when_the_release_refuses_both_ways(monkeypatch):
    """A release that refused PP and TP doubling alike gets no 'twice the GPUs' line rather than a refused one."""
    from sglang_kvplan import concurrency
    monkeypatch.setattr(concurrency, "launches", lambda s: s["tp_size"] == CT200["tp_size"] and s["pp_size"] == 1)
    lines = kv.plan(dict(CT200, version="0.5.23"))["tradeoff"]
    assert not [line for line in lines if "twice the GPUs" in line], lines
    assert [line for line in lines if line.startswith("instead: fp8_e4m3 KV")], lines
