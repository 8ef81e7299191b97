"""First boot of 200 simulated new hosts: the filled pool (the default), the pinned one and the older scheme.

The first setup is ct200 as inventory/ plans it (its model group's group_vars and its host_vars, without its
calibration: a new host of its class); two other setups follow.

Each host's true P and A differ from the planner's estimate as real hosts do (ct200 had ~10 GiB in use
before the weights loaded; a checkpoint's shards are uneven): P_true = the GPU less 0.5-12 GiB, and the
weights per GPU 0.9-1.15 x the estimate. Both schemes plan from the estimate, then "boot" with SGLang's
own rule, written here from its source (0.5.23 kv_cache_configurator.py: profile = A - P(1 - f), pool =
min(profile, cap) in whole pages; a draft loaded before the profile taken off), independently of the
planner. A pool short of what was planned costs
one corrective restart, re-planned from the measured P and A; a target that does not fit fails (a figure: the
"failed" column). A setup the planner refuses outright measures nothing: the benchmark prints why and exits 1, with
no figure.

    python tests/benchmarks/bench_first_boot.py [hosts] [seed]

`make test` runs it once for 5 hosts a setup (tests/unit/test_benchmarks_cheap.py).
"""

import os
import random
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "lib"))

import sglang_kvplan as kv  # noqa: E402
from layout import MODEL_HOST, host_vars  # noqa: E402
from outcome import BenchmarkFailed, finish  # noqa: E402
from sglang_kvplan.spec import BOOT_FLAG_KEYS  # noqa: E402

GIB = 1 << 30
# The knobs the inventory's ct200 is planned by (sglang_<key> in its group_vars and host_vars), for its row.
INVENTORY_KEYS = ("model", "tp_size", "pp_size", "gpu_memory_mib", "context_target", "kv_cache_dtype",
                  "min_headroom_gib", "uncalibrated_margin", "speculative")


