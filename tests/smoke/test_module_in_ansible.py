"""The module as Ansible sees it: documentation, and a run in check mode."""

import os
import subprocess
import sys

from conftest import CT200, REPO

BIN = os.path.dirname(sys.executable)
ENV = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg"), ANSIBLE_NOCOLOR="1")


def test_ansible_doc_renders_the_module():
    proc = subprocess.run([os.path.join(BIN, "ansible-doc"), "sglang_smoke_test"], cwd=REPO, env=ENV,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    for word in ("min_pool_tokens", "context_target", "prompt_tokens", "needle", "RETURN VALUES", "EXAMPLES",
                 "pool_tokens", "ttft_s"):
        assert word in proc.stdout


def test_runs_in_check_mode_through_a_playbook(double):
    with double(CT200 + ["--mem-fraction-static", "0.94"]) as (url, _):
        proc = subprocess.run([os.path.join(BIN, "ansible-playbook"), "--check", "tests/smoke/smoke_localhost.yml",
                               "-e", "double_url=" + url], cwd=REPO, env=ENV, capture_output=True, text=True,
                              timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "failed=0" in proc.stdout
