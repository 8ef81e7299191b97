"""Probe 6, D5 and D6 (../shared/reference/probe-6.md): every phase of every phase action refuses a value of the
wrong type by the option's name before anything runs (its argument spec, typed by the action's library/
documentation: lib/sglang_state/phase_action.py), and a module that fails without a result shows its stderr through
the phase that ran it.

The phases run in this process with a task and a connection that reach no host (a module that ran fails the test),
and through a real ansible-playbook on localhost, as the probe ran them."""

import os
import subprocess
import sys
from unittest.mock import MagicMock

import pytest
from ansible import constants as C
from sglang_state import phase_action, run_record
from test_phase_actions import ACTIONS, PHASE_FUNCTIONS, _action, _given, _run, _spec, _where

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HOSTILE_PATH = "/tmp/probe6/a/../../x"
# A wrong value for each type: a string for a mapping or a list, a list for a string, a mapping for a number or a
# boolean (the probe's shapes)
WRONG = {"dict": HOSTILE_PATH, "list": HOSTILE_PATH, "str": ["a"], "path": ["a"], "int": {"a": 1},
         "float": ["1.5"], "bool": {"b": 1}}
SAID = {"dict": "is a string, not a mapping", "list": "is a string, not a list", "str": "is a list, not a string",
        "path": "is a list, not a string", "int": "is a mapping, not an integer", "float": "is a list, not a number",
        "bool": "is a mapping, not a boolean"}


@pytest.fixture
def calls(monkeypatch):
    """Every phase function replaced by one that notes its call (test_phase_actions.py's, here too)."""
    noted = []
    for phase, (_name, module, function) in PHASE_FUNCTIONS.items():
        monkeypatch.setattr(module, function,
                            lambda *args, phase=phase: noted.append((phase, args)) or {"phase": phase})
    return noted


def _cases():
    """(phase, option, its type) for every typed option of every phase."""
    for phase, (name, _module, _function) in PHASE_FUNCTIONS.items():
        for option, spec in ACTIONS[name].ActionModule.SPECS[phase].items():
            if spec.get("type") in WRONG:
                yield phase, option, spec["type"]


CASES = list(_cases())


def _refused_before_anything_ran(result, phase, calls):
    assert result["failed"] and result["changed"] is False, result
    assert result["msg"].startswith(_where(phase) + ": "), result["msg"]
    assert calls == []  # the phase's function never ran (and a module that ran would have failed the test)


def test_probe6_d5_every_phase_has_options_of_every_shape_to_try():
    # the cases below cover each phase of each action: a walk that found none would pass
    assert {phase for phase, _option, _kind in CASES} == set(PHASE_FUNCTIONS)
    assert {kind for _phase, _option, kind in CASES} >= {"dict", "list", "str", "int", "bool"}


@pytest.mark.parametrize("phase, option, kind", CASES, ids=["%s-%s" % case[:2] for case in CASES])
def test_probe6_d5_a_wrong_typed_value_is_refused_by_name_and_nothing_runs(calls, phase, option, kind):
    given = dict(_given(phase), **{option: WRONG[kind]})
    result = _run(given)
    _refused_before_anything_ran(result, phase, calls)
    assert "'%s' %s" % (option, SAID[kind]) in result["msg"], result["msg"]


@pytest.mark.parametrize("phase", ["render", "start", "calibrate"])
@pytest.mark.parametrize("files, said", [
    (HOSTILE_PATH, "'files' is a string, not a list"),
    ({"src": "a"}, "'files' is a mapping, not a list"),
    ([HOSTILE_PATH], "'files[0]' is a string, not a mapping"),
    # Ansible would read 'src=a' as a mapping: refused as a string all the same
    (["src=a dest=b mode=0644"], "'files[0]' is a string, not a mapping"),
    ([{"src": ["a"], "dest": "/etc/x", "mode": "0644"}], "'src' in 'files[0]' is a list, not a string"),
    ([{"dest": "/etc/x", "mode": "0644"}], "missing required arguments: src found in files"),
    ([{"src": "a", "dest": "/etc/x", "mode": "0644", "owner": "me"}], "unknown option 'owner' (in files)"),
])
def test_probe6_d5_the_rendered_files_are_typed_deep_in_the_phases_that_render(calls, phase, files, said):
    """The probe's case: files a string in render (a TypeError reported as the phase's defect) and in start (not
    refused: the phase restarted the unit)."""
    result = _run(dict(_given(phase), files=files))
    _refused_before_anything_ran(result, phase, calls)
    assert said in result["msg"], result["msg"]


