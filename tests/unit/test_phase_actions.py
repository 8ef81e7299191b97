"""The role's phase actions (sglang_runtime_install, sglang_deploy, sglang_prove, sglang_rescue; their shared base
lib/sglang_state/phase_action.py): each phase takes the options it reads (the action's PHASE_OPTIONS, typed by its
library/ documentation: the action's SPECS) and refuses any other, a missing required one and a wrong-typed value
(tests/unit/test_phase_action_types.py) by name before anything runs; an error raised inside a phase whose options
passed is the phase's defect (its traceback kept for -vvv), not the caller's mistake. Every call the role makes
passes only what its phase takes, and each action's library/ file documents exactly its table. What an earlier
phase found (the run as it stands, the server's nodes' results) is no option: each phase reads it from this host's
run record (lib/sglang_state/run_record.py; tests/conftest.py gives each test a folder of its own) and keeps its
result there, failed or not."""

import glob
import importlib.util
import os
import re
import time
from unittest.mock import MagicMock

import pytest
import yaml
from ansible import constants as C
from ansible.errors import AnsibleConnectionFailure
from sglang_state import run_record

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _load(name, path):
    spec = importlib.util.spec_from_file_location(name, os.path.join(REPO, path))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


NAMES = ("sglang_runtime_install", "sglang_deploy", "sglang_prove", "sglang_rescue")
ACTIONS = {name: _load(name + "_action", "action_plugins/%s.py" % name) for name in NAMES}
DOCS = {name: _load(name + "_docs", "library/%s.py" % name) for name in NAMES}
deploy = ACTIONS["sglang_deploy"]
# Each phase: its action and the function it dispatches to, by the module attribute the action calls
PHASE_FUNCTIONS = {
    "install": ("sglang_runtime_install", ACTIONS["sglang_runtime_install"].runtime_install, "install"),
    **{phase: ("sglang_deploy", deploy.transaction, phase) for phase in ("render", "start", "calibrate", "verify",
                                                                          "restore")},
    **{phase: ("sglang_prove", ACTIONS["sglang_prove"].transaction_proof, phase)
       for phase in ("observe", "decide", "prove", "record")},
    **{phase: ("sglang_rescue", ACTIONS["sglang_rescue"].transaction_rescue, phase)
       for phase in ACTIONS["sglang_rescue"].PHASE_OPTIONS},
}
CHANGED_RUN = dict(deploy.transaction.new_run(), changed_this_run=True, run_backup="b1")


def _seed(host="n0", run=CHANGED_RUN, **results):
    """A host's run record as the phases before would have left it this run: the run as it stands, their results."""
    run_record.write(run_record.folder_of(C.DEFAULT_LOCAL_TMP), host, {"run": run, "results": results})


def _record(host="n0"):
    return run_record.read(run_record.folder_of(C.DEFAULT_LOCAL_TMP), host)


def _steps(phase):
    """The names a phase's result is kept under in the record (a deploy phase's: its own, and the deploy's latest)."""
    steps = _owner(phase).ActionModule.STEPS[phase]
    return (steps,) if isinstance(steps, str) else steps


def _owner(phase):
    return ACTIONS[PHASE_FUNCTIONS[phase][0]]


def _options(phase):
    return _owner(phase).PHASE_OPTIONS[phase]


def _action(module, args):
    """The action in this process with a task that holds args; its connection reaches no host."""
    task = MagicMock(async_val=0, check_mode=False, diff=False, no_log=False, args=args)
    connection = MagicMock()
    connection._shell.tmpdir = None
    action = module.ActionModule(task, connection, MagicMock(), None, None, None)
    action._execute_module = MagicMock(side_effect=AssertionError("a module ran"))
    return action


def _run(args, module=None):
    """The phase's action (args names its phase; the runtime's has one and takes no phase) on host n0."""
    args = dict(args)
    module = module or _owner(args["phase"])
    if len(module.PHASE_OPTIONS) == 1:
        args.pop("phase")
    return _action(module, args).run(task_vars={"inventory_hostname": "n0", "hostvars": {}})


