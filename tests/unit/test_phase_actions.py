"""The role's phase actions (sglang_runtime_install, sglang_deploy, sglang_proof, sglang_rescue; their shared base
lib/sglang_state/phase_action.py): each phase takes the options it reads (the action's PHASE_OPTIONS, typed by its
library/ documentation: the action's SPECS) and refuses any other, a missing required one and a wrong-typed value
(tests/unit/test_phase_action_types.py) by name before anything runs; an error raised inside a phase whose options
passed is the phase's defect (its traceback kept for -vvv), not the caller's mistake. Every call the role makes
passes only what its phase takes, and each action's library/ file documents exactly its table."""

import glob
import importlib.util
import os
import re
import time
from unittest.mock import MagicMock

import pytest
import yaml
from ansible.errors import AnsibleConnectionFailure

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _load(name, path):
    spec = importlib.util.spec_from_file_location(name, os.path.join(REPO, path))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


NAMES = ("sglang_runtime_install", "sglang_deploy", "sglang_proof", "sglang_rescue")
ACTIONS = {name: _load(name + "_action", "action_plugins/%s.py" % name) for name in NAMES}
DOCS = {name: _load(name + "_docs", "library/%s.py" % name) for name in NAMES}
deploy = ACTIONS["sglang_deploy"]
# Each phase: its action and the function it dispatches to, by the module attribute the action calls
PHASE_FUNCTIONS = {
    "install": ("sglang_runtime_install", ACTIONS["sglang_runtime_install"].runtime_install, "install"),
    **{phase: ("sglang_deploy", deploy.transaction, phase) for phase in ("render", "start", "calibrate", "verify",
                                                                          "restore")},
    **{phase: ("sglang_proof", ACTIONS["sglang_proof"].transaction_proof, phase)
       for phase in ("observe", "decide", "prove", "record")},
    **{phase: ("sglang_rescue", ACTIONS["sglang_rescue"].transaction_rescue, phase)
       for phase in ACTIONS["sglang_rescue"].PHASE_OPTIONS},
}
CHANGED_RUN = dict(deploy.transaction.new_run(), changed_this_run=True, run_backup="b1")


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


def test_a_phase_that_begins_a_run_notes_when_and_the_others_carry_it(calls):
    before = time.time()
    render = _run(dict(_given("render")))
    assert before <= render["clock"]["start"] <= render["clock"]["end"] <= time.time()
    (_phase, (_executor, _args, run)), = calls  # the run record the action gave the phase
    assert before <= run["began"] <= time.time()
    _run(dict(_given("start"), run=dict(CHANGED_RUN, began=1.5)))
    assert calls[-1][1][2]["began"] == 1.5  # carried, not restarted
    _run(dict(_given("decide"), run=CHANGED_RUN))
    assert "began" not in calls[-1][1][2]  # a carried run without one gets none


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
    result = _run(dict(_given(phase), run=CHANGED_RUN, **{typo: 1}) if phase != "install"
                  else dict(_given(phase), **{typo: 1}))
    takes = ", ".join(sorted(_options(phase)))
    assert result["msg"] == "%s: unknown option '%s'; %s takes: %s; requires: %s" % (
        _where(phase), typo, "it" if phase == "install" else "phase " + phase, takes, _required(phase))
    assert result["failed"] and result["changed"] is False and calls == []
    # the run the phase before left stays in the result: the role's rescue reads it
    assert result["run"]["changed_this_run"] is (phase != "install"), result["run"]


def test_the_start_phase_lists_what_it_takes():
    result = _run(dict(_given("start"), recrod={}))
    assert result["msg"] == (
        "sglang_deploy (phase start): unknown option 'recrod'; phase start takes: common, context_target, etc_dir, "
        "etc_group, files, files_changed, host, multinode, nodes, order, rank0, record, run, server, service, "
        "state_manifest, store, wait; requires: files, files_changed, host, multinode, service, state_manifest, "
        "store, wait")


