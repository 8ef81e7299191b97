"""The runtime's launcher, <runtime>/bin/sglang-serve (library/sglang_runtime.py): written when a runtime is marked
complete, added once to a complete runtime built before it (reported as changed, nothing else touched: its manifest
and digest stay as they were), rewritten when it differs, and what it runs: `python -m sglang.launch_server` with
the unit's arguments as given and the key rewritten out of a logged line (the same program the unit ran as
`python -c` before). The module runs as Ansible runs it (test_sglang_runtime.run)."""

import json
import os
import stat
import subprocess
import sys

import test_sglang_runtime
from ansible.module_utils.sglang_runtime_launcher import (
    ensure_launcher,
    launcher_differences,
    launcher_owner,
    launcher_text,
)
from ansible.module_utils.sglang_runtime_markers import read_markers
from ansible.module_utils.sglang_runtime_refusal import RuntimeError_
from ansible.module_utils.sglang_runtime_units import unit_runtime
from test_sglang_runtime import fake_python, run, unit

host = test_sglang_runtime.host  # the same fixture: a runtimes folder, wheels and a package set


def launcher(folder):
    return folder / "bin" / "sglang-serve"


def complete(tmp_path, base, plan, versions):
    return run(tmp_path, state="complete", dir=base["dir"], path=plan["path"], name=plan["name"],
               digest=plan["digest"], set=plan["set"], versions=versions)


def assert_is_the_launcher(path, runtime):
    status = os.lstat(path)
    assert stat.S_ISREG(status.st_mode) and stat.S_IMODE(status.st_mode) == 0o755, oct(status.st_mode)
    assert (status.st_uid, status.st_gid) == launcher_owner()  # root's, as the role runs the module
    text = path.read_text()
    assert text.startswith("#!%s/bin/python\n# sglang-serve: " % runtime), text[:200]
    assert 'runpy.run_module("sglang.launch_server", run_name="__main__", alter_sys=True)' in text


def test_a_built_runtime_gets_its_launcher_when_it_is_marked_complete(host):
    tmp_path, base = host
    plan = run(tmp_path, **base)
    assert plan["action"] == "build" and plan["launcher"] == os.path.join(plan["path"], "bin", "sglang-serve")
    folder = tmp_path / "runtimes" / plan["name"]
    fake_python(folder, {"sglang": "0.5.23", "k": "1"})
    done = complete(tmp_path, base, plan, {"sglang": "0.5.23", "k": "1"})
    assert done["changed"] and done["launcher"] == str(launcher(folder))
    assert_is_the_launcher(launcher(folder), folder)
    assert not complete(tmp_path, base, plan, {"sglang": "0.5.23", "k": "1"})["changed"]
    use = run(tmp_path, **base)
    assert (use["action"], use["changed"], use["launcher"]) == ("use", False, str(launcher(folder)))


def test_a_complete_runtime_without_the_launcher_gets_it_once_and_stays_complete(host):
    """A runtime completed before the launcher existed: its manifest has no word about it, and must not be taken
    for corrupt or incomplete; plan writes the launcher (changed), and a second plan changes nothing."""
    tmp_path, base = host
    plan = run(tmp_path, **base)
    folder = tmp_path / "runtimes" / plan["name"]
    fake_python(folder, {"sglang": "0.5.23", "k": "1"})
    (tmp_path / "runtimes" / (plan["name"] + ".json")).write_text(json.dumps(
        {"format": 1, "name": plan["name"], "path": plan["path"], "digest": plan["digest"], "set": plan["set"],
         "versions": {"sglang": "0.5.23", "k": "1"}, "adopted": False}, indent=1, sort_keys=True))
    manifest = (tmp_path / "runtimes" / (plan["name"] + ".json")).read_bytes()
    checked = run(tmp_path, check_mode=True, **base)
    assert (checked["action"], checked["changed"]) == ("use", True) and not launcher(folder).exists()
    first = run(tmp_path, **base)
    assert (first["action"], first["changed"], first["digest"]) == ("use", True, plan["digest"])
    assert_is_the_launcher(launcher(folder), folder)
    again = run(tmp_path, **base)
    assert (again["action"], again["changed"]) == ("use", False)
    assert (tmp_path / "runtimes" / (plan["name"] + ".json")).read_bytes() == manifest  # only the launcher is new
    corrupt = {}
    assert plan["name"] in read_markers(base["dir"], corrupt) and corrupt == {}


