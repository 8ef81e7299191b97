"""No traceback reaches the operator: every module runs its work inside module_utils' failures_as_sentences, which
turns an exception no code path expected into a failed result with one sentence (its traceback only when the
controller asks for one, from -vvv on)."""

import ast
import glob
import json
import os
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODULES = sorted(glob.glob(os.path.join(REPO, "library", "*.py")))


@pytest.mark.parametrize("path", MODULES, ids=os.path.basename)
def test_every_modules_main_is_guarded(path):
    tree = ast.parse(open(path, encoding="utf-8").read())
    action = os.path.join(REPO, "action_plugins", os.path.basename(path))
    runs = any(isinstance(node, ast.FunctionDef) and node.name == "main" for node in tree.body)
    if os.path.exists(action) and not runs:  # the documentation of an action, which runs on the controller
        assert not any(isinstance(node, ast.FunctionDef) for node in tree.body), "a doc-only module runs nothing"
        text = open(action, encoding="utf-8").read()
        if "(PhaseAction)" in text:  # a phase action: its base runs it (lib/sglang_state/phase_action.py)
            text = open(os.path.join(REPO, "lib", "sglang_state", "phase_action.py"), encoding="utf-8").read()
            assert "except transaction.PhaseFailed" in text and "except Exception" in text
            # an argument of another shape is refused by the phase's spec (tests/unit/test_phase_action_types.py)
            assert "args, problems = check(spec, own)" in text
            return
        assert "except (KeyError, TypeError, ValueError" in text  # an argument of another shape: a sentence
        return
    main = next(node for node in tree.body if isinstance(node, ast.FunctionDef) and node.name == "main")
    guards = [item.context_expr for node in ast.walk(main) if isinstance(node, ast.With) for item in node.items]
    guarded = [g for g in guards if isinstance(g, ast.Call) and getattr(g.func, "id", "") == "failures_as_sentences"]
    name = os.path.basename(path)[:-3]
    if name == "sglang_smoke_test":  # the proof keeps its own last line of defence (SmokeFailure, then Exception)
        handlers = [h for node in ast.walk(main) if isinstance(node, ast.Try) for h in node.handlers]
        assert any(getattr(h.type, "id", "") == "Exception" for h in handlers)
        return
    assert guarded and guarded[0].args[1].value == name, name
    # Everything after the AnsibleModule(...) statement is inside the guard.
    assert isinstance(main.body[-1], ast.With) and len(main.body) == 2, name


def test_an_unexpected_exception_becomes_one_sentence(tmp_path):
    module = tmp_path / "exploding.py"
    module.write_text(
        "from ansible.module_utils.basic import AnsibleModule\n"
        "from ansible.module_utils.sglang_errors import failures_as_sentences\n"
        "module = AnsibleModule(argument_spec={'n': {'type': 'int'}})\n"
        "with failures_as_sentences(module, 'exploding'):\n"
        "    module.exit_json(changed=False, value=1 // module.params['n'])\n")
    args = tmp_path / "args.json"
    args.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": {"n": 0}}))
    proc = subprocess.run([sys.executable, str(module), str(args)], capture_output=True, text=True, timeout=60)
    result = json.loads(proc.stdout)
    assert proc.returncode == 1 and result["failed"] and proc.stderr == ""
    assert result["msg"].startswith("exploding failed: ZeroDivisionError: integer division or modulo by zero.")
    assert "Traceback" not in proc.stdout and "run with -vvv for its traceback" in result["msg"]
    args.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": {"n": 1}}))
    proc = subprocess.run([sys.executable, str(module), str(args)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and json.loads(proc.stdout)["value"] == 1  # exit_json passes through untouched