def _where(phase):
    name = PHASE_FUNCTIONS[phase][0]
    return name if phase == "install" else "%s (phase %s)" % (name, phase)


@pytest.fixture
def calls(monkeypatch):
    """Every phase function replaced by one that notes its call and returns a phase's result."""
    noted = []

    def fake(phase):
        def run_phase(*args):
            noted.append((phase, args))
            return {"phase": phase, "changed": False}
        return run_phase

    for phase, (_name, module, name) in PHASE_FUNCTIONS.items():
        monkeypatch.setattr(module, name, fake(phase))
    return noted


def valid(option):
    """A value of the option's type (its required suboptions filled in)."""
    kind = option.get("type", "str")
    if kind == "dict":
        return {name: valid(sub) for name, sub in option.get("options", {}).items() if sub.get("required")}
    return {"list": [], "int": 1, "float": 1.0, "bool": False, "raw": {}}.get(kind, "x")


def _spec(phase):
    return _owner(phase).ActionModule.SPECS[phase]


def _given(phase, leave_out=()):
    """Every required option of the phase (a value of its type), less leave_out."""
    return dict({name: valid(option) for name, option in _spec(phase).items()
                 if option.get("required") and name not in leave_out}, phase=phase)


def _required(phase):
    return ", ".join(sorted(name for name, option in _spec(phase).items() if option.get("required")))


def test_a_phase_that_begins_a_run_notes_when_and_the_others_carry_it_from_the_record(calls):
    before = time.time()
    render = _run(dict(_given("render")))
    assert before <= render["clock"]["start"] <= render["clock"]["end"] <= time.time()
    (_phase, (_executor, _args, run)), = calls  # the run the action gave the phase
    assert before <= run["began"] <= time.time()
    _run(dict(_given("start")))
    assert calls[-1][1][2]["began"] == run["began"]  # carried from this run's record, not restarted
    assert "run" not in _spec("start")  # no phase takes the run as an option: the role hands nothing back
    _run(dict(_given("restore")))
    assert calls[-1][1][2]["began"] > run["began"]  # a restore begins a run of its own


def test_the_actions_split_the_phases_and_each_phase_has_one_spec_of_what_it_takes():
    assert [phase for name in NAMES for phase in ACTIONS[name].PHASE_OPTIONS] == list(PHASE_FUNCTIONS)
    for name in NAMES:
        action = ACTIONS[name].ActionModule
        for phase, options in ACTIONS[name].PHASE_OPTIONS.items():
            assert set(action.SPECS[phase]) == set(options), (name, phase)
            assert all(action.SPECS[phase][option].get("type") for option in options), (name, phase)
        assert not action._VALID_ARGS  # the spec is the one check: no second list of names for Ansible's
        assert action.NAME == name


@pytest.mark.parametrize("phase, typo", [("start", "recrod"), ("decide", "reprove_after_day"),
                                         ("install", "kernel_wheel"), ("look", "api_keys")])
def test_an_unknown_option_is_refused_by_name_and_nothing_runs(calls, phase, typo):
    """One phase of each action."""
    _seed()  # the run as the phases before left it
    result = _run(dict(_given(phase), **{typo: 1}))
    takes = ", ".join(sorted(_options(phase)))
    assert result["msg"] == "%s: unknown option '%s'; %s takes: %s; requires: %s" % (
        _where(phase), typo, "it" if phase == "install" else "phase " + phase, takes, _required(phase))
    assert result["failed"] and result["changed"] is False and calls == []
    # the run the phase before left stays in the result and in the record, the refusal beside it: the rescue reads
    # them
    assert result["run"] == CHANGED_RUN, result["run"]
    kept = _record()
    assert kept["run"] == CHANGED_RUN
    assert all(kept["results"][step]["msg"] == result["msg"] for step in _steps(phase))


