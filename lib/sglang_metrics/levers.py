"""What a window of traffic used of each lever, and which planned alternative fits it better, as plain functions
with explicit arguments (the window from samples.py, the check phase's spec and plan, the planner as an argument).

The three levers (docs/planner.md): the context (--context-length: how long one request may be), the pool (how many
tokens all running requests hold together) and the concurrency (--max-running-requests: how many decode at once).
The traffic stresses
  - concurrency when every slot is busy and requests queue while the pool has room: more slots, the same pool;
  - the pool when it runs nearly full while requests queue: more pool (the rest of the memory, fp8 KV, more GPUs);
  - the context when the prompts reach the target: a longer target;
and none when nothing queues. Every alternative named is one the planner accepts for this server (it is planned
here, with the server's own spec); nothing is changed."""

import math

from sglang_metrics import catalog

AT_LIMIT_SHARE = 0.2  # every slot busy in at least this share of the samples
QUEUE_SHARE = 0.1     # a queue in at least this share
CONTEXT_USED = 0.9    # the prompts' p99 at this share of the target or more


def _fmt(number):
    return "{:,}".format(int(number))


def quantile(buckets, q):
    """The upper bound of the bucket holding the q-quantile of a cumulative histogram [[le, count], ...] ("+Inf"
    last), math.inf when it lies beyond the last finite bound; None when the window holds no prompt."""
    bounds = [(math.inf if le == "+Inf" else float(le), float(count)) for le, count in buckets]
    total = max((count for _bound, count in bounds), default=0.0)
    if total <= 0:
        return None
    for le, count in sorted(bounds):
        if count >= q * total:
            return le
    return math.inf


def usage(window, max_running):
    """{samples, at_limit, queued, pool_peak}: the share of samples with `max_running` running, with a queue, and the
    pool's highest use (0..1), from the window's scheduler samples."""
    samples = [s for s in window["samples"] if s.get("running") is not None]
    count = len(samples)
    if not count:
        return {"samples": 0, "at_limit": 0.0, "queued": 0.0, "pool_peak": 0.0, "busy": False}
    return {"samples": count,
            "at_limit": sum(1 for s in samples if s["running"] >= max_running) / count,
            "queued": sum(1 for s in samples if (s.get("queued") or 0) > 0) / count,
            "pool_peak": max(s.get("usage") or 0.0 for s in samples),
            "busy": any(s["running"] > 0 or (s.get("queued") or 0) > 0 for s in samples)}


def stressed(used, p99, target):
    """The lever the traffic stresses: 'concurrency', 'pool', 'context', or None."""
    if used["queued"] >= QUEUE_SHARE and used["pool_peak"] >= catalog.POOL_FULL:
        return "pool"
    if used["queued"] >= QUEUE_SHARE and used["at_limit"] >= AT_LIMIT_SHARE and used["pool_peak"] < catalog.POOL_ROOM:
        return "concurrency"
    if p99 is not None and p99 >= CONTEXT_USED * target:
        return "context"
    return None


def _try(planner, spec, error_type, **change):
    """(the planner's plan of the spec with `change`, None) or (None, its refusal)."""
    try:
        return planner(dict(spec, **change)), None
    except error_type as error:
        return None, str(error)