def test_an_unknown_key_in_common_and_common_where_none_is_taken_are_refused(calls):
    render = dict(_given("render"), common={"host": "n0", "wiat": {}})
    assert _run(render)["msg"].startswith("sglang_deploy (phase render): unknown option 'wiat' (in common); ")
    decide = dict(_given("decide"), common={"host": "n0"})
    assert _run(decide)["msg"].startswith("sglang_proof (phase decide): unknown option 'common'; phase decide "
                                          "takes: asked, context_target, record, ")
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
    common = {name: valid(_spec("start")[name]) for name in deploy.DEPLOY_COMMON if name != "wait"}
    result = _run({"phase": "start", "common": common, "files_changed": False, "run": CHANGED_RUN})
    assert result["msg"].startswith("sglang_deploy (phase start): missing required arguments: wait; phase start "
                                    "takes: common, ")
    assert result["msg"].endswith("; requires: files, files_changed, host, multinode, service, state_manifest, "
                                  "store, wait")
    assert result["failed"] and result["changed"] is False and result["run"]["run_backup"] == "b1"
    result = _run(_given("prove", leave_out=("limit", "smoke")))
    assert result["msg"].startswith("sglang_proof (phase prove): missing required arguments: limit, smoke; ")
    result = _run(_given("install", leave_out=("check",)))
    assert result["msg"].startswith("sglang_runtime_install: missing required arguments: check; it takes: ")
    # a required suboption too, named with where it is
    result = _run(dict(_given("render"), store={"keep": 3}))
    assert result["msg"].startswith("sglang_deploy (phase render): missing required arguments: dir found in store; ")
    assert calls == []


def test_common_merges_under_the_tasks_own_and_each_phase_gets_only_its_arguments(calls):
    common = {name: valid(_spec("start")[name]) for name in deploy.DEPLOY_COMMON}
    result = _run({"phase": "start", "common": common, "files_changed": True, "host": "own", "run": CHANGED_RUN})
    assert not result.get("failed"), result
    (phase, (_executor, args, run)), = calls
    assert phase == "start" and args == dict(common, files_changed=True, host="own") and run == CHANGED_RUN


def test_calibrate_gets_a_replan_of_its_plan_inputs_and_a_part_missing_is_the_tasks_mistake(calls):
    given = dict(_given("calibrate"), plan_inputs={"knobs": {}, "measured": {}, "gpus": {}, "calibrations": {}})
    assert not _run(given).get("failed")
    (_phase, (_executor, args, _run_record)), = calls
    assert "plan_inputs" not in args and callable(args["replan"])
    result = _run(dict(given, plan_inputs={"knobs": {}, "measured": {}, "gpus": {}}))
    assert result["failed"] and len(calls) == 1
    assert result["msg"].startswith("sglang_deploy (phase calibrate): missing required arguments: calibrations found "
                                    "in plan_inputs; "), result


def test_a_common_or_run_that_is_not_a_mapping_is_said(calls):
    result = _run(dict(_given("verify"), common="host=n0"))  # Ansible would read it as {host: n0}: refused
    assert result["failed"] and calls == []
    assert result["msg"].startswith("sglang_deploy (phase verify): 'common' is a string, not a mapping; "), result
    result = _run(dict(_given("verify"), run=["changed_this_run"]))
    assert result["msg"].startswith("sglang_deploy (phase verify): 'run' is a list, not a mapping; "), result
    assert result["run"] == deploy.transaction.new_run() and calls == []


@pytest.mark.parametrize("phase", ["verify", "rescue"])
def test_an_error_inside_a_phase_is_its_defect_with_the_traceback(monkeypatch, phase):
    def broken(*_args):
        return {}["y"]

    _action_name, module, name = PHASE_FUNCTIONS[phase]
    monkeypatch.setattr(module, name, broken)
    result = _run(dict(_given(phase), run=CHANGED_RUN))
    assert result["msg"] == ("%s: a defect in this phase, not in the task's arguments: "
                             "KeyError: 'y'; run with -vvv for the traceback" % _where(phase))
    assert result["exception"].startswith("Traceback (most recent call last):")
    assert "in broken" in result["exception"] and result["exception"].rstrip().endswith("KeyError: 'y'")
    assert result["failed"] and result["changed"] is True and result["run"] == CHANGED_RUN


def test_a_phase_failure_is_its_sentence_and_an_ansible_error_is_ansibles(monkeypatch):
    def failing(*_args):
        raise deploy.transaction.PhaseFailed("SGLang did not answer /health_generate within 600 s")

    monkeypatch.setattr(deploy.transaction, "verify", failing)
    before = time.time()
    result = _run(dict(_given("verify"), run=CHANGED_RUN))
    span = result.pop("clock")  # every result carries its span on the controller's clock (the day-1 clock reads it)
    assert before <= span["start"] <= span["end"] <= time.time()
    assert result == {"phase": "verify", "failed": True, "changed": True, "run": CHANGED_RUN,
                      "msg": "SGLang did not answer /health_generate within 600 s"}

    def unreachable(*_args):
        raise AnsibleConnectionFailure("ssh: connect to host n0 port 22: Connection refused")

    monkeypatch.setattr(deploy.transaction, "verify", unreachable)
    with pytest.raises(AnsibleConnectionFailure):  # Ansible marks the host unreachable, as before
        _run(dict(_given("verify"), run=CHANGED_RUN))


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