def test_the_start_phase_lists_what_it_takes():
    result = _run(dict(_given("start"), recrod={}))
    assert result["msg"] == (
        "sglang_deploy (phase start): unknown option 'recrod'; phase start takes: batch, common, context_target, "
        "etc_dir, etc_group, files, host, multinode, order, rank0, server, service, state_manifest, store, wait; "
        "requires: batch, files, host, multinode, service, state_manifest, store, wait")


# What an earlier phase found, as the role passed it before the run record: each is now read from the record, and
# a task that passes one is refused by name
FOUND_BEFORE = [("start", "files_changed"), ("start", "nodes"), ("start", "record"), ("calibrate", "nodes"),
                ("verify", "nodes"), ("decide", "record"), ("prove", "planned"), ("prove", "concurrent_requests"),
                ("record", "planned"), ("record", "live"), ("record", "smoke"), ("rescue", "nodes"),
                ("rescue", "failed_in"), ("end", "said"), ("end", "proved"), ("install", "proven")]


@pytest.mark.parametrize("phase, option", FOUND_BEFORE + [(phase, "run") for phase in PHASE_FUNCTIONS],
                         ids=["%s-%s" % case for case in FOUND_BEFORE + [(phase, "run") for phase in PHASE_FUNCTIONS]])
def test_what_an_earlier_phase_found_is_no_option_and_is_refused_by_name(calls, phase, option):
    _seed()
    result = _run(dict(_given(phase), **{option: {}}))
    assert result["msg"].startswith("%s: unknown option '%s'; " % (_where(phase), option)), result["msg"]
    assert result["failed"] and calls == []
    action = _owner(phase).ActionModule
    # the run as it stands, kept in the refusal; a phase that begins a run or a record refuses with a new one
    carried = phase not in action.BEGINS + action.FRESH
    assert (result["run"] == CHANGED_RUN) is carried, result["run"]


def test_an_unknown_key_in_common_and_common_where_none_is_taken_are_refused(calls):
    render = dict(_given("render"), common={"host": "n0", "wiat": {}})
    assert _run(render)["msg"].startswith("sglang_deploy (phase render): unknown option 'wiat' (in common); ")
    decide = dict(_given("decide"), common={"host": "n0"})
    assert _run(decide)["msg"].startswith("sglang_prove (phase decide): unknown option 'common'; phase decide "
                                          "takes: asked, context_target, reprove_after_days, ")
    # a phase of another action is not this one's: named with the phases this action has
    assert _run(dict(_given("render"), phase="decide"), deploy)["msg"] == (
        "sglang_deploy: phase is 'decide', one of render, start, calibrate, verify, restore")
    # an action of one purpose takes no phase
    assert _run(dict(_given("install")), ACTIONS["sglang_rescue"])["msg"].startswith("sglang_rescue: phase is ")
    assert _action(ACTIONS["sglang_runtime_install"], dict(_given("install"))).run(task_vars={})["msg"].startswith(
        "sglang_runtime_install: unknown option 'phase'; it takes: check, ")
    # a phase that begins a run is given none
    assert _run(dict(_given("render"), run={}))["msg"].startswith("sglang_deploy (phase render): unknown option "
                                                                  "'run'; ")
    assert calls == []


def test_a_missing_required_option_is_named_whether_own_or_from_common(calls):
    _seed()
    common = {name: valid(_spec("start")[name]) for name in deploy.DEPLOY_COMMON if name != "wait"}
    result = _run({"phase": "start", "common": common})
    assert result["msg"].startswith("sglang_deploy (phase start): missing required arguments: wait; phase start "
                                    "takes: batch, common, ")
    assert result["msg"].endswith("; requires: batch, files, host, multinode, service, state_manifest, store, wait")
    assert result["failed"] and result["changed"] is False and result["run"]["run_backup"] == "b1"
    result = _run(_given("prove", leave_out=("limit", "smoke")))
    assert result["msg"].startswith("sglang_prove (phase prove): missing required arguments: limit, smoke; ")
    result = _run(_given("install", leave_out=("check",)))
    assert result["msg"].startswith("sglang_runtime_install: missing required arguments: check; it takes: ")
    # a required suboption too, named with where it is
    result = _run(dict(_given("render"), store={"keep": 3}))
    assert result["msg"].startswith("sglang_deploy (phase render): missing required arguments: dir found in store; ")
    assert calls == []


