"""A kernel source's build PATH (module_utils/sglang_runtime_build_path.py), written once: uv's build in the runtime
module (state=install with cuda_home) and pip's build in the runtime install (lib/sglang_state/runtime_install.py,
which loads the file by its path) give the compiler the same PATH, CUDA's bin/ first."""

import os

import pytest
from ansible.module_utils import sglang_runtime_build
from ansible.module_utils.sglang_runtime_build_path import SYSTEM_PATH, kernel_build_path
from ansible.module_utils.sglang_runtime_refusal import RuntimeError_
from sglang_state import runtime_install
from test_runtime_install import ARGS, FakeHost

CUDA = "/usr/local/cuda-12.9"


def test_cudas_bin_comes_first_then_the_runtimes_then_the_systems():
    assert kernel_build_path(CUDA, "/opt/r/0.5.23-aaaaaaaaaaaa") == (
        "/usr/local/cuda-12.9/bin:/opt/r/0.5.23-aaaaaaaaaaaa/bin:" + SYSTEM_PATH)
    assert SYSTEM_PATH.split(":")[-1] == "/bin"


def test_the_runtime_install_uses_the_module_utils_definition():
    assert runtime_install.kernel_build_path(CUDA, "/r") == kernel_build_path(CUDA, "/r")


class _Module:
    check_mode = False

    def get_bin_path(self, name, required=False):
        return "/usr/bin/" + name


@pytest.fixture
def uv_install(tmp_path, monkeypatch):
    """run_install with the builder, pip's configuration, python and the bytecode stood in for: the uv commands it
    would run, with their environment, are recorded instead of run."""
    runtimes = tmp_path / "runtimes"
    runtime = runtimes / "0.5.23-aaaaaaaaaaaa"
    runtime.mkdir(parents=True)
    (runtime / "pyvenv.cfg").write_text("home = /usr/bin\n")
    ran = []

    def fake_run(argv, **kwargs):
        ran.append((argv, kwargs))
        return type("Proc", (), {"returncode": 0, "stdout": "", "stderr": ""})()

    monkeypatch.setattr(sglang_runtime_build, "builder_complete", lambda folder, version: True)
    monkeypatch.setattr(sglang_runtime_build, "pip_options", lambda folder: {})
    monkeypatch.setattr(sglang_runtime_build, "python_identity", lambda module, python: {"path": "/usr/bin/python3"})
    monkeypatch.setattr(sglang_runtime_build, "compile_bytecode", lambda runtime, others: {"linked": 0, "compiled": 0})
    monkeypatch.setattr(sglang_runtime_build.subprocess, "run", fake_run)

    def install(**args):
        p = dict(dir=str(runtimes), path=str(runtime), uv_version="0.13.8", steps=[["csrc"]], chdir=str(tmp_path),
                 no_build_isolation=True, cuda_home=None, python="python3")
        p.update(args)
        return sglang_runtime_build.run_install(_Module(), p), ran

    return str(runtime), install


def test_uv_builds_a_kernel_source_with_that_path(uv_install):
    runtime, install = uv_install
    result, ran = install(cuda_home=CUDA)
    assert result["changed"] and [argv[1:3] for argv, _kwargs in ran] == [["pip", "install"]]
    env = ran[0][1]["env"]
    assert env["PATH"] == kernel_build_path(CUDA, runtime) and env["CUDA_HOME"] == CUDA


def test_without_cuda_home_uv_keeps_the_hosts_path(uv_install, monkeypatch):
    monkeypatch.setenv("PATH", "/host/bin")
    _runtime, install = uv_install
    _result, ran = install(cuda_home=None, no_build_isolation=False)
    env = ran[0][1]["env"]
    assert env["PATH"] == "/host/bin" and "CUDA_HOME" not in env


def test_a_step_that_reads_as_an_option_is_refused_before_uv_runs(uv_install):
    _runtime, install = uv_install
    with pytest.raises(RuntimeError_, match="uv would read it as an option"):
        install(steps=[["--index-url=https://elsewhere"]], cuda_home=CUDA)


def test_pip_builds_a_kernel_source_with_the_same_path():
    source = {"repo": "https://example.invalid/ddtree.git", "ref": "v0.3.1", "name": "ddtree", "version": "0.3.1",
              "subdir": "csrc"}
    host = FakeHost("build")
    args = dict(ARGS, kernel_wheels=[], kernel_sources=[source], uv_version="",
                cuda_home=CUDA)
    runtime_install.install(host, args)
    (built,) = [a for name, _state, a in host.args if name == "ansible.builtin.command" and "env" in a["argv"][:1]]
    path = os.path.join(ARGS["dir"], "0.5.23-0123456789ab")
    assert "PATH=" + kernel_build_path(CUDA, path) in built["argv"] and "CUDA_HOME=" + CUDA in built["argv"]