def test_an_adopted_legacy_venv_is_never_modified_and_gets_no_launcher(host):
    """A venv from before runtimes is adopted as it is: no file is added to it (its unit keeps the one-line
    launcher, roles/sglang/templates/sglang.service.j2)."""
    tmp_path, base = host
    fake_python(tmp_path / "venv", {"sglang": "0.5.23", "k": "1"})
    before = sorted(os.listdir(tmp_path / "venv" / "bin"))
    plan = run(tmp_path, **base)
    assert plan["action"] == "adopt" and plan["launcher"] is None
    done = complete(tmp_path, base, plan, plan["versions"])
    assert done["changed"] and done["launcher"] is None
    again = run(tmp_path, **base)
    assert again["action"] == "use" and again["launcher"] is None and not again["changed"]
    assert sorted(os.listdir(tmp_path / "venv" / "bin")) == before


def test_a_launcher_that_differs_is_put_back(tmp_path):
    folder = tmp_path / "rt"
    fake_python(folder, {})
    assert ensure_launcher(str(folder)) and not ensure_launcher(str(folder))
    path = launcher(folder)
    path.chmod(0o775)  # group-writable: anyone in that group could change what root's unit runs
    assert launcher_differences(str(path), launcher_text(str(folder)), launcher_owner()) == ["mode"]
    assert ensure_launcher(str(folder)) and stat.S_IMODE(path.stat().st_mode) == 0o755
    path.write_text(path.read_text().replace("<redacted>", "xxx"))
    assert launcher_differences(str(path), launcher_text(str(folder)), launcher_owner()) == ["content"]
    assert ensure_launcher(str(folder)) and "'<redacted>'" in path.read_text()
    other = (os.geteuid() + 1, os.getegid())
    assert launcher_differences(str(path), launcher_text(str(folder)), other) == ["owner"]
    path.unlink()
    os.symlink(tmp_path / "elsewhere", path)  # a link is replaced by the file, never followed
    assert ensure_launcher(str(folder)) and not path.is_symlink()
    assert not (tmp_path / "elsewhere").exists()
    assert_is_the_launcher(path, folder)


def test_no_launcher_goes_into_a_folder_that_is_not_a_runtime(tmp_path):
    (tmp_path / "half" / "bin").mkdir(parents=True)
    try:
        ensure_launcher(str(tmp_path / "half"))
    except RuntimeError_ as error:
        assert "bin/python is missing" in str(error)
    else:
        raise AssertionError("a launcher was written into a folder without python")
    assert not launcher(tmp_path / "half").exists()


FAKE_LAUNCH_SERVER = '''import json, logging, sys
logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stdout)
server_args = {"model_path": "/srv/m", "api_key": "sk-not-a-secret", "ssl_keyfile_password": 'pw"x'}
logging.getLogger(__name__).info(f"server_args={server_args}")
print(json.dumps({"argv": sys.argv[1:], "path0": sys.path[0], "name": __name__,
                  "main": sys.modules["__main__"].__file__}))
'''


def _launched(tmp_path, folder, args):
    """Run the launcher as systemd does (its own #!), with a fake sglang.launch_server on the path."""
    fake = tmp_path / "fake"
    (fake / "sglang").mkdir(parents=True, exist_ok=True)
    (fake / "sglang" / "__init__.py").write_text("")
    (fake / "sglang" / "launch_server.py").write_text(FAKE_LAUNCH_SERVER)
    (folder / "bin").mkdir(parents=True, exist_ok=True)
    os.symlink(sys.executable, folder / "bin" / "python")
    ensure_launcher(str(folder))
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    proc = subprocess.run([str(launcher(folder))] + args, capture_output=True, text=True, timeout=60, cwd=str(home),
                          env=dict(os.environ, PYTHONPATH=str(fake)))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    return lines[0], json.loads(lines[-1])


ARGS = ["--model-path", "/srv/m", "--chat-template", "{{ x }} $HOME \"q\" 'a b'", "--config", "/etc/sglang/x.yaml"]


