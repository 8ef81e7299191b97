"""The planner sizes what it knows, by config.json `architectures[0]` (lib/sglang_kvplan/architectures.py), and
refuses the rest (issue 35 item 1: "an unknown architecture is refused, never planned as another"). Before, it
refused a list of config.json keys, and Kimi-Linear (KDA layers marked by `linear_attn_config`, none of those
keys) was planned as plain MLA over all 27 layers: 31,104 B/token where SGLang 0.5.23 counts its 7
full-attention layers."""

import glob
import os
import sys
import zipfile

import pytest
import sglang_kvplan as kv
from sglang_kvplan import architectures
from sglang_kvplan.architectures import KNOWN, LINEAR, SLIDING, SPARSE

H200 = {"gpu_memory_mib": 143_771, "context_target": 32_768, "version": "0.5.23", "pool_policy": "target"}

# Kimi-Linear-48B-A3B-Instruct's config.json (moonshotai, the attention fields): MLA full-attention layers and
# KDA layers listed in linear_attn_config; no sliding_window, layer_types, mamba_* or index_topk key.
KIMI_LINEAR = {
    "architectures": ["KimiLinearForCausalLM"], "model_type": "kimi_linear", "torch_dtype": "bfloat16",
    "num_hidden_layers": 27, "hidden_size": 2304, "num_attention_heads": 32, "num_key_value_heads": 32,
    "kv_lora_rank": 512, "qk_rope_head_dim": 64, "qk_nope_head_dim": 128, "v_head_dim": 128,
    "max_position_embeddings": 1_048_576,
    "linear_attn_config": {"kda_layers": [1, 2, 3, 5, 6, 7, 9, 10, 11, 13, 14, 15, 17, 18, 19, 21, 22, 23, 25, 26],
                           "full_attn_layers": [4, 8, 12, 16, 20, 24, 27], "head_dim": 128, "num_heads": 32,
                           "short_conv_kernel_size": 4},
}

# google/gemma-3-27b-it config.json (the fields the pool reads): a multimodal wrapper, text geometry under
# text_config, sliding_window 1024 on 5 of 6 layers. max_position_embeddings is Gemma3TextConfig's default.
GEMMA3_27B = {
    "architectures": ["Gemma3ForConditionalGeneration"], "model_type": "gemma3", "torch_dtype": "bfloat16",
    "text_config": {"model_type": "gemma3_text", "head_dim": 128, "hidden_size": 5376, "num_attention_heads": 32,
                    "num_hidden_layers": 62, "num_key_value_heads": 16, "query_pre_attn_scalar": 168,
                    "sliding_window": 1024, "max_position_embeddings": 131_072,
                    "rope_scaling": {"factor": 8.0, "rope_type": "linear"}},
    "vision_config": {"model_type": "siglip_vision_model", "num_hidden_layers": 27},
}

GQA = {"num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8, "hidden_size": 4096,
       "max_position_embeddings": 131_072}


def refusal(config, **spec):
    with pytest.raises(kv.KVPlanError) as err:
        kv.plan(dict(H200, model_config=config, **spec))
    return str(err.value)


def test_kimi_linear_is_planned_by_its_own_layers():
    # Before: planned as plain MLA over every layer, (512 + 64) x 27 x 2 = 31,104 B/token; SGLang 0.5.23 counts its 7
    # full-attention (MLA) layers for KV and keeps a state per request for its 20 KDA layers (linear.py)
    from sglang_kvplan import linear

    assert kv.cell_bytes(dict(H200, model_config=KIMI_LINEAR, pool_policy="fill")) == (512 + 64) * 7 * 2
    # conv (4 - 1) x 3 x 32 x 128 bf16 and a 32 x 128 x 128 fp32 state, per KDA layer
    assert linear.state_bytes(KIMI_LINEAR, 1) == 20 * (3 * 3 * 32 * 128 * 2 + 32 * 128 * 128 * 4)
    assert kv.plan(dict(H200, model_config=KIMI_LINEAR, pool_policy="fill", checkpoint_gib=91.6))["state_slots"] > 0


