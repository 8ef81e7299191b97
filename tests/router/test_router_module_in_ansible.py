"""sglang_router_workers as Ansible sees it: its documentation, and a playbook run against the real router."""

import os
import subprocess
import sys

from router_helpers import REPO

BIN = os.path.dirname(sys.executable)
ENV = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg"), ANSIBLE_NOCOLOR="1")


def test_ansible_doc_renders_the_module():
    proc = subprocess.run([os.path.join(BIN, "ansible-doc"), "-M", "library", "sglang_router_workers"], cwd=REPO,
                          env=ENV, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    for word in ("router_url", "worker_url", "admin_api_key_file", "worker_api_key", "RETURN VALUES", "EXAMPLES",
                 "urls", "DELETE /workers/{worker_id}"):
        assert word in proc.stdout, word


def test_a_playbook_takes_a_worker_out_and_puts_it_back(router, upstreams, tmp_path):
    a, b = upstreams(2, key="wk-1")
    admin_file = tmp_path / "admin-api-key"
    admin_file.write_text("ak-2\n")
    with router([a.url, b.url], api_key="wk-1", admin_key="ak-2") as (url, _, _):
        proc = subprocess.run([os.path.join(BIN, "ansible-playbook"), "tests/router/workers_localhost.yml",
                               "-e", "router_url=%s worker_url=%s admin_key_file=%s worker_key=wk-1"
                               % (url, b.url, admin_file)],
                              cwd=REPO, env=ENV, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "changed=2" in proc.stdout and "failed=0" in proc.stdout
    assert "ak-2" not in proc.stdout