def test_common_merges_under_the_tasks_own_and_each_phase_gets_only_its_arguments_and_the_records(calls):
    common = dict({name: valid(_spec("start")[name]) for name in deploy.DEPLOY_COMMON}, batch=["n0", "n1"])
    rendered = {"phase": "render", "changed": True, "files_changed": True}
    _seed("n0", observe={"phase": "observe", "record": {"proven_at": 7}}, render=rendered)
    _seed("n1", render=dict(rendered, files_changed=False))
    result = _run({"phase": "start", "common": common, "host": "own"})
    assert not result.get("failed"), result
    (phase, (_executor, args, run)), = calls
    # its own render's files_changed, the first look's record, and each node's render in the batch
    assert phase == "start" and args == dict(common, host="own", files_changed=True, record={"proven_at": 7},
                                             nodes={"n0": rendered, "n1": dict(rendered, files_changed=False)})
    assert run == CHANGED_RUN


def test_calibrate_gets_a_replan_of_its_plan_inputs_and_a_part_missing_is_the_tasks_mistake(calls):
    given = dict(_given("calibrate"), plan_inputs={"knobs": {}, "measured": {}, "gpus": {}, "calibrations": {}})
    assert not _run(given).get("failed")
    (_phase, (_executor, args, _run_record)), = calls
    assert "plan_inputs" not in args and callable(args["replan"])
    result = _run(dict(given, plan_inputs={"knobs": {}, "measured": {}, "gpus": {}}))
    assert result["failed"] and len(calls) == 1
    assert result["msg"].startswith("sglang_deploy (phase calibrate): missing required arguments: calibrations found "
                                    "in plan_inputs; "), result


def test_a_common_that_is_not_a_mapping_is_said(calls):
    result = _run(dict(_given("verify"), common="host=n0"))  # Ansible would read it as {host: n0}: refused
    assert result["failed"] and calls == []
    assert result["msg"].startswith("sglang_deploy (phase verify): 'common' is a string, not a mapping; "), result
    assert result["run"] == deploy.transaction.new_run() and calls == []


@pytest.mark.parametrize("written, said", [("[1]", "is not a mapping"), ("{not json", "is not JSON")])
def test_a_record_this_run_did_not_write_is_said_with_its_path_and_left_as_it_is(calls, written, said):
    folder = run_record.folder_of(C.DEFAULT_LOCAL_TMP)
    os.makedirs(folder)
    path = os.path.join(folder, "n0.json")
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(written)
    result = _run(dict(_given("verify")))
    assert result["failed"] and calls == []
    assert result["msg"].startswith("sglang_deploy: the run record %s %s" % (path, said)), result["msg"]
    with open(path, encoding="utf-8") as handle:
        assert handle.read() == written


@pytest.mark.parametrize("phase", ["verify", "rescue"])
def test_an_error_inside_a_phase_is_its_defect_with_the_traceback(monkeypatch, phase):
    def broken(*_args):
        return {}["y"]

    _action_name, module, name = PHASE_FUNCTIONS[phase]
    monkeypatch.setattr(module, name, broken)
    _seed()
    result = _run(dict(_given(phase)))
    assert result["msg"] == ("%s: a defect in this phase, not in the task's arguments: "
                             "KeyError: 'y'; run with -vvv for the traceback" % _where(phase))
    assert result["exception"].startswith("Traceback (most recent call last):")
    assert "in broken" in result["exception"] and result["exception"].rstrip().endswith("KeyError: 'y'")
    assert result["failed"] and result["changed"] is True and result["run"] == CHANGED_RUN
    assert all(_record()["results"][step]["msg"] == result["msg"] for step in _steps(phase))


