"""sglang_smoke_test's two levels against the double: the full proof measures decode at the full context on the
long prompt's own /generate (and the speculative accept length from its meta_info), one prefill of the context;
the check sends one short prompt and runs the full proof instead when the server differs from the proven state."""

import json
import re
import urllib.error
import urllib.request

from conftest import CT200

FINE = CT200 + ["--mem-fraction-static", "0.94"]  # pool 216,993 on the simulated ct200
POOL = 216_993
DFLASH_DRAFT = {"architectures": ["DFlashDraftModel"], "model_type": "qwen3", "num_hidden_layers": 5,
                "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128, "hidden_size": 4096,
                "torch_dtype": "bfloat16"}


def prompt_tokens_total(url):
    """The double's sglang:prompt_tokens_total (/metrics, with --enable-metrics), as SGLang 0.5.23 serves it."""
    with urllib.request.urlopen(url + "/metrics", timeout=5) as response:
        text = response.read().decode()
    return int(float(re.search(r"^sglang:prompt_tokens_total\{[^}]*\} (\S+)$", text, re.MULTILINE).group(1)))


def test_the_full_proof_measures_decode_at_the_full_context(smoke, double):
    # 5 ms a token, plus 1 ms per 1,000 tokens of context: ~201 ms a token after the 196k prompt
    with double(FINE, {"decode_seconds_per_token": 0.005, "decode_seconds_per_1k_context": 0.001}) as (url, _):
        rc, result = smoke(url=url, context_target=200_000, decode_tokens=8)
    assert rc == 0, result.get("msg")
    assert result["level"] == "full" and result["escalated"] is None
    assert result["server_version"] == "0.5.23+double"  # its /server_info names its package, as SGLang's does
    decode = result["decode"]
    assert decode["tokens"] == 8 and decode["prompt_tokens"] == result["prompt_tokens"]
    assert 180 <= decode["tpot_ms"] <= 400, decode  # the pace near the full context, not the short one's 5 ms
    assert abs(decode["seconds"] - 7 * decode["tpot_ms"] / 1000.0) < 0.002  # the 7 tokens after the first
    assert "spec_verify_ct" not in decode  # no draft runs


def test_with_a_draft_the_accept_length_comes_from_the_requests_own_counters(smoke, double, tmp_path):
    draft = tmp_path / "draft"
    draft.mkdir()
    (draft / "config.json").write_text(json.dumps(DFLASH_DRAFT))
    flags = FINE + ["--speculative-algorithm", "DFLASH", "--speculative-draft-model-path", str(draft),
                    "--speculative-num-draft-tokens", "16"]
    with double(flags, {"spec_accept_length": 4.0}) as (url, _):
        rc, result = smoke(url=url, prompt_tokens="20000", decode_tokens=16)
    assert rc == 0, result.get("msg")
    decode = result["decode"]
    assert decode["tokens"] == 16 and decode["spec_verify_ct"] == 4 and decode["accept_length"] == 4.0
    assert decode["spec_accept_length"] == 4.0 and 0 < decode["spec_accept_rate"] < 1


def test_a_full_proof_prefills_the_full_context_once(smoke, double):
    """Issue 33: the needle prompt's own request measures decode, so the server prefills the ~196k-token prompt
    once per full proof (each such prefill takes minutes on the real host); beside it the server counts only the
    short concurrent prompts (the double's /tokenize, like SGLang's, counts nothing)."""
    with double(FINE + ["--enable-metrics", "--max-running-requests", "8"]) as (url, _):
        before = prompt_tokens_total(url)
        rc, result = smoke(url=url, context_target=200_000, concurrent_requests=8)
        sent = prompt_tokens_total(url) - before
    assert rc == 0, result.get("msg")
    assert result["decode"]["tokens"] == 16 and result["concurrency"]["answered"] == 8
    short = result["concurrency"]["requests"] * result["concurrency"]["prompt_tokens"]
    assert result["prompt_tokens"] >= 0.95 * 200_000
    assert result["prompt_tokens"] < sent <= 1.05 * result["prompt_target"] + short, (sent, result["prompt_target"])


def test_decode_tokens_under_8_is_refused_by_name(smoke):
    rc, result = smoke(url="http://127.0.0.1:9", decode_tokens=4)
    assert rc == 1 and "decode_tokens=4 must be at least 8" in result["msg"]
    assert "sglang_proof_decode_tokens" in result["msg"]


def test_the_check_sends_one_short_prompt_and_expects_the_proven_pool(smoke, double):
    with double(FINE + ["--api-key", "key-for-the-check-test", "--enable-metrics"]) as (url, _):
        headers = {"Authorization": "Bearer key-for-the-check-test"}
        before = _total(url, headers)
        rc, result = smoke(url=url, api_key="key-for-the-check-test", context_target=200_000, level="check",
                           expect_pool_tokens=POOL, expect_context_length=200_000)
        sent = _total(url, headers) - before
    assert rc == 0, result.get("msg")
    assert result["level"] == "check" and result["escalated"] is None and result["decode"] is None
    assert 0 < result["prompt_tokens"] <= 64 and sent == result["prompt_tokens"]
    assert result["completion"].strip() == "%d." % result["needle"]
    assert [c["name"] for c in result["checks"]] == ["ready", "context", "pool", "proven", "answer"]


def _total(url, headers):
    request = urllib.request.Request(url + "/metrics", headers=headers)
    with urllib.request.urlopen(request, timeout=5) as response:
        text = response.read().decode()
    return int(float(re.search(r"^sglang:prompt_tokens_total\{[^}]*\} (\S+)$", text, re.MULTILINE).group(1)))


def test_a_check_that_finds_another_pool_runs_the_full_proof_and_says_why(smoke, double):
    with double(FINE + ["--enable-metrics"]) as (url, _):
        before = prompt_tokens_total(url)
        rc, result = smoke(url=url, context_target=200_000, level="check", expect_pool_tokens=200_064,
                           expect_context_length=200_000)
        sent = prompt_tokens_total(url) - before
    assert rc == 0, result.get("msg")
    assert result["level"] == "full"
    assert result["escalated"] == "the check found the server reports pool 216,993 tokens, proven 200,064"
    assert result["prompt_tokens"] >= 0.95 * 200_000
    assert sent == result["prompt_tokens"]  # the long prompt once: its own request decoded (no check prompt sent)
    assert result["decode"]["tokens"] == 16


def test_a_check_that_finds_another_context_length_runs_the_full_proof(smoke, double):
    with double(FINE) as (url, _):
        rc, result = smoke(url=url, level="check", expect_pool_tokens=POOL, expect_context_length=150_000)
    assert rc == 0, result.get("msg")
    assert result["level"] == "full" and "context length 200000, proven 150000" in result["escalated"]


def test_the_double_serves_no_metrics_without_enable_metrics(double):
    with double(FINE) as (url, _):
        try:
            urllib.request.urlopen(url + "/metrics", timeout=5)
            status = 200
        except urllib.error.HTTPError as error:
            status = error.code
    assert status == 404
