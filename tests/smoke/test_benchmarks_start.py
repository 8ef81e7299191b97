"""The benchmarks in tests/benchmarks are run by hand (`.venv/bin/python tests/benchmarks/<name>.py`), outside pytest,
so nothing else notices when one no longer starts: bench_prompt_sizing.py failed on its first import (module_utils
not on the path) and then on a parameter the module had gained (decode_tokens). Each is imported here in a fresh
interpreter with none of the tests' path settings, and the smoke module's benchmark passes every parameter the
module declares."""

import ast
import json
import os
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BENCHMARKS = os.path.join(REPO, "tests", "benchmarks")
IMPORT = ("import importlib.util, sys; spec = importlib.util.spec_from_file_location('bench', sys.argv[1]); "
          "module = importlib.util.module_from_spec(spec); spec.loader.exec_module(module); print('imported')")


@pytest.mark.parametrize("name", sorted(n for n in os.listdir(BENCHMARKS) if n.startswith("bench_")
                                        and n.endswith(".py")))
def test_each_benchmark_imports_on_its_own(name):
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "ANSIBLE_CONFIG")}
    proc = subprocess.run([sys.executable, "-c", IMPORT, os.path.join(BENCHMARKS, name)], capture_output=True,
                          text=True, timeout=120, cwd="/", env=env)
    assert proc.returncode == 0 and proc.stdout.strip() == "imported", proc.stdout + proc.stderr


def _module_parameters():
    """The names in library/sglang_smoke_test.py main()'s AnsibleModule(argument_spec={...}), read from its source."""
    with open(os.path.join(REPO, "library", "sglang_smoke_test.py"), encoding="utf-8") as handle:
        tree = ast.parse(handle.read())
    for node in ast.walk(tree):
        if isinstance(node, ast.keyword) and node.arg == "argument_spec" and isinstance(node.value, ast.Dict):
            return {key.value for key in node.value.keys}
    raise AssertionError("no argument_spec in sglang_smoke_test.py")


def test_the_prompt_sizing_benchmark_passes_every_parameter_the_module_declares():
    # in its own interpreter: the benchmark puts the double's `sglang` package on its path, which this one must not
    code = IMPORT.replace("print('imported')", "import json; print(json.dumps(sorted(module.PARAMS)))")
    proc = subprocess.run([sys.executable, "-c", code, os.path.join(BENCHMARKS, "bench_prompt_sizing.py")],
                          capture_output=True, text=True, timeout=120, cwd="/")
    assert proc.returncode == 0, proc.stderr
    assert set(json.loads(proc.stdout)) == _module_parameters()
