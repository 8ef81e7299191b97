"""playbooks/monitoring.yml on the repository's inventory, connecting to nothing: the folder Prometheus reads (which
its promtool accepts) and the dashboard, from the inventory and the check phase's plan; a server without metrics is
named, with how to turn them on; a bad switch is one sentence."""

import json
import os
import subprocess
import sys

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from prometheus_server import promtool, require  # noqa: E402

REPO = os.path.dirname(os.path.dirname(HERE))
PLAYBOOK_BIN = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")


def run(*args):
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg"), ANSIBLE_NOCOLOR="1")
    # ansible_host is unreachable: any connection attempt would fail the run
    return subprocess.run([PLAYBOOK_BIN, "playbooks/monitoring.yml", "-e", "ansible_host=192.0.2.1", *args], cwd=REPO,
                          env=env, capture_output=True, text=True, timeout=300)


def test_the_inventory_s_server_with_its_plan_in_a_folder_promtool_accepts(tmp_path):
    require()
    result = run("-e", "sglang_monitoring_dir=%s" % tmp_path, "-e", "sglang_monitoring_scrape_interval_s=30")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 server(s) (ct200), 0 router(s)" in result.stdout
    assert json.loads((tmp_path / "sglang-servers.json").read_text()) == [{"targets": ["192.0.2.1:30000"], "labels": {
        "host": "ct200", "group": "kimi_k26_dflash", "model": "kimi-k2.6", "server": "ct200"}}]
    plan = {r["record"]: r["expr"] for r in yaml.safe_load((tmp_path / "sglang-rules.yml").read_text())["groups"][0]
            ["rules"]}
    # make plan's numbers for ct200 (tests/integration/test_plan_playbook.py): 200,000 -> 217,612 tokens, 8 running
    assert plan == {"sglang_plan:context_length": "vector(200000)", "sglang_plan:pool_tokens": "vector(217612)",
                    "sglang_plan:max_running_requests": "vector(8)"}
    assert yaml.safe_load((tmp_path / "prometheus.yml").read_text())["global"]["scrape_interval"] == "30s"
    code, out = promtool("check", "config", str(tmp_path / "prometheus.yml"))
    assert code == 0, out


def test_a_server_without_metrics_is_named_with_the_fix(tmp_path):
    result = run("-e", "sglang_monitoring_dir=%s" % tmp_path, "-e", "sglang_metrics=false")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "ct200: sglang_metrics is false" in result.stdout and "sglang_metrics: true" in result.stdout
    assert json.loads((tmp_path / "sglang-servers.json").read_text()) == []


def test_a_misspelt_switch_is_refused_before_anything_is_written(tmp_path):
    result = run("-e", "sglang_monitoring_dri=%s" % tmp_path)
    assert result.returncode != 0
    assert "sglang_monitoring_dri" in result.stdout and "sglang_monitoring_dir" in result.stdout, result.stdout
    assert "Traceback" not in result.stdout + result.stderr
    assert list(tmp_path.iterdir()) == []