@pytest.mark.parametrize("phase, given, said", [
    # the probe's: sglang_prove decide context_target='<path>' -> ValueError: invalid literal for int()
    ("decide", {"context_target": HOSTILE_PATH}, "argument 'context_target' is of type str and we were unable to "
                                                 "convert to int"),
    ("verify", {"min_headroom_gib": "four"}, "argument 'min_headroom_gib' is of type str and we were unable to "
                                             "convert to float"),
    ("start", {"multinode": "perhaps"}, "argument 'multinode' is of type str and we were unable to convert to bool"),
    ("render", {"store": {"dir": "/var/b", "keep": "ten"}}, "argument 'keep' is of type str found in 'store'. and "
                                                            "we were unable to convert to int"),
    ("start", {"wait": {"url": "http://h", "timeout": "soon"}}, "argument 'timeout' is of type str found in 'wait'."),
    ("restore", {"runtimes": {"dir": "/opt/r"}}, "missing required arguments: names found in runtimes"),
    ("restore", {"files": [{"dest": "/etc/x"}]}, "'files[0]' is a mapping, not a string"),
    ("calibrate", {"plan_inputs": {"knobs": {}, "measured": {}, "gpus": [], "calibrations": {}}},
     "'gpus' in 'plan_inputs' is a list, not a mapping"),
    ("install", {"kernel_wheels": ["flashinfer.whl"]}, "'kernel_wheels[0]' is a string, not a mapping"),
    ("install", {"check": "gpus=8"}, "'check' is a string, not a mapping"),
    ("prove", {"limit": 1.5}, "argument 'limit' is of type float and we were unable to convert to int"),
    ("rescue", {"restore": {"runtimes": {}, "store": {}, "files": "/etc/x", "unit_name": "u", "service": "s",
                            "wait": {}}}, "'files' in 'restore' is a string, not a list"),
])
def test_probe6_d5_a_value_ansible_cannot_convert_or_a_wrong_suboption_is_refused_by_name(calls, phase, given, said):
    result = _run(dict(_given(phase), **given))
    _refused_before_anything_ran(result, phase, calls)
    assert said in result["msg"], result["msg"]


@pytest.mark.parametrize("phase", ["render", "start", "calibrate", "verify"])
def test_probe6_d5_a_wrong_typed_value_in_common_is_refused_naming_common(calls, phase):
    """The role passes most of the deploy's options in common (vars/main.yml's _sglang_deploy)."""
    given = _given(phase)
    common = {key: given.pop(key) for key in list(given) if key in ACTIONS["sglang_deploy"].DEPLOY_COMMON}
    common.update(files=HOSTILE_PATH, multinode=["yes"])
    result = _run(dict(given, common=common))
    _refused_before_anything_ran(result, phase, calls)
    assert "'files' in 'common' is a string, not a list" in result["msg"], result["msg"]
    if "multinode" in _spec(phase):
        assert "'multinode' in 'common' is a list, not a boolean" in result["msg"], result["msg"]
    # the task's own value goes over common's, and only its own is checked
    result = _run(dict(given, common=dict(common, multinode=False), files=[]))
    assert not result.get("failed"), result


def test_probe6_d5_values_ansible_converts_reach_the_phase_converted_and_nothing_added(calls):
    given = dict(_given("start"), multinode="yes", context_target="200000",
                 store={"dir": "/var/b", "keep": "5"}, wait={"url": "http://h", "timeout": "600"},
                 files=[{"src": "u.j2", "dest": "/etc/u", "mode": "0644"}])
    result = _run(given)
    assert not result.get("failed"), result
    (_phase, (_executor, args, _run_record)), = calls
    assert args["multinode"] is True and args["context_target"] == 200000
    # the suboptions not given stay out (Ansible's validator fills them with None): the phase reads its defaults
    assert args["store"] == {"dir": "/var/b", "keep": 5} and args["wait"] == {"url": "http://h", "timeout": 600}
    assert args["files"] == [{"src": "u.j2", "dest": "/etc/u", "mode": "0644"}]


