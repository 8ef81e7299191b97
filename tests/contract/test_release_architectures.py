"""Contract: the planner's architecture table (lib/sglang_kvplan/releases/architectures.json) is what each release's
own wheel registers and sizes, and the planner reads it.

`make test` checks the pinned release and the table's two ends against their wheels (.cache/sglang-wheels/,
downloaded once); `make releases` (SGLANG_RELEASES=all) checks every release of the table.
"""

import json
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import extract_architectures
from sglang_kvplan import architectures
from test_release_flags import COMMITTED, checked_releases, wheel

with open(architectures.TABLE_FILE, encoding="utf-8") as _handle:
    TABLE = json.load(_handle)["releases"]


def test_the_architecture_table_covers_the_releases_of_the_flag_tables():
    assert sorted(TABLE) == sorted(COMMITTED)


@pytest.mark.parametrize("version", checked_releases())
def test_committed_architectures_equal_a_fresh_reading_of_the_real_wheel(version):
    fresh = extract_architectures.classify_all(wheel(version))
    assert fresh["version"] == version
    assert fresh["architectures"] == TABLE[version], (
        "lib/sglang_kvplan/releases/architectures.json drifted from the %s wheel: regenerate it with python "
        "tests/contract/extract_architectures.py .cache/sglang-wheels/*.whl --out %s"
        % (version, architectures.TABLE_FILE))


def test_what_0_5_23_registers_as_read_from_its_wheel():
    """shared/reference/architectures-0.5.23.md: 290 names in 225 modules, and the classes the issue names."""
    table = TABLE["0.5.23"]
    assert len(table) == 290
    assert len({entry["module"].rsplit(":", 1)[0] for entry in table.values()}) == 225
    classes = {arch: architectures.pool_class(arch, "0.5.23") for arch in (
        "Grok1ForCausalLM", "Glm4MoeForCausalLM", "Glm4vMoeForConditionalGeneration", "MiniMaxM2ForCausalLM",
        "Qwen3VLMoeForConditionalGeneration", "Mistral3ForConditionalGeneration", "Gemma2ForCausalLM",
        "Phi3ForCausalLM", "Ernie4_5_MoeForCausalLM", "LlamaForSequenceClassification", "DeepseekV3ForCausalLM",
        "GptOssForCausalLM", "Qwen3NextForCausalLM", "KimiLinearForCausalLM", "DeepseekV32ForCausalLM",
        "Gemma3ForConditionalGeneration", "ChatGLMModel", "GPTBigCodeForCausalLM", "DeciLMForCausalLM",
        "LongcatFlashForCausalLM", "Llama4ForConditionalGeneration", "Llama4ForCausalLM", "BertModel",
        "DeepseekV3ForCausalLMNextN", "SeedOssForCausalLM")}
    assert classes == {
        "Grok1ForCausalLM": "full", "Glm4MoeForCausalLM": "full", "Glm4vMoeForConditionalGeneration": "by_config",
        "MiniMaxM2ForCausalLM": "full", "Qwen3VLMoeForConditionalGeneration": "full",
        "Mistral3ForConditionalGeneration": "full", "Gemma2ForCausalLM": "window_one_pool",
        "Phi3ForCausalLM": "full", "Ernie4_5_MoeForCausalLM": "full", "LlamaForSequenceClassification": "reward",
        "DeepseekV3ForCausalLM": "mla", "GptOssForCausalLM": "hybrid_swa", "Qwen3NextForCausalLM": "linear",
        "KimiLinearForCausalLM": "linear", "DeepseekV32ForCausalLM": "sparse",
        "Gemma3ForConditionalGeneration": "window_one_pool", "ChatGLMModel": "refused",
        "GPTBigCodeForCausalLM": "refused", "DeciLMForCausalLM": "refused", "LongcatFlashForCausalLM": "refused",
        "Llama4ForConditionalGeneration": "refused", "Llama4ForCausalLM": "full", "BertModel": "encoder",
        "DeepseekV3ForCausalLMNextN": "draft", "SeedOssForCausalLM": "unregistered"}
    assert table["Llama4ForConditionalGeneration"]["reason"] == "fixed_layer_split"
    assert table["MambaForCausalLM"]["class"] == "linear" and table["Qwen3_5ForCausalLM"]["class"] == "linear"
    assert table["Qwen3ForRewardModel"]["class"] == "reward" and table["XLMRobertaModel"]["class"] == "encoder"
    assert "mm_transport_override" in table["Qwen3VLMoeForConditionalGeneration"]
    assert table["ChatGLMModel"]["reason"] == "kv_heads_from:multi_query_group_num"
    assert table["DeepseekV3ForCausalLM"]["sparse_if"] == "index_topk"


def test_every_release_classifies_every_name_it_registers():
    known = {"full", "mla", "window_one_pool", "hybrid_swa", "linear", "sparse", "multimodal", "draft", "encoder",
             "reward", "refused"}
    for version, table in TABLE.items():
        assert table, version
        for arch, entry in table.items():
            assert entry["class"] in known, (version, arch, entry)
            assert entry["class"] != "refused" or entry.get("reason"), (version, arch)
