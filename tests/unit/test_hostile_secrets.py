"""The API key never reaches SGLang's start-up log line or argv: the rendered unit's own ExecStart (read as systemd
reads it: the runtime's launcher, written by library/sglang_runtime.py into a runtime whose python is this one)
runs the SGLang double, which logs server_args like the real 0.5.9 and 0.5.23 (api_key in clear), and its output
is searched for the key. The same double started as `python -m sglang.launch_server` prints the key: the check can
fail."""

import json
import os
import subprocess
import sys
import time

import pytest
from ansible.module_utils import sglang_runtime_launcher
from hostile_render import REPO, exec_start_argv, render_all

DOUBLE = os.path.join(REPO, "tests", "sglang_double")
sys.path.insert(0, DOUBLE)
from run_double import model_dir  # noqa: E402

KEY = "sk-'quoted\"-$HOME-%h-\\-key"


def _start(argv, tmp_path, release):
    gpu = tmp_path / "gpu.json"
    gpu.write_text(json.dumps({"version": release}))
    log = tmp_path / "server.log"
    with open(log, "w", encoding="utf-8") as handle:
        # the runtime's python is this interpreter by a link, without this virtualenv's packages: they are added
        path = os.pathsep.join([DOUBLE] + [p for p in sys.path if p.endswith("site-packages")])
        proc = subprocess.Popen(argv, env=dict(os.environ, SGLANG_DOUBLE_GPU=str(gpu), PYTHONPATH=path),
                                stdout=handle, stderr=subprocess.STDOUT, cwd=str(tmp_path))
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and proc.poll() is None and "server_args=" not in log.read_text():
            time.sleep(0.05)
        time.sleep(0.2)
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    return log.read_text()


def _unit_argv(tmp_path, key):
    """The rendered unit's ExecStart for a runtime whose bin/python is this machine's Python (its launcher written
    by the module, as for a complete runtime), a model folder and a --config file holding `key` (as sglang.yaml.j2
    renders it)."""
    runtime = tmp_path / "runtimes" / "0.5.23-aaaaaaaaaaaa"
    if not (runtime / "bin" / "python").exists():
        (runtime / "bin").mkdir(parents=True)
        os.symlink(sys.executable, runtime / "bin" / "python")
        sglang_runtime_launcher.ensure_launcher(str(runtime))
    files = render_all(sglang_api_key=key, sglang_model_path=model_dir(str(tmp_path)), sglang_port=free_port(),
                       _sglang_runtime_path=str(runtime))
    config = tmp_path / "sglang.yaml"
    config.write_text(files["config"])
    argv = exec_start_argv(files["unit"])
    assert argv[0] == str(runtime / "bin" / "sglang-serve")  # run as it is: its own #! names the runtime's python
    return [str(config) if arg == "/etc/sglang/sglang.yaml" else arg for arg in argv]


def free_port():
    from run_double import free_port as pick

    return pick()


@pytest.mark.parametrize("release", ["0.5.23", "0.5.9"])
def test_the_units_launcher_logs_server_args_without_the_key(tmp_path, release):
    argv = _unit_argv(tmp_path, KEY)
    output = _start(argv, tmp_path, release)
    line = next(line for line in output.splitlines() if "server_args=" in line)
    assert "<redacted>" in line and "api_key" in line, line
    assert "model_path" in line  # the line itself stays: only the secret's value is rewritten
    assert "sk-" not in output and "quoted" not in output, output
    assert not any("sk-" in arg for arg in argv)  # and the key is nowhere in the process's arguments


@pytest.mark.parametrize("release", ["0.5.23", "0.5.9"])
def test_without_the_launcher_the_double_prints_the_key(tmp_path, release):
    argv = _unit_argv(tmp_path, "sk-plain-key")
    plain = [sys.executable, "-m", "sglang.launch_server"] + argv[1:]
    assert "sk-plain-key" in _start(plain, tmp_path, release)
