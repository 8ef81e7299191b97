"""action_plugins/sglang_deploy.py's options: each phase takes the options it reads (PHASE_OPTIONS) and refuses any
other, and a missing required one, by name before anything runs; an error raised inside a phase whose options passed
is the phase's defect (its traceback kept for -vvv), not the caller's mistake. Every call the role makes passes only
what its phase takes, and library/sglang_deploy.py documents exactly the table."""

import glob
import importlib.util
import os
import re
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


action = _load("sglang_deploy_action", "action_plugins/sglang_deploy.py")
docs = _load("sglang_deploy_docs", "library/sglang_deploy.py")
# The phase functions the action dispatches to, by the module attribute it calls
PHASE_FUNCTIONS = {"install": (action.runtime_install, "install"), "render": (action.transaction, "render"),
                   "start": (action.transaction, "start"), "calibrate": (action.transaction, "calibrate"),
                   "verify": (action.transaction, "verify"), "restore": (action.transaction, "restore"),
                   "observe": (action.transaction_proof, "observe"), "decide": (action.transaction_proof, "decide"),
                   "prove": (action.transaction_proof, "prove"), "record": (action.transaction_proof, "record"),
                   "look": (action.transaction_rescue, "look"), "rescue": (action.transaction_rescue, "rescue")}
CHANGED_RUN = dict(action.transaction.new_run(), changed_this_run=True, run_backup="b1")


def _action(args):
    """The action in this process with a task that holds args; its connection reaches no host."""
    task = MagicMock(async_val=0, check_mode=False, diff=False, no_log=False, args=args)
    connection = MagicMock()
    connection._shell.tmpdir = None
    module = action.ActionModule(task, connection, MagicMock(), None, None, None)
    module._execute_module = MagicMock(side_effect=AssertionError("a module ran"))
    return module


def _run(args):
    return _action(args).run(task_vars={"inventory_hostname": "n0", "hostvars": {}})


@pytest.fixture
def calls(monkeypatch):
    """Every phase function replaced by one that notes its call and returns a phase's result."""
    noted = []

    def fake(phase):
        def run_phase(*args):
            noted.append((phase, args))
            return {"phase": phase, "changed": False}
        return run_phase

    for phase, (module, name) in PHASE_FUNCTIONS.items():
        monkeypatch.setattr(module, name, fake(phase))
    return noted


def _given(phase, leave_out=()):
    """Every required option of the phase (a placeholder value), less leave_out."""
    return dict({name: {} for name, required in action.PHASE_OPTIONS[phase].items()
                 if required and name not in leave_out}, phase=phase)


@pytest.mark.parametrize("phase, typo", [("start", "recrod"), ("decide", "reprove_after_day"),
                                         ("install", "kernel_wheel"), ("look", "api_keys")])
def test_an_unknown_option_is_refused_by_name_and_nothing_runs(calls, phase, typo):
    result = _run(dict(_given(phase), run=CHANGED_RUN, **{typo: 1}) if phase != "install"
                  else dict(_given(phase), **{typo: 1}))
    takes = ", ".join(sorted(action.PHASE_OPTIONS[phase]))
    assert result["msg"] == "sglang_deploy (phase %s): unknown option '%s'; phase %s takes: %s" % (
        phase, typo, phase, takes)
    assert result["failed"] and result["changed"] is False and calls == []
    # the run the phase before left stays in the result: the role's rescue reads it
    assert result["run"]["changed_this_run"] is (phase != "install"), result["run"]


def test_the_start_phase_lists_what_it_takes():
    result = _run(dict(_given("start"), recrod={}))
    assert result["msg"] == (
        "sglang_deploy (phase start): unknown option 'recrod'; phase start takes: common, context_target, etc_dir, "
        "etc_group, files, files_changed, host, multinode, nodes, order, rank0, record, run, server, service, "
        "state_manifest, store, wait")


def test_an_unknown_key_in_common_and_common_where_none_is_taken_are_refused(calls):
    render = dict(_given("render"), common={"host": "n0", "wiat": {}})
    assert _run(render)["msg"].startswith("sglang_deploy (phase render): unknown option 'wiat' (in common); ")
    decide = dict(_given("decide"), common={"host": "n0"})
    assert _run(decide)["msg"].startswith("sglang_deploy (phase decide): unknown option 'common'; phase decide "
                                          "takes: asked, context_target, record, ")
    # a phase that begins a run is given none
    assert _run(dict(_given("render"), run={}))["msg"].startswith("sglang_deploy (phase render): unknown option "
                                                                  "'run'; ")
    assert calls == []


