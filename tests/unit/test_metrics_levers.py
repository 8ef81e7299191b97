"""levers.py and samples.py on recorded readings: what a window used of each lever, the lever it stresses, and the
alternative the real planner accepts for ct200 (Kimi K2.6, TP8, calibrated: tests/unit/test_kvplan_concurrency.py)."""

import json
import math
import os
import urllib.error

import pytest
import sglang_kvplan as kv
from sglang_metrics import levers, levers_run, samples

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CT200 = {"model": "kimi-k2.6", "tp_size": 8, "pre_load_avail_gib": 85.334, "post_load_avail_gib": 19.419,
         "gpu_memory_mib": 97_887, "context_target": 200_000, "pool_policy": "fill"}
PLAN = kv.plan(CT200)
POOL = PLAN["predicted_pool_tokens"]
with open(os.path.join(REPO, "tests", "fixtures", "sglang_real", "server-0.5.23", "answers.json"),
          encoding="utf-8") as _h:
    REAL_BODY = json.load(_h)["answers"]["metrics"]["body"]


def window(samples_, buckets, pool=POOL, context=200_000):
    return {"samples": [{"running": r, "queued": q, "usage": u} for r, q, u in samples_],
            "prompt_buckets": buckets, "pool_tokens": pool, "context_len": context}


# prompts: 100 requests, 99 of them up to 40k, one up to 60k
PROMPTS = [[1000.0, 10.0], [40000.0, 99.0], [60000.0, 100.0], [200000.0, 100.0], ["+Inf", 100.0]]
BUSY = [(8, 3, 0.41)] * 3 + [(8, 0, 0.3)] * 4 + [(5, 0, 0.2)] * 3  # 70% at the limit, a queue 30%, peak 41%


def analyse(win, spec=CT200, plan=PLAN, planner=kv.plan):
    return levers.analyse("ct200", win, spec, plan, planner, kv.KVPlanError)


def test_quantiles_of_a_cumulative_histogram():
    assert levers.quantile(PROMPTS, 0.5) == 40000.0
    assert levers.quantile(PROMPTS, 0.99) == 40000.0
    assert levers.quantile(PROMPTS, 1.0) == 60000.0
    assert levers.quantile([[100.0, 0.0], ["+Inf", 0.0]], 0.99) is None
    assert levers.quantile([[100.0, 0.0], ["+Inf", 2.0]], 0.99) == math.inf