def test_the_launcher_runs_launch_server_as_m_does_with_the_secrets_rewritten(tmp_path):
    logged, seen = _launched(tmp_path, tmp_path / "runtimes" / "0.5.23-aaaaaaaaaaaa", ARGS)
    assert seen["argv"] == ARGS  # every argument as the unit gave it
    assert seen["name"] == "__main__" and seen["main"].endswith(os.path.join("sglang", "launch_server.py"))
    assert seen["path0"] == ""  # the working directory first, as `python -c` and `-m` have it
    assert "'model_path': '/srv/m'" in logged  # the line stays ...
    assert "'api_key': '<redacted>'" in logged and "'ssl_keyfile_password': '<redacted>'" in logged  # ... without
    assert "sk-not-a-secret" not in logged and "pw" not in logged.replace("password", "")


def test_a_runtime_path_with_a_space_is_launched_through_sh(tmp_path):
    folder = tmp_path / "run times" / "0.5.23-aaaaaaaaaaaa"
    assert launcher_text(str(folder)).startswith("#!/bin/sh\n")
    logged, seen = _launched(tmp_path, folder, ARGS)
    assert seen["argv"] == ARGS and seen["path0"] == "" and "'api_key': '<redacted>'" in logged


def test_the_unit_reads_its_runtime_from_the_launcher_or_an_older_python(tmp_path):
    new, old = tmp_path / "new.service", tmp_path / "old.service"
    new.write_text('[Service]\nExecStart="/opt/sglang/runtimes/0.5.23-aaaaaaaaaaaa/bin/sglang-serve" \\\n'
                   '    "--model-path" "/srv/m"\n')
    unit(old, "/opt/sglang/runtimes/0.5.22-bbbbbbbbbbbb")  # a store entry's unit from before the launcher
    assert unit_runtime(str(new)) == "/opt/sglang/runtimes/0.5.23-aaaaaaaaaaaa"
    assert unit_runtime(str(old)) == "/opt/sglang/runtimes/0.5.22-bbbbbbbbbbbb"
    new.write_text('[Service]\nExecStart="/opt/sglang/runtimes/0.5.23-aaaaaaaaaaaa/bin/sglang-other"\n')
    assert unit_runtime(str(new)) is None


def test_a_state_whose_launcher_is_gone_is_refused_before_it_is_restored(tmp_path):
    folder = tmp_path / "runtimes" / "0.5.22-bbbbbbbbbbbb"
    fake_python(folder, {"sglang": "0.5.22"})
    ensure_launcher(str(folder))
    entry = tmp_path / "store" / "e1"
    entry.mkdir(parents=True)
    (entry / "sglang.service").write_text('[Service]\nExecStart="%s/bin/sglang-serve" \\\n    "--port" "1"\n' % folder)
    ok = run(tmp_path, state="versions", dir=str(tmp_path / "runtimes"), unit=str(entry / "sglang.service"),
             names=["sglang"], entry="e1")
    assert ok["path"] == str(folder) and ok["versions"] == {"sglang": "0.5.22"}, ok
    launcher(folder).unlink()
    refused = run(tmp_path, state="versions", dir=str(tmp_path / "runtimes"), unit=str(entry / "sglang.service"),
                  names=["sglang"], entry="e1")
    assert refused["failed"] and refused["msg"].startswith(
        "The store entry e1 runs %s, which is missing" % launcher(folder)), refused


def test_an_adopted_venv_s_unit_runs_its_python_with_the_same_program_and_names_it(tmp_path):
    """No launcher in an adopted venv (the plan's launcher is none): the unit runs its python with the program as a
    one-line -c, which hides the key the same way, and the runtime read back from the unit is that venv."""
    from hostile_render import render_all
    unit_text = render_all(_sglang_runtime_plan={"path": "/opt/sglang/venv", "launcher": None},
                           _sglang_runtime_path="/opt/sglang/venv")["unit"]
    start = unit_text[unit_text.index("ExecStart="):]
    assert start.startswith('ExecStart="/opt/sglang/venv/bin/python" \\\n    "-c" \\\n    "import logging, re, runpy; ')
    assert 'runpy.run_module(\\"sglang.launch_server\\", run_name=\\"__main__\\", alter_sys=True)"' in start
    path = tmp_path / "sglang.service"
    path.write_text(unit_text)
    assert unit_runtime(str(path)) == "/opt/sglang/venv"
    built = render_all(_sglang_runtime_plan={"path": "/opt/sglang/runtimes/x", "launcher":
                                             "/opt/sglang/runtimes/x/bin/sglang-serve"})["unit"]
    assert 'ExecStart="/opt/sglang/runtimes/x/bin/sglang-serve" \\\n    "--model-path"' in built
