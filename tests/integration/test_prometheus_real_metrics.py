"""The real SGLang 0.5.23's /metrics, as a real server served it (tests/fixtures/sglang_real/server-0.5.23, recorded by
tests/contract/real/serve_real.py on the CPU engine), scraped by a real Prometheus through the rendered targets: every
catalogued name the recording holds is a series there with the target labels, every alert and panel expression is one
Prometheus evaluates against those series, and the served context and pool equal the recording's."""

import contextlib
import json
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from sglang_metrics import catalog, render

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from prometheus_server import api, require, running_prometheus  # noqa: E402

REPO = os.path.dirname(os.path.dirname(HERE))
with open(os.path.join(REPO, "tests", "fixtures", "sglang_real", "server-0.5.23", "answers.json"),
          encoding="utf-8") as _h:
    RECORDED = json.load(_h)
BODY = RECORDED["answers"]["metrics"]["body"].replace("@WORK@", "/work").encode()


@contextlib.contextmanager
def serving_the_recording():
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):  # the name http.server calls
            self.send_response(200 if self.path == "/metrics" else 404)
            self.send_header("content-type", "text/plain; version=0.0.4; charset=utf-8")
            self.end_headers()
            self.wfile.write(BODY if self.path == "/metrics" else b"")

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


def test_a_real_server_s_metrics_scraped_through_the_rendered_targets(tmp_path):
    require()
    plan = {"context_length": RECORDED["context"], "pool_tokens": RECORDED["pool"], "max_running_requests": 4}
    with serving_the_recording() as port:
        target = {"server": "real", "host": "real-sglang", "address": "127.0.0.1", "port": port,
                  "group": "sglang_servers", "model": "tiny-llama", "plan": plan}
        for name, text in render.files([target], [], interval_s=1).items():
            (tmp_path / name).write_text(text)
        with running_prometheus(str(tmp_path)) as prom:
            deadline = time.monotonic() + 20
            while not api(prom, "/api/v1/query", query="sglang:context_len")["result"]:
                assert time.monotonic() < deadline, "prometheus never scraped the recording"
                time.sleep(0.2)
            time.sleep(1.5)  # a rule evaluation after the scrape
            recorded = {n for n in catalog.SGLANG_METRICS if ("# TYPE %s " % n).encode() in BODY}
            # per-token latency is observed only for answers of two tokens or more: the recording's were shorter
            assert recorded == set(catalog.SGLANG_METRICS) - {"sglang:request_time_per_output_token_seconds"}
            for name in sorted(recorded):
                query = name + "_count" if catalog.SGLANG_METRICS[name] == "histogram" else name
                found = api(prom, "/api/v1/query", query=query)["result"]
                assert found, name
                assert found[0]["metric"]["server"] == "real" and found[0]["metric"]["host"] == "real-sglang", found
            for expr in [a["expr"] for a in catalog.ALERTS] + [t["expr"] for p in catalog.PANELS
                                                             for t in p["targets"]]:
                api(prom, "/api/v1/query", query=expr)  # Prometheus evaluates it (an error fails the call)
            served = {n: float(api(prom, "/api/v1/query", query=n)["result"][0]["value"][1])
                      for n in ("sglang:context_len", "sglang:max_total_num_tokens")}
            assert served == {"sglang:context_len": 2048.0, "sglang:max_total_num_tokens": 2052.0}
            # the recording serves the plan's target: SGLangServedUnderTarget stays quiet; the idle server too
            for quiet in ("SGLangServedUnderTarget", "SGLangPoolFullWhileQueueing", "SGLangServerDown"):
                expr = next(a["expr"] for a in catalog.ALERTS if a["alert"] == quiet)
                assert not api(prom, "/api/v1/query", query=expr)["result"], quiet