def inventory_setup(host=MODEL_HOST):
    """(name, spec) of `host` as inventory/ plans it (its groups' group_vars and its host_vars, tests/benchmarks/
    layout.py), less its calibration: a new host of its class, which boots from the estimate."""
    knobs = host_vars(host)
    missing = [key for key in ("model", "tp_size", "gpu_memory_mib", "context_target") if
               knobs.get("sglang_" + key) is None]
    if missing:
        raise BenchmarkFailed("inventory/ gives %s no %s: the benchmark plans it from there"
                              % (host, ", ".join("sglang_" + key for key in missing)))
    spec = {key: knobs["sglang_" + key] for key in INVENTORY_KEYS if knobs.get("sglang_" + key) is not None}
    name = "%s %s%s, TP%d, %dk" % (host, spec["model"], " + " + spec["speculative"]["algorithm"]
                                   if spec.get("speculative") else "", spec["tp_size"],
                                   spec["context_target"] // 1000)
    return name, spec


SETUPS = [  # (name, spec) beside the inventory's ct200, which comes first
    ("Llama 3.1 70B, TP4 on H100 80GB, 128k", {
        "model": "llama-3.1-70b", "tp_size": 4, "gpu_memory_mib": 81_559, "context_target": 131_072}),
    ("Qwen3 235B-A22B, TP8 on H200, 32k x fp8", {
        "model": "qwen3-235b-a22b", "tp_size": 8, "gpu_memory_mib": 143_771, "context_target": 32_768,
        "kv_cache_dtype": "fp8_e4m3"}),
]


def sglang_pool(pre, post, fraction, cell, page, cap):
    """What SGLang allocates: the profile, capped, in whole pages."""
    profiled = int((post - pre * (1 - fraction)) * GIB) // cell
    if cap is not None:
        profiled = min(profiled, cap)
    return max(profiled // page * page, 0)


def deploy(spec, true_p, true_a, policy):
    """(corrective restarts, pool, headroom GiB, failed, second run restarts) for one first deploy under `policy`.
    A boot is corrected once when its pool is under the plan, or (an unpinned fill) it left less than the headroom;
    the second run re-plans from the calibration the boot left, and restarts when its flags differ."""
    spec = dict(spec, pool_policy=policy)
    headroom_min = spec.get("min_headroom_gib", 4.0)
    try:
        plan = kv.plan(spec)
    except kv.KVPlanError:
        return 0, 0, 0.0, True, False
    restarts = 0
    for _ in range(2):  # the first boot, and at most one corrective restart
        cell = plan["kv_bytes_per_token"]
        # 0.5.23 loads a speculative draft before it profiles: its weights leave the memory profiled.
        early = plan["draft_weights_gib"] if spec.get("speculative") and \
            kv.RULES[plan["release_rules"]]["speculative_pool"] == "in_cell" else 0.0
        pool = sglang_pool(true_p, true_a - early, plan["mem_fraction_static"], cell, 1, plan["max_total_tokens"])
        headroom = true_a - pool * cell / GIB - plan["draft_weights_gib"]
        short = pool < plan["required_pool_tokens"] or (
            policy == "fill" and plan["max_total_tokens"] is None and headroom < headroom_min - 0.01)
        if not short or restarts:
            return restarts, pool, headroom, pool < spec["context_target"], second_run(spec, plan, true_p, true_a,
                                                                                       pool)
        try:
            plan = kv.plan(dict(spec, pre_load_avail_gib=round(true_p, 2), post_load_avail_gib=round(true_a, 2)))
        except kv.KVPlanError:
            return restarts, pool, headroom, True, False
        restarts += 1
    return restarts, pool, headroom, pool < spec["context_target"], False


def second_run(spec, plan, true_p, true_a, pool):
    """Whether the next run, planned from the calibration this boot left (as the role stores it), changes the
    flags, and so restarts the server."""
    flags = {key: plan[key] for key in BOOT_FLAG_KEYS if key != "mem_fraction_static"}
    cal = kv.calibrate(spec, {"pre_load_avail_gib": round(true_p, 2), "post_load_avail_gib": round(true_a, 2),
                              "mem_fraction_static": plan["mem_fraction_static"], "pool_tokens": pool,
                              "max_total_tokens": plan["max_total_tokens"], "boot_flags": flags})
    try:
        again = kv.plan(dict(spec, pre_load_avail_gib=cal["pre_load_avail_gib"],
                             post_load_avail_gib=cal["post_load_avail_gib"], boot_flags=cal["boot_flags"]))
    except kv.KVPlanError:
        return True  # the measured numbers refuse what the boot serves: the next run fails before any change
    return again["args"] != plan["args"]


def setup_plan(name, spec, policy):
    """The planner's estimate for a setup under `policy`; BenchmarkFailed when it refuses the setup itself."""
    try:
        return kv.plan(dict(spec, pool_policy=policy))
    except kv.KVPlanError as error:
        raise BenchmarkFailed("%s: the planner refuses the setup itself: %s" % (name, error)) from None


def measure(hosts=200, seed=7):
    rng = random.Random(seed)
    lines = ["%d simulated new hosts per setup (seed %d): P = GPU - U(0.5, 12) GiB, weights x U(0.9, 1.15)\n"
             % (hosts, seed)]
    header = "%-44s %-9s %6s %9s %8s %8s %10s %9s %12s %8s" % (
        "setup", "scheme", "fits", "restarts", "hosts>0", "failed", "pool/tgt", "planned", "headroom min", "2nd run")
    lines += [header, "-" * len(header)]
    for name, spec in [inventory_setup()] + SETUPS:
        estimate = setup_plan(name, spec, "target")
        weights_est = estimate["pre_load_avail_gib"] - estimate["post_load_avail_gib"]
        target = spec["context_target"]
        draws = []
        for _ in range(hosts):
            true_p = spec["gpu_memory_mib"] / 1024 - rng.uniform(0.5, 12.0)
            draws.append((true_p, true_p - weights_est * rng.uniform(0.9, 1.15)))
        cell = estimate["kv_bytes_per_token"]
        fits = [a - estimate["max_total_tokens"] * cell / GIB - estimate["draft_weights_gib"] >= spec.get(
            "min_headroom_gib", 4.0) for _, a in draws]
        for policy, label in (("fraction", "fraction"), ("target", "pinned"), ("fill", "fill")):
            results = [deploy(spec, p, a, policy) for p, a in draws]
            fitting = [r for r, ok in zip(results, fits, strict=True) if ok]
            restarts = sum(r[0] for r in fitting)
            hosts_restarted = sum(1 for r in fitting if r[0])
            failed = sum(1 for r in fitting if r[3])
            served = [r[1] / target for r in fitting if not r[3]]
            ratio = "%.2f-%.2f" % (min(served), max(served)) if served else "-"
            planned = setup_plan(name, spec, policy)["required_pool_tokens"]
            headroom = min((r[2] for r in fitting if not r[3]), default=0.0)
            second = sum(1 for r in fitting if r[4])
            lines.append("%-44s %-9s %6d %9d %8d %8d %10s %9s %12.2f %8d" % (
                name, label, len(fitting), restarts, hosts_restarted, failed, ratio, f"{planned:,}", headroom,
                second))
        lines.append("%-44s %-9s %6d   (targets that do not fit: refused or failed with the numbers, both schemes)"
                     % ("", "no fit", hosts - sum(fits)))
    lines.append("\nfits: hosts where the target physically fits with the headroom; restarts: corrective restarts"
                 " among them;\npool/tgt: the pools served over the target, least and most; planned: the pool asked for"
                 " (the pin is the target\nplus --speculative-num-draft-tokens, MLA pins rounded up to 64); headroom"
                 " min: GiB left outside the pool\non the least host; 2nd run: hosts whose next run, planned from the"
                 " calibration the boot left, changes the\nflags (a restart).")
    return lines


def main(argv=None):
    argv = sys.argv[1:3] if argv is None else argv
    return finish("bench_first_boot", lambda: measure(*(int(a) for a in argv)))


if __name__ == "__main__":
    sys.exit(main())