def concurrency_alternative(spec, plan, planner, error_type):
    """More slots over the same pool: the first of twice, one and a half times and one more than today's that the
    planner accepts for the headroom (it refuses what the request table and CUDA graphs cannot afford)."""
    running = int(plan["max_running_requests"])
    refused = None
    for wanted in sorted({running * 2, running + max(running // 2, 1), running + 1}, reverse=True):
        planned, why = _try(planner, spec, error_type, max_running_requests=wanted)
        if planned is not None and int(planned["max_running_requests"]) == wanted:
            each = int(planned["predicted_pool_tokens"]) // wanted
            return ["--max-running-requests %d (sglang_max_running_requests: %d): %d requests at once, up to %s "
                    "tokens each (pool / %d), a pool of %s tokens; the context stays %s"
                    % (wanted, wanted, wanted, _fmt(each), wanted, _fmt(planned["predicted_pool_tokens"]),
                       _fmt(spec["context_target"]))]
        refused = refused or why or "it keeps %d" % int(planned["max_running_requests"])
    line = "no more slots: the planner refuses them (%s)" % refused
    more = _instead(plan)
    return [line + ("; more memory buys both: " + "; ".join(more) if more else "")]


def _instead(plan):
    """The planner's own alternatives of more memory for the pool (fp8 KV, more GPUs), from its trade-off lines."""
    return [line[len("instead: "):] for line in plan.get("tradeoff") or []
            if line.startswith("instead: ") and "lower target" not in line]


def pool_alternative(spec, plan, planner, error_type):
    """More pool: the rest of the memory when the plan pins the pool at the target, else the planner's own
    alternatives (fp8 KV, twice the GPUs)."""
    lines = []
    if spec.get("pool_policy") == "target":
        planned = _try(planner, spec, error_type, pool_policy="fill")[0]
        if planned is not None and planned["predicted_pool_tokens"] > plan["predicted_pool_tokens"]:
            lines.append("sglang_pool_policy fill: the pool grows from %s to %s tokens (the memory beyond the "
                         "headroom), --max-running-requests %s"
                         % (_fmt(plan["predicted_pool_tokens"]), _fmt(planned["predicted_pool_tokens"]),
                            planned["max_running_requests"]))
    return lines + _instead(plan)


def context_alternative(spec, plan, planner, error_type):
    """A longer target, as the planner sizes it (or its refusal: the model's window, the memory)."""
    longer = int(spec["context_target"]) * 2
    planned, why = _try(planner, spec, error_type, context_target=longer)
    if planned is None:
        return ["sglang_context_target %s is refused by the planner: %s" % (_fmt(longer), why)]
    return ["sglang_context_target %s: a pool of %s tokens, --max-running-requests %s"
            % (_fmt(longer), _fmt(planned["predicted_pool_tokens"]), planned["max_running_requests"])]


ALTERNATIVES = {"concurrency": concurrency_alternative, "pool": pool_alternative, "context": context_alternative}
WHY = {"concurrency": "every slot busy and requests queue while the pool has room",
       "pool": "the pool runs nearly full while requests queue",
       "context": "the prompts reach the target"}


def _bound(value):
    return "over the last bucket" if value == math.inf else "<= %s" % _fmt(value)


def analyse(server, window, spec, plan, planner, error_type):
    """{lever, lines, used, p99}: what the window used of each lever against the plan, the lever it stresses and the
    alternatives the planner accepts (planner(spec) -> plan; error_type: its refusal)."""
    target, running = int(plan["context_length"]), int(plan["max_running_requests"])
    pool = int(window.get("pool_tokens") or plan["predicted_pool_tokens"])
    used = usage(window, running)
    p50, p99 = quantile(window["prompt_buckets"], 0.5), quantile(window["prompt_buckets"], 0.99)
    longest = quantile(window["prompt_buckets"], 1.0)
    lines = []
    if window.get("context_len") and int(window["context_len"]) != target:
        lines.append("%s: serves --context-length %s, the plan %s: re-run site.yml to serve the plan"
                     % (server, _fmt(window["context_len"]), _fmt(target)))
    if p99 is None and not used["busy"]:
        return {"lever": None, "used": used, "p99": None,
                "lines": lines + ["%s: no traffic in the window (%d samples): nothing to weigh" % (server,
                                                                                                   used["samples"])]}
    prompts = ("prompts p50 %s, p99 %s tokens (the longest %s) of the %s target"
               % (_bound(p50), _bound(p99), _bound(longest), _fmt(target))) if p99 is not None else "no prompt ended"
    planned_pool = int(plan["predicted_pool_tokens"])
    of_pool = _fmt(pool) + " tokens" + ("" if pool == planned_pool else " (planned %s)" % _fmt(planned_pool))
    lines.append("%s: %s; %d running (the limit) in %d%% of %d samples, a queue in %d%%; the pool peaked at %d%% of "
                 "its %s" % (server, prompts, running, round(used["at_limit"] * 100), used["samples"],
                             round(used["queued"] * 100), round(used["pool_peak"] * 100), of_pool))
    lever = stressed(used, p99, target)
    if lever is None:
        lines.append("%s: no lever is stressed: the plan fits this traffic" % server)
        return {"lever": None, "used": used, "p99": p99, "lines": lines}
    lines.append("%s: the lever: %s (%s)" % (server, lever, WHY[lever]))
    lines += ["%s: instead: %s" % (server, line) for line in ALTERNATIVES[lever](spec, plan, planner, error_type)]
    return {"lever": lever, "used": used, "p99": p99, "lines": lines}
