"""What lib/sglang_metrics renders, loaded in a real Prometheus (Debian's): promtool accepts the configuration and
the rules; the server scrapes the SGLang double's /metrics through the file_sd targets, and after a scripted load
(short requests at the slot limit, then long ones that fill the pool, a target that is down, a plan whose target the
served context misses) every alert's expression and every panel's returns series through the HTTP API."""

import json
import os
import sys
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import pytest
from sglang_metrics import catalog, render

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "sglang_double"))
sys.path.insert(0, HERE)
from prometheus_server import api, free_port, promtool, require, running_prometheus  # noqa: E402
from run_double import running_double  # noqa: E402

# A pool of 1,000 tokens and 2 slots; decode 0.1 s a token so that the 1 s scrapes see each phase.
FLAGS = ["--context-length", "1000", "--max-total-tokens", "1000", "--max-running-requests", "2"]
GPU = {"decode_seconds_per_token": 0.1, "prefill_tokens_per_s": 2000.0, "load_seconds": 0.0, "graph_seconds": 0.0}
# The plan the double is held to: a 2,000-token target it does not serve (SGLangServedUnderTarget), 2 running
PLAN = {"context_length": 2000, "pool_tokens": 1000, "max_running_requests": 2}
LONG = "The quick brown fox jumps over the lazy dog. " * 45 + "\nWhat animal?"  # ~450 tokens: two fill 94%


def _generate(url, text, tokens):
    payload = {"text": text, "sampling_params": {"max_new_tokens": tokens, "ignore_eos": True}}
    request = urllib.request.Request(url + "/generate", json.dumps(payload).encode(),
                                     {"content-type": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.loads(response.read())


def _load(url, count, text, tokens):
    with ThreadPoolExecutor(count) as pool:
        list(pool.map(lambda _: _generate(url, text, tokens), range(count)))


def _targets(double_port, dead_port):
    server = {"server": "double", "host": "double-host", "address": "127.0.0.1", "port": double_port,
              "group": "llama", "model": "llama-3.1-8b", "plan": PLAN}
    gone = dict(server, server="gone", host="gone-host", port=dead_port, plan=None)
    router = {"server": "router-1", "host": "router-1", "address": "127.0.0.1", "port": dead_port,
              "group": "sglang_routers", "model": "", "plan": None}
    return [server, gone], [router]


def _write(folder, servers, routers):
    for name, text in render.files(servers, routers, interval_s=1).items():
        with open(os.path.join(folder, name), "w", encoding="utf-8") as handle:
            handle.write(text)


def test_promtool_accepts_what_is_rendered(tmp_path):
    require()
    servers, routers = _targets(30000, 30001)
    _write(str(tmp_path), servers, routers)
    code, out = promtool("check", "config", str(tmp_path / render.CONFIG_FILE))
    assert code == 0 and "SUCCESS" in out, out
    code, out = promtool("check", "rules", str(tmp_path / render.RULES_FILE))
    assert code == 0 and "%d rules found" % (len(catalog.ALERTS) + 3) in out, out


def test_promtool_refuses_a_broken_rule(tmp_path):
    """The check above can fail: an alert whose expression does not parse is refused by name."""
    require()
    path = tmp_path / "broken.yml"
    path.write_text("groups:\n- name: x\n  rules:\n  - alert: Broken\n    expr: sglang:token_usage >\n")
    code, out = promtool("check", "rules", str(path))
    assert code != 0 and ("Broken" in out or "parse error" in out), out


def test_a_real_prometheus_scrapes_the_double_and_every_alert_and_panel_returns_series(tmp_path):
    require()
    with running_double(FLAGS + ["--enable-metrics"], GPU, preset="llama-3.1-8b") as (double_url, _log):
        servers, routers = _targets(int(double_url.rsplit(":", 1)[1]), free_port())
        _write(str(tmp_path), servers, routers)
        with running_prometheus(str(tmp_path)) as prom:
            start = time.time()
            _wait_for_scrape(prom)
            # phase 1: short requests, 6 at once on 2 slots: the slots are the limit, the pool has room
            _load(double_url, 6, "The secret number is 4821937.\nWhat is the number?", 20)
            # phase 2: long requests, 4 at once: two fill 94% of the pool and the others queue
            _load(double_url, 4, LONG, 25)
            time.sleep(2.5)  # the last scrape and rule evaluation after the load
            missing = []
            for what, expr in _expressions():
                found = api(prom, "/api/v1/query_range", query=expr, start=start, end=time.time(), step=1)
                if not [s for s in found["result"] if s["values"]]:
                    missing.append("%s: %s" % (what, expr))
            assert not missing, "no series for:\n" + "\n".join(missing)
            # the target labels reach the series, and the dead targets are down, not missing
            up = {(s["metric"]["job"], s["metric"]["server"]): s["value"][1]
                  for s in api(prom, "/api/v1/query", query="up")["result"]}
            assert up == {("sglang", "double"): "1", ("sglang", "gone"): "0", ("sglang_router", "router-1"): "0"}, up
            labels = api(prom, "/api/v1/query", query="sglang:max_total_num_tokens")["result"][0]["metric"]
            assert {k: labels[k] for k in ("host", "group", "model", "server")} == {
                "host": "double-host", "group": "llama", "model": "llama-3.1-8b", "server": "double"}, labels


def _wait_for_scrape(prom):
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if api(prom, "/api/v1/query", query="sglang:context_len")["result"]:
            return
        time.sleep(0.2)
    pytest.fail("prometheus never scraped the double")


def _expressions():
    yield from (("alert %s" % a["alert"], a["expr"]) for a in catalog.ALERTS)
    for panel in catalog.PANELS:
        yield from (("panel %r" % panel["title"], t["expr"]) for t in panel["targets"])


