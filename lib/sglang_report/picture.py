"""The plan as a picture: SGLang's pool line for one host, and the context-vs-concurrency trade-off.

Every number on the picture comes from the planner (lib/sglang_kvplan): the line is
`sglang_kvplan.pool_tokens(spec, f)` at each plotted fraction, the same forward formula SGLang uses
(model_runner profile_max_num_token), so the picture cannot disagree with the plan it explains.
`curves()` returns the data (tests compare it with the planner); `draw()` renders it with matplotlib.
"""

import io
import textwrap

import sglang_kvplan
from sglang_kvplan.memory import forward, memory
from sglang_kvplan.model import context_window, describe_cell
from sglang_kvplan.normalize import normalize_spec
from sglang_kvplan.plan import Budget, fraction_ceiling, pinned_fraction

FP8 = "fp8_e4m3"


def _frange(lo, hi, step):
    count = int(round((hi - lo) / step))
    return [round(lo + i * step, 4) for i in range(count + 1)]


def _line(spec, fractions, cap):
    """Pool tokens at each fraction; with a --max-total-tokens cap SGLang keeps min(profile, cap).

    forward() is what sglang_kvplan.pool_tokens(spec, f) runs, with the spec checked once, not per point."""
    normalized = normalize_spec(spec)
    tokens = [forward(normalized, f) for f in fractions]
    return [min(t, cap) for t in tokens] if cap else tokens


def curves(spec, plan, measured=(), step=0.0025):
    """The picture's data: lines, target, chosen point, headroom limit, measured boots, trade-off."""
    spec = dict(spec, mem_fraction_static=None)
    normalized = normalize_spec(spec)
    # P and A as the planner takes them (the plan's copies are rounded to 3 decimals).
    pre, post, calibrated, _ = memory(normalized)
    headroom_min = normalized["min_headroom_gib"]
    cap = plan.get("max_total_tokens") or None
    # Unpinned, the fraction is the capacity and the headroom is (1 - f) x P: the ceiling is where that
    # reaches the minimum. Pinned, the fraction is only a ceiling (the planner's, from the whole GPU) and
    # the headroom is what the pool leaves of A: its limit is a number of tokens, not a fraction.
    ceiling = pinned_fraction(normalized, pre, headroom_min) if cap else fraction_ceiling(pre, headroom_min)
    most_tokens = Budget(normalized, post).most_tokens(headroom_min) if cap else None
    chosen = plan["mem_fraction_static"]
    zero = 1 - post / pre                   # where the pool reaches 0: A = (1 - f) * P
    lo = max(0.05, round(min(zero, chosen, *[m["mem_fraction_static"] for m in measured] or [chosen]) - 0.02, 2))
    fractions = _frange(lo, 0.99, step)
    if chosen not in fractions:
        fractions = sorted(fractions + [chosen])
    data = {
        "fractions": fractions,
        "pool": _line(spec, fractions, cap),
        "pool_uncapped": _line(spec, fractions, None) if cap else None,
        "cap": cap,
        "dtype": normalized["kv_cache_dtype"],
        "cell": describe_cell(normalized).split(",")[0],          # e.g. "bf16 MLA latent KV"
        "fp8_pool": None,
        "target": plan["context_length"],
        "required": plan.get("required_pool_tokens", plan["context_length"]),
        "policy": plan.get("pool_policy"),
        "chosen": {"mem_fraction_static": chosen, "pool_tokens": plan["predicted_pool_tokens"],
                   "headroom_gib": plan["headroom_gib"]},
        "ceiling": ceiling,
        "most_tokens": most_tokens,
        "min_headroom_gib": headroom_min,
        "pre_load_avail_gib": pre,
        "post_load_avail_gib": post,
        "calibrated": calibrated,
        # A boot may name the setup it ran under where that differs from today's (`setup`: spec keys).
        "measured": [dict(m, predicted=sglang_kvplan.pool_tokens(dict(spec, **(m.get("setup") or {})),
                                                                  m["mem_fraction_static"])) for m in measured],
        # the model's window, or the one sglang_rope_scaling gives it
        "native_context": context_window(normalized)[0] or None,
        # The line each other setup the boots ran under would draw (e.g. an older release's rules).
        "measured_lines": {
            ", ".join("%s %s" % kv for kv in sorted(setup.items())): _line(dict(spec, **setup), fractions, None)
            for setup in [m["setup"] for m in measured if m.get("setup")]},
    }
    if not normalized["kv_cache_dtype"].startswith("fp8"):
        data["fp8_pool"] = _line(dict(spec, kv_cache_dtype=FP8), fractions, cap)
    data["tradeoff"] = tradeoff(spec, data)
    return data


