"""library/sglang_checkpoint_info.py: what the planner reads of a checkpoint (config.json, its sha256, the size),
and one sentence naming the knob for a checkpoint that is not there or not one."""

import hashlib
import json
import os
import subprocess
import sys

import pytest

MODULE = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "library",
                      "sglang_checkpoint_info.py")
CONFIG = {"architectures": ["DeepseekV3ForCausalLM"], "hidden_size": 7168, "num_hidden_layers": 61}


def run(tmp_path, **args):
    path = tmp_path / "args.json"
    path.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": args}))
    proc = subprocess.run([sys.executable, MODULE, str(path)], capture_output=True, text=True, timeout=60)
    assert "Traceback" not in proc.stdout + proc.stderr
    return json.loads(proc.stdout)


def test_config_sha256_and_the_index_total_size(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps(CONFIG))
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps({"metadata": {"total_size": 3 << 30}}))
    got = run(tmp_path, path=str(tmp_path))
    assert got["config"] == CONFIG and got["gib"] == 3.0
    assert got["sha256"] == hashlib.sha256((tmp_path / "config.json").read_bytes()).hexdigest()


def test_a_hub_cache_snapshot_whose_files_are_links_to_blobs_is_read(tmp_path):
    (tmp_path / "blob").write_text(json.dumps(CONFIG))
    (tmp_path / "snapshot").mkdir()
    (tmp_path / "snapshot" / "config.json").symlink_to(tmp_path / "blob")
    assert run(tmp_path, path=str(tmp_path / "snapshot"))["config"] == CONFIG


def test_without_an_index_the_size_is_the_safetensors_files(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps(CONFIG))
    (tmp_path / "model.safetensors").write_bytes(b"x" * 1024)
    assert run(tmp_path, path=str(tmp_path))["gib"] == 1024 / 1073741824


def test_the_files_digest_changes_with_another_checkpoint_at_the_same_path_and_only_then(tmp_path):
    """What the env file carries (roles/sglang/templates/sglang.env.j2): the same files read twice give the same
    digest; a shard rewritten (same name and size), a tokenizer added, or a shard removed change it; the role's own
    dot files and an unfinished .part download do not (molecule/real_server found a new tokenizer under a server that
    kept the old one: the re-run checked the old process and restarted nothing)."""
    folder = tmp_path / "checkpoint"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(CONFIG))
    shard = folder / "model-00001-of-00002.safetensors"
    shard.write_bytes(b"x" * 64)
    (folder / "model-00002-of-00002.safetensors").write_bytes(b"y" * 64)
    first = run(tmp_path, path=str(folder))["files_sha256"]
    assert run(tmp_path, path=str(folder))["files_sha256"] == first
    (folder / ".sglang-download-complete").write_text("{}")
    (folder / "model-00003-of-00003.safetensors.part").write_bytes(b"z")
    assert run(tmp_path, path=str(folder))["files_sha256"] == first
    seen = {first}
    for change in (lambda: os.utime(shard, ns=(1, 1)), lambda: (folder / "tokenizer.json").write_text("{}"),
                   lambda: (folder / "model-00002-of-00002.safetensors").unlink()):
        change()
        digest = run(tmp_path, path=str(folder))["files_sha256"]
        assert digest not in seen
        seen.add(digest)


@pytest.mark.parametrize(("make", "sentence"), [
    (lambda d: None, "sglang_speculative.draft_model_path: %s/config.json is missing. Pre-stage the checkpoint there, "
                     "or name its Hub repository (sglang_speculative.draft_model_hf_repo"),
    (lambda d: (d / "config.json").write_text("[1, 2]"), "is not a JSON object"),
    (lambda d: (d / "config.json").write_text("{nope"), "is not JSON"),
    (lambda d: (d / "config.json").mkdir(), "is not a regular file"),
    (lambda d: (d / "config.json").symlink_to("/dev/zero"), "is not a regular file"),
    (lambda d: os.mkfifo(d / "config.json"), "is not a regular file"),
    (lambda d: (d / "config.json").write_text("[" * 100000), "is not JSON"),
])
def test_a_checkpoint_that_is_not_there_or_not_one_is_a_sentence_naming_the_knob(tmp_path, make, sentence):
    make(tmp_path)
    got = run(tmp_path, path=str(tmp_path), knob="sglang_speculative.draft_model_path",
              repo_knob="sglang_speculative.draft_model_hf_repo")
    assert got["failed"] and sentence.replace("%s", str(tmp_path)) in got["msg"]
    assert got["msg"].startswith("sglang_speculative.draft_model_path: ")


def test_the_model_and_its_draft_in_one_call_and_a_missing_one_only_when_missing_ok(tmp_path):
    model, draft = tmp_path / "model", tmp_path / "draft"
    model.mkdir()
    draft.mkdir()
    (model / "config.json").write_text(json.dumps(CONFIG))
    (model / "model.safetensors").write_bytes(b"x" * 1024)
    both = [{"path": str(model), "knob": "sglang_model_path", "repo_knob": "sglang_model_hf_repo",
             "hf_repo": "", "hf_revision": "main"},  # the role's list as it is: the download step's keys ride along
            {"path": str(draft), "knob": "sglang_speculative.draft_model_path",
             "repo_knob": "sglang_speculative.draft_model_hf_repo"}]
    looked = run(tmp_path, checkpoints=both, missing_ok=True)
    assert looked["missing"] == ["sglang_speculative.draft_model_path"]
    assert looked["checkpoints"] == {"sglang_model_path": {
        "config": CONFIG, "gib": 1024 / 1073741824,
        "sha256": hashlib.sha256((model / "config.json").read_bytes()).hexdigest(),
        "files_sha256": run(tmp_path, path=str(model))["files_sha256"]}}
    refused = run(tmp_path, checkpoints=both)
    assert refused["failed"] and refused["msg"].startswith("sglang_speculative.draft_model_path: %s/config.json is "
                                                           "missing" % draft)
    (draft / "config.json").write_text(json.dumps(CONFIG))
    assert sorted(run(tmp_path, checkpoints=both)["checkpoints"]) == ["sglang_model_path",
                                                                       "sglang_speculative.draft_model_path"]
    assert run(tmp_path)["failed"]  # neither path nor checkpoints
