"""Each host's last calibration kept on the controller (lib/sglang_checks/kept.py): the check phase and `make plan`
plan from the numbers the role on the host plans from (issue 35 item 6)."""

import json
import os

import pytest
from sglang_checks import kept
from sglang_state.model_inputs import calibration_key, draft_key

KNOBS = {"sglang_model_path": "/srv/models/kimi-k2.6", "sglang_tp_size": 8, "sglang_pp_size": 1, "sglang_dp_size": 1,
         "sglang_enable_dp_attention": False, "sglang_version": "0.5.23", "sglang_pool_rules": "",
         "sglang_kv_cache_dtype": "auto", "sglang_nodes": [],
         "sglang_speculative": {"algorithm": "DFLASH", "draft_model_path": "/srv/models/kimi-k2.6-dflash"}}
CALIBRATION = {"pre_load_avail_gib": 85.33, "post_load_avail_gib": 19.418625, "mem_fraction_static": 0.958,
               "pool_tokens": 200_064, "pinned": True,
               "boot_flags": {"mem_fraction_static": 0.958, "max_total_tokens": 200_064, "max_running_requests": 8,
                              "context_length": 200_000, "pool_policy": "fill"}}


def host_key(knobs=KNOBS):
    """The key the role computes on the host (lib/sglang_state/model_inputs.py), digests and all."""
    setup = {name: knobs["sglang_" + name] for name in kept.SETUP_KNOBS}
    draft = draft_key(setup["speculative"], {"sha256": "1ba1ef79de87aa"})
    return calibration_key(setup, {"sha256": "9f8e7d6c5b4a39"}, draft)


def test_what_a_run_keeps_is_read_back_for_its_setup(tmp_path):
    written = kept.write(str(tmp_path), "ct200", host_key(), CALIBRATION, now="2026-12-04T07:00:00+00:00")
    assert written == str(tmp_path / "ct200" / "calibration.json")
    assert oct(os.stat(written).st_mode & 0o777) == "0o644"
    calibration, note = kept.read(str(tmp_path), "ct200", KNOBS)
    assert calibration == CALIBRATION
    assert "the host's last run, 2026-12-04T07:00:00+00:00" in note
    assert [name for name in os.listdir(tmp_path / "ct200")] == ["calibration.json"]  # no temporary left


@pytest.mark.parametrize("change", [{"sglang_tp_size": 4}, {"sglang_version": "0.5.22"},
                                    {"sglang_kv_cache_dtype": "fp8_e4m3"}, {"sglang_speculative": {}},
                                    {"sglang_model_path": "/srv/models/other"}, {"sglang_nodes": ["a", "b"]}])
def test_a_kept_calibration_of_another_setup_is_not_used(tmp_path, change):
    kept.write(str(tmp_path), "ct200", host_key(), CALIBRATION)
    calibration, note = kept.read(str(tmp_path), "ct200", dict(KNOBS, **change))
    assert calibration == {} and "is of another setup" in note


def test_no_file_is_no_calibration_and_no_note(tmp_path):
    assert kept.read(str(tmp_path), "ct200", KNOBS) == ({}, "")


@pytest.mark.parametrize("body, words", [
    (b"{not json", "is not JSON"),
    (b"\xff\xfe", "is not JSON"),
    (json.dumps({"calibration_key": "x"}).encode(), "holds no calibration"),
    (json.dumps([1, 2]).encode(), "holds no calibration"),
    (b" " * (kept.LIMIT + 1), "which no calibration is"),
])
def test_a_kept_file_that_is_not_one_is_named_and_not_used(tmp_path, body, words):
    (tmp_path / "ct200").mkdir()
    (tmp_path / "ct200" / "calibration.json").write_bytes(body)
    calibration, note = kept.read(str(tmp_path), "ct200", KNOBS)
    assert calibration == {} and words in note and "calibration.json" in note


def test_a_failed_write_leaves_the_kept_file_as_it_was(tmp_path, monkeypatch):
    kept.write(str(tmp_path), "ct200", host_key(), CALIBRATION)
    before = (tmp_path / "ct200" / "calibration.json").read_bytes()

    def full_disk(*_args):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(kept.os, "replace", full_disk)
    with pytest.raises(OSError):
        kept.write(str(tmp_path), "ct200", host_key(), dict(CALIBRATION, pre_load_avail_gib=1.0))
    assert (tmp_path / "ct200" / "calibration.json").read_bytes() == before
    assert os.listdir(tmp_path / "ct200") == ["calibration.json"]