def test_a_phase_failure_is_its_sentence_and_an_ansible_error_is_ansibles(monkeypatch):
    def failing(*_args):
        raise deploy.transaction.PhaseFailed("SGLang did not answer /health_generate within 600 s")

    monkeypatch.setattr(deploy.transaction, "verify", failing)
    _seed()
    before = time.time()
    result = _run(dict(_given("verify")))
    span = result.pop("clock")  # every result carries its span on the controller's clock (the day-1 clock reads it)
    assert before <= span["start"] <= span["end"] <= time.time()
    assert result == {"phase": "verify", "failed": True, "changed": True, "run": CHANGED_RUN,
                      "msg": "SGLang did not answer /health_generate within 600 s"}

    def unreachable(*_args):
        raise AnsibleConnectionFailure("ssh: connect to host n0 port 22: Connection refused")

    monkeypatch.setattr(deploy.transaction, "verify", unreachable)
    with pytest.raises(AnsibleConnectionFailure):  # Ansible marks the host unreachable, as before
        _run(dict(_given("verify")))


# Each phase that reads its peers' results of the step before it: (phase, that step, what the refusal calls it)
PEER_READERS = [("start", "render", "the deploy's render phase"),
                ("calibrate", "start", "the deploy's start phase"),
                ("verify", "calibrate", "the deploy's calibrate phase"),
                ("prove", "decide", "the proof's decision"), ("record", "decide", "the proof's decision"),
                ("rescue", "look", "the look of the rescue")]


@pytest.mark.parametrize("phase, step, said", PEER_READERS, ids=[case[0] for case in PEER_READERS])
def test_a_phase_whose_peer_has_no_result_of_the_step_before_is_refused_naming_it(calls, phase, step, said):
    _seed("n0", **{step: {"phase": step, "changed": False}})
    _seed("n1", run=deploy.transaction.new_run(), observe={"phase": "observe"})  # its step failed or was skipped
    # n2 has no record at all this run (unreachable, or left out by --limit)
    result = _run(dict(_given(phase), batch=["n0", "n1", "n2"]))
    assert result["msg"].startswith(
        "%s: the nodes of a server move in step, and n1, n2 have no %s: %s did not run there (" % (
            _where(phase), step, said)), result["msg"]
    assert "Run again with every node of the server in the play" in result["msg"]
    assert result["failed"] and result["changed"] is False and calls == []  # nothing ran
    assert result["run"] == CHANGED_RUN  # the run as it stands: the rescue reads it
    # one peer missing is named alone
    _seed("n2", observe={"phase": "observe"}, **{step: {"phase": step}})
    assert "and n1 has no %s: " % step in _run(dict(_given(phase), batch=["n0", "n1", "n2"]))["msg"]
    assert calls == []


def test_a_failed_phase_keeps_its_result_and_run_in_the_record_and_the_rescue_reads_them(calls, monkeypatch):
    def start_that_changed_the_host_then_failed(_executor, _args, run):
        run.update(changed_this_run=True, run_backup="b2", starts=1)
        raise deploy.transaction.PhaseFailed("sglang-main did not answer /health_generate within 600 s")

    monkeypatch.setattr(deploy.transaction, "start", start_that_changed_the_host_then_failed)
    _run(_given("render"))  # the run begins
    result = _run(dict(_given("start"), batch=["n0"]))
    assert result["failed"] and result["msg"] == "sglang-main did not answer /health_generate within 600 s"
    kept = _record()
    assert kept["run"]["run_backup"] == "b2" and kept["run"]["changed_this_run"] is True
    assert kept["results"]["deploy"]["failed"] and kept["results"]["deploy"]["phase"] == "start"
    # the rescue's look runs: this run changed the host (the failed start's run, read from the record)
    failure = "sglang_deploy (phase start): " + result["msg"]
    look = _run(dict(_given("look"), failure=failure))
    assert not look.get("failed"), look
    assert calls[-1][0] == "look" and calls[-1][1][2]["run_backup"] == "b2"
    rescue = _run(dict(_given("rescue"), batch=["n0"], failure=failure))
    assert not rescue.get("failed"), rescue
    phase, (_executor, args, run) = calls[-1]
    assert phase == "rescue" and run["run_backup"] == "b2" and run["starts"] == 1
    assert args["nodes"]["n0"]["phase"] == "look"  # its own look, read as its peers read it
    assert args["failed_in"] == ""  # the deploy failed: not a failed proof after a verified deploy


