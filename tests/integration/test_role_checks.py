"""The sglang role refuses misspelled knobs and malformed settings before anything on a host changes."""

import json
import os
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PLAYBOOK_BIN = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")


def run(extra):
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg"), ANSIBLE_NOCOLOR="1")
    return subprocess.run([PLAYBOOK_BIN, "tests/integration/role_checks_localhost.yml", "-e", json.dumps(extra)],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=300)


def test_defaults_pass():
    result = run({})
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("extra, words", [
    ({"sglang_context_targt": 250000},
     ["unknown variable sglang_context_targt", "Did you mean sglang_context_target?"]),
    ({"sglang_calibration": {"pre_load_avail": 85.3, "post_load_avail_gib": 19.4}},
     ["sglang_calibration has keys post_load_avail_gib, pre_load_avail", "exactly"]),
    ({"sglang_speculative": {"algorithm": "DFLASH", "draft_path": "/x"}},
     ["sglang_speculative has unknown key(s) draft_path", "draft_model_path"]),
    ({"nvidia_driver_branch": "570"}, ["driver branch 580 or newer", "nvidia_driver_branch is 570"]),
    ({"sglang_kernel_sources": [{"repo": "https://example.invalid/k.git"}], "cuda_version": "12.9"},
     ["CUDA 13.0", "cuda_version is 12.9"]),
])
def test_refusals_name_the_variable(extra, words):
    result = run(extra)
    assert result.returncode != 0
    for word in words:
        assert word in result.stdout, result.stdout


def test_an_older_release_accepts_the_older_driver():
    result = run({"sglang_version": "0.5.9", "nvidia_driver_branch": "575"})
    assert result.returncode == 0, result.stdout + result.stderr