def test_a_missing_required_option_is_named_whether_own_or_from_common(calls):
    common = {name: {} for name in action._DEPLOY_COMMON if name != "wait"}
    result = _run({"phase": "start", "common": common, "files_changed": False, "run": CHANGED_RUN})
    assert result["msg"] == ("sglang_deploy (phase start): missing required option 'wait'; phase start requires: "
                             "files, files_changed, host, multinode, service, state_manifest, store, wait")
    assert result["failed"] and result["changed"] is False and result["run"]["run_backup"] == "b1"
    result = _run(_given("prove", leave_out=("limit", "smoke")))
    assert result["msg"].startswith("sglang_deploy (phase prove): missing required options 'limit', 'smoke'; ")
    assert calls == []


def test_common_merges_under_the_tasks_own_and_each_phase_gets_only_its_arguments(calls):
    common = {name: "common" for name in action._DEPLOY_COMMON}
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
    assert result["msg"].startswith("sglang_deploy (phase calibrate): an argument is of the wrong kind"), result
    assert result["msg"].endswith("KeyError: 'calibrations'")


def test_a_common_or_run_that_is_not_a_mapping_is_said(calls):
    result = _run(dict(_given("verify"), common="host=n0"))
    assert result["failed"] and calls == []
    assert result["msg"].startswith("sglang_deploy (phase verify): an argument is of the wrong kind (common and run "
                                    "are mappings"), result


@pytest.mark.parametrize("phase", ["verify", "rescue"])
def test_an_error_inside_a_phase_is_its_defect_with_the_traceback(monkeypatch, phase):
    def broken(*_args):
        return {}["y"]

    module, name = PHASE_FUNCTIONS[phase]
    monkeypatch.setattr(module, name, broken)
    result = _run(dict(_given(phase), run=CHANGED_RUN))
    assert result["msg"] == ("sglang_deploy (phase %s): a defect in this phase, not in the task's arguments: "
                             "KeyError: 'y'; run with -vvv for the traceback" % phase)
    assert result["exception"].startswith("Traceback (most recent call last):")
    assert "in broken" in result["exception"] and result["exception"].rstrip().endswith("KeyError: 'y'")
    assert result["failed"] and result["changed"] is True and result["run"] == CHANGED_RUN


def test_a_phase_failure_is_its_sentence_and_an_ansible_error_is_ansibles(monkeypatch):
    def failing(*_args):
        raise action.transaction.PhaseFailed("SGLang did not answer /health_generate within 600 s")

    monkeypatch.setattr(action.transaction, "verify", failing)
    result = _run(dict(_given("verify"), run=CHANGED_RUN))
    assert result == {"phase": "verify", "failed": True, "changed": True, "run": CHANGED_RUN,
                      "msg": "SGLang did not answer /health_generate within 600 s"}

    def unreachable(*_args):
        raise AnsibleConnectionFailure("ssh: connect to host n0 port 22: Connection refused")

    monkeypatch.setattr(action.transaction, "verify", unreachable)
    with pytest.raises(AnsibleConnectionFailure):  # Ansible marks the host unreachable, as before
        _run(dict(_given("verify"), run=CHANGED_RUN))


# The role's calls: every YAML task whose module is sglang_deploy
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
                if module.split(".")[-1] == "sglang_deploy" and isinstance(task[module], dict):
                    sites.append(("%s: %s" % (os.path.relpath(path, REPO), task.get("name")), task[module]))
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


def test_every_call_the_role_makes_passes_what_its_phase_takes():
    sites, role_vars = _call_sites(), _role_vars()
    # every phase is called, and from where the role calls it: a walk that found none would pass
    assert {args.get("phase") for _where, args in sites} == set(action.PHASE_OPTIONS), sites
    for where, args in sites:
        own = {name: value for name, value in args.items() if name != "phase"}
        common = {name: None for name in _common_keys(own["common"], role_vars)} if "common" in own else {}
        assert action.refused(args["phase"], own, common) is None, where


def test_the_call_sites_check_would_refuse_a_misspelt_option():
    where, args = next(site for site in _call_sites() if site[1].get("phase") == "start")
    own = dict({name: value for name, value in args.items() if name != "phase"}, recrod=1)
    common = {name: None for name in _common_keys(own["common"], _role_vars())}
    assert "unknown option 'recrod'" in action.refused("start", own, common), where


def test_the_documentation_holds_exactly_the_options_the_phases_take():
    documented = yaml.safe_load(docs.DOCUMENTATION)
    taken = set().union(*(set(options) for options in action.PHASE_OPTIONS.values()))
    assert set(documented["options"]) - {"phase"} == taken
    assert documented["options"]["phase"]["choices"] == list(action.PHASE_OPTIONS) == list(action._PHASES)
    assert any("refuses any other option" in line for line in documented["description"])
