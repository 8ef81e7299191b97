"""The full proof: the pool and context checked, the long prompt sized, sent once and answered, decode measured
on it, then the short prompts side by side."""

from __future__ import annotations

import time

from ansible.module_utils.sglang_proof_checks import answer_matches, check_capacity
from ansible.module_utils.sglang_proof_concurrency import CONCURRENT_MAX, concurrent_prompts
from ansible.module_utils.sglang_proof_failures import SmokeFailure, fmt
from ansible.module_utils.sglang_proof_generate import long_needle
from ansible.module_utils.sglang_proof_http import Client
from ansible.module_utils.sglang_proof_limits import TARGET_MIN, accepted_tokens, answer_room, prompt_target, too_long
from ansible.module_utils.sglang_proof_prompt import PromptSizer, make_prompt_parts
from ansible.module_utils.sglang_proof_server import ready_server


def full_proof(params, result, progress, asked):
    """The full proof, its findings written into `result`; `asked` is the prompt size validate() parsed. A step that
    cannot go on raises SmokeFailure at once; the checks that failed are named in one SmokeFailure at the end."""
    head, filler, tail, needle = make_prompt_parts(params["question"], params["filler"])
    expect = params.get("expect")
    if expect is None:
        expect = r"\b%d\b" % needle if needle is not None else r"\bdog\b"
    result.update(question=params["question"], needle=needle, expect=expect,
                  context_target=params.get("context_target"))

    client = Client(params["url"], params["api_key"], params["timeout"], params["validate_certs"])
    # The server itself (pool, context, tokenizer), when the long request goes through a router at url.
    server = (Client(params["info_url"], params["api_key"], params["timeout"], params["validate_certs"])
              if params.get("info_url") else client)
    checks = result["checks"]
    pool, max_req_input_len, model, context_length, reserved = ready_server(params, result, progress, server,
                                                                            "proof")
    check_capacity(params, checks, pool, context_length)

    room, room_words = answer_room(params)
    accepted = accepted_tokens(pool, max_req_input_len, context_length, room, reserved)
    target = prompt_target(asked, accepted, params, context_length, max_req_input_len, reserved)
    result["prompt_target"] = target
    model = params["model"] or model
    sizer = PromptSizer(server, model, head, filler, tail)
    calls_before = server.calls
    progress.stage("proof: sizing the prompt to %s tokens (pool %s)" % (fmt(target), fmt(pool)))
    prompt, counted = sizer.size(target)
    result["calibration_calls"] = server.calls - calls_before
    if counted > accepted:
        how = "counted by the server's /tokenize" if sizer.has_tokenize else "estimated from short requests"
        raise SmokeFailure(too_long("The sized prompt has %s tokens (%s)" % (fmt(counted), how), accepted,
                                    context_length, max_req_input_len, room_words, reserved))

    sent = time.time()
    progress.stage("proof: prefill started, %s prompt tokens" % fmt(counted), sent)

    def first_text(ttft):
        progress.stage("proof: first token after %.1f s (%s prompt tokens/s), answering"
                       % (ttft, fmt(int(counted / ttft)) if ttft > 0 else "?"), sent)

    def decoding(prompt_tokens):  # the needle request's own tokens after its first: decode at the full context
        progress.stage("proof: decoding %d tokens at %s tokens of context"
                       % (params["decode_tokens"], fmt(int(prompt_tokens or counted))))
    text, usage, elapsed, ttft, decode = long_needle(client, model, prompt, params, first_text, decoding)
    counted = int(usage["prompt_tokens"])
    result.update(prompt_tokens=counted, completion_tokens=int(usage.get("completion_tokens") or 0),
                  completion=text, elapsed_s=round(elapsed, 3), ttft_s=round(ttft, 3) if ttft is not None else None,
                  prefill_tokens_per_s=round(counted / (ttft or elapsed), 1) if (ttft or elapsed) > 0 else None)
    off = abs(counted - target) / float(target)
    detail = ("server counted %s prompt tokens for %s asked (%.2f%% off; the server accepts up to %s)"
              % (fmt(counted), fmt(target), off * 100, fmt(accepted)))
    size_ok = off <= 0.01
    if asked == "target":
        fill_to = params.get("context_target") or context_length
        filled = counted / float(fill_to)
        size_ok = size_ok and filled >= TARGET_MIN
        detail += ", %.1f%% of the %s-token %s (95%% needed)" % (
            filled * 100, fmt(fill_to), "context target" if params.get("context_target") else "context length")
    checks.append({"name": "prompt_tokens", "ok": size_ok, "detail": detail})
    answer_ok = answer_matches(expect, text)
    where = (" (the needle stated once at the start of the prompt; a server that dropped early context cannot "
             "answer it)" if needle is not None and params.get("expect") is None else "")
    checks.append({"name": "answer", "ok": answer_ok, "detail": "answer %r %s /%s/%s" % (
        text, "matches" if answer_ok else "does not match", expect, where)})
    if answer_ok and size_ok:  # decode at a context the proof did not prove would say little
        result["decode"] = decode
        count = min(params.get("concurrent_requests") or 0, CONCURRENT_MAX)
        if count:
            progress.stage("proof: %d short prompts at once" % count)
            result["concurrency"] = concurrent_prompts(client, model, count, params["max_tokens"], params.get("expect"))
            checks.append(result["concurrency"].pop("check"))
    failed = [c for c in checks if not c["ok"]]
    if failed:
        raise SmokeFailure("Smoke test failed: " + "; ".join(c["detail"] for c in failed))
