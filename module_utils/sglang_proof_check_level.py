"""The check level: the proven pool and context still served and one short needle prompt answered, for well under
a second of GPU; any difference raises CheckDifference, and the full proof runs instead."""

from __future__ import annotations

import random

from ansible.module_utils.sglang_proof_checks import answer_matches, check_capacity
from ansible.module_utils.sglang_proof_failures import SmokeFailure, fmt
from ansible.module_utils.sglang_proof_generate import long_request
from ansible.module_utils.sglang_proof_prompt import NEEDLE_HEAD, NEEDLE_TAIL
from ansible.module_utils.sglang_proof_server import ready_server

CHECK_PROMPT_MAX = 64  # the check's whole prompt, in tokens as the server counts them


class CheckDifference(SmokeFailure):
    """What a check found different from the proven state: the full proof runs instead."""


def check_proof(params, result, progress, client, server):
    """The pool and context as proven, and one short needle prompt answered; any difference: CheckDifference."""
    checks = result["checks"]
    pool, max_req_input_len, model, context_length, _reserved = ready_server(params, result, progress, server,
                                                                             "proof (check)")
    differences = []
    if params.get("expect_pool_tokens") not in (None, pool):
        differences.append("pool %s tokens, proven %s" % (fmt(pool), fmt(params["expect_pool_tokens"])))
    if params.get("expect_context_length") not in (None, context_length):
        differences.append("context length %s, proven %s" % (context_length, params["expect_context_length"]))
    if differences:
        raise CheckDifference("the server reports " + " and ".join(differences))
    check_capacity(params, checks, pool, context_length)
    checks.append({"name": "proven", "ok": True, "detail": "pool %s and context length %s tokens, as proven"
                   % (fmt(pool), fmt(context_length))})
    needle = random.SystemRandom().randint(1_000_000, 9_999_999)
    expect = params.get("expect") or r"\b%d\b" % needle
    result.update(question="needle", needle=needle, expect=expect)
    progress.stage("proof (check): one short prompt")
    prompt = NEEDLE_HEAD % needle + NEEDLE_TAIL.lstrip()
    text, usage, elapsed, _ttft = long_request(client, params["model"] or model, prompt, params["max_tokens"], False)
    counted = int(usage["prompt_tokens"])
    result.update(prompt_tokens=counted, completion_tokens=int(usage.get("completion_tokens") or 0),
                  completion=text, elapsed_s=round(elapsed, 3), ttft_s=None, prefill_tokens_per_s=None)
    if counted > CHECK_PROMPT_MAX:
        raise SmokeFailure("The check's short prompt counted %d tokens, over its %d; the server's tokenizer is not "
                           "what the check expects: run the full proof (sglang_proof=full)."
                           % (counted, CHECK_PROMPT_MAX))
    if not answer_matches(expect, text):
        raise CheckDifference("the short prompt's answer %r does not match /%s/" % (text, expect))
    checks.append({"name": "answer", "ok": True, "detail": "a %d-token prompt answered %r in %.2f s"
                   % (counted, text, elapsed)})
