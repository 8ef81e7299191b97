import json
import os
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "tests", "sglang_double"))

from run_double import running_double  # noqa: E402

MODULE = os.path.join(REPO, "library", "sglang_smoke_test.py")
CT200 = ["--tp", "8", "--trust-remote-code", "--context-length", "200000"]


def run_module(tmp_path, **args):
    """Run the module as Ansible runs it on a host: python <module> <args file>; return (rc, result)."""
    path = tmp_path / "args.json"
    path.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": args}))
    proc = subprocess.run([sys.executable, MODULE, str(path)], capture_output=True, text=True, timeout=120)
    assert "Traceback" not in proc.stdout + proc.stderr, proc.stdout + proc.stderr
    return proc.returncode, json.loads(proc.stdout)


@pytest.fixture
def smoke(tmp_path):
    return lambda **args: run_module(tmp_path, **args)


@pytest.fixture
def double():
    return running_double
