"""Draw docs/monitoring-dashboard.png: the dashboard's panels (lib/sglang_metrics/catalog.py) as a real Prometheus
returned them, scraping the SGLang double that serves ct200's plan flags through the files monitoring.yml renders,
under a scripted load of about a minute (a few short requests, then more clients than slots, then long prompts).
The plan's numbers are dashed, as in Grafana. Run by hand (about 90 s; Debian's prometheus and matplotlib):

    .venv/bin/python tests/integration/draw_dashboard.py [out.png]
"""

import json
import os
import sys
import tempfile
import threading
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path[:0] = [HERE, os.path.join(REPO, "tests", "sglang_double"), os.path.join(REPO, "lib")]

from prometheus_server import api, running_prometheus  # noqa: E402
from run_double import running_double  # noqa: E402
from sglang_metrics import catalog, render  # noqa: E402

FLAGS = ["--context-length", "200000", "--max-running-requests", "8", "--tp-size", "8", "--mem-fraction-static",
         "0.953", "--enable-metrics"]
GPU = {"decode_seconds_per_token": 0.05, "prefill_tokens_per_s": 40000.0, "load_seconds": 0.0, "graph_seconds": 0.0}
PLAN = {"context_length": 200000, "pool_tokens": 217612, "max_running_requests": 8}  # make plan's ct200
WORDS = "The quick brown fox jumps over the lazy dog. "  # ~10 tokens with the double's tokenizer
# (seconds, clients, words per prompt, tokens to decode): a scripted minute
PHASES = [(12, 4, 200, 60), (18, 14, 200, 60), (18, 6, 3000, 40), (6, 0, 0, 0)]


def _client(url, stop, words, tokens):
    payload = json.dumps({"text": WORDS * words + "\nWhat animal?",
                          "sampling_params": {"max_new_tokens": tokens, "ignore_eos": True}}).encode()
    while not stop.is_set():
        request = urllib.request.Request(url + "/generate", payload, {"content-type": "application/json"})
        with urllib.request.urlopen(request, timeout=120) as response:
            response.read()


def load(url):
    for seconds, clients, words, tokens in PHASES:
        stop = threading.Event()
        threads = [threading.Thread(target=_client, args=(url, stop, words, tokens), daemon=True)
                   for _ in range(clients)]
        for thread in threads:
            thread.start()
        time.sleep(seconds)
        stop.set()
        for thread in threads:
            thread.join(timeout=60)


def draw(prom, start, end, out):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = (len(catalog.PANELS) + 1) // 2
    fig, axes = plt.subplots(rows, 2, figsize=(13, 3.1 * rows), squeeze=False)
    for ax, panel in zip(axes.flat, catalog.PANELS, strict=False):
        for target in panel["targets"]:
            found = api(prom, "/api/v1/query_range", query=target["expr"], start=start, end=end, step=1)["result"]
            for series in found:
                xs = [float(t) - start for t, _ in series["values"]]
                ys = [float(v) for _, v in series["values"]]
                label = target["legend"].replace("{{server}}", series["metric"].get("server", ""))
                ax.plot(xs, ys, "--" if target.get("plan") else "-", label=label)
        ax.set_title(panel["title"], fontsize=10)
        ax.legend(fontsize=7, loc="upper left")
        ax.grid(alpha=0.3)
        ax.set_xlabel("s", fontsize=8)
    for ax in list(axes.flat)[len(catalog.PANELS):]:
        ax.axis("off")
    fig.suptitle("SGLang: the three levers (the double serving ct200's plan flags, a scripted minute; "
                 "dashed: the plan)", fontsize=11)
    fig.tight_layout()
    fig.savefig(out, dpi=80)


def main(out):
    with running_double(FLAGS, GPU) as (url, _log), tempfile.TemporaryDirectory() as folder:
        server = {"server": "ct200", "host": "ct200", "address": "127.0.0.1", "port": int(url.rsplit(":", 1)[1]),
                  "group": "kimi_k26_dflash", "model": "kimi-k2.6", "plan": PLAN}
        for name, text in render.files([server], [], interval_s=1).items():
            with open(os.path.join(folder, name), "w", encoding="utf-8") as handle:
                handle.write(text)
        with running_prometheus(folder) as prom:
            start = time.time()
            load(url)
            draw(prom, start, time.time(), out)
    print(out)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.path.join(REPO, "docs", "monitoring-dashboard.png"))
