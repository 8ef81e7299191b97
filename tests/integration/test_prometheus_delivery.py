"""playbooks/monitoring.yml with sglang_monitoring_host: the folder copied to the Prometheus host it names (here the
controller itself, by a local connection) and checked there by that host's promtool."""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from prometheus_server import require  # noqa: E402
from test_prometheus_playbook import run  # noqa: E402


def test_the_folder_is_delivered_to_the_prometheus_host_named_and_checked_there(tmp_path):
    require()
    remote = tmp_path / "etc-prometheus-sglang"
    result = run("-e", "sglang_monitoring_dir=%s" % (tmp_path / "local"), "-e", "sglang_monitoring_host=localhost",
                 "-e", "sglang_monitoring_remote_dir=%s" % remote)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "TASK [Check the configuration and its rules with the host's promtool]" in result.stdout
    assert sorted(p.name for p in remote.iterdir()) == sorted(p.name for p in (tmp_path / "local").iterdir())
    assert (remote / "sglang-rules.yml").read_text() == (tmp_path / "local" / "sglang-rules.yml").read_text()