def test_slots_full_with_a_queue_and_room_in_the_pool_is_the_concurrency_lever():
    found = analyse(window(BUSY, PROMPTS))
    assert found["lever"] == "concurrency"
    text = "\n".join(found["lines"])
    assert "prompts p50 <= 40,000, p99 <= 40,000 tokens (the longest <= 60,000) of the 200,000 target" in text
    assert "8 running (the limit) in 70% of 10 samples, a queue in 30%; the pool peaked at 41% of its" in text
    # the planner accepts 16 for ct200's headroom: the issue's "--max-running-requests 16 holds 16 x 13.6k"
    assert ("instead: --max-running-requests 16 (sglang_max_running_requests: 16): 16 requests at once, up to %s "
            "tokens each (pool / 16)" % format(POOL // 16, ",")) in text
    assert "the context stays 200,000" in text
    assert kv.plan(dict(CT200, max_running_requests=16))["max_running_requests"] == 16


def test_when_the_planner_refuses_more_slots_it_says_so_and_offers_more_memory():
    def refusing(spec):
        if spec.get("max_running_requests"):
            raise kv.KVPlanError("sglang_max_running_requests: too many; use at most 8")
        return kv.plan(spec)
    text = "\n".join(analyse(window(BUSY, PROMPTS), planner=refusing)["lines"])
    assert "no more slots: the planner refuses them (sglang_max_running_requests: too many; use at most 8)" in text
    assert "fp8_e4m3 KV" in text


def test_a_full_pool_with_a_queue_is_the_pool_lever_with_the_planner_s_alternatives():
    full = [(3, 2, 0.95)] * 6 + [(2, 0, 0.6)] * 4
    found = analyse(window(full, [[100000.0, 10.0], [200000.0, 10.0], ["+Inf", 10.0]]))
    assert found["lever"] == "pool"
    text = "\n".join(found["lines"])
    assert "instead: fp8_e4m3 KV" in text and "instead: twice the GPUs" in text
    assert "lower target" not in text  # under fill a lower target frees no pool


def test_a_pinned_pool_s_alternative_is_the_rest_of_the_memory():
    spec = dict(CT200, pool_policy="target")
    plan = kv.plan(spec)
    found = analyse(window([(3, 2, 0.95)] * 10, [[200000.0, 5.0], ["+Inf", 5.0]]), spec=spec, plan=plan)
    fill = kv.plan(dict(spec, pool_policy="fill"))["predicted_pool_tokens"]
    assert "sglang_pool_policy fill: the pool grows from %s to %s tokens" % (
        format(plan["predicted_pool_tokens"], ","), format(fill, ",")) in "\n".join(found["lines"])


def test_prompts_at_the_target_are_the_context_lever_and_a_longer_one_is_planned_or_refused():
    found = analyse(window([(1, 0, 0.9)] * 5, [[100000.0, 0.0], [200000.0, 5.0], ["+Inf", 5.0]]))
    assert found["lever"] == "context"
    assert "instead: sglang_context_target 400,000" in "\n".join(found["lines"])


def test_quiet_traffic_stresses_nothing_and_no_traffic_weighs_nothing():
    assert analyse(window([(2, 0, 0.1)] * 5, PROMPTS))["lever"] is None
    idle = analyse(window([(0, 0, 0.0)] * 5, [["+Inf", 0.0]]))
    assert idle["lever"] is None and "no traffic in the window (5 samples)" in idle["lines"][0]


def test_a_server_serving_another_context_than_the_plan_is_said():
    lines = analyse(window(BUSY, PROMPTS, context=100_000))["lines"]
    assert lines[0] == "ct200: serves --context-length 100,000, the plan 200,000: re-run site.yml to serve the plan"


def test_a_real_server_s_metrics_read_as_one_reading():
    found = samples.reading(REAL_BODY)
    assert (found["running"], found["queued"], found["usage"]) == (0.0, 0.0, 0.0)
    assert (found["pool_tokens"], found["context_len"]) == (2052, 2048)
    assert found["prompt_buckets"][0] == (100.0, 2.0) and found["prompt_buckets"][-1] == (math.inf, 2.0)


def test_text_without_sglang_series_is_no_metrics():
    with pytest.raises(samples.NoMetrics):
        samples.reading("# HELP python_info x\npython_info{version=\"3\"} 1.0\n")


def test_sampling_a_window_counts_the_prompts_between_its_ends():
    texts = iter([_text(1, 0, 0.1, 5), _text(8, 2, 0.4, 9), _text(8, 0, 0.3, 12)])
    found = samples.sample("http://x/metrics", 2, 1, fetch=lambda url: next(texts), sleep=lambda s: None)
    assert [s["running"] for s in found["samples"]] == [1.0, 8.0, 8.0]
    assert found["prompt_buckets"] == [[1000.0, 7.0], ["+Inf", 7.0]]
    assert json.loads(json.dumps(found)) == found  # JSON holds it (+Inf as a string)


def test_a_404_is_no_metrics_with_how_to_turn_them_on():
    def not_found(url):
        raise urllib.error.HTTPError(url, 404, "Not Found", {}, None)
    with pytest.raises(samples.NoMetrics):
        samples.sample("http://x/metrics", 1, 1, fetch=not_found, sleep=lambda s: None)
    result = levers_run.run({"servers": [{"server": "ct200", "planned": {"spec": CT200, "plan": PLAN},
                                          "sample": {"no_metrics": "http://x/metrics answers 404"}}],
                             "window_s": 60, "step_s": 5})
    assert "ct200: serves no metrics (http://x/metrics answers 404): set sglang_metrics: true" in result["lines"][0]


def test_prometheus_answers_read_as_the_same_window():
    answers = {"sum(sglang:num_running_reqs": {"resultType": "matrix", "result": [
                   {"metric": {}, "values": [[1, "8"], [2, "8"]]}]},
               "sum(sglang:num_queue_reqs": {"result": [{"metric": {}, "values": [[1, "2"], [2, "0"]]}]},
               "max(sglang:token_usage": {"result": [{"metric": {}, "values": [[1, "0.3"], [2, "0.4"]]}]},
               "sum by (le)": {"result": [{"metric": {"le": "+Inf"}, "value": [2, "4"]},
                                          {"metric": {"le": "40000.0"}, "value": [2, "4"]}]},
               "max(sglang:max_total_num_tokens": {"result": [{"metric": {}, "value": [2, "233943"]}]},
               "max(sglang:context_len": {"result": [{"metric": {}, "value": [2, "200000"]}]}}

    def fetch(url):
        from urllib.parse import parse_qs, urlparse
        query = parse_qs(urlparse(url).query)["query"][0]
        assert 'server="ct200"' in query, query
        return json.dumps({"status": "success", "data": next(v for k, v in answers.items() if query.startswith(k))})
    found = samples.prometheus_window("http://prom:9090", "ct200", 60, 30, fetch=fetch, now=lambda: 2.0)
    assert found == {"samples": [{"running": 8.0, "queued": 2.0, "usage": 0.3},
                                 {"running": 8.0, "queued": 0.0, "usage": 0.4}],
                     "prompt_buckets": [[40000.0, 4.0], ["+Inf", 4.0]], "pool_tokens": 233943, "context_len": 200000}


def test_a_server_prometheus_never_saw_is_said_with_the_fix():
    def empty(url):
        return json.dumps({"status": "success", "data": {"result": []}})
    result = levers_run.run({"servers": [{"server": "ct200", "planned": {"spec": CT200, "plan": PLAN}}],
                             "prometheus_url": "http://prom:9090", "window_s": 60, "step_s": 5}, fetch=empty)
    assert "holds no sglang:num_running_reqs for server ct200" in result["lines"][0]
    assert "sglang_metrics: true" in result["lines"][0]


def test_a_server_without_a_plan_is_said():
    result = levers_run.run({"servers": [{"server": "new", "planned": {"skipped": "new: planned once preflight "
                                                                                  "has read the GPUs"}}],
                             "window_s": 60, "step_s": 5})
    assert result["lines"][0] == "new: no plan to weigh the traffic against (new: planned once preflight has read " \
                                 "the GPUs)"
    assert result["lines"][-1].startswith("levers.yml changes nothing")


def _text(running, queued, usage, prompts):
    scheduler = '{engine_type="unified",model_name="m",tp_rank="0"}'
    return ("sglang:num_running_reqs%s %s\nsglang:num_queue_reqs%s %s\nsglang:token_usage%s %s\n"
            "sglang:max_total_num_tokens%s 1000\nsglang:context_len%s 900\n"
            'sglang:prompt_tokens_histogram_bucket{le="1000.0",model_name="m"} %s\n'
            'sglang:prompt_tokens_histogram_bucket{le="+Inf",model_name="m"} %s\n'
            % (scheduler, running, scheduler, queued, scheduler, usage, scheduler, scheduler, prompts, prompts))