@pytest.mark.parametrize("deployed, failed_in", [({"phase": "verify", "changed": True}, "proof"),
                                                 ({"phase": "verify", "failed": True}, ""),
                                                 ({"phase": "calibrate", "failed": True}, ""), (None, "")])
def test_the_rescue_reads_where_the_run_failed_from_the_deploys_last_result(calls, deployed, failed_in):
    _seed("n0", look={"phase": "look"}, **({"deploy": deployed} if deployed else {}))
    assert not _run(dict(_given("rescue"), batch=["n0"])).get("failed")
    assert calls[-1][1][1]["failed_in"] == failed_in


def test_the_look_fails_with_the_failure_at_once_when_the_run_changed_nothing(calls):
    _run(_given("render"))  # the run began, and nothing it did changed the host
    result = _run(dict(_given("look"), failure="sglang_deploy (phase render): the plan does not fit"))
    assert result["failed"] and result["msg"] == "sglang_deploy (phase render): the plan does not fit"
    assert result["changed"] is False and [phase for phase, _args in calls] == ["render"]  # the look ran nothing


def test_the_rescue_drops_the_proof_before_it_and_end_reads_the_restored_states(calls, monkeypatch):
    rescue = ACTIONS["sglang_rescue"].transaction_rescue
    said = {"decided": {"action": "restore", "target": "e1"}, "facts": {"service": "s"}}

    def restored(_executor, _args, run):
        calls.append(("rescue", (_executor, _args, run)))
        return {"phase": "rescue", "changed": True, "run": run, "said": said,
                "proof": {"planned": {"level": "check"}, "smoke": {"context": 4096}}}

    monkeypatch.setattr(rescue, "rescue", restored)
    # the proof that failed (rank 0's), before the rescue
    _seed("n0", look={"phase": "look"}, prove={"phase": "prove", "failed": True, "smoke": {"passed": False}})
    assert not _run(dict(_given("rescue"), batch=["n0"])).get("failed")
    assert "prove" not in _record()["results"]
    _run(dict(_given("end"), rank0="n0"))
    phase, (_executor, args, _run_record) = calls[-1]
    assert phase == "end" and args["said"] == said and args["proved"] is None  # no proof of the restored state yet
    # the restored state's proof: at the level the rescue planned, then read by end
    _run(dict(_given("prove"), batch=["n0"]))
    phase, (_executor, args, _run_record) = calls[-1]
    assert phase == "prove" and args["planned"] == {"level": "check"}
    _run(dict(_given("end"), rank0="n0"))
    assert calls[-1][1][1]["proved"]["phase"] == "prove" and not calls[-1][1][1]["proved"].get("failed")


def test_a_phase_that_begins_a_run_reads_nothing_of_an_earlier_run_but_the_first_look(calls):
    """The role run twice on a host in one ansible-playbook run: the second pass's render begins a run of its own."""
    earlier = {"observe": {"phase": "observe", "record": {"proven_at": 7}},
               "deploy": {"phase": "verify", "changed": True, "files_changed": True, "run": CHANGED_RUN},
               "decide": {"phase": "decide", "own": {"level": "full"}}, "prove": {"phase": "prove"},
               "record": {"phase": "record"}, "look": {"phase": "look"}, "rescue": {"phase": "rescue"}}
    _seed("n0", **earlier)
    before = time.time()
    _run(_given("render"))
    (_phase, (_executor, _args, run)), = calls
    assert run == dict(deploy.transaction.new_run(), began=run["began"]) and run["began"] >= before
    kept = _record()
    assert set(kept["results"]) == {"observe", "render", "deploy"} and kept["results"]["deploy"]["phase"] == "render"
    assert kept["run"] == {"began": run["began"]}
    # start reads this run's render and the first look, never the earlier run's
    _run(dict(_given("start"), batch=["n0"]))
    phase, (_executor, args, run) = calls[-1]
    assert phase == "start" and args["files_changed"] is False and args["record"] == {"proven_at": 7}
    assert args["nodes"]["n0"]["phase"] == "render" and run["changed_this_run"] is False
    # the earlier run's decision is gone: a proof now is refused, naming the node, and does not run
    result = _run(dict(_given("prove"), batch=["n0"]))
    assert "and n0 has no decide: the proof's decision did not run there" in result["msg"], result["msg"]
    assert [phase for phase, _args in calls] == ["render", "start"]
    # a first look begins a record of its own: nothing of the run before it is kept
    _run(_given("observe"))
    assert calls[-1][0] == "observe"
    assert set(_record()["results"]) == {"observe"} and "run" not in _record()