def test_probe6_d5_a_path_reaches_the_phase_as_written_and_none_stays_none(calls, monkeypatch):
    """A path is the host's: not expanded with the controller's HOME or variables (Ansible's path type would)."""
    monkeypatch.setenv("HOME", "/controller/home")
    monkeypatch.setenv("RUNTIMES", "/controller/runtimes")
    given = dict(_given("install"), dir="~sglang/runtimes", home="~", wheels_dir="$RUNTIMES/wheels", cuda_home=None)
    assert not _run(given).get("failed")
    (_phase, (_executor, args)), = calls  # the install takes no run
    assert (args["dir"], args["home"], args["wheels_dir"]) == ("~sglang/runtimes", "~", "$RUNTIMES/wheels")
    assert args["cuda_home"] is None  # Ansible's str type would make it ''


def test_probe6_d5_a_refusal_keeps_the_run_and_names_every_problem_at_once(calls):
    # the run as the phases before left it in this host's run record (lib/sglang_state/run_record.py)
    run_record.write(run_record.folder_of(C.DEFAULT_LOCAL_TMP), "n0",
                     {"run": {"changed_this_run": True, "run_backup": "b1"}, "results": {}})
    result = _run(dict(_given("verify"), host=["n0"], batch="n0", wiat=3))
    _refused_before_anything_ran(result, "verify", calls)
    assert "'host' is a list, not a string" in result["msg"] and "'batch' is a string, not a list" in result["msg"]
    assert result["run"]["run_backup"] == "b1" and result["run"]["changed_this_run"] is True


def test_probe6_d5_the_secret_values_never_appear_in_a_refusal(calls):
    result = _run(dict(_given("look"), api_key=["sk-very-secret"], store="sk-other-secret=1"))
    _refused_before_anything_ran(result, "look", calls)
    assert "'api_key' is a list, not a string" in result["msg"]
    assert "sk-very-secret" not in str(result) and "sk-other-secret" not in str(result)


def test_probe6_d5_an_option_the_documentation_lacks_is_the_actions_defect_when_it_loads():
    documented = phase_action.documented_options(os.path.join(REPO, "action_plugins", "sglang_prove.py"),
                                                 "sglang_prove")
    with pytest.raises(ValueError, match="sglang_prove: phase decide takes colour, which library/sglang_prove.py "
                                         "does not document"):
        phase_action.phase_specs("sglang_prove", documented, {"decide": phase_action.takes("service colour")})
    with pytest.raises(FileNotFoundError, match="the documentation of the action sglang_nothing"):
        phase_action.documented_options(os.path.join(REPO, "action_plugins", "sglang_prove.py"), "sglang_nothing")


def test_probe6_d5_the_documentation_is_found_in_the_collections_layout_too(tmp_path):
    """plugins/action/<name>.py beside plugins/modules/<name>.py (tests/collection/build.sh's layout)."""
    for folder in ("action", "modules"):
        (tmp_path / "plugins" / folder).mkdir(parents=True)
    source = open(os.path.join(REPO, "library", "sglang_prove.py"), encoding="utf-8").read()
    (tmp_path / "plugins" / "modules" / "sglang_prove.py").write_text(source)
    found = phase_action.documented_options(str(tmp_path / "plugins" / "action" / "sglang_prove.py"), "sglang_prove")
    assert found == phase_action.documented_options(os.path.join(REPO, "action_plugins", "sglang_prove.py"),
                                                    "sglang_prove")


def test_probe6_d5_documentation_that_does_not_parse_is_said_with_its_file(tmp_path):
    (tmp_path / "action_plugins").mkdir()
    (tmp_path / "library").mkdir()
    (tmp_path / "library" / "sglang_x.py").write_text('DOCUMENTATION = r"""\nmodule: [unclosed\n"""\n')
    with pytest.raises(ValueError, match="the documentation of the action sglang_x .*sglang_x.py. has no options"):
        phase_action.documented_options(str(tmp_path / "action_plugins" / "sglang_x.py"), "sglang_x")


