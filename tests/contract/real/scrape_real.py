"""A real Prometheus scraping the LIVE real SGLang server of serve_real.py through the rendered targets (issue 49):
every alert and panel expression of lib/sglang_metrics/catalog.py queried through Prometheus' HTTP API over the
window of the scrape, the number of series each returned recorded with the Prometheus version.

The traffic makes each alert's situation happen on the real server, so that each alert expression returns series for
a real reason, not because its threshold was bent:
- four short prompts at once that each decode long: every request slot (--max-running-requests 4) busy while the
  pool is mostly free (SGLangRunningAtLimitWithPoolRoom);
- three prompts of 1,920 tokens at once: one fills the 2,052-token pool past 90% while the other two queue
  (SGLangPoolFullWhileQueueing);
- the same server scraped a second time as target `real-under-plan`, whose plan asks a 4,096-token context it does
  not serve (SGLangServedUnderTarget fires there, and must stay quiet for target `real`, whose plan it serves);
- the server stopped at the end, scraped on until `up` reads 0 (SGLangServerDown).
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
sys.path.insert(0, os.path.join(REPO, "lib"))
sys.path.insert(0, os.path.join(REPO, "tests", "integration"))

from prometheus_server import PROMETHEUS, api, running_prometheus  # noqa: E402
from sglang_metrics import catalog, render  # noqa: E402

UNDER_PLAN_CONTEXT = 4096  # what target real-under-plan's plan asks: above the 2,048 the server serves
WAIT_S = 30  # the bound on each wait for Prometheus (a scrape, a rule evaluation, `up` at 0)
LONG_PROMPT = 1920  # tokens: with its 64 new ones one request holds over 90% of the 2,052-token pool


def require():
    """Fail before the boot's minutes when Debian's prometheus is missing (make test installs it first)."""
    if not shutil.which(PROMETHEUS):
        raise SystemExit("%s missing: serve_real.py scrapes the real server with a real Prometheus (issue 49); run "
                         "tests/integration/install_prometheus.sh as root (apt-get install -y "
                         "--no-install-recommends prometheus) or set PROMETHEUS to its binary" % PROMETHEUS)


def version():
    done = subprocess.run([PROMETHEUS, "--version"], capture_output=True, text=True, timeout=30, check=False)
    return (done.stdout + done.stderr).splitlines()[0].strip()


def targets(port, context, pool, running):
    """Two file_sd entries for the one live server: `real` with the plan it serves, `real-under-plan` with a plan
    above it (the served-under-target alert's situation)."""
    base = {"host": "real-sglang", "address": "127.0.0.1", "port": port, "group": "sglang_servers",
            "model": "tiny-llama"}
    return [dict(base, server="real", plan={"context_length": context, "pool_tokens": pool,
                                            "max_running_requests": running}),
            dict(base, server="real-under-plan", plan={"context_length": UNDER_PLAN_CONTEXT, "pool_tokens": pool,
                                                       "max_running_requests": running})]


def _generate(port, key, ids, new_tokens):
    body = {"input_ids": ids, "sampling_params": {"max_new_tokens": new_tokens, "temperature": 0,
                                                   "ignore_eos": True}}
    request = urllib.request.Request("http://127.0.0.1:%d/generate" % port, data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json", "Authorization": "Bearer " + key})
    with urllib.request.urlopen(request, timeout=600) as answer:
        return json.loads(answer.read())["meta_info"]["completion_tokens"]


def _at_once(port, key, prompts, new_tokens):
    """Send the prompts (token id lists) at once; the completion tokens of each; an error fails the recording."""
    done, errors = [], []

    def one(ids):
        try:
            done.append(_generate(port, key, ids, new_tokens))
        except Exception as error:  # reported below with the rest
            errors.append(repr(error))

    threads = [threading.Thread(target=one, args=(ids,)) for ids in prompts]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise SystemExit("the real server refused the scrape's traffic: %s" % errors)
    return sorted(done)


def _prompt(number, length):
    """Token ids the tiny model knows (10..89), a different first token per prompt: no shared cached prefix."""
    return [10 + (number * 7 + i * 13) % 80 for i in range(length)]


def traffic(port, key):
    """The two loads, as {what: completion tokens per request}."""
    return {
        "four_short_at_once": _at_once(port, key, [_prompt(n, 16) for n in range(4)], 120),
        "three_long_at_once": _at_once(port, key, [_prompt(n, LONG_PROMPT) for n in range(4, 7)], 64),
    }


def _until(what, check):
    deadline = time.monotonic() + WAIT_S
    while not check():
        if time.monotonic() > deadline:
            raise SystemExit("prometheus: %s not seen in %d s" % (what, WAIT_S))
        time.sleep(0.5)


def _up(prom, value):
    found = api(prom, "/api/v1/query", query='up{job="sglang"} == %d' % value)["result"]
    return {s["metric"]["server"] for s in found} == {"real", "real-under-plan"}


def _range(prom, expr, start, end):
    """The series an expression returned at any 1 s step of the window (what a panel draws, when an alert fired)."""
    found = api(prom, "/api/v1/query_range", query=expr, start="%.3f" % start, end="%.3f" % end, step="1")["result"]
    return {"expr": expr, "series": len(found), "servers": sorted({s["metric"].get("server", "") for s in found})}


def live_types(port):
    """The `# TYPE sglang:...` lines of the live /metrics, after the traffic."""
    with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=60) as answer:
        body = answer.read().decode("utf-8", "replace")
    return [line for line in body.splitlines() if line.startswith("# TYPE sglang:")]


def scrape(port, key, context, pool, running, stop_server):
    """Scrape the live server while the traffic runs, stop it (stop_server()), then query every expression."""
    with tempfile.TemporaryDirectory(prefix="prometheus-real-") as folder:
        for name, text in render.files(targets(port, context, pool, running), [], interval_s=1).items():
            with open(os.path.join(folder, name), "w", encoding="utf-8") as handle:
                handle.write(text)
        with running_prometheus(folder) as prom:
            start = time.time()
            _until("both targets up", lambda: _up(prom, 1))
            sent = traffic(port, key)
            time.sleep(2.5)  # the last gauges scraped
            types = live_types(port)
            stop_server()
            _until("both targets down (up == 0)", lambda: _up(prom, 0))
            time.sleep(2.5)  # a rule evaluation after the last scrape
            end = time.time()
            alerts = {a["alert"]: _range(prom, a["expr"], start, end) for a in catalog.ALERTS}
            panels = {t["expr"]: _range(prom, t["expr"], start, end) for p in catalog.PANELS for t in p["targets"]}
    return {"version": version(), "interval_s": 1, "window_s": round(end - start, 1), "traffic": sent,
            "targets": {"real": context, "real-under-plan": UNDER_PLAN_CONTEXT},
            "alerts": alerts, "panels": panels, "live_types": types}