# The role's calls: every YAML task whose module is one of the phase actions
def _yaml_files():
    for pattern in ("roles/**/*.yml", "roles/**/*.yaml", "playbooks/**/*.yml", "playbooks/**/*.yaml", "site.yml"):
        yield from sorted(glob.glob(os.path.join(REPO, pattern), recursive=True))


def _tasks(items):
    """Every task in a list of tasks or plays, those inside blocks and their rescue and always included."""
    for item in items if isinstance(items, list) else []:
        if not isinstance(item, dict):
            continue
        yield item
        for key in ("block", "rescue", "always", "tasks", "pre_tasks", "post_tasks", "handlers"):
            yield from _tasks(item.get(key))


def _call_sites():
    sites = []
    for path in _yaml_files():
        for task in _tasks(yaml.safe_load(open(path, encoding="utf-8"))):
            for module in task:
                name = module.split(".")[-1]
                if name in ACTIONS and isinstance(task[module], dict):
                    where = "%s: %s" % (os.path.relpath(path, REPO), task.get("name"))
                    sites.append((where, name, dict(task[module]) if name != "sglang_runtime_install"
                                  else dict(task[module], phase="install")))
    return sites


def _role_vars():
    with open(os.path.join(REPO, "roles", "sglang", "vars", "main.yml"), encoding="utf-8") as handle:
        return yaml.safe_load(handle)


def _common_keys(value, role_vars):
    """The keys of the dict a call passes as common: one of the role's vars, named alone in a template."""
    named = re.fullmatch(r"\{\{\s*(\w+)\s*\}\}", str(value).strip())
    assert named and isinstance(role_vars.get(named.group(1)), dict), "common is not one of the role's dicts: %r" % (
        value,)
    return set(role_vars[named.group(1)])


def _refused(name, args, common):
    """What a call of the role passes that its phase's spec would refuse by name: an unknown option (its own or in
    common), a required one given neither way. The values are templates here: their types are checked where they
    are rendered (tests/unit/test_phase_action_types.py)."""
    spec = ACTIONS[name].ActionModule.SPECS[args["phase"]]
    own = {key for key in args if key != "phase"}
    inside = set(common) if "common" in spec else set()
    unknown = sorted("'%s'" % key for key in own | inside if key not in spec)
    missing = sorted("'%s'" % key for key, option in spec.items() if option.get("required") and key not in own | inside)
    return "unknown option %s; missing %s" % (", ".join(unknown), ", ".join(missing)) if unknown or missing else None


def test_every_call_the_role_makes_passes_what_its_phase_takes():
    sites, role_vars = _call_sites(), _role_vars()
    # every phase is called, by its own action, and from where the role calls it: a walk that found none would pass
    assert {(name, args.get("phase")) for _where, name, args in sites} == {
        (name, phase) for phase, (name, _module, _function) in PHASE_FUNCTIONS.items()}, sites
    for where, name, args in sites:
        common = {key: None for key in _common_keys(args["common"], role_vars)} if "common" in args else {}
        assert _refused(name, args, common) is None, where


