"""The planner against pools SGLang really logged."""

import pytest
import sglang_kvplan as kv

# ct200: Kimi K2.6, 8x RTX PRO 6000 Blackwell, TP8, bf16 KV. P and A are what the three pools imply.
# The seed's build sized its pool on 0.5.9's rules (docs/kv-pool-formula.md, "What ct200's pools say").
CT200 = {"model": "kimi-k2.6", "tp_size": 8, "pre_load_avail_gib": 85.334, "post_load_avail_gib": 19.419,
         "pool_rules": "0.5.9", "pool_policy": "target"}  # the pin's mechanics; test_kvplan_fill.py has fill


@pytest.mark.parametrize("fraction, logged", [(0.85, 101_134), (0.92, 192_406), (0.94, 218_484)])
def test_ct200_forward_matches_logged_pools(fraction, logged):
    predicted = kv.pool_tokens(CT200, fraction)
    assert abs(predicted - logged) / logged < 0.001


def test_ct200_cell_is_mla_latent_bf16():
    assert kv.cell_bytes(CT200) == (512 + 64) * 61 * 2 == 70_272


def test_ct200_plan_for_200k_takes_one_start():
    plan = kv.plan(dict(CT200, context_target=200_000, gpu_memory_mib=97_887))
    assert plan["args"][:6] == ["--context-length", "200000", "--max-total-tokens", "200000",
                                "--mem-fraction-static", "0.958"]  # 1 - 4 GiB / 95.59 GiB (the whole GPU)
    assert plan["predicted_pool_tokens"] == 200_000
    assert kv.pool_tokens(CT200, 0.958) >= 200_000  # the profile reaches the cap, with 42k tokens to spare
    assert plan["calibrated"] is True
    assert plan["headroom_gib"] == pytest.approx(19.419 - 200_000 * 70_272 / 2**30, abs=0.001)  # 6.33
    assert plan["explanation"].startswith("target 200,000 -> pool 200,000 tokens (pinned by --max-total-tokens")


def test_ct200_old_scheme_still_finds_0_926():
    plan = kv.plan(dict(CT200, context_target=200_000, pool_policy="fraction"))
    assert plan["mem_fraction_static"] == 0.926 and plan["predicted_pool_tokens"] == 200_230
    assert kv.pool_tokens(CT200, 0.92) < 200_000 <= kv.pool_tokens(CT200, 0.926)


def test_llama_8b_tp1_public_log():
    # 'Load weight begin. avail mem=78.81 GB', 'Load weight end. ... avail mem=63.72 GB', f=0.88 -> 444,500
    spec = {"model": "llama-3.1-8b", "pre_load_avail_gib": 78.81, "post_load_avail_gib": 63.72}
    assert kv.cell_bytes(spec) == 8 * (128 + 128) * 32 * 2
    assert abs(kv.pool_tokens(spec, 0.88) - 444_500) / 444_500 < 0.005


def test_400k_bf16_on_ct200_fails_with_numbers_and_fp8_fix():
    with pytest.raises(kv.KVPlanError) as error:
        kv.plan(dict(CT200, context_target=400_000))
    message = str(error.value)
    assert "context_target 400,000 does not fit" in message
    assert "26.18 GiB of KV cache per GPU" in message       # 400,000 x 70,272 B
    # A 19.42 less SGLang's reserve at 0.953 of P 85.33, 4.011 GiB (a little over the 4 GiB headroom)
    assert "at most 15.41 GiB per GPU is available" in message
    assert "sglang_kv_cache_dtype: fp8_e4m3" in message
    assert "lower sglang_context_target to at most 235,392" in message
    assert "more GPUs" in message


def test_fp8_suggestion_is_true():
    plan = kv.plan(dict(CT200, context_target=200_000, kv_cache_dtype="fp8_e4m3"))
    assert plan["kv_bytes_per_token"] == 35_136
    assert "--kv-cache-dtype" in plan["args"]


def test_largest_target_suggested_really_fits():
    # P is known but not the whole GPU: the highest fraction keeping 4 GiB of P is 0.953, whose profile
    # (235,435) is the limit, less its part of a 64-token granule (an MLA pin is rounded up to 64, the page
    # SGLang forces on SM100); with the GPU's size known the fraction may be 0.958 and 4 GiB of A the limit.
    fits = kv.plan(dict(CT200, context_target=235_392))
    assert fits["predicted_pool_tokens"] == 235_392 and fits["headroom_gib"] >= 4.0
    with pytest.raises(kv.KVPlanError):
        kv.plan(dict(CT200, context_target=235_393))
    whole_gpu = dict(CT200, gpu_memory_mib=97_887)
    # ... less SGLang's reserve at 0.958 on the whole 95.59 GiB GPU, 4.015 GiB (the 3-decimal floor of the fraction
    # leaves 0.015 GiB more than the 4 GiB asked): 235,328, not the 235,584 that 4.0 GiB exactly would allow
    assert kv.plan(dict(whole_gpu, context_target=235_328))["headroom_gib"] >= (1 - 0.958) * 97_887 / 1024
    with pytest.raises(kv.KVPlanError, match="at most 235,328.*") as error:
        kv.plan(dict(whole_gpu, context_target=235_329))
    assert "SGLang's reserve (1 - f) x P at --mem-fraction-static 0.958" in str(error.value)
