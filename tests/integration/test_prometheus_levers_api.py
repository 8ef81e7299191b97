"""playbooks/levers.yml against a real Prometheus (Debian's) that scrapes the SGLang double through the files
monitoring.yml's renderer writes for ct200: after a scripted load on ct200's 8 slots, the window read through
Prometheus' HTTP API names the concurrency lever, as the sampled window does."""

import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "sglang_double"))
from prometheus_server import api, require, running_prometheus  # noqa: E402
from run_double import running_double  # noqa: E402
from sglang_metrics import render  # noqa: E402
from test_prometheus_levers import CT200, GPU, Load, levers  # noqa: E402

PLAN = {"context_length": 200000, "pool_tokens": 217612, "max_running_requests": 8}


def test_levers_reads_the_window_from_prometheus_and_names_the_lever(tmp_path):
    require()
    with running_double(CT200 + ["--enable-metrics"], GPU) as (url, _log):
        port = int(url.rsplit(":", 1)[1])
        server = {"server": "ct200", "host": "ct200", "address": "127.0.0.1", "port": port,
                  "group": "kimi_k26_dflash", "model": "kimi-k2.6", "plan": PLAN}
        for name, text in render.files([server], [], interval_s=1).items():
            (tmp_path / name).write_text(text)
        with running_prometheus(str(tmp_path)) as prom:
            deadline = time.monotonic() + 20
            while not api(prom, "/api/v1/query", query='sglang:num_running_reqs{server="ct200"}')["result"]:
                assert time.monotonic() < deadline, "prometheus never scraped the double"
                time.sleep(0.2)
            with Load(url):
                time.sleep(3)  # scrapes of the full slots and the queue, before and while the playbook reads them
                result = levers(port, "-e", "sglang_levers_prometheus_url=%s" % prom, "-e",
                                "sglang_levers_window=8s", "-e", "sglang_levers_step_s=1")
    out = result.stdout
    assert result.returncode == 0, out + result.stderr
    assert "Sample the server's /metrics" in out and "skipping: [ct200]" in out  # Prometheus read, no sampling
    assert "ct200: the lever: concurrency" in out, out
    assert "ct200: instead: --max-running-requests 16 (sglang_max_running_requests: 16)" in out, out


def test_an_unreachable_prometheus_is_one_sentence(tmp_path):
    result = levers(1, "-e", "sglang_levers_prometheus_url=http://127.0.0.1:1", "-e", "sglang_levers_window=1m")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "ct200: Prometheus at http://127.0.0.1:1 cannot be read" in result.stdout, result.stdout
    assert "Traceback" not in result.stdout + result.stderr
