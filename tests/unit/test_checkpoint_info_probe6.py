"""Probe 6's D9 against library/sglang_checkpoint_info.py, with the probe's own inputs: a weights link that reaches
nothing names the file; an index of the wrong shape or an absurd total_size is refused by name (never "a defect",
never gib=inf); files_sha256 covers the subfolders (original/consolidated.pth)."""

import hashlib
import json
import os

import pytest
from test_checkpoint_info import CONFIG, run


def checkpoint(folder):
    folder.mkdir(exist_ok=True)
    (folder / "config.json").write_text(json.dumps(CONFIG))
    return folder


def refused(out):
    assert out.get("failed"), out
    assert "defect" not in out["msg"] and "Traceback" not in out["msg"], out
    return out["msg"]


def test_probe6_d9_a_dangling_safetensors_link_names_the_file(tmp_path):
    folder = checkpoint(tmp_path / "model")
    (folder / "model.safetensors").symlink_to(tmp_path / "gone-blob")
    msg = refused(run(tmp_path, path=str(folder)))
    assert msg.startswith("sglang_model_path: ") and str(folder / "model.safetensors") in msg, msg
    assert "reaches no file" in msg, msg


def test_probe6_d9_a_looping_safetensors_link_names_the_file(tmp_path):
    folder = checkpoint(tmp_path / "model")
    (folder / "model-00001-of-00001.safetensors").symlink_to(folder / "model-00001-of-00001.safetensors")
    msg = refused(run(tmp_path, path=str(folder)))
    assert str(folder / "model-00001-of-00001.safetensors") in msg and "symbolic links" in msg, msg


def test_probe6_d9_a_dangling_shard_link_is_named_also_when_the_index_gives_the_size(tmp_path):
    # With an index the size comes from total_size; the files' digest still stats every shard.
    folder = checkpoint(tmp_path / "model")
    (folder / "model.safetensors.index.json").write_text(json.dumps({"metadata": {"total_size": 1024}}))
    (folder / "original").mkdir()
    (folder / "original" / "consolidated.pth").symlink_to(tmp_path / "gone-blob")
    msg = refused(run(tmp_path, path=str(folder)))
    assert str(folder / "original" / "consolidated.pth") in msg, msg


def test_probe6_d9_a_dangling_link_that_is_not_weights_loads_nothing_and_is_left_out(tmp_path):
    folder = checkpoint(tmp_path / "model")
    (folder / "README.md").symlink_to(tmp_path / "gone-blob")
    out = run(tmp_path, path=str(folder))
    assert not out.get("failed") and out["found"], out


@pytest.mark.parametrize("index, says", [
    ({"metadata": [1]}, "metadata is [1], not an object"),
    ({"metadata": None}, "metadata is null, not an object"),
    ({"metadata": "big"}, 'metadata is "big", not an object'),
    ([1, 2], "is not a JSON object"),
])
def test_probe6_d9_an_index_of_the_wrong_shape_is_refused_by_name(tmp_path, index, says):
    folder = checkpoint(tmp_path / "model")
    (folder / "model.safetensors.index.json").write_text(json.dumps(index))
    msg = refused(run(tmp_path, path=str(folder)))
    assert str(folder / "model.safetensors.index.json") in msg and says in msg, msg
    assert msg.startswith("sglang_model_path: "), msg


@pytest.mark.parametrize("total", ["Infinity", "-Infinity", "NaN", "-1", "0", "1.5", "1e300", "2e15", "true", '"3"',
                                   "[1]"])
def test_probe6_d9_an_absurd_total_size_is_refused_by_name(tmp_path, total):
    folder = checkpoint(tmp_path / "model")
    # written by hand: json.dumps would not write Infinity as the probe's index has it
    (folder / "model.safetensors.index.json").write_text('{"metadata": {"total_size": %s}}' % total)
    msg = refused(run(tmp_path, path=str(folder)))
    assert "metadata.total_size is " in msg and "not a checkpoint's size in bytes" in msg, msg


def test_probe6_d9_a_whole_total_size_written_as_a_float_is_read(tmp_path):
    folder = checkpoint(tmp_path / "model")
    (folder / "model.safetensors.index.json").write_text('{"metadata": {"total_size": 2147483648.0}}')
    assert run(tmp_path, path=str(folder))["gib"] == 2.0


def test_probe6_d9_new_weights_in_a_subfolder_change_files_sha256(tmp_path):
    folder = checkpoint(tmp_path / "model")
    (folder / "model.safetensors").write_bytes(b"x" * 64)
    first = run(tmp_path, path=str(folder))["files_sha256"]
    (folder / "original").mkdir()
    (folder / "original" / "consolidated.pth").write_bytes(b"w" * 64)
    second = run(tmp_path, path=str(folder))["files_sha256"]
    assert second != first
    (folder / "original" / "consolidated.pth").write_bytes(b"v" * 65)  # the same name, other weights
    third = run(tmp_path, path=str(folder))["files_sha256"]
    assert third not in (first, second)
    # huggingface_hub's own metadata (.cache/) and an unfinished download in a subfolder are not the checkpoint
    (folder / ".cache" / "huggingface").mkdir(parents=True)
    (folder / ".cache" / "huggingface" / "x.metadata").write_text("1")
    (folder / "original" / "params.json.part").write_text("{")
    assert run(tmp_path, path=str(folder))["files_sha256"] == third


def test_probe6_d9_a_folder_without_subfolders_keeps_the_digest_it_had(tmp_path):
    # the digest before subfolders were covered: name, size, mtime per top-level regular file, sorted, hashed
    folder = checkpoint(tmp_path / "model")
    (folder / "model.safetensors").write_bytes(b"x" * 64)
    lines = "".join("%s\t%d\t%d\n" % (name, os.stat(folder / name).st_size, os.stat(folder / name).st_mtime_ns)
                    for name in sorted(os.listdir(folder)))
    assert run(tmp_path, path=str(folder))["files_sha256"] == hashlib.sha256(lines.encode()).hexdigest()


def test_probe6_d9_an_unreadable_subfolder_is_named(tmp_path, monkeypatch):
    # in-process, with the folder's listing refused as a mode-0 folder's is for a user other than root (this test
    # runs as root too, which reads any folder)
    import sglang_checkpoint_info as info

    folder = checkpoint(tmp_path / "model")
    (folder / "original").mkdir()
    real_scandir = os.scandir

    def scandir(path="."):
        if os.fspath(path) == str(folder / "original"):
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", scandir)
    with pytest.raises(info.Refused) as refused:
        info.read_checkpoint(str(folder), "sglang_model_path", "sglang_model_hf_repo", False)
    msg = str(refused.value)
    assert msg.startswith("sglang_model_path: %s: Permission denied" % (folder / "original")), msg
