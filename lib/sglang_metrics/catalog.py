"""The one source of what is watched: the SGLang metrics read (their real names, held to the 0.5.23 wheel's
collector by tests/integration/test_prometheus_names.py), the plan's numbers recorded beside them, the alert rules
and the dashboard's panels. render.py turns this table into files; nothing else names a metric.

Every SGLang series carries the scheduler's or the tokenizer's labels (model_name, engine_type, tp_rank, ...) plus
the scrape's target labels (host, group, model, server: targets.py); the plan's series carry `server` only, so a
comparison with the plan joins `on(server)`."""

# The metrics read, as SGLang 0.5.23 names them (srt/observability/metrics_collector.py) and their kind.
SGLANG_METRICS = {
    "sglang:num_running_reqs": "gauge",       # requests decoding now (at most --max-running-requests)
    "sglang:num_queue_reqs": "gauge",         # requests waiting for a slot or for room in the pool
    "sglang:token_usage": "gauge",            # the pool's used share, 0..1
    "sglang:num_used_tokens": "gauge",        # the pool's used tokens
    "sglang:max_total_num_tokens": "gauge",   # the pool's size (constant from the boot)
    "sglang:context_len": "gauge",            # the served --context-length (constant from the boot)
    "sglang:prompt_tokens_histogram": "histogram",
    "sglang:time_to_first_token_seconds": "histogram",
    "sglang:request_time_per_output_token_seconds": "histogram",
}

# The plan's numbers, one recording rule per server (render.plan_rules): reference lines and alert thresholds.
PLAN_SERIES = {
    "sglang_plan:context_length": "context_length",              # the target, --context-length
    "sglang_plan:pool_tokens": "pool_tokens",                    # the pool the plan predicts
    "sglang_plan:max_running_requests": "max_running_requests",  # --max-running-requests
}

# Thresholds of the pool alerts: "nearly full" and "room" as shares of the pool.
POOL_FULL = 0.9
POOL_ROOM = 0.7
WINDOW = "5m"  # the rate window of the panels' quantiles

ALERTS = [
    {
        "alert": "SGLangPoolFullWhileQueueing",
        "expr": "sglang:token_usage > %s and sglang:num_queue_reqs > 0" % POOL_FULL,
        "for": "5m",
        "severity": "warning",
        "summary": "{{ $labels.server }}: the KV pool is over %d%% full while requests queue" % (POOL_FULL * 100),
        "lever": "pool",
        "action": "The pool, not the request slots, holds requests back. Run playbooks/levers.yml: if the prompts "
                  "are far below the target, a lower sglang_context_target lets the same pool hold more; otherwise "
                  "fp8 KV (sglang_kv_cache_dtype) or more GPUs give a larger pool (make plan prints both).",
    },
    {
        "alert": "SGLangRunningAtLimitWithPoolRoom",
        "expr": "(sglang:num_running_reqs >= on(server) group_left sglang_plan:max_running_requests) "
                "and sglang:token_usage < %s" % POOL_ROOM,
        "for": "10m",
        "severity": "info",
        "summary": "{{ $labels.server }}: every request slot is busy while the pool is under %d%% used"
                   % (POOL_ROOM * 100),
        "lever": "concurrency",
        "action": "Requests wait for a slot, not for memory. Run playbooks/levers.yml: it names the "
                  "--max-running-requests the planner accepts for this headroom; set sglang_max_running_requests.",
    },
    {
        "alert": "SGLangServedUnderTarget",
        "expr": "(sglang:context_len < on(server) group_left sglang_plan:context_length) "
                "or (sglang:max_total_num_tokens < on(server) group_left sglang_plan:context_length)",
        "for": "1m",
        "severity": "critical",
        "summary": "{{ $labels.server }}: the served context or the pool is under the planned target",
        "lever": "context",
        "action": "The process serving now is not the one the plan proved (a manual restart, other flags, less "
                  "free memory at boot). Re-run site.yml on the server: the proof checks the target and rolls back "
                  "to the last proven state when it does not hold (docs/operating.md).",
    },
    {
        "alert": "SGLangServerDown",
        "expr": 'up{job=~"sglang|sglang_router"} == 0',
        "for": "2m",
        "severity": "critical",
        "summary": "{{ $labels.server }}: {{ $labels.job }} at {{ $labels.instance }} does not answer /metrics",
        "lever": None,
        "action": "systemctl status and journalctl -u the service on the host; a server that restarts in a loop "
                  "stops after sglang_start_limit_burst starts (docs/operating.md).",
    },
]


def _quantile(q, metric, by="server"):
    return ("histogram_quantile(%s, sum by (le, %s) (rate(%s_bucket[%s])))" % (q, by, metric, WINDOW))


# Each panel: a title, a unit (Grafana's), and targets {expr, legend, plan} where plan marks a reference line.
PANELS = [
    {"title": "KV pool: used and size (tokens)", "unit": "short", "targets": [
        {"expr": "sglang:num_used_tokens", "legend": "{{server}} used"},
        {"expr": "sglang:max_total_num_tokens", "legend": "{{server}} size"},
        {"expr": "sglang_plan:pool_tokens", "legend": "{{server}} planned pool", "plan": True}]},
    {"title": "KV pool: used share", "unit": "percentunit", "targets": [
        {"expr": "sglang:token_usage", "legend": "{{server}}"}]},
    {"title": "Running requests against --max-running-requests", "unit": "short", "targets": [
        {"expr": "sglang:num_running_reqs", "legend": "{{server}} running"},
        {"expr": "sglang_plan:max_running_requests", "legend": "{{server}} --max-running-requests", "plan": True}]},
    {"title": "Queued requests", "unit": "short", "targets": [
        {"expr": "sglang:num_queue_reqs", "legend": "{{server}} queued"}]},
    {"title": "Prompt length against the context target (tokens)", "unit": "short", "targets": [
        {"expr": _quantile("0.5", "sglang:prompt_tokens_histogram"), "legend": "{{server}} p50"},
        {"expr": _quantile("0.99", "sglang:prompt_tokens_histogram"), "legend": "{{server}} p99"},
        {"expr": "sglang:context_len", "legend": "{{server}} served --context-length"},
        {"expr": "sglang_plan:context_length", "legend": "{{server}} target", "plan": True}]},
    {"title": "Time to first token (s)", "unit": "s", "targets": [
        {"expr": _quantile("0.5", "sglang:time_to_first_token_seconds"), "legend": "{{server}} p50"},
        {"expr": _quantile("0.99", "sglang:time_to_first_token_seconds"), "legend": "{{server}} p99"}]},
    {"title": "Time per output token (s)", "unit": "s", "targets": [
        {"expr": _quantile("0.5", "sglang:request_time_per_output_token_seconds"), "legend": "{{server}} p50"},
        {"expr": _quantile("0.99", "sglang:request_time_per_output_token_seconds"), "legend": "{{server}} p99"}]},
]
