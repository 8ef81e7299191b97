"""The planner's inputs from the checkpoints and the calibration key (lib/sglang_state/model_inputs.py)."""

from sglang_state import calibration_key, model_inputs

MODEL = {"config": {"model_type": "kimi_k2"}, "sha256": "0123456789abcdef0123", "gib": 594.2}
DRAFT = {"config": {"model_type": "deepseek_v3"}, "sha256": "fedcba9876543210", "gib": 3.1}
SETUP = {"model_path": "/srv/models/kimi-k2.6", "tp_size": 8, "pp_size": 1, "dp_size": 1,
         "enable_dp_attention": False, "version": "0.5.23", "pool_rules": None, "kv_cache_dtype": "fp8_e4m3",
         "speculative": {}, "nodes": []}


def test_the_key_of_a_plain_setup_is_spelled_as_the_stored_calibrations_are():
    assert calibration_key(SETUP, MODEL) == \
        "/srv/models/kimi-k2.6@0123456789ab tp8 pp1 dp1 sglang-0.5.23 kv-fp8_e4m3 draft-NONE"


def test_every_part_of_the_setup_that_moves_p_or_a_is_in_the_key():
    setup = dict(SETUP, dp_size=2, enable_dp_attention=True, pool_rules="0.5.22", nodes=["a", "b"],
                 speculative={"algorithm": "eagle3"})
    assert calibration_key(setup, MODEL) == \
        "/srv/models/kimi-k2.6@0123456789ab tp8 pp1 dp2-attn sglang-0.5.23/0.5.22 kv-fp8_e4m3 draft-EAGLE3 nodes2"


def test_a_draft_read_on_the_host_feeds_the_planner_and_the_key():
    setup = dict(SETUP, speculative={"algorithm": "eagle3", "draft_model_path": "/srv/models/draft"})
    got = model_inputs({"sglang_model_path": MODEL, "sglang_speculative.draft_model_path": DRAFT}, setup)
    assert got["draft_key"] == "EAGLE3:/srv/models/draft@fedcba987654"
    assert got["calibration_key"].endswith(" draft-EAGLE3:/srv/models/draft@fedcba987654")
    assert (got["draft_model_config"], got["draft_checkpoint_gib"]) == (DRAFT["config"], 3.1)
    assert (got["model"], got["model_config"], got["checkpoint_gib"]) == (MODEL, MODEL["config"], 594.2)


def test_a_draft_read_by_an_earlier_play_is_not_used_when_the_setup_names_none():
    got = model_inputs({"sglang_model_path": MODEL, "sglang_speculative.draft_model_path": DRAFT}, SETUP)
    assert got["draft_key"] is None and got["draft_model_config"] is None and got["draft_checkpoint_gib"] is None
    assert got["calibration_key"].endswith(" draft-NONE")
