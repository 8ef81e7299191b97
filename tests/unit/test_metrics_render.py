"""lib/sglang_metrics' targets from an inventory and its renderers: who is scraped with which labels, the plan's
numbers as recording rules, the dashboard's panels from the same table as the alerts."""

import json

import pytest
import yaml
from sglang_metrics import catalog, render, targets

DEFAULTS = {"sglang_port": 30000, "sglang_host": "127.0.0.1", "sglang_metrics": True, "sglang_nodes": [],
            "sglang_server_name": "", "sglang_served_model_name": "", "sglang_model": "", "sglang_model_path": "",
            "sglang_router_prometheus_host": "127.0.0.1", "sglang_router_prometheus_port": 29000}
PLANNED = {"plan": {"context_length": 200000, "predicted_pool_tokens": 200064, "max_running_requests": 8},
           "node": {"rank0": "ct200", "node_rank": 0}}


def default(name):
    return DEFAULTS[name]


def host(groups, **variables):
    return {"groups": groups, "vars": variables}


def test_a_server_is_scraped_at_its_address_with_its_labels_and_plan():
    servers, notes = targets.server_targets(
        {"ct200": host(["sglang_servers", "kimi_k26_dflash"], ansible_host="10.0.0.5", sglang_host="0.0.0.0",
                       sglang_model="kimi-k2.6")}, {"ct200": PLANNED}, default)
    assert servers == [{"server": "ct200", "host": "ct200", "address": "10.0.0.5", "port": 30000,
                        "group": "kimi_k26_dflash", "model": "kimi-k2.6",
                        "plan": {"context_length": 200000, "pool_tokens": 200064, "max_running_requests": 8}}]
    assert notes == []
    assert render.file_sd(servers) == [{"targets": ["10.0.0.5:30000"], "labels": {
        "host": "ct200", "group": "kimi_k26_dflash", "model": "kimi-k2.6", "server": "ct200"}}]


def test_only_rank_0_of_a_server_across_nodes_is_scraped():
    hosts = {n: host(["sglang_servers", "ct400"], sglang_nodes=["ct400-a", "ct400-b"], sglang_server_name="ct400",
                     sglang_host="::", ansible_host=a) for n, a in (("ct400-a", "fd00::1"), ("ct400-b", "fd00::2"))}
    servers, _ = targets.server_targets(hosts, {}, default)
    assert [(s["server"], s["host"]) for s in servers] == [("ct400", "ct400-a")]
    assert render.file_sd(servers)[0]["targets"] == ["[fd00::1]:30000"]


@pytest.mark.parametrize("off", [False, "false", "no"])
def test_a_server_without_metrics_is_left_out_with_how_to_turn_them_on(off):
    servers, notes = targets.server_targets({"ct200": host([], sglang_metrics=off)}, {}, default)
    assert servers == []
    assert "sglang_metrics is false" in notes[0] and "sglang_metrics: true" in notes[0]


def test_a_loopback_server_and_one_without_a_plan_are_said():
    servers, notes = targets.server_targets({"new": host(["sglang_servers"])},
                                            {"new": {"skipped": "new: planned once preflight has read the GPUs"}},
                                            default)
    assert servers[0]["plan"] is None and servers[0]["group"] == "sglang_servers"
    assert any("answers on the host only" in n for n in notes)
    assert any("no plan yet (new: planned once preflight" in n for n in notes)


def test_the_model_label_falls_back_to_the_checkpoint_folder():
    assert targets.model_label({"sglang_model_path": "/srv/models/kimi-k2.6/"}, default) == "kimi-k2.6"
    assert targets.model_label({"sglang_served_model_name": "kimi", "sglang_model": "x"}, default) == "kimi"


def test_a_router_is_scraped_on_its_prometheus_port():
    routers, notes = targets.router_targets({"router-1": host(["sglang_routers"], ansible_host="10.0.0.9",
                                                              sglang_router_prometheus_host="0.0.0.0")}, default)
    assert render.file_sd(routers) == [{"targets": ["10.0.0.9:29000"], "labels": {
        "host": "router-1", "group": "sglang_routers", "model": "", "server": "router-1"}}]
    assert notes == []


def test_the_plan_s_numbers_become_one_recording_rule_each_per_server():
    servers = [{"server": "a", "plan": {"context_length": 10, "pool_tokens": 20, "max_running_requests": 3}},
               {"server": "b", "plan": None}]
    rules = render.plan_rules(servers)
    assert [(r["record"], r["expr"], r["labels"]) for r in rules] == [
        ("sglang_plan:context_length", "vector(10)", {"server": "a"}),
        ("sglang_plan:pool_tokens", "vector(20)", {"server": "a"}),
        ("sglang_plan:max_running_requests", "vector(3)", {"server": "a"})]


def test_without_any_plan_the_rules_hold_the_alerts_only():
    groups = render.rules([{"server": "b", "plan": None}])["groups"]
    assert [g["name"] for g in groups] == ["sglang_alerts"]


def test_the_files_parse_and_the_dashboard_holds_every_panel_and_plan_line():
    files = render.files([], [], interval_s=5)
    config = yaml.safe_load(files[render.CONFIG_FILE])
    assert config["global"]["scrape_interval"] == "5s" and config["rule_files"] == [render.RULES_FILE]
    assert [j["file_sd_configs"][0]["files"] for j in config["scrape_configs"]] == [[render.SERVERS_FILE],
                                                                                   [render.ROUTERS_FILE]]
    board = json.loads(files[render.DASHBOARD_FILE])
    assert [p["title"] for p in board["panels"]] == [p["title"] for p in catalog.PANELS]
    for panel, source in zip(board["panels"], catalog.PANELS, strict=True):
        assert [t["expr"] for t in panel["targets"]] == [t["expr"] for t in source["targets"]]
        dashed = {o["matcher"]["options"] for o in panel["fieldConfig"]["overrides"]}
        assert dashed == {t["refId"] for t, s in zip(panel["targets"], source["targets"], strict=True) if s.get("plan")}
    assert json.loads(files[render.SERVERS_FILE]) == []
