"""library/sglang_runtime.py: a runtime per package set, found by its manifest without starting python, built
only with the free disk it needs, adopted from a legacy venv with the same versions, and pruned only when nothing
names it. The module runs as Ansible runs it (a child process with its arguments file)."""

import json
import os
import stat
import subprocess
import sys

import pytest
from ansible.module_utils.sglang_runtime_launcher import LAUNCHER
from ansible.module_utils.sglang_runtime_markers import NAME_RE
from ansible.module_utils.sglang_runtime_set import digest_of, package_set, runtime_name, sha256_file
from ansible.module_utils.sglang_runtime_units import unit_runtime

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODULE = os.path.join(REPO, "library", "sglang_runtime.py")


def run(tmp_path, check_mode=False, **args):
    path = tmp_path / "args.json"
    args = dict(args, _ansible_check_mode=check_mode)
    path.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": args}))
    proc = subprocess.run([sys.executable, MODULE, str(path)], capture_output=True, text=True, timeout=60)
    assert "Traceback" not in proc.stdout + proc.stderr
    return json.loads(proc.stdout)


def fake_python(folder, versions, witness=None):
    """A runtime's bin/python that prints these versions (and, when asked, leaves a witness that it ran)."""
    (folder / "bin").mkdir(parents=True, exist_ok=True)
    python = folder / "bin" / "python"
    touch = "touch %s\n" % witness if witness else ""
    python.write_text("#!/bin/sh\n%secho '%s'\n" % (touch, json.dumps(versions)))
    python.chmod(python.stat().st_mode | stat.S_IXUSR)
    return python


def unit(path, runtime):
    path.write_text('[Service]\nExecStart="%s/bin/python" \\\n    "-c" \\\n    "x"\n' % runtime)
    return str(path)


@pytest.fixture
def host(tmp_path):
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    (wheels / "sglang-0.5.23-py3-none-any.whl").write_bytes(b"release one")
    (wheels / "k-1-py3-none-any.whl").write_bytes(b"kernel")
    base = dict(dir=str(tmp_path / "runtimes"), legacy=str(tmp_path / "venv"), unit=str(tmp_path / "sglang.service"),
                version="0.5.23", package="/controller/sglang-0.5.23-py3-none-any.whl", wheels_dir=str(wheels),
                kernel_wheels=[{"src": "/controller/k-1-py3-none-any.whl", "name": "k", "version": "1"}],
                python=sys.executable, names=["sglang", "k"], min_free_gib=0)
    return tmp_path, base


def test_the_digest_is_the_package_set():
    def pset(**kw):
        args = dict(version="0.5.23", package="", extras=[], kernel_wheels=[], kernel_sources=[],
                    python={"path": "/usr/bin/python3.11", "version": "3.11.2"})
        args.update(kw)
        return digest_of(package_set(hasher=lambda p: "sha-of-" + p, **args))

    base = pset()
    assert base == pset() and len(base) == 64
    assert base != pset(version="0.5.22")
    assert base != pset(extras=["all"])
    assert pset(extras=["b", "a"]) == pset(extras=["a", "b"])
    assert base != pset(python={"path": "/usr/bin/python3.12", "version": "3.12.1"})
    assert base != pset(kernel_sources=[{"repo": "https://x/k.git", "ref": "v1"}])
    assert pset(kernel_sources=[{"repo": "https://x/k.git", "ref": "v1"}]) != pset(
        kernel_sources=[{"repo": "https://x/k.git", "ref": "v2"}])
    assert runtime_name("0.5.23", base) == "0.5.23-" + base[:12]
    assert NAME_RE.match(runtime_name("0.5.23+double", base))


def test_a_rebuilt_wheel_of_the_same_name_is_another_runtime(host):
    tmp_path, base = host
    first = run(tmp_path, **base)
    (tmp_path / "wheels" / "sglang-0.5.23-py3-none-any.whl").write_bytes(b"rebuilt")
    second = run(tmp_path, **base)
    assert first["digest"] != second["digest"]
    assert first["set"]["sglang"]["source"]["wheel"] == "sglang-0.5.23-py3-none-any.whl"


