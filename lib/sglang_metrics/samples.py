"""Readings of SGLang's /metrics for playbooks/levers.yml: parsed from the text a server serves, sampled over a window
(this file runs on the server's host too, copied there by the playbook's script task: the standard library only),
or asked of Prometheus' HTTP API. Both give one `window` per server:

  {"samples": [{"running", "queued", "usage"}, ...],   the scheduler's gauges at each step
   "prompt_buckets": [[le, count], ...],               the window's prompts (cumulative counts, le "+Inf" last)
   "pool_tokens", "context_len"}                       what the server serves (None when not served)

The metric names are SGLang 0.5.23's (lib/sglang_metrics/catalog.py lists them and a test holds both to the wheel)."""

import json
import math
import re
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

RUNNING, QUEUED, USAGE = "sglang:num_running_reqs", "sglang:num_queue_reqs", "sglang:token_usage"
POOL, CONTEXT = "sglang:max_total_num_tokens", "sglang:context_len"
PROMPTS = "sglang:prompt_tokens_histogram"
_LINE = re.compile(r'^([A-Za-z_:][A-Za-z0-9_:]*)(\{(.*)\})?\s+(\S+)')
_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


class NoMetrics(Exception):
    """The server answers, but serves no SGLang metrics: --enable-metrics is off."""


def parse(text):
    """[(name, {label: value}, value)] of a Prometheus text exposition (comments skipped)."""
    out = []
    for line in text.splitlines():
        found = _LINE.match(line)
        if not found or line.startswith("#"):
            continue
        labels = dict(_LABEL.findall(found.group(3) or ""))
        out.append((found.group(1), labels, float(found.group(4))))
    return out


def reading(text):
    """One /metrics text as {running, queued, usage, pool_tokens, context_len, prompt_buckets}: the running and queued
    requests summed over the scheduler's ranks (data parallel ranks each keep their own), the pool's use the fullest
    rank's. Raises NoMetrics when the text holds no SGLang series."""
    series = parse(text)
    if not any(entry[0].startswith("sglang:") for entry in series):
        raise NoMetrics("no sglang: series")
    values = {}
    buckets = {}
    for name, labels, value in series:
        if name == PROMPTS + "_bucket":
            le = math.inf if labels.get("le") == "+Inf" else float(labels.get("le"))
            buckets[le] = buckets.get(le, 0.0) + value
        elif name in (RUNNING, QUEUED):
            values[name] = values.get(name, 0.0) + value
        elif name in (USAGE, POOL, CONTEXT) and not math.isnan(value):
            values[name] = max(values.get(name, value), value)
    return {"running": values.get(RUNNING), "queued": values.get(QUEUED), "usage": values.get(USAGE),
            "pool_tokens": _int(values.get(POOL)), "context_len": _int(values.get(CONTEXT)),
            "prompt_buckets": sorted(buckets.items())}


def _le_out(le):
    """A bucket's bound as JSON holds it: a number, or "+Inf" (JSON has no infinity)."""
    return "+Inf" if le == math.inf else le


def _int(value):
    return None if value is None else int(value)


def window(readings):
    """The window between the first and the last reading: every reading's gauges, and the prompts that arrived in
    between (the histogram's buckets at the end less those at the start; a restart in between resets the counters,
    so the end's count stands alone)."""
    first, last = readings[0], readings[-1]
    start = dict(first["prompt_buckets"])
    prompts = []
    for le, count in last["prompt_buckets"]:
        before = start.get(le, 0.0)
        prompts.append([_le_out(le), count - before if count >= before else count])
    return {"samples": [{k: r[k] for k in ("running", "queued", "usage")} for r in readings],
            "prompt_buckets": prompts, "pool_tokens": last["pool_tokens"], "context_len": last["context_len"]}


def fetch_text(url, timeout=10):
    with urllib.request.urlopen(url, timeout=timeout) as response:
        return response.read().decode("utf-8", "replace")


def sample(url, window_s, step_s, fetch=fetch_text, sleep=time.sleep):
    """Read `url` (a server's /metrics) every `step_s` for `window_s` seconds: the window. Raises NoMetrics when the
    server serves no metrics (404, or no SGLang series)."""
    readings = []
    steps = max(int(window_s // step_s), 1)
    for i in range(steps + 1):
        try:
            readings.append(reading(fetch(url)))
        except urllib.error.HTTPError as error:
            if error.code == 404:
                raise NoMetrics("%s answers 404" % url) from None
            raise
        if i < steps:
            sleep(step_s)
    return window(readings)


def prometheus_window(base_url, server, window_s, step_s, fetch=fetch_text, now=time.time):
    """The same window asked of Prometheus (the series labelled server=<server> by monitoring.yml's targets)."""
    end = now()
    selector = '{server="%s"}' % server.replace("\\", "\\\\").replace('"', '\\"')

    def ask(path, **params):
        body = json.loads(fetch("%s/api/v1/%s?%s" % (base_url.rstrip("/"), path, urllib.parse.urlencode(params))))
        if body.get("status") != "success":
            raise ValueError("Prometheus at %s answered %s: %s" % (base_url, body.get("errorType"), body.get("error")))
        return body["data"]["result"]

    def series(expr):
        found = ask("query_range", query=expr, start=end - window_s, end=end, step=step_s)
        return {float(t): float(v) for t, v in found[0]["values"]} if found else {}

    running = series("sum(%s%s)" % (RUNNING, selector))
    if not running:
        raise NoMetrics("Prometheus at %s holds no %s for server %s" % (base_url, RUNNING, server))
    queued = series("sum(%s%s)" % (QUEUED, selector))
    usage = series("max(%s%s)" % (USAGE, selector))
    samples = [{"running": running[t], "queued": queued.get(t), "usage": usage.get(t)} for t in sorted(running)]
    buckets = ask("query", time=end, query="sum by (le) (increase(%s_bucket%s[%ds]))" % (PROMPTS, selector,
                                                                                         int(window_s)))
    prompts = [[_le_out(le), count] for le, count in sorted(
        (math.inf if b["metric"]["le"] == "+Inf" else float(b["metric"]["le"]), float(b["value"][1])) for b in buckets)]
    pool = ask("query", time=end, query="max(%s%s)" % (POOL, selector))
    context = ask("query", time=end, query="max(%s%s)" % (CONTEXT, selector))
    return {"samples": samples, "prompt_buckets": prompts,
            "pool_tokens": int(float(pool[0]["value"][1])) if pool else None,
            "context_len": int(float(context[0]["value"][1])) if context else None}


def main(argv):
    """On the server's host: `python3 samples.py URL WINDOW_S STEP_S` prints {"window": ...} or {"no_metrics": why}."""
    url, window_s, step_s = argv[0], float(argv[1]), float(argv[2])
    try:
        result = {"window": sample(url, window_s, step_s)}
    except NoMetrics as error:
        result = {"no_metrics": str(error)}
    except (OSError, ValueError) as error:
        result = {"unreachable": "%s: %s" % (url, error)}
    json.dump(result, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
