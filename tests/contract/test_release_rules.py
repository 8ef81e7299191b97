"""Contract: the planner's release table (lib/sglang_kvplan/releases/rules.json) is what each release's own wheel
says, and the planner reads it.

`make test` checks the pinned release and the table's two ends against their wheels (.cache/sglang-wheels/,
downloaded once); `make releases` (SGLANG_RELEASES=all) checks every release of the table.
"""

import json
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import extract_rules
import sglang_kvplan as kv
from test_release_flags import COMMITTED, RULES_TABLE, checked_releases, wheel

with open(RULES_TABLE, encoding="utf-8") as _handle:
    TABLE = json.load(_handle)["releases"]


def test_the_rules_table_and_the_flag_tables_cover_the_same_releases():
    assert sorted(TABLE) == sorted(COMMITTED)
    assert list(kv.RULES)[0] == "0.5.9" and set(kv.RULES) == set(TABLE)


@pytest.mark.parametrize("version", checked_releases())
def test_committed_rules_equal_a_fresh_reading_of_the_real_wheel(version):
    fresh = extract_rules.rules(wheel(version))
    assert fresh.pop("version") == version
    assert extract_rules.dumps(fresh) == extract_rules.dumps(TABLE[version]), (
        "lib/sglang_kvplan/releases/rules.json drifted from the %s wheel: regenerate it with "
        "python tests/contract/extract_rules.py .cache/sglang-wheels/*.whl --out %s" % (version, RULES_TABLE))


def test_what_the_releases_differ_in_as_read_from_their_wheels():
    """The rules the audit found by hand (shared/reference/sglang-wheels-audit.md, finding 2), as the detectors
    read them: the draft's load order, its cell, the multimodal reserve, DFLASH's first release."""
    rows = {v: (r["draft_load"], r["eagle_cell"], r["dflash_cell"], r["mm_reserve_mib"]) for v, r in TABLE.items()}
    assert rows["0.5.9"] == ("after_pool", "separate", None, 0)
    assert rows["0.5.12"] == ("after_pool", "separate", "layer_scaled", 0)
    assert rows["0.5.16"] == ("before_pool", "scaled_product", "layer_scaled", 0)
    assert rows["0.5.20"] == ("before_pool", "scaled_product", "draft_cell", 100)
    assert rows["0.5.23"] == ("before_pool", "scaled_sum", "draft_cell", 100)
    assert kv.releases.first_release_with("DFLASH") == "0.5.11"
    pages = TABLE["0.5.23"]["forced_pages"]
    assert (pages["sm100_mha"]["page"], pages["sm100_mha_asymmetric_kv"]["page"], pages["sm100_mla"]["page"]) == (
        64, 128, 64)
    assert "sm100_mha_asymmetric_kv" not in TABLE["0.5.9"]["forced_pages"]
    assert (TABLE["0.5.9"]["torch"], TABLE["0.5.9"]["torch_cuda"], TABLE["0.5.23"]["torch"]) == ("2.9.1", "12.9",
                                                                                                "2.14.1")


def test_the_docs_table_is_the_rules_table():
    docs = os.path.join(os.path.dirname(RULES_TABLE), "..", "..", "..", "docs", "sglang-releases.md")
    with open(docs, encoding="utf-8") as handle:
        text = handle.read()
    with open(RULES_TABLE, encoding="utf-8") as handle:
        rows = extract_rules.markdown(json.load(handle))
    assert rows in text, "docs/sglang-releases.md: paste the output of extract_rules.py --markdown into its table"
    with open(RULES_TABLE, encoding="utf-8") as handle:
        refusals = extract_rules.refusals_markdown(json.load(handle))
    assert refusals in text, ("docs/sglang-releases.md: paste the output of extract_rules.py --refusals-markdown "
                              "into its launch-refusal table")


def test_the_launch_refusals_each_release_raises_as_read_from_its_wheel():
    """shared/reference/sglang-wheels-audit.md, second audit, D1 and D2: which speculative x parallel combinations
    each release refuses at argument resolution (extract_rules.LAUNCH_REFUSALS)."""
    kinds = {v: sorted(r["launch_refusals"]) for v, r in TABLE.items()}
    assert kinds["0.5.9"] == kinds["0.5.10"] == ["ngram_dp_attention", "standalone_dp_attention"]
    assert kinds["0.5.12"] == ["dflash_dp_attention", "dflash_pp", "ngram_dp_attention", "standalone_dp_attention"]
    assert "uno_draft_path" not in kinds["0.5.19"] and "uno_draft_path" in kinds["0.5.20"]
    assert "dflash_dp_attention" in kinds["0.5.22"] and "dflash_dp_attention_needs_dp_lm_head" not in kinds["0.5.22"]
    assert "dflash_dp_attention" not in kinds["0.5.23"] and "dflash_dp_attention_needs_dp_lm_head" in kinds["0.5.23"]
    on = {v: r["launch_refusals"]["ngram_dp_attention"]["dp_attention_on"] for v, r in TABLE.items()}
    assert on["0.5.21"] == "flag" and on["0.5.22"] == on["0.5.23"] == "attn_dp_size"
    assert TABLE["0.5.15"]["launch_refusals"]["dflash_pp"]["source"] == "sglang/srt/arg_groups/speculative_hook.py:147"
    assert [v for v, r in TABLE.items() if r["dflash_draft_backend"] == "sm100_fa4"] == ["0.5.23"]
    assert [v for v, r in TABLE.items() if r["sm100_default_with_dflash"]] == ["0.5.23"]