def test_the_controllers_digest_of_a_wheel_finds_the_same_runtime_without_the_host_copy(host):
    tmp_path, base = host
    copied = run(tmp_path, **base)
    wheels = tmp_path / "wheels"
    digests = {name: sha256_file(str(wheels / name)) for name in os.listdir(wheels)}
    for name in digests:
        (wheels / name).unlink()  # a re-run copies nothing: the controller read the wheels
    given = run(tmp_path, wheel_sha256=digests, **base)
    assert given["digest"] == copied["digest"]
    other = run(tmp_path, wheel_sha256=dict(digests, **{"k-1-py3-none-any.whl": "0" * 64}), **base)
    assert other["digest"] != copied["digest"]  # another kernel wheel: another runtime
    refused = run(tmp_path, wheel_sha256={"k-1-py3-none-any.whl": "not a digest"}, **base)
    assert refused["failed"] and "wheel_sha256 gives 'not a digest' for k-1-py3-none-any.whl" in refused["msg"]


def test_a_new_package_set_is_built_and_a_complete_one_is_used_without_starting_python(host):
    tmp_path, base = host
    plan = run(tmp_path, **base)
    assert plan["action"] == "build" and not plan["changed"]
    assert plan["path"] == os.path.join(base["dir"], plan["name"]) and plan["name"].startswith("0.5.23-")
    witness = tmp_path / "python-ran"
    fake_python(tmp_path / "runtimes" / plan["name"], {"sglang": "0.5.23", "k": "1"}, witness)
    done = run(tmp_path, state="complete", dir=base["dir"], path=plan["path"], name=plan["name"],
               digest=plan["digest"], set=plan["set"], versions={"sglang": "0.5.23", "k": "1"})
    assert done["changed"]
    again = run(tmp_path, state="complete", dir=base["dir"], path=plan["path"], name=plan["name"],
                digest=plan["digest"], set=plan["set"], versions={"sglang": "0.5.23", "k": "1"})
    assert not again["changed"]
    use = run(tmp_path, **base)
    assert (use["action"], use["path"], use["changed"]) == ("use", plan["path"], False)
    assert use["versions"] == {"sglang": "0.5.23", "k": "1"}
    assert not witness.exists()  # read from the manifest: no process
    manifest = json.loads((tmp_path / "runtimes" / (plan["name"] + ".json")).read_text())
    assert manifest["digest"] == plan["digest"] and manifest["path"] == plan["path"] and not manifest["adopted"]


def test_a_plan_that_finds_its_runtime_complete_prunes_in_the_same_call_and_a_build_prunes_nothing(host):
    tmp_path, base = host
    base = dict(base, prune_when_found=True, store=str(tmp_path / "store"))
    old = tmp_path / "runtimes" / "0.5.21-aaaaaaaaaaaa"  # complete, and named by nothing
    fake_python(old, {})
    (tmp_path / "runtimes" / "0.5.21-aaaaaaaaaaaa.json").write_text(json.dumps({"path": str(old)}))
    plan = run(tmp_path, **base)
    assert plan["action"] == "build" and "pruned" not in plan and old.exists()  # pruned once the build is complete
    fake_python(tmp_path / "runtimes" / plan["name"], {"sglang": "0.5.23", "k": "1"})
    run(tmp_path, state="complete", dir=base["dir"], path=plan["path"], name=plan["name"], digest=plan["digest"],
        set=plan["set"], versions={"sglang": "0.5.23", "k": "1"})
    use = run(tmp_path, **base)
    assert use["action"] == "use" and use["changed"] and use["pruned"]["removed"] == [str(old)] and not old.exists()
    assert os.path.isdir(plan["path"]) and plan["path"] in use["pruned"]["kept"]
    assert not run(tmp_path, **base)["changed"]


def test_an_interrupted_build_is_removed_and_built_again(host):
    tmp_path, base = host
    name = run(tmp_path, **base)["name"]
    half = tmp_path / "runtimes" / name
    (half / "lib").mkdir(parents=True)
    assert run(tmp_path, check_mode=True, **base)["removed"] == [str(half)] and half.exists()
    plan = run(tmp_path, **base)
    assert plan["action"] == "build" and plan["changed"] and plan["removed"] == [str(half)]
    assert not half.exists()


def test_a_folder_without_manifest_that_the_live_unit_runs_is_not_removed(host):
    tmp_path, base = host
    name = run(tmp_path, **base)["name"]
    folder = tmp_path / "runtimes" / name
    fake_python(folder, {})
    unit(tmp_path / "sglang.service", folder)
    result = run(tmp_path, **base)
    assert result["failed"] and "has no manifest" in result["msg"] and folder.exists()