def test_the_call_sites_check_would_refuse_a_misspelt_option():
    where, name, args = next(site for site in _call_sites() if site[2].get("phase") == "start")
    common = {key: None for key in _common_keys(args["common"], _role_vars())}
    assert "unknown option 'recrod'" in _refused(name, dict(args, recrod=1), common), where


@pytest.mark.parametrize("name", NAMES)
def test_the_documentation_holds_exactly_the_options_the_phases_take(name):
    documented = yaml.safe_load(DOCS[name].DOCUMENTATION)
    table = ACTIONS[name].PHASE_OPTIONS
    assert documented["module"] == name
    taken = set().union(*(set(options) for options in table.values()))
    assert set(documented["options"]) == taken | ({"phase"} if len(table) > 1 else set())
    if len(table) > 1:
        assert documented["options"]["phase"]["choices"] == list(table)
    assert any("refuses any other" in line for line in documented["description"])


@pytest.mark.parametrize("phase", [["render"], {"render": 1}, None])
def test_a_phase_that_is_not_a_name_is_refused_by_name_and_nothing_is_kept(calls, phase):
    result = _action(deploy, {"phase": phase}).run(task_vars={"inventory_hostname": "n0", "hostvars": {}})
    assert result["failed"] and result["msg"].startswith("sglang_deploy: phase is ") and calls == []
    assert _record() == {}


def test_the_record_phase_keeps_the_plan_that_serves_and_returns_the_runs_facts(calls, monkeypatch):
    proof = ACTIONS["sglang_prove"].transaction_proof
    seen = []

    def recorded(_executor, args, run):
        seen.append(args)
        return {"phase": "record", "changed": True, "run": run, "level": {"level": "full"}, "record": {"at": 9}}

    monkeypatch.setattr(proof, "record", recorded)
    corrected = {"explanation": "calibrated on this host's boot", "calibrated": True, "max_running_requests": 8}
    _seed("n0", observe={"phase": "observe", "record": {}}, decide={"phase": "decide", "own": {"level": "full"}},
          prove={"phase": "prove", "smoke": {"level": "full", "prompt_tokens": 60002}},
          deploy={"phase": "verify", "facts": {"sglang_boot": {"pool_tokens": 218484}, "sglang_starts": 2,
                                               "sglang_kv_plan_result": corrected, "calibration_in_use": {"f": 1}}})
    manifest = {"reason": "deployed", "plan": "the estimate before the boot", "calibrated": False, "versions": {}}
    result = _run(dict(_given("record"), batch=["n0"], rank0="n0", manifest=manifest))
    assert not result.get("failed"), result
    # the proven mark keeps the plan the server runs (a correction after the boot included), not the estimate
    assert seen[-1]["manifest"] == dict(manifest, plan="calibrated on this host's boot", calibrated=True)
    assert result["facts"] == {"sglang_boot": {"pool_tokens": 218484}, "sglang_starts": 2,
                               "sglang_kv_plan_result": corrected, "sglang_proof_level": {"level": "full"},
                               "sglang_smoke": {"level": "full", "prompt_tokens": 60002},
                               "sglang_proof_record": {"at": 9}}
    assert _record()["results"]["record"]["facts"] == result["facts"]


def test_the_decision_after_a_restore_reads_the_restored_runtimes_versions(calls):
    _seed("n0", observe={"phase": "observe", "record": {}},
          deploy={"phase": "restore", "facts": {"sglang_venv_versions": {"sglang": "0.5.9"}}})
    _run(dict(_given("decide"), versions={"sglang": "0.5.23"}))
    phase, (_executor, args, _run_record) = calls[-1]
    assert phase == "decide" and args["versions"] == {"sglang": "0.5.9"}
    # after the deploy's verify (no restore), the versions are the install's, as the role passes them
    _seed("n0", observe={"phase": "observe", "record": {}}, deploy={"phase": "verify", "facts": {}})
    _run(dict(_given("decide"), versions={"sglang": "0.5.23"}))
    assert calls[-1][1][1]["versions"] == {"sglang": "0.5.23"}