def test_an_unregistered_architecture_is_planned_as_the_transformers_fallback_with_a_line_saying_so():
    # 0.5.23 serves an architecture it does not register through TransformersForCausalLM, with the plain pool
    plan = kv.plan(dict(H200, model_config=dict(GQA, architectures=["FancyNewForCausalLM"]), checkpoint_gib=15.0))
    assert plan["kv_bytes_per_token"] == 8 * 256 * 32 * 2
    assert any("FancyNewForCausalLM is not registered by SGLang 0.5.23" in line and "Transformers fallback" in line
               for line in plan["assumptions"])


def test_an_unregistered_architecture_without_a_plain_layout_is_refused():
    message = refusal(dict(GQA, architectures=["FancyNewForCausalLM"], multi_query_group_num=2), checkpoint_gib=15.0)
    assert "FancyNewForCausalLM is not registered by SGLang 0.5.23" in message
    assert "'multi_query_group_num'" in message and "sglang_max_total_tokens" in message
    message = refusal(dict(GQA, architectures=["FancyNewForCausalLM"], sliding_window=4096), checkpoint_gib=15.0)
    assert "sliding-window" in message


@pytest.mark.parametrize("value", [[], "LlamaForCausalLM", [3], [""]])
def test_a_damaged_architectures_value_is_refused_naming_it(value):
    message = refusal(dict(GQA, architectures=value))
    assert "'architectures'" in message and repr(value) in message


def test_the_architecture_decides_before_the_keys():
    # A known full-attention architecture with a hybrid key still gets the key check (the table decides first,
    # the keys are kept for layouts a known class may carry), and a known class plans the same geometry as before.
    assert "full_attention_interval" in refusal(dict(GQA, architectures=["Qwen3ForCausalLM"],
                                                     full_attention_interval=4))
    assert kv.cell_bytes(dict(model_config=dict(GQA, architectures=["LlamaForCausalLM"]))) == 8 * 256 * 32 * 2


def test_every_preset_names_an_architecture_the_pinned_release_registers():
    for name, preset in kv.load_presets().items():
        arch = preset["config"]["architectures"][0]
        assert arch in KNOWN or arch in SLIDING or arch in LINEAR or arch in SPARSE or (
            architectures.pool_class(arch, "0.5.23") in ("full", "mla", "window_one_pool", "reward")), name


def test_gemma3_27b_on_h200_at_0_5_23_is_one_plain_pool():
    # 0.5.23 arg_groups/model_overrides/gemma2_gemma3.py:13-26 sets disable_hybrid_swa_memory, so
    # configs/model_config.py:1217 is_hybrid_swa is false and pool_configurator.py:491-498 sizes
    # kv_heads/TP x (head_dim + v_head_dim) x layers x elem = 16 x (128 + 128) x 62 x 2 over all 62 layers.
    assert kv.cell_bytes(dict(H200, model_config=GEMMA3_27B)) == 16 * 256 * 62 * 2 == 507_904
    assert kv.cell_bytes(dict(H200, model_config=GEMMA3_27B, tp_size=2)) == 8 * 256 * 62 * 2
    plan = kv.plan(dict(H200, model_config=GEMMA3_27B, checkpoint_gib=51.0))
    assert plan["max_total_tokens"] == 32_768 and plan["kv_bytes_per_token"] == 507_904


def test_gemma3_on_a_release_without_the_rule_is_refused(monkeypatch):
    # Every cached wheel, 0.5.9-0.5.23, has the rule (0.5.9 server_args.py:1475-1486); a release outside that
    # set (here 0.5.9 taken out of it, as a release before the rule would be) is refused by name.
    from sglang_kvplan import architectures
    monkeypatch.setattr(architectures, "GEMMA3_PLAIN_POOL_RELEASES", frozenset({"0.5.23"}))
    message = refusal(GEMMA3_27B, version="0.5.9")
    assert "Gemma 3" in message and "0.5.9" in message and "disable hybrid SWA memory" in message
    kv.plan(dict(H200, model_config=GEMMA3_27B, checkpoint_gib=51.0))  # 0.5.23 still planned


