"""A boot's log -> the calibration the next plan uses.

SGLang logs P and A with two decimals ('avail mem=85.33 GB'): 0.005 GiB is ~76 tokens of Kimi's
pool, enough to plan a hair short. The pool it logged at a known fraction pins A exactly:
    N = floor((A - P * (1 - f)) * 2**30 / cell)  =>  A = (N + 0.5) * cell / 2**30 + P * (1 - f)
(the + 0.5 puts A mid-way in the one-token window the floor leaves).
"""

from .memory import GIB, pool_tokens
from .model import cell_bytes
from .spec import KVPlanError, normalize_spec


def calibrate(raw_spec, boot):
    """`boot`: pre_load_avail_gib, post_load_avail_gib (as logged), mem_fraction_static, pool_tokens.

    Returns {pre_load_avail_gib, post_load_avail_gib, logged_post_load_avail_gib, mem_fraction_static,
    pool_tokens} with A refined from the pool, checked against the logged A.
    """
    spec = normalize_spec(dict(raw_spec, pre_load_avail_gib=None, post_load_avail_gib=None))
    try:
        pre = float(boot["pre_load_avail_gib"])
        logged_post = float(boot["post_load_avail_gib"])
        fraction = float(boot["mem_fraction_static"])
        pool = int(boot["pool_tokens"])
    except (KeyError, TypeError, ValueError) as error:
        raise KVPlanError("boot: needs pre_load_avail_gib, post_load_avail_gib, mem_fraction_static and "
                          "pool_tokens read from SGLang's log; got %r (%s)." % (boot, error)) from None
    cell = cell_bytes(spec)
    post = (pool + 0.5) * cell / GIB + pre * (1 - fraction)
    if spec["page_size"] == 1 and abs(post - logged_post) > 0.011:
        # The logged A disagrees with the pool by more than its rounding: the cell or the fraction is not
        # what SGLang used (another KV dtype, a draft model, a max_total_tokens cap). Trust the log.
        post = logged_post
    if pool_tokens(pre, post, fraction, cell, spec["page_size"]) > pool:
        post = logged_post
    return {"pre_load_avail_gib": round(pre, 6), "post_load_avail_gib": round(post, 6),
            "logged_post_load_avail_gib": logged_post, "mem_fraction_static": fraction, "pool_tokens": pool}
