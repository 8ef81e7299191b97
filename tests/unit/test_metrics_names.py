"""No metric name invented: every SGLang name lib/sglang_metrics reads, and every family the double's /metrics
serves, is one SGLang 0.5.23's collector constructs, of the same kind (tests/fixtures/sglang_metrics/
collector-0.5.23.json, read from the wheel by tests/integration/extract_metric_names.py); the double's labels are the
ones a real 0.5.23 server served (tests/fixtures/sglang_real/server-0.5.23/answers.json)."""

import json
import os
import re
import sys

from sglang_metrics import catalog, render

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "tests", "sglang_double"))
from sglang._double_metrics import Metrics  # noqa: E402

with open(os.path.join(REPO, "tests", "fixtures", "sglang_metrics", "collector-0.5.23.json"), encoding="utf-8") as _h:
    COLLECTOR = json.load(_h)
with open(os.path.join(REPO, "tests", "fixtures", "sglang_real", "server-0.5.23", "answers.json"),
          encoding="utf-8") as _h:
    REAL_BODY = json.load(_h)["answers"]["metrics"]["body"]
SUFFIXES = ("_bucket", "_sum", "_count")


def names_in(expr):
    """The SGLang metric families an expression reads (a histogram's _bucket/_sum/_count read its family)."""
    found = set()
    for name in re.findall(r"\bsglang:[A-Za-z0-9_:]+", expr):
        for suffix in SUFFIXES:
            if name.endswith(suffix) and name[:-len(suffix)] in COLLECTOR["metrics"]:
                name = name[:-len(suffix)]
        found.add(name)
    return found


def families(text):
    """{family: (kind, {label-name sets})} of a Prometheus text exposition."""
    kinds = dict(re.findall(r"^# TYPE (\S+) (\S+)$", text, re.MULTILINE))
    out = {name: (kind, set()) for name, kind in kinds.items()}
    for name, labels in re.findall(r"^([^#\s{]+)\{([^}]*)\}", text, re.MULTILINE):
        family = next((name[:-len(s)] for s in SUFFIXES if name.endswith(s) and name[:-len(s)] in kinds), name)
        keys = frozenset(re.findall(r'(\w+)="', labels)) - {"le"}
        out[family][1].add(keys)
    return out


def test_the_fixture_is_the_pinned_release_s():
    assert COLLECTOR["release"] == "sglang==0.5.23"
    assert {"sglang:num_running_reqs", "sglang:token_usage", "sglang:prompt_tokens_total"} <= set(COLLECTOR["metrics"])


def test_every_name_the_catalog_reads_is_the_release_s_with_its_kind():
    wrong = {n: k for n, k in catalog.SGLANG_METRICS.items() if COLLECTOR["metrics"].get(n) != k}
    assert not wrong, wrong


def test_every_alert_and_panel_reads_only_catalogued_names():
    exprs = [a["expr"] for a in catalog.ALERTS] + [t["expr"] for p in catalog.PANELS for t in p["targets"]]
    used = set().union(*(names_in(e) for e in exprs))
    assert used <= set(catalog.SGLANG_METRICS) | set(catalog.PLAN_SERIES), used - set(catalog.SGLANG_METRICS)
    assert set(catalog.SGLANG_METRICS) <= used  # nothing catalogued that no rule or panel reads


def test_an_invented_name_is_caught():
    assert names_in("sglang:pool_fullness > 0.9") - set(COLLECTOR["metrics"]) == {"sglang:pool_fullness"}


def test_the_plan_series_are_no_sglang_name():
    assert not set(catalog.PLAN_SERIES) & set(COLLECTOR["metrics"])
    assert all(not name.startswith("sglang:") for name in catalog.PLAN_SERIES)


def _double_text():
    metrics = Metrics("m")
    metrics.finished(100, 5, 0.2, 0.4, streaming=False)
    metrics.finished(300, 1, 0.3, 0.0, streaming=True)
    return metrics.text(running=1, queued=2, used_tokens=500, pool_tokens=1000, context_len=2000).decode()


def test_the_double_serves_only_the_release_s_names_with_their_kinds():
    served = families(_double_text())
    wrong = {n: kind for n, (kind, _) in served.items() if COLLECTOR["metrics"].get(n) != kind}
    assert not wrong, wrong
    assert set(catalog.SGLANG_METRICS) <= set(served)  # and everything the rules and panels read


def test_the_double_s_labels_are_a_real_server_s():
    real, served = families(REAL_BODY), families(_double_text())
    compared = sorted(set(real) & set(served))
    assert len(compared) >= 8, compared
    for name in compared:
        assert served[name][1] <= real[name][1], (name, served[name][1], real[name][1])


def test_the_double_s_gauges_read_its_scheduler():
    text = _double_text()
    assert re.search(r'^sglang:token_usage\{[^}]*\} 0\.5$', text, re.MULTILINE), text
    assert re.search(r'^sglang:num_queue_reqs\{[^}]*\} 2\.0$', text, re.MULTILINE)
    # time per output token is observed only for a request with more than one token: 0.4 s / 4
    assert re.search(r'^sglang:request_time_per_output_token_seconds_sum\{[^}]*\} 0\.1$', text, re.MULTILINE)
    assert re.search(r'^sglang:request_time_per_output_token_seconds_count\{[^}]*\} 1\.0$', text, re.MULTILINE)


def test_the_rendered_rules_read_the_catalogue():
    rules = render.rules([{"server": "s", "plan": {"context_length": 1, "pool_tokens": 2, "max_running_requests": 3}}])
    assert [r["alert"] for r in rules["groups"][1]["rules"]] == [a["alert"] for a in catalog.ALERTS]
