"""The full proof proves concurrency: after the long prompt, short needle prompts at once, each answered with its
own number; a server that serializes them shows it in the time to the last answer, one that garbles one fails."""

import pytest
from conftest import CT200

STEP = 0.05  # simulated seconds per decoded token
GPU = {"decode_seconds_per_token": STEP}


def _flags(running):
    return CT200 + ["--mem-fraction-static", "0.94", "--max-running-requests", str(running)]


def test_each_concurrent_prompt_is_answered_with_its_own_needle(smoke, double):
    with double(_flags(4), GPU) as (url, _):
        rc, result = smoke(url=url, prompt_tokens="3000", concurrent_requests=4, max_tokens=8)
    assert rc == 0, result.get("msg")
    figures = result["concurrency"]
    assert figures["requests"] == figures["answered"] == 4
    assert 150 <= figures["prompt_tokens"] <= 600  # a few hundred tokens each
    assert figures["completion_tokens"] > 0 and figures["decode_tokens_per_s"] > 0
    assert [c["name"] for c in result["checks"]][-1] == "concurrency" and all(c["ok"] for c in result["checks"])


def test_one_slot_serializes_the_concurrent_prompts(smoke, double):
    """With --max-running-requests 1 the four wait for one another: at least four decodes to the last answer; with 4
    they decode side by side, at least two decodes sooner (the margin leaves room for a loaded machine's HTTP)."""
    slow = {"decode_seconds_per_token": 0.3}
    seconds, decode = {}, None
    for running in (1, 4):
        with double(_flags(running), slow) as (url, _):
            rc, result = smoke(url=url, prompt_tokens="3000", concurrent_requests=4, max_tokens=8)
        assert rc == 0, result.get("msg")
        seconds[running] = result["concurrency"]["seconds"]
        decode = result["concurrency"]["completion_tokens"] / 4 * 0.3  # one request's decode
    assert seconds[1] >= 4 * decode * 0.95, (seconds, decode)
    assert seconds[4] <= seconds[1] - 2 * decode, (seconds, decode)


def test_a_concurrent_answer_without_its_needle_fails_the_proof(smoke, double):
    with double(_flags(4), dict(GPU, fault="wrong_when_batched")) as (url, _):
        rc, result = smoke(url=url, prompt_tokens="3000", concurrent_requests=4, max_tokens=8)
    assert rc == 1
    assert result["concurrency"]["answered"] < 4
    failed = [c for c in result["checks"] if not c["ok"]]
    assert [c["name"] for c in failed] == ["concurrency"]
    assert "answered ' Unknown.'" in result["msg"] and "sent at once" in result["msg"]


@pytest.mark.parametrize(("expect", "rc"), [(r"Unknown|\b\d{7}\b", 0), (r"\b\d{7}\b", 1)])
def test_an_expect_given_is_what_the_concurrent_answers_must_match(smoke, double, expect, rc):
    """A model that cannot answer the needle (random weights, a model without the proof's words) is proven
    with the operator's expect: every answer, the concurrent ones too, must match it instead of its own number."""
    with double(_flags(4), dict(GPU, fault="wrong_when_batched")) as (url, _):
        got, result = smoke(url=url, prompt_tokens="3000", concurrent_requests=4, max_tokens=8, expect=expect)
    assert got == rc, result.get("msg")
    check = result["checks"][-1]
    assert check["name"] == "concurrency" and ("matching /%s/" % expect) in check["detail"], check
    assert (result["concurrency"]["answered"] == 4) == (rc == 0), result["concurrency"]


def test_the_check_level_sends_no_concurrent_prompts(smoke, double):
    with double(_flags(4), GPU) as (url, log):
        rc, result = smoke(url=url, level="check", concurrent_requests=4)
        with open(log, encoding="utf-8") as handle:
            posts = handle.read().count('"POST /v1/completions')
    assert rc == 0, result.get("msg")
    assert result["concurrency"] is None and posts == 1  # the one short prompt, as before


@pytest.mark.parametrize("value", [-1])
def test_a_negative_count_is_refused_before_any_request(smoke, value):
    rc, result = smoke(url="http://127.0.0.1:9", concurrent_requests=value)
    assert rc == 1 and "concurrent_requests=-1 must be at least 0" in result["msg"]
