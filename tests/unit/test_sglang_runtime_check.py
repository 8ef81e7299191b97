"""library/sglang_runtime_check.py over a runtime whose python is the test's own, with a stand-in torch and kernels on
its path: what it sees, and one sentence with the fix for each way a runtime can be wrong."""

import json
import os
import stat
import subprocess
import sys

import pytest

MODULE = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "library",
                      "sglang_runtime_check.py")


def runtime(tmp_path, torch="2.9.1", cuda="12.9", gpus=8, kernels=("sgl_kernel",), broken=(), no_torch=False,
            hang=False):
    """A runtime folder whose bin/python runs this interpreter with a stand-in torch and kernels on its path."""
    site = tmp_path / "site"
    site.mkdir()
    if not no_torch:
        (site / "torch").mkdir()
        (site / "torch" / "__init__.py").write_text(
            "__version__ = %r\nclass version:\n    cuda = %r\nclass cuda:\n    @staticmethod\n"
            "    def device_count():\n        return %d\n" % (torch, cuda, gpus))
    for name in kernels:
        (site / (name + ".py")).write_text("raise ImportError('undefined symbol: _ZN3c10')\n" if name in broken
                                           else "")
    (tmp_path / "rt" / "bin").mkdir(parents=True)
    python = tmp_path / "rt" / "bin" / "python"
    python.write_text("#!/bin/sh\n%sPYTHONPATH=%s exec %s \"$@\"\n" % ("sleep 30\n" if hang else "", site,
                                                                          sys.executable))
    python.chmod(python.stat().st_mode | stat.S_IXUSR)
    return str(tmp_path / "rt")


def run(tmp_path, **args):
    path = tmp_path / "args.json"
    path.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": dict({"gpus": 8, "torch_cuda": "12.9", "torch": "2.9.1",
                                                             "release": "0.5.23", "imports": ["sgl_kernel"]},
                                                            **args)}))
    proc = subprocess.run([sys.executable, MODULE, str(path)], capture_output=True, text=True, timeout=120)
    assert "Traceback" not in proc.stdout + proc.stderr
    return json.loads(proc.stdout)


def test_a_runtime_that_sees_what_the_plan_takes_passes(tmp_path):
    got = run(tmp_path, path=runtime(tmp_path))
    assert not got.get("failed") and got["gpus"] == 8 and got["cuda"] == "12.9"
    assert got["imports"] == {"sgl_kernel": "ok"} and got["changed"] is False


@pytest.mark.parametrize(("kind", "build", "args", "sentence"), [
    ("no torch", {"no_torch": True}, {}, "torch does not import in"),
    ("another CUDA", {"cuda": "13.0"}, {}, "is built for CUDA 13.0, but SGLang 0.5.23 expects a CUDA 12.9 build"),
    ("too few GPUs", {"gpus": 4}, {"nodes": 2}, "torch sees 4 GPU(s) but tp x pp needs 8 on this host (over 2 nodes)"),
    ("a kernel", {"broken": ("sgl_kernel",)}, {}, "Kernel import(s) failed: sgl_kernel: ImportError: undefined"),
    ("a hang", {"hang": True}, {"timeout": 2}, "did not answer within 2 s"),
])
def test_each_way_a_runtime_is_wrong_is_one_sentence_with_its_fix(tmp_path, kind, build, args, sentence):
    got = run(tmp_path, path=runtime(tmp_path, **build), **args)
    assert got["failed"] and sentence in got["msg"], (kind, got["msg"])


def test_a_runtime_without_a_python_is_named(tmp_path):
    got = run(tmp_path, path=str(tmp_path / "gone"))
    assert got["failed"] and "cannot run" in got["msg"]
