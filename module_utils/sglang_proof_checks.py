"""The proof's two judgements of what the server said: its context and pool hold the target, and an answer
matches what was asked."""

from __future__ import annotations

import re

from ansible.module_utils.sglang_proof_failures import SmokeFailure, fmt


def check_capacity(params, checks, pool, context_length):
    """The context length holds the target, and the pool holds the context (and min_pool_tokens)."""
    target, least = params.get("context_target"), params.get("min_pool_tokens")
    if not isinstance(context_length, int) or context_length <= 0:
        raise SmokeFailure("The server reported no context length (/v1/models max_model_len, server info "
                           "context_length), so the pool cannot be compared with it; is this an SGLang server?")
    reasons = []
    if target is not None:
        ok = context_length >= target
        checks.append({"name": "context", "ok": ok, "detail": "context length %s tokens %s %s (context_target)"
                       % (fmt(context_length), ">=" if ok else "<", fmt(target))})
        if not ok:
            reasons.append(
                "The server's context length is %s tokens, under the context target of %s (context_target=%d): it "
                "refuses longer prompts. Start SGLang with --context-length %d (the role sets it from "
                "sglang_context_target) or lower context_target." % (fmt(context_length), fmt(target), target, target))
    need = max(context_length, least or 0)
    why = "the context length" if need == context_length else "min_pool_tokens=%d" % least
    ok = pool >= need
    checks.append({"name": "pool", "ok": ok, "detail": "pool %s tokens %s %s (%s)"
                   % (fmt(pool), ">=" if ok else "<", fmt(need), why)})
    if not ok:
        reasons.append(
            "The KV pool holds %s tokens (max_total_num_tokens=%d), under the %s required (%s; the server's "
            "context length is %s): a request that long would be rejected. Raise --mem-fraction-static (re-plan "
            "with this host's calibration: the planner does it), use an fp8 KV cache, or lower the context "
            "target." % (fmt(pool), pool, fmt(need), why, fmt(context_length)))
    if reasons:
        raise SmokeFailure(" ".join(reasons))


def answer_matches(expect, text):
    """Search the answer; digit-group separators (4,821,937 or 4 821 937) do not hide a number."""
    plain = re.sub(r"(?<=\d)[,.' _\u00a0\u202f](?=\d{3}\b)", "", text)
    return re.search(expect, text, re.IGNORECASE) is not None or re.search(expect, plain, re.IGNORECASE) is not None
