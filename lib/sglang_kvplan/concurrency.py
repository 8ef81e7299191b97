"""The third lever, --max-running-requests: how many requests decode at once, and what that costs.

The pool is shared. SGLang admits a waiting request when a request-table row is free (at most
--max-running-requests run) and when the pool has room for its input and its max_new_tokens (0.5.23
managers/scheduler.py:4119-4126 and 4226-4232, get_num_allocatable_reqs :4027-4050; managers/schedule_policy.py
add_one_req :1395-1445, NO_TOKEN when the budget is spent); the rest wait in the queue. So a pool pinned at the
target serves ONE request at full length, or several shorter ones side by side: "one 200k request, or eight of up
to 25k at once". What concurrency costs in memory is outside the pool (memory.py): the request table, (running + 1)
rows of the context, and the CUDA graphs captured up to the running batch.

The rule when sglang_max_running_requests is unset: as many full-length requests as the pool holds, and at least 8
(the hand-tuned ct200 this project started from) so short requests run side by side; never more than SGLang keeps
(pool // 2, kv_cache_configurator.py resolve_max_num_reqs :3119-3140); fewer when the headroom, less the prefill
activations, cannot afford the table and the graphs. An operator's number that the headroom cannot afford is
refused, naming the largest that fits.
"""

from .memory import (
    GIB,
    activations_gib,
    chunked_prefill_tokens,
    graphs_estimate_gib,
    request_table_gib,
)
from .model import check_geometry
from .refusals import check_launch
from .spec import KVPlanError

# The floor of the rule: the hand-tuned ct200 this project started from ran 8 requests beside a 200k context
SEED_RUNNING = 8
MAX_RUNNING = 1 << 20  # a search bound no server reaches


def _fmt(number):
    return f"{number:,}"


def attn_dp(spec):
    """Attention data-parallel groups: each keeps its own request table (resolve_max_num_reqs divides by it)."""
    return spec["dp_size"] if spec["enable_dp_attention"] else 1


def _graphs(spec, per_gpu):
    """(GiB, measured?) of the CUDA graphs at `per_gpu` running requests: the boot's measured figure once known."""
    if spec.get("graph_gib") is not None:
        return spec["graph_gib"], True
    return graphs_estimate_gib(per_gpu), False


def headroom_parts(spec, per_gpu, headroom, draft_tokens=0):
    """What the headroom (GiB per GPU outside the pool) is for, at `per_gpu` running requests per request table."""
    chunk = chunked_prefill_tokens(spec)
    table = request_table_gib(per_gpu, spec["context_target"], draft_tokens)
    graphs, measured = _graphs(spec, per_gpu)
    activations = activations_gib(spec, chunk)
    return {"request_table_gib": round(table, 4), "cuda_graphs_gib": round(graphs, 3), "cuda_graphs_measured": measured,
            "activations_gib": round(activations, 3), "chunked_prefill_size": chunk, "headroom_gib": round(headroom, 3),
            "left_gib": round(headroom - table - graphs - activations, 3)}


def _affords(spec, per_gpu, budget, draft_tokens):
    table = request_table_gib(per_gpu, spec["context_target"], draft_tokens)
    return table + _graphs(spec, per_gpu)[0] <= budget


def largest_affordable(spec, headroom, draft_tokens=0):
    """The most running requests per request table whose table and graphs fit the headroom less the prefill
    activations; 0 when not even one does."""
    budget = headroom - activations_gib(spec, chunked_prefill_tokens(spec))
    if not _affords(spec, 1, budget, draft_tokens):
        return 0
    low, high = 1, MAX_RUNNING
    while low < high:  # both costs grow with the count: bisect
        middle = (low + high + 1) // 2
        if _affords(spec, middle, budget, draft_tokens):
            low = middle
        else:
            high = middle - 1
    return low