PLAY = """
- name: A phase action with hostile values
  hosts: localhost
  connection: local
  gather_facts: false
  tasks:
    - name: The phase
      {action}:
{given}
"""


def _playbook(tmp_path, action, given, extra=()):
    play = tmp_path / "play.yml"
    play.write_text(PLAY.format(action=action, given="\n".join("        " + line for line in given.splitlines())))
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg"), ANSIBLE_NOCOLOR="1")
    result = subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), str(play), *extra],
                            cwd=REPO, env=env, capture_output=True, text=True, timeout=180)
    return result.returncode, result.stdout + result.stderr


START = """phase: start
files: {files}
batch: [localhost]
host: localhost
multinode: false
service: sglang-probe
store: {{dir: {tmp}/store}}
state_manifest: {{}}
wait: {{url: "http://127.0.0.1:9", timeout: 1}}"""


@pytest.mark.parametrize("files", ['"%s"' % HOSTILE_PATH, "[a, b]", "{src: a}"])
def test_probe6_d5_start_with_files_of_the_wrong_type_refuses_through_ansible_playbook(tmp_path, files):
    """The probe's worst case: start took a wrong-typed files and went on to the restart and the wait."""
    rc, said = _playbook(tmp_path, "sglang_deploy", START.format(files=files, tmp=tmp_path))
    assert rc != 0
    assert "sglang_deploy (phase start): 'files" in said, said
    assert "systemctl" not in said and "health_generate" not in said  # no restart, no wait
    assert sorted(os.listdir(tmp_path)) == ["play.yml"]  # no store, nothing written


def test_probe6_d5_decide_with_a_path_for_its_context_refuses_through_ansible_playbook(tmp_path):
    given = "phase: decide\nservice: sglang-probe\ncontext_target: \"%s\"" % HOSTILE_PATH
    rc, said = _playbook(tmp_path, "sglang_prove", given)
    assert rc != 0
    assert ("sglang_prove (phase decide): argument 'context_target' is of type str and we were unable to convert "
            "to int") in said, said
    assert "a defect in this phase" not in said


BROKEN = "#!/bin/sh\necho 'pyenv: python3.13: command not found' >&2\necho 'on stdout too'\nexit 127\n"


def test_probe6_d6_a_broken_interpreter_shows_its_stderr_through_a_phase_action(tmp_path):
    """The probe's: with the discovered interpreter broken, the phase said only 'Module result deserialization
    failed'; a plain module task shows module_stderr."""
    broken = tmp_path / "python"
    broken.write_text(BROKEN)
    broken.chmod(0o755)
    given = "phase: observe\nrecord_path: %s/record.json\nservice: sglang-probe" % tmp_path
    rc, said = _playbook(tmp_path, "sglang_prove", given, ("-e", "ansible_python_interpreter=%s" % broken))
    assert rc != 0
    assert "pyenv: python3.13: command not found" in said, said
    assert "rc 127" in said and "on stdout too" in said
    assert "a defect in this phase" not in said


def _executor(result):
    action = _action(ACTIONS["sglang_deploy"], {})
    action._execute_module = MagicMock(return_value=result)
    return phase_action.Executor(action, {}, "n0")


def test_probe6_d6_the_modules_output_is_kept_bounded_and_secret_arguments_filtered():
    stderr = "x" * 5000 + " the key sk-secret-key was refused\n"
    result = _executor({"failed": True, "msg": "Module result deserialization failed.", "rc": 1,
                        "module_stderr": stderr, "module_stdout": ""}).module(
        "sglang_wait_ready", {"url": "http://h", "api_key": "sk-secret-key"}, secret=True)
    assert result["msg"].startswith("Module result deserialization failed. (rc 1); module_stderr: ...xxx")
    assert result["msg"].endswith("the key ******** was refused")
    assert "sk-secret-key" not in str(result)
    assert len(result["msg"]) < phase_action.OUTPUT_LIMIT + 200
    # a module that did not fail, or failed with its own message only, is as it was
    assert _executor({"changed": False, "module_stderr": "noise"}).module("m", {}) == {
        "changed": False, "module_stderr": "noise"}
    assert _executor({"failed": True, "msg": "refused"}).module("m", {}) == {"failed": True, "msg": "refused"}
