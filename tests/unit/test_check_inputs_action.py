"""The sglang_check_inputs action (action_plugins/sglang_check_inputs.py): its own options refused by name, a knob
that does not template refused by name, each knob templated once; the role's checks themselves are tested through
tasks/inputs.yml (tests/integration/test_check_phase_probe5.py, tests/unit/test_hostile_values.py)."""

import importlib.util
import json
import os
import subprocess
import sys

import pytest
from ansible.errors import AnsibleError

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_SPEC = importlib.util.spec_from_file_location("check_inputs_action",
                                               os.path.join(REPO, "action_plugins", "sglang_check_inputs.py"))
action = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(action)

PLAY = """
- name: The input check with {what}
  hosts: localhost
  connection: local
  gather_facts: false
  tasks:
    - name: The action
      sglang_check_inputs: {args}
"""


def playbook(path, *args):
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg"), ANSIBLE_NOCOLOR="1")
    result = subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), str(path), *args],
                            cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    return result.returncode, result.stdout + result.stderr


@pytest.mark.parametrize("args, said", [
    ({"role": ""}, "sglang_check_inputs: role is '', not a name"),
    ({"group": 3}, "sglang_check_inputs: group is 3, not a name"),
    ({"role": "sglang_routr"}, "sglang_check_inputs: role is 'sglang_routr', a role with no argument specs"),
])
def test_the_action_s_own_options_are_refused_by_name(args, said):
    refusals = action.option_refusals(dict({"role": "sglang", "group": "sglang_servers"}, **args),
                                      {"sglang": {}, "sglang_router": {}})
    assert len(refusals) == 1 and refusals[0].startswith(said), refusals


def test_good_options_pass():
    assert action.option_refusals({"role": "sglang", "group": "g"}, {"sglang": {}}) == []


def test_each_knob_is_templated_once_and_a_broken_one_is_named():
    calls = []

    def template(value):
        calls.append(value)
        if value == "{{ broken":
            raise AnsibleError("template error while templating string")
        return value.upper()
    knobs, broken = action.knobs_of(["a", "b", "c"], {"a": "x", "b": "{{ broken", "d": "y"}, template)
    assert knobs == {"a": "X", "c": None} and calls == ["x", "{{ broken"]
    assert broken == [("b", "template error while templating string")]


def test_an_option_the_action_does_not_take_is_refused_before_it_runs(tmp_path):
    path = tmp_path / "play.yml"
    path.write_text(PLAY.format(what="a misspelled option", args=json.dumps({"rol": "sglang"})))
    code, out = playbook(path)
    assert code != 0 and "Invalid options for sglang_check_inputs: rol" in out, out


def test_a_knob_that_does_not_template_is_refused_by_name_through_ansible(tmp_path):
    path = tmp_path / "play.yml"
    path.write_text(PLAY.format(what="a broken knob", args="{}"))
    code, out = playbook(path, "-e", json.dumps({"sglang_port": "{{ no_such_variable + 1 }}"}))
    assert code != 0, out
    assert "localhost: sglang_port does not template" in out and "Traceback" not in out, out


def test_a_value_the_check_cannot_read_is_a_sentence_not_a_crash(monkeypatch):
    from types import SimpleNamespace
    from unittest.mock import MagicMock

    real = action._check_phase()

    def broken_check(*_args):
        raise TypeError("'int' object is not iterable")

    monkeypatch.setattr(action, "_check_phase", lambda: SimpleNamespace(
        inputs=real.inputs, _ROLES=real._ROLES, plain=real.plain, check_host=broken_check))
    task = MagicMock(args={"role": "sglang", "group": "sglang_servers"}, async_val=0, check_mode=False)
    module = action.ActionModule(task, MagicMock(), MagicMock(), None, MagicMock(), None)
    module._templar = MagicMock(template=lambda value: value)
    result = module.run(task_vars={"inventory_hostname": "ct200", "hostvars": {}, "groups": {"all": ["ct200"]}})
    assert result["failed"] and result["msg"] == ("ct200: the sglang role's inputs could not be checked: TypeError: "
                                                  "'int' object is not iterable (run with -vvv for where)")