def test_the_free_disk_is_checked_before_a_build_with_the_numbers(host):
    tmp_path, base = host
    result = run(tmp_path, **dict(base, min_free_gib=10 ** 9))
    assert result["failed"]
    assert "needs 1000000000.0 GiB free (sglang_runtime_min_free_gib), but %s has" % tmp_path in result["msg"]
    assert " GiB: free space there" in result["msg"]
    negative = run(tmp_path, **dict(base, min_free_gib=-1))
    assert negative["failed"] and negative["msg"].startswith("sglang_runtime_min_free_gib is -1.0: ")


def test_a_legacy_venv_with_the_asked_versions_is_adopted_once_and_never_again(host):
    tmp_path, base = host
    fake_python(tmp_path / "venv", {"sglang": "0.5.23", "k": "1"})
    unit(tmp_path / "sglang.service", tmp_path / "venv")
    plan = run(tmp_path, **base)
    assert (plan["action"], plan["path"]) == ("adopt", str(tmp_path / "venv"))
    assert plan["serving"] == {"path": str(tmp_path / "venv"), "versions": {"sglang": "0.5.23", "k": "1"}}
    run(tmp_path, state="complete", dir=base["dir"], path=plan["path"], name=plan["name"], digest=plan["digest"],
        set=plan["set"], versions=plan["versions"])
    assert not os.path.exists(os.path.join(base["dir"], plan["name"]))  # nothing was built or copied
    assert run(tmp_path, **base)["action"] == "use"
    # a changed package set builds a new runtime: the legacy venv is not adopted for it
    (tmp_path / "wheels" / "sglang-0.5.22-py3-none-any.whl").write_bytes(b"release zero")
    other = run(tmp_path, **dict(base, version="0.5.22", package="sglang-0.5.22-py3-none-any.whl"))
    assert other["action"] == "build" and other["path"].startswith(base["dir"] + "/0.5.22-")
    # ... even one whose versions the legacy venv matches: adopted once (its entry names it), never again
    same_versions = run(tmp_path, **dict(base, extras=["router"]))
    assert same_versions["action"] == "build" and same_versions["path"] != str(tmp_path / "venv")


def test_a_legacy_venv_with_other_versions_or_unpinned_kernels_is_not_adopted(host):
    tmp_path, base = host
    fake_python(tmp_path / "venv", {"sglang": "0.5.22", "k": "1"})
    assert run(tmp_path, **base)["action"] == "build"
    fake_python(tmp_path / "venv", {"sglang": "0.5.23", "k": "1"})
    unpinned = dict(base, kernel_wheels=[{"src": "/controller/k-1-py3-none-any.whl", "name": "k"}])
    assert run(tmp_path, **unpinned)["action"] == "build"


def test_prune_keeps_what_the_live_unit_a_store_entry_or_keep_names_and_removes_the_rest(tmp_path):
    runtimes = tmp_path / "runtimes"
    store = tmp_path / "store"
    made = {}
    for name in ("0.5.21-aaaaaaaaaaaa", "0.5.22-bbbbbbbbbbbb", "0.5.23-cccccccccccc", "0.5.24-dddddddddddd"):
        fake_python(runtimes / name, {})
        (runtimes / (name + ".json")).write_text(json.dumps({"path": str(runtimes / name)}))
        made[name] = runtimes / name
    (runtimes / "0.5.25-eeeeeeeeeeee" / "lib").mkdir(parents=True)  # an interrupted build, named by nothing
    (runtimes / "0.5.25-eeeeeeeeeeee" / "pyvenv.cfg").write_text("home = /usr/bin\n")  # venv writes it first
    fake_python(tmp_path / "venv", {})  # the legacy venv, adopted once (its manifest), named by nothing now
    (runtimes / "0.5.20-ffffffffffff.json").write_text(json.dumps({"path": str(tmp_path / "venv"), "adopted": True}))
    (runtimes / "notes").mkdir()  # not a runtime's name: never touched
    live = unit(tmp_path / "sglang.service", made["0.5.23-cccccccccccc"])
    (store / "20261201T000000Z").mkdir(parents=True)
    unit(store / "20261201T000000Z" / "sglang.service", made["0.5.22-bbbbbbbbbbbb"])
    args = dict(state="prune", dir=str(runtimes), legacy=str(tmp_path / "venv"), unit=live, store=str(store),
                keep=[str(made["0.5.24-dddddddddddd"])])
    preview = run(tmp_path, check_mode=True, **args)
    assert preview["changed"] and made["0.5.21-aaaaaaaaaaaa"].exists()
    result = run(tmp_path, **args)
    assert sorted(result["removed"]) == sorted([str(made["0.5.21-aaaaaaaaaaaa"]), str(runtimes / "0.5.25-eeeeeeeeeeee"),
                                                str(tmp_path / "venv")])
    assert not (runtimes / "0.5.21-aaaaaaaaaaaa.json").exists() and not (runtimes / "0.5.20-ffffffffffff.json").exists()
    for name in ("0.5.22-bbbbbbbbbbbb", "0.5.23-cccccccccccc", "0.5.24-dddddddddddd"):
        assert made[name].exists() and (runtimes / (name + ".json")).exists()
    assert (runtimes / "notes").exists()
    assert not run(tmp_path, **args)["changed"]