def running_requests(spec, pool, headroom, draft_tokens=0):
    """(--max-running-requests, why) for the pool and the headroom (GiB per GPU) left outside it."""
    target, groups = spec["context_target"], attn_dp(spec)
    largest = largest_affordable(spec, headroom, draft_tokens)
    asked = spec["max_running_requests"]
    if asked:
        per_gpu = max(1, asked // groups)
        if per_gpu > max(largest, 1):
            parts = headroom_parts(spec, per_gpu, headroom, draft_tokens)
            raise KVPlanError(
                "sglang_max_running_requests: %s running requests at context %s need a %.2f GiB request table and "
                "%.2f GiB of CUDA graphs%s per GPU outside the KV pool, more than the %.2f GiB headroom leaves after "
                "the prefill activations (%.2f GiB at --chunked-prefill-size %s). Use at most %s (or leave it empty "
                "for the planner's rule: docs/planner.md, 'Concurrency')."
                % (_fmt(asked), _fmt(target), parts["request_table_gib"], parts["cuda_graphs_gib"],
                   "" if parts["cuda_graphs_measured"] else " (estimated)", headroom, parts["activations_gib"],
                   _fmt(parts["chunked_prefill_size"]), _fmt(max(largest, 1) * groups)))
        return asked, "sglang_max_running_requests, as set"
    full = pool // target
    wanted = max(full, SEED_RUNNING)
    why = ("the planner's floor of %d for short requests" % SEED_RUNNING if full < SEED_RUNNING
           else "as many as the pool holds at full length")
    per_gpu = min(wanted, max(pool // 2, 1))
    if per_gpu < wanted:
        why = "%d, SGLang's most for a pool of %s tokens (pool // 2)" % (per_gpu, _fmt(pool))
    if largest < per_gpu:
        per_gpu = max(largest, 1)
        parts = headroom_parts(spec, per_gpu, headroom, draft_tokens)
        why = ("%d: the %.2f GiB headroom, less %.2f GiB of prefill activations, affords the request table and the "
               "CUDA graphs of no more" % (per_gpu, headroom, parts["activations_gib"]))
    return per_gpu * groups, why


def _at_once(pool, target, running):
    """The per-request share of the pool, never above `target` (--context-length: no request is longer)."""
    share = pool // running
    if share > target:
        return ("%d requests at once, up to %s tokens each (--context-length; pool / %d is %s)"
                % (running, _fmt(target), running, _fmt(share)))
    return "%d requests at once, up to %s tokens each (pool / %d)" % (running, _fmt(share), running)


def launches(spec):
    """Whether the release starts `spec` at all: the launch check a plan passes (refusals.check_launch, the
    combinations each release's argument resolution refuses, read from its wheel: releases/rules.json
    `launch_refusals`, e.g. DFLASH with --pp-size > 1, SGLang 0.5.23 srt/server_args.py, the entry's `source`).
    Every alternative and fix the planner prints passes it, so none is a setup SGLang refuses at boot; nor one the
    planner itself would refuse to size (model.check_geometry: heads over TP, a sliding-window model's PP)."""
    try:
        check_launch(spec)
        check_geometry(spec)
    except KVPlanError:
        return False
    return True


def wider(spec):
    """(knob, spec) for twice the GPUs, as the planner suggests it: PP doubled, or TP where the release refuses that
    PP at launch (DFLASH needs pp_size 1); (None, None) when the release refuses both, so nothing is suggested."""
    for knob in ("pp_size", "tp_size"):
        candidate = dict(spec, **{knob: spec[knob] * 2})
        if launches(candidate):
            return knob, candidate
    return None, None


def alternatives(spec, budget_cls, budget, pool, target, headroom_min, pre):
    """Lines for what the planner can compute instead: fp8 KV, more GPUs, a lower target; each with its pool and
    concurrency (the same rule, before the headroom's say). Each is a spec the launch check accepts (launches):
    issue 35 found 'twice the GPUs (sglang_pp_size 2)' offered for a DFLASH plan, which SGLang refuses."""
    lines = []
    kv_gib = pool * budget.cell / GIB
    fp8_spec = dict(spec, kv_cache_dtype="fp8_e4m3")
    if spec["kv_cache_dtype"] not in ("fp8_e4m3", "fp8_e5m2") and launches(fp8_spec):
        fp8 = budget_cls(fp8_spec, budget.post)
        if fp8.cell < budget.cell:
            tokens = int(kv_gib * GIB // fp8.cell)
            lines.append("fp8_e4m3 KV (sglang_kv_cache_dtype; %s B/token, some accuracy): the same %.2f GiB holds %s "
                         "tokens: %d at full length, or %s"
                         % (_fmt(fp8.cell), kv_gib, _fmt(tokens), tokens // target,
                            _at_once(tokens, target, max(tokens // target, SEED_RUNNING))))
    knob, wide = wider(spec)
    if knob is not None:
        # twice the GPUs: the weights split over twice as many, the rest of the free memory as it was
        tokens = budget_cls(wide, pre - (pre - budget.post) / 2, pre).most_tokens(headroom_min)
        if tokens > 0:
            lines.append("twice the GPUs (sglang_%s %d): about %s tokens (an estimate): %d at full length, or %s"
                         % (knob, wide[knob], _fmt(tokens), tokens // target,
                            _at_once(tokens, target, max(tokens // target, SEED_RUNNING))))
    lower = target // 2
    if lower > 0 and launches(dict(spec, context_target=lower)):
        lines.append("a lower target (sglang_context_target %s): this pool holds %d at full length"
                     % (_fmt(lower), pool // lower))
    return lines


def tradeoff(spec, pool, running, why, parts, alternative_lines):
    """The seed's trade-off, in lines: what the server serves, what it costs, what else the memory could buy."""
    target = spec["context_target"]
    graphs = "CUDA graphs %.2f (%s)" % (
        parts["cuda_graphs_gib"], "measured at the last boot" if parts["cuda_graphs_measured"]
        else "SGLang's estimate until a boot measures them")
    return [
        "longest request: %s tokens (--context-length); the pool of %s tokens holds %d at full length"
        % (_fmt(target), _fmt(pool), pool // target),
        "concurrency: %s; beyond that SGLang queues them (a free slot and room in the pool admit the next). "
        "--max-running-requests %d: %s" % (_at_once(pool, target, running), running, why),
        "headroom %.2f GiB per GPU: request table %.3f, %s, prefill activations %.2f at --chunked-prefill-size %s "
        "(an estimate), %.2f left"
        % (parts["headroom_gib"], parts["request_table_gib"], graphs, parts["activations_gib"],
           _fmt(parts["chunked_prefill_size"]), parts["left_gib"]),
        "speed: prefill and decode at full and short context are measured by the full proof (the report shows the "
        "last one's)",
    ] + ["instead: " + line for line in alternative_lines]
