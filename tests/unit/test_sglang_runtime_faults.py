"""library/sglang_runtime.py among folders it did not make (issue 27, probe day 2 N1, N5, N7, N9, N14): a legacy
venv that holds the runtimes, any folder given as the legacy venv, a version holding ../, a corrupt manifest, a
legacy python that hangs, a kernel wheel without src. Nothing outside what the module built and marked is removed."""

import json
import os
import stat

import pytest
from test_sglang_runtime import fake_python, run, unit


def runtime(runtimes, name, versions=None):
    fake_python(runtimes / name, versions or {})
    (runtimes / name / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (runtimes / (name + ".json")).write_text(json.dumps({"path": str(runtimes / name), "versions": versions or {}}))
    return runtimes / name


@pytest.mark.parametrize("legacy_is", ["parent_with_python", "parent", "same", "other_folder"])
def test_prune_never_removes_a_legacy_folder_that_holds_runtimes_or_was_never_adopted(tmp_path, legacy_is):
    opt = tmp_path / "opt" / "sglang"
    runtimes = opt / "runtimes"
    live = runtime(runtimes, "0.5.23-845ede89454f")
    legacy = {"parent_with_python": opt, "parent": opt, "same": runtimes, "other_folder": tmp_path / "data"}[legacy_is]
    legacy.mkdir(parents=True, exist_ok=True)
    if legacy_is in ("parent_with_python", "same"):
        fake_python(legacy, {})  # an old venv at /opt/sglang, adopted then no longer named
    (legacy / "keep.txt").write_text("mine")
    (runtimes / "0.5.19-aaaaaaaaaaaa.json").write_text(json.dumps({"path": str(legacy), "adopted": True}))
    out = run(tmp_path, state="prune", dir=str(runtimes), legacy=str(legacy),
              unit=unit(tmp_path / "sglang.service", live), store=str(tmp_path / "store"), keep=[str(live)])
    assert not out.get("failed"), out
    assert (live / "bin" / "python").exists() and (legacy / "keep.txt").exists()
    assert str(legacy) not in out["removed"]


def test_an_unmarked_legacy_venv_is_not_removed_and_is_named(tmp_path):
    fake_python(tmp_path / "venv", {})
    out = run(tmp_path, state="prune", dir=str(tmp_path / "runtimes"), legacy=str(tmp_path / "venv"),
              unit=str(tmp_path / "sglang.service"), keep=[])
    assert not out["changed"] and (tmp_path / "venv" / "bin" / "python").exists()
    assert [s["path"] for s in out["skipped"]] == [str(tmp_path / "venv")]
    assert "never adopted" in out["skipped"][0]["why"]


def test_a_folder_with_a_runtimes_name_but_nothing_of_a_venv_is_left_alone(tmp_path):
    runtimes = tmp_path / "runtimes"
    (runtimes / "0.5.22-bbbbbbbbbbbb").mkdir(parents=True)
    (runtimes / "0.5.22-bbbbbbbbbbbb" / "notes.txt").write_text("mine")
    out = run(tmp_path, state="prune", dir=str(runtimes), keep=[])
    assert not out["changed"] and (runtimes / "0.5.22-bbbbbbbbbbbb" / "notes.txt").exists()


@pytest.mark.parametrize("version", ["../../victim", "0.5.23 ", "0.5.23;touch x", "0.5.23$(id)", "0.5.23/..", ".."])
def test_a_version_that_is_not_a_release_is_refused_before_anything_is_removed(tmp_path, version):
    runtimes = tmp_path / "a" / "b" / "runtimes"
    runtimes.mkdir(parents=True)
    victims = [tmp_path / "a" / d for d in os.listdir(tmp_path / "a")]
    out = run(tmp_path, dir=str(runtimes), version=version, python="python3", min_free_gib=0)
    assert out["failed"] and "sglang_version is" in out["msg"] and "a release such as 0.5.23" in out["msg"]
    assert all(v.exists() for v in victims)


def test_complete_refuses_a_name_that_is_not_a_runtimes(tmp_path):
    fake_python(tmp_path / "rt", {})
    out = run(tmp_path, state="complete", dir=str(tmp_path / "runtimes"), path=str(tmp_path / "rt"),
              name="../../evil", digest="d", set={"a": 1})
    assert out["failed"] and "not a runtime's name" in out["msg"]
    assert not (tmp_path / "evil.json").exists()


@pytest.mark.parametrize("manifest", ["null", "[]", '"x"', "5", "true", '{"path": 5}', '{"path": "/r', "\x00\xff",
                                      '{"path": "%s", "versions": ["x"]}', "[" * 200_000,
                                      # another venv outside the runtimes folder, not adopted (the probe's tamper:
                                      # it was used, /usr/bin/python as SGLang's runtime)
                                      '{"path": "/usr", "versions": {}}'])
def test_a_corrupt_manifest_is_named_and_its_runtime_neither_removed_nor_used(tmp_path, manifest):
    import sys

    runtimes = tmp_path / "runtimes"
    base = dict(dir=str(runtimes), version="0.5.23", python=sys.executable, min_free_gib=0)
    name = run(tmp_path, **base)["name"]
    folder = runtime(runtimes, name, {"sglang": "0.5.23"})
    (runtimes / (name + ".json")).write_text(manifest.replace("%s", str(folder)) if "%s" in manifest else manifest)
    out = run(tmp_path, **base)
    assert out["failed"] and "is corrupt" in out["msg"] and name + ".json" in out["msg"], out
    assert (folder / "bin" / "python").exists()
    pruned = run(tmp_path, state="prune", dir=str(runtimes), keep=[])
    assert not pruned.get("failed") and (folder / "bin" / "python").exists()
    assert [s["path"] for s in pruned["skipped"]] == [str(folder)]


def test_a_legacy_python_that_hangs_is_named_not_waited_on(tmp_path, monkeypatch):
    import sys

    from ansible.module_utils import sglang_runtime_python as rt
    from ansible.module_utils.sglang_runtime_refusal import RuntimeError_

    monkeypatch.setattr(rt, "COMMAND_TIMEOUT", 1)
    legacy = tmp_path / "venv"
    (legacy / "bin").mkdir(parents=True)
    python = legacy / "bin" / "python"
    python.write_text("#!/bin/sh\nsleep 30\n")
    python.chmod(python.stat().st_mode | stat.S_IXUSR)
    with pytest.raises(RuntimeError_, match="did not answer within 1 s"):
        rt.read_versions(None, str(legacy), ["sglang"], {})
    assert rt.run_bounded([sys.executable, "-c", "print(1)"])[:2] == (0, "1\n")


@pytest.mark.parametrize("field, value, said", [
    ("kernel_wheels", [{"name": "k"}], "sglang_kernel_wheels[0] has no src"),
    ("kernel_sources", [{"ref": "v1"}], "sglang_kernel_sources[0] has no repo")])
def test_a_kernel_without_its_source_is_a_sentence(tmp_path, field, value, said):
    import sys

    out = run(tmp_path, dir=str(tmp_path / "runtimes"), version="0.5.23", python=sys.executable, min_free_gib=0,
              **{field: value})
    assert out["failed"] and said in out["msg"], out


def test_a_min_free_that_is_not_a_number_is_refused_not_skipped(tmp_path):
    import sys

    out = run(tmp_path, dir=str(tmp_path / "runtimes"), version="0.5.23", python=sys.executable,
              min_free_gib=float("nan"))
    assert out["failed"] and "sglang_runtime_min_free_gib is nan" in out["msg"], out


def test_a_package_that_pip_would_read_as_an_option_is_refused(tmp_path):
    import sys

    out = run(tmp_path, dir=str(tmp_path / "runtimes"), version="0.5.23", python=sys.executable, min_free_gib=0,
              package="--index-url=http://evil.example/simple")
    assert out["failed"] and "pip would read it as an option" in out["msg"], out


def test_a_runtime_folder_replaced_by_a_link_is_not_used(tmp_path):
    import sys

    runtimes = tmp_path / "runtimes"
    base = dict(dir=str(runtimes), version="0.5.23", python=sys.executable, min_free_gib=0)
    name = run(tmp_path, **base)["name"]
    other = tmp_path / "other-venv"
    fake_python(other, {"sglang": "0.5.23"})
    runtimes.mkdir(exist_ok=True)
    (runtimes / name).symlink_to(other)
    (runtimes / (name + ".json")).write_text(json.dumps({"path": str(runtimes / name)}))
    out = run(tmp_path, **base)
    assert out["failed"] and "symbolic link" in out["msg"], out
    assert (other / "bin" / "python").exists()