def test_prune_keeps_a_legacy_venv_that_a_store_entry_names(tmp_path):
    fake_python(tmp_path / "venv", {})
    (tmp_path / "store" / "e1").mkdir(parents=True)
    unit(tmp_path / "store" / "e1" / "sglang.service", tmp_path / "venv")
    result = run(tmp_path, state="prune", dir=str(tmp_path / "runtimes"), legacy=str(tmp_path / "venv"),
                 unit=str(tmp_path / "sglang.service"), store=str(tmp_path / "store"), keep=[])
    assert not result["changed"] and (tmp_path / "venv" / "bin" / "python").exists()


def test_a_gone_runtime_is_refused_by_name(tmp_path):
    entry = tmp_path / "e1"
    entry.mkdir()
    unit(entry / "sglang.service", "/opt/sglang/runtimes/0.5.22-bbbbbbbbbbbb")
    result = run(tmp_path, state="versions", dir=str(tmp_path), unit=str(entry / "sglang.service"), entry="e1")
    assert result["failed"]
    assert result["msg"].startswith("The store entry e1 runs the runtime /opt/sglang/runtimes/0.5.22-bbbbbbbbbbbb, "
                                    "which is gone from this host")
    assert "cannot be put back offline" in result["msg"]
    # a complete runtime whose folder was moved away: its manifest alone is not taken for it
    gone = tmp_path / "runtimes" / "0.5.22-bbbbbbbbbbbb"
    (tmp_path / "runtimes").mkdir()
    (tmp_path / "runtimes" / "0.5.22-bbbbbbbbbbbb.json").write_text(
        json.dumps({"path": str(gone), "versions": {"sglang": "0.5.22"}}))
    unit(entry / "sglang.service", gone)
    refused = run(tmp_path, state="versions", dir=str(tmp_path / "runtimes"), unit=str(entry / "sglang.service"),
                  names=["sglang"], entry="e1")
    assert refused["failed"] and "which is gone from this host" in refused["msg"], refused
    fake_python(tmp_path / "rt", {"sglang": "0.5.22"})
    ok = run(tmp_path, state="versions", dir=str(tmp_path), path=str(tmp_path / "rt"))
    assert ok["versions"] == {"sglang": "0.5.22"} and not ok["changed"]


def test_the_unit_names_its_runtime_as_the_template_renders_it(tmp_path):
    from hostile_render import exec_start_argv, render_all

    text = render_all(_sglang_runtime_path="/opt/sglang/runtimes/0.5.23-cccccccccccc")["unit"]
    (tmp_path / "sglang.service").write_text(text)
    assert unit_runtime(str(tmp_path / "sglang.service")) == "/opt/sglang/runtimes/0.5.23-cccccccccccc"
    # ExecStart runs the runtime's launcher by name (what `systemctl show -p ExecStart` prints), no program text
    argv = exec_start_argv(text)
    assert argv[0] == "/opt/sglang/runtimes/0.5.23-cccccccccccc/" + LAUNCHER
    assert argv[1] == "--model-path" and "-c" not in argv and not any("runpy" in arg for arg in argv)
    assert unit_runtime("/nonexistent/unit") is None