# google/gemma-3-1b-it: text-only, a flat config with layer_types (5 sliding of every 6) and sliding_window 512.
GEMMA3_1B = {"architectures": ["Gemma3ForCausalLM"], "torch_dtype": "bfloat16", "head_dim": 256, "hidden_size": 1152,
             "num_attention_heads": 4, "num_hidden_layers": 26, "num_key_value_heads": 1, "sliding_window": 512,
             "max_position_embeddings": 32_768,
             "layer_types": (["sliding_attention"] * 5 + ["full_attention"]) * 4 + ["sliding_attention"] * 2}


def test_gemma3_text_only_is_one_plain_pool_too():
    # The same override names Gemma3ForCausalLM (0.5.23 gemma2_gemma3.py:13-19): 1 x (256 + 256) x 26 x 2
    assert kv.cell_bytes(dict(H200, model_config=GEMMA3_1B)) == 1 * 512 * 26 * 2


WHEELS = os.path.join(os.path.dirname(__file__), "..", "..", ".cache", "sglang-wheels")


def release_wheel(release):
    """The release's wheel: the pinned one downloaded when missing (a clean checkout's make unit reads it before
    the contract tests of another worker have fetched it, and skipping then hid these checks in CI), another one
    only where `make releases` left it."""
    contract = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "contract")
    if contract not in sys.path:
        sys.path.insert(0, contract)
    from test_release_flags import pinned_version, release_of, wheel

    if release == release_of(pinned_version()):
        return wheel(release)
    found = glob.glob(os.path.join(WHEELS, "sglang-%s-*.whl" % release))
    if not found:
        pytest.skip("the %s wheel is not cached in .cache/sglang-wheels (make releases fetches it)" % release)
    return found[0]


@pytest.mark.parametrize("release", sorted(kv.RULES))
def test_each_release_turns_hybrid_swa_off_for_gemma3_at_the_cited_lines(release):
    # The table's citation, read in the release's own wheel: the Gemma 3 classes and the override at those lines.
    from sglang_kvplan.architectures import GEMMA3_PLAIN_POOL
    path, lines = GEMMA3_PLAIN_POOL[release].rsplit(":", 1)
    first, last = (int(n) for n in lines.split("-"))
    with zipfile.ZipFile(release_wheel(release)) as wheel:
        text = wheel.read("sglang/srt/" + path).decode().splitlines()[first - 1:last]
    cited = "\n".join(text)
    assert "Gemma3ForConditionalGeneration" in cited and "Gemma3ForCausalLM" in cited, cited
    assert "disable_hybrid_swa_memory" in cited and "True" in cited, cited


def _cited():
    out = [(arch, where) for arch, where in KNOWN.items()]
    out += [(arch, entry[1]) for table in (SLIDING, LINEAR, SPARSE) for arch, entry in table.items()]
    return out


@pytest.mark.parametrize("arch, where", _cited())
def test_each_architecture_is_served_by_the_cited_entry_class_of_0_5_23(arch, where):
    # every name the planner sizes or refuses by name is a class SGLang 0.5.23 serves, at the line the table cites
    path, line = where.rsplit(":", 1)
    with zipfile.ZipFile(release_wheel("0.5.23")) as wheel:
        lines = wheel.read("sglang/srt/" + path).decode().splitlines()
    entry = "\n".join(lines[int(line) - 1:int(line) + 6])
    assert entry.lstrip().startswith("EntryClass") and arch in entry, (arch, where, entry)


def test_the_docs_table_is_the_architectures_table():
    from sglang_kvplan import architectures
    with open(os.path.join(os.path.dirname(__file__), "..", "..", "docs", "planner.md"), encoding="utf-8") as handle:
        assert architectures.markdown() in handle.read(), "docs/planner.md: paste architectures.markdown() into it"
