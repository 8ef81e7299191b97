"""The planner's current verdicts against the REAL SGLang resolver's recorded answers
(tests/fixtures/sglang_real/resolver-<version>.json, written by `make real-resolver`): always run, nothing installed.

For each recorded case the planner plans the same knobs now. It must still accept what the release accepted and
refuse what it refused, in the release's words (agreement.py). On an accepted case, what SGLang itself decides is
compared with the planner's current prediction: the page, and the draft tokens the pin must hold beside the context.
The values SGLang only echoes (context, pin, fraction, concurrency) may change with the planner; the recording shows
the release kept every one it was given, so the planner must still give the same flags (a flag the real parser has not
seen needs a new `make real-resolver`).
"""

import glob
import json
import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import agreement  # noqa: E402
import cases  # noqa: E402

FIXTURES = sorted(glob.glob(os.path.join(cases.REPO, "tests", "fixtures", "sglang_real", "resolver-*.json")))
FLAG_OF = {"context_length": "--context-length", "max_total_tokens": "--max-total-tokens",
           "mem_fraction_static": "--mem-fraction-static", "max_running_requests": "--max-running-requests"}


def _load(path):
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)


def _recorded(known=None):
    """pytest params (version, release, case); with `known`, the known disagreements marked strict xfail."""
    for path in FIXTURES:
        fixture = _load(path)
        for case in fixture["cases"]:
            reason = (known or {}).get((fixture["version"], case["id"]))
            yield pytest.param(fixture["version"], fixture["release"], case,
                               id="%s-%s" % (fixture["version"], case["id"]),
                               marks=[pytest.mark.xfail(strict=True, reason=reason)] if reason else [])


def _now(version, case):
    """The planner's current verdict and argv for a recorded case's knobs."""
    return cases.planned(version, [{k: case[k] for k in ("id", "gpu", "model", "draft", "knobs")}])[0]


def _flags(argv):
    return sorted(a for a in argv if a.startswith("--"))


def _value(argv, flag):
    return argv[argv.index(flag) + 1] if flag in argv else None


def test_both_releases_recorded():
    assert {os.path.basename(p) for p in FIXTURES} >= {"resolver-%s.json" % v for v in cases.RELEASES}
    for path in FIXTURES:
        fixture = _load(path)
        assert fixture["release"] == "sglang==" + fixture["version"]
        assert len(fixture["cases"]) >= 20


@pytest.mark.parametrize("version, release, case", list(_recorded()))
def test_planner_agrees_with_recorded_real_resolver(version, release, case):
    now = _now(version, case)
    real = case["real"]
    where = "%s (%s) on %s" % (case["id"], case["gpu"], release)
    planner = now["planner"]
    if not planner["accepted"] or not real["accepted"]:
        assert not agreement.disagreements(planner, real), "%s: %s" % (where, agreement.disagreements(planner, real))
        return
    assert _flags(now["argv"]) == _flags(case["argv"]), (
        "%s: the planner now renders flags the real parser has not seen (run `make real-resolver`): %s -> %s"
        % (where, _flags(case["argv"]), _flags(now["argv"])))
    resolved = real["resolved"]
    for field, flag in FLAG_OF.items():
        given = _value(case["argv"], flag)
        if given is not None:  # the release kept what it was given (the recording's own consistency)
            assert float(given) == float(resolved[field]), "%s: the release changed %s %s to %s" % (
                where, flag, given, resolved[field])
    expected = planner["expected"]
    assert expected["kv_cache_dtype"] == resolved["kv_cache_dtype"], where
    real_draft = (resolved["speculative_num_draft_tokens"] or 0) if resolved["speculative_algorithm"] else 0
    assert expected["draft_tokens"] == real_draft, (
        "%s: the planner reserves %s draft tokens, %s resolves speculative_num_draft_tokens %s"
        % (where, expected["draft_tokens"], release, real_draft))
    if expected["max_total_tokens"] is not None:
        assert expected["max_total_tokens"] >= expected["context_length"] + real_draft, (
            "%s: pin %s does not hold one request at full length (%s + %s draft tokens)"
            % (where, expected["max_total_tokens"], expected["context_length"], real_draft))


@pytest.mark.parametrize("version, release, case", list(_recorded(agreement.KNOWN_PAGE)))
def test_page_is_the_one_the_planner_predicts(version, release, case):
    problem = agreement.page_disagreement(_now(version, case)["planner"], case["real"])
    assert not problem, "%s (%s) on %s: %s" % (case["id"], case["gpu"], release, problem)


@pytest.mark.parametrize("version, release, case", list(_recorded()))
def test_headroom_is_sized_for_the_chunked_prefill_sglang_resolves(version, release, case):
    """The headroom's prefill activations (concurrency.py) are sized for memory.chunked_prefill_tokens: the release's
    tier for the GPU, divided by the attention-DP width under DP attention, as the real resolver does."""
    planner, real = _now(version, case)["planner"], case["real"]
    if not (planner["accepted"] and real.get("accepted")):
        return
    problem = agreement.chunk_disagreement(planner["expected"], real["resolved"])
    assert not problem, "%s (%s) on %s: %s" % (case["id"], case["gpu"], release, problem)


@pytest.mark.parametrize("version, release, case", [p for p in _recorded() if p.values[2].get("probe")])
def test_each_pool_is_the_one_the_release_sizes(version, release, case):
    # the release's own configurator (pools_real.py) sized the recorded memory; the planner now plans from the same
    # memory (a different one: the recording is stale, run `make real-resolver`) and must find the same two pools
    now = _now(version, case)
    assert now["probe"] == case["probe"], "%s: the plan's memory changed: run `make real-resolver`" % case["id"]
    problems = agreement.pools_disagreement(now["planner"]["expected"], case["real"])
    assert not problems, "%s on %s: %s" % (case["id"], release, problems)