def tradeoff(spec, data):
    """Full-length requests the pool holds at each context target: at this plan's fraction, and at the
    largest fraction the headroom allows (bf16 as configured, and fp8)."""
    ceiling_pool = sglang_kvplan.pool_tokens(spec, data["ceiling"])
    fp8_pool = (sglang_kvplan.pool_tokens(dict(spec, kv_cache_dtype=FP8), data["ceiling"])
                if data["fp8_pool"] is not None else None)
    if data["cap"]:
        # Pinned: the most the headroom allows is a pin at most_tokens (pool_policy max), where the profile
        # at the ceiling reaches it.
        normalized = normalize_spec(spec)
        post = data["post_load_avail_gib"]
        ceiling_pool = min(ceiling_pool, data["most_tokens"])
        if fp8_pool is not None:
            fp8_most = Budget(normalize_spec(dict(spec, kv_cache_dtype=FP8)), post).most_tokens(
                normalized["min_headroom_gib"])
            fp8_pool = min(fp8_pool, fp8_most)
    largest = max(ceiling_pool, fp8_pool or 0, data["target"])
    if data["native_context"]:
        # SGLang refuses a context past the model's window (without an override): stop the lines there.
        largest = max(min(largest, data["native_context"]), data["target"])
    # 4k, 6k, 8k, 12k, ... (powers of two and the halfway points), the target, and the largest.
    contexts, power = [], 4096
    while power <= largest:
        contexts += [c for c in (power, power * 3 // 2) if c <= largest]
        power *= 2
    contexts = sorted(set(contexts + [data["target"], largest]))
    return {
        "contexts": contexts,
        "pool_at_ceiling": ceiling_pool,
        "requests_at_ceiling": [ceiling_pool // c for c in contexts],
        "fp8_pool_at_ceiling": fp8_pool,
        "fp8_requests_at_ceiling": [fp8_pool // c for c in contexts] if fp8_pool is not None else None,
        "pool_at_plan": data["chosen"]["pool_tokens"],
        "requests_at_plan": data["chosen"]["pool_tokens"] // data["target"],
    }


def _thousands(value, _pos=None):
    return "{:,.0f}".format(value)


def draw(data, title):
    """PNG bytes of the two panels, and the Figure (tests read the plotted lines back from its axes)."""
    import matplotlib
    matplotlib.use("Agg")
    from matplotlib.figure import Figure
    from matplotlib.ticker import FuncFormatter

    fig = Figure(figsize=(13, 6.6), dpi=100, layout="constrained")  # the legends below the axes
    left, right = fig.subplots(1, 2, width_ratios=[3, 2])
    dtype = data["cell"]
    left.plot(data["fractions"], data["pool"], color="tab:blue", lw=2, label="pool, %s (SGLang's formula)" % dtype,
              gid="pool")
    if data["pool_uncapped"]:
        left.plot(data["fractions"], data["pool_uncapped"], color="tab:blue", lw=1, ls=":", gid="pool_uncapped",
                  label="pool without the cap")
        left.axhline(data["cap"], color="tab:purple", ls="-.", lw=1, gid="cap",
                     label="--max-total-tokens %s" % _thousands(data["cap"]))
    if data["fp8_pool"]:
        left.plot(data["fractions"], data["fp8_pool"], color="tab:green", lw=1.5, ls="--", gid="fp8",
                  label="pool with fp8_e4m3 KV")
    left.axhline(data["target"], color="tab:red", lw=1.2, gid="target",
                 label="target %s tokens" % _thousands(data["target"]))
    if data["required"] != data["target"]:
        left.axhline(data["required"], color="tab:red", lw=1, ls=":", gid="required",
                     label=("planned with margin %s" if data["policy"] == "fraction"
                            else "planned: target + draft tokens %s")
                     % _thousands(data["required"]))
    if data["cap"]:
        left.axhspan(data["most_tokens"], 10 ** 9, color="0.85", gid="headroom",
                     label="pools leaving under %.1f GiB of A (> %s)" % (data["min_headroom_gib"],
                                                                        _thousands(data["most_tokens"])))
    else:
        left.axvspan(data["ceiling"], 0.99, color="0.85", gid="headroom",
                     label="under %.1f GiB headroom (f > %.3f)" % (data["min_headroom_gib"], data["ceiling"]))
    for name, line in data["measured_lines"].items():
        left.plot(data["fractions"], line, color="tab:orange", lw=1, ls=":", gid="measured_line",
                  label="the measured boots' setup (%s)" % name)
    chosen = data["chosen"]
    left.plot([chosen["mem_fraction_static"]], [chosen["pool_tokens"]], "o", ms=10, color="black", gid="chosen",
              label="plan: f %.3f -> %s tokens, %.1f GiB headroom"
                    % (chosen["mem_fraction_static"], _thousands(chosen["pool_tokens"]), chosen["headroom_gib"]))
    if chosen["mem_fraction_static"] < data["ceiling"] and not data["cap"]:
        left.annotate("", xy=(data["ceiling"], chosen["pool_tokens"]), xytext=(chosen["mem_fraction_static"],
                      chosen["pool_tokens"]), arrowprops={"arrowstyle": "<->", "color": "0.3"})
        left.annotate("headroom %.1f GiB\n(min %.1f)" % (chosen["headroom_gib"], data["min_headroom_gib"]),
                      ((chosen["mem_fraction_static"] + data["ceiling"]) / 2, chosen["pool_tokens"]),
                      textcoords="offset points", xytext=(0, -26), ha="center", fontsize=8, color="0.3")
    if data["measured"]:
        left.plot([m["mem_fraction_static"] for m in data["measured"]], [m["pool_tokens"] for m in data["measured"]],
                  "D", ms=7, mfc="none", mec="tab:orange", mew=2, gid="measured", label="boots measured on this host")
        for m in data["measured"]:
            left.annotate(_thousands(m["pool_tokens"]), (m["mem_fraction_static"], m["pool_tokens"]),
                          textcoords="offset points", xytext=(-8, 8), ha="right", fontsize=8, color="tab:orange")
    left.set_xlim(data["fractions"][0], 0.99)
    top = max(max(data["pool"]), max(data["fp8_pool"] or [0]))
    left.set_ylim(0, max(top, data["target"], data["most_tokens"] or 0) * 1.08)
    left.yaxis.set_major_formatter(FuncFormatter(_thousands))
    left.set_xlabel("--mem-fraction-static")
    left.set_ylabel("KV pool (max_total_num_tokens)")
    left.set_title("pool vs --mem-fraction-static (P %.3f GiB, A %.3f GiB, %s)"
                   % (data["pre_load_avail_gib"], data["post_load_avail_gib"],
                      "calibrated" if data["calibrated"] else "estimated"), fontsize=10)
    left.grid(alpha=0.3)
    # under the axes: inside, a legend covered the measured boots' labels (issue 37)
    left.legend(loc="upper left", bbox_to_anchor=(0, -0.12), ncol=2, fontsize=8, frameon=False)

    trade = data["tradeoff"]
    right.step(trade["contexts"], [max(r, 0.5) for r in trade["requests_at_ceiling"]], where="post", color="tab:blue",
               gid="requests", label="%s, pool %s (f %.3f)" % (dtype, _thousands(trade["pool_at_ceiling"]),
                                                                  data["ceiling"]))
    if trade["fp8_requests_at_ceiling"]:
        right.step(trade["contexts"], [max(r, 0.5) for r in trade["fp8_requests_at_ceiling"]], where="post",
                   color="tab:green", ls="--", gid="fp8_requests",
                   label="fp8_e4m3 KV, pool %s (f %.3f)" % (_thousands(trade["fp8_pool_at_ceiling"]), data["ceiling"]))
    right.plot([data["target"]], [max(trade["requests_at_plan"], 0.5)], "o", color="black", ms=9, gid="plan_point",
               label="this plan: %d x %s tokens" % (trade["requests_at_plan"], _thousands(data["target"])))
    if data["native_context"]:
        right.axvline(data["native_context"], color="0.4", ls=":", gid="native",
                      label="model window %s" % _thousands(data["native_context"]))
    right.set_xscale("log", base=2)
    right.set_yscale("log", base=2)
    right.set_ylim(0.5, None)
    right.xaxis.set_major_formatter(FuncFormatter(lambda v, _p: "%dk" % (v // 1024) if v >= 1024 else "%d" % v))
    right.yaxis.set_major_formatter(FuncFormatter(lambda v, _p: "%d" % v if v >= 1 else "0"))
    right.set_xlabel("context per request (tokens)")
    right.set_ylabel("full-length requests the pool holds")
    right.set_title("context vs concurrency, most memory the headroom allows", fontsize=10)
    right.grid(alpha=0.3, which="both")
    right.legend(loc="upper left", bbox_to_anchor=(0, -0.12), fontsize=8, frameon=False)
    fig.suptitle(textwrap.fill(title, 150), fontsize=11)
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    return buffer.getvalue(), fig
