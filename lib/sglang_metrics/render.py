"""catalog.py's table and the inventory's targets, rendered: a Prometheus configuration that reads its targets from
file_sd files, one rules file (the plan's numbers recorded per server, then the alerts), and a Grafana dashboard.
Plain data in, plain data out; __main__.py writes them."""

import json

import yaml
from sglang_checks.urls import url_host

from sglang_metrics import catalog

SERVERS_FILE = "sglang-servers.json"
ROUTERS_FILE = "sglang-routers.json"
RULES_FILE = "sglang-rules.yml"
CONFIG_FILE = "prometheus.yml"
DASHBOARD_FILE = "sglang-dashboard.json"
LABELS = ("host", "group", "model", "server")


def file_sd(targets):
    """Prometheus' file_sd list: one entry per target, labelled host, group, model and server."""
    return [{"targets": ["%s:%d" % (url_host(t["address"]), t["port"])],
             "labels": {name: str(t[name]) for name in LABELS}} for t in targets]


# SGLang 0.5.23 serves /metrics with prometheus_client 0.26, which answers a Prometheus 2.x scrape (it asks for
# OpenMetrics without an `escaping` parameter) with every `sglang:x` renamed `sglang_x` (escaping=underscores; a
# real server scraped by Debian's Prometheus 2.42 stored no `sglang:` series at all: tests/contract/real/
# scrape_real.py). This puts the colon back, so the catalog's names hold for Prometheus 2.x and 3.x (which asks for
# UTF-8 names and gets `sglang:x` as served) alike.
UNESCAPE_COLON = {"source_labels": ["__name__"], "regex": "sglang_(.+)", "target_label": "__name__",
                  "replacement": "sglang:$1"}


def scrape_config(interval_s=15):
    """The configuration, its paths relative to its own folder (Prometheus resolves them there): the folder moves
    to the Prometheus host as a whole. Servers are job `sglang`, routers `sglang_router`."""
    every = "%ds" % int(interval_s)
    return {
        "global": {"scrape_interval": every, "evaluation_interval": every},
        "rule_files": [RULES_FILE],
        "scrape_configs": [
            {"job_name": "sglang", "metrics_path": "/metrics", "file_sd_configs": [{"files": [SERVERS_FILE]}],
             "metric_relabel_configs": [UNESCAPE_COLON]},
            {"job_name": "sglang_router", "metrics_path": "/metrics", "file_sd_configs": [{"files": [ROUTERS_FILE]}]},
        ],
    }


def plan_rules(servers):
    """One recording rule per server and plan number: a constant series labelled with the server."""
    rules = []
    for target in servers:
        if not target.get("plan"):
            continue
        for record, key in catalog.PLAN_SERIES.items():
            rules.append({"record": record, "expr": "vector(%d)" % int(target["plan"][key]),
                          "labels": {"server": str(target["server"])}})
    return rules


def alert_rules():
    return [{"alert": a["alert"], "expr": a["expr"], "for": a["for"], "labels": {"severity": a["severity"]},
             "annotations": {"summary": a["summary"], "description": a["action"]}} for a in catalog.ALERTS]


def rules(servers):
    groups = [{"name": "sglang_alerts", "rules": alert_rules()}]
    planned = plan_rules(servers)
    if planned:  # Prometheus refuses a group without rules
        groups.insert(0, {"name": "sglang_plan", "rules": planned})
    return {"groups": groups}


def _panel(number, panel):
    targets = [{"datasource": {"type": "prometheus", "uid": "${datasource}"}, "expr": t["expr"],
                "legendFormat": t["legend"], "refId": chr(ord("A") + i)} for i, t in enumerate(panel["targets"])]
    # the plan's numbers drawn as dashed reference lines
    overrides = [{"matcher": {"id": "byFrameRefID", "options": chr(ord("A") + i)},
                  "properties": [{"id": "custom.lineStyle", "value": {"fill": "dash", "dash": [10, 10]}}]}
                 for i, t in enumerate(panel["targets"]) if t.get("plan")]
    return {"id": number, "type": "timeseries", "title": panel["title"],
            "datasource": {"type": "prometheus", "uid": "${datasource}"},
            "gridPos": {"h": 8, "w": 12, "x": 12 * ((number - 1) % 2), "y": 8 * ((number - 1) // 2)},
            "fieldConfig": {"defaults": {"unit": panel["unit"]}, "overrides": overrides}, "targets": targets}


def dashboard(title="SGLang: the three levers"):
    """Grafana's dashboard JSON (schema 38), a Prometheus data source chosen on import."""
    return {
        "title": title, "uid": "sglang-levers", "schemaVersion": 38, "version": 1, "editable": True,
        "time": {"from": "now-6h", "to": "now"}, "refresh": "30s", "tags": ["sglang"],
        "templating": {"list": [{"name": "datasource", "type": "datasource", "query": "prometheus",
                                 "label": "Prometheus"}]},
        "panels": [_panel(i + 1, p) for i, p in enumerate(catalog.PANELS)],
    }


def files(servers, routers, interval_s=15):
    """{file name: its text} for the folder Prometheus reads."""
    def dump(data):
        return yaml.safe_dump(data, sort_keys=False, default_flow_style=False, width=120)

    return {
        CONFIG_FILE: dump(scrape_config(interval_s)),
        RULES_FILE: dump(rules(servers)),
        SERVERS_FILE: json.dumps(file_sd(servers), indent=1) + "\n",
        ROUTERS_FILE: json.dumps(file_sd(routers), indent=1) + "\n",
        DASHBOARD_FILE: json.dumps(dashboard(), indent=1) + "\n",
    }
