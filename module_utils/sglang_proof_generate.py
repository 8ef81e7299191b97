"""The requests that carry a prompt: a completion (/v1/completions, streamed or not) and the long prompt's one
/generate, whose text is the answer and whose pace is the decode at the full context."""

from __future__ import annotations

import time

from ansible.module_utils.sglang_http import read_bounded
from ansible.module_utils.sglang_proof_failures import HTTPFailure, SmokeFailure
from ansible.module_utils.sglang_proof_http import parse_json


def long_request(client, model, prompt, max_tokens, stream, on_first_text=None):
    """One completion of `prompt` (/v1/completions, temperature 0): (text, usage, elapsed, ttft, None unless
    streamed); a usage without prompt_tokens fails, as the prompt's length is what the proof proves."""
    payload = {"model": model, "prompt": prompt, "max_tokens": max_tokens, "temperature": 0}
    start = time.monotonic()
    ttft = None
    if stream:
        payload.update(stream=True, stream_options={"include_usage": True})
        chunks, ttft = client.stream("/v1/completions", payload, on_first_text)
        text = "".join(c.get("text") or "" for chunk in chunks for c in chunk.get("choices") or [])
        usage = next((chunk["usage"] for chunk in reversed(chunks) if chunk.get("usage")), None)
    else:
        response = client.json("POST", "/v1/completions", payload)
        text = "".join(c.get("text") or "" for c in response.get("choices") or [])
        usage = response.get("usage")
    elapsed = time.monotonic() - start
    if not usage or "prompt_tokens" not in usage:
        raise SmokeFailure("The completion carried no usage.prompt_tokens, so the prompt length cannot be proven.")
    return text, usage, elapsed, ttft


def needle_generate(client, prompt, params, on_first_text=None, on_decoding=None):
    """The long prompt sent once, as one /generate of decode_tokens tokens (ignore_eos, temperature 0): its text is
    the answer and its pace the decode at the full context, so a full proof prefills the full context once (a
    prefill of ~196k tokens takes minutes on a large model). Returns (text, usage, elapsed, ttft, decode).

    Streamed, each event carries the text and meta_info so far (cumulative: SGLang 0.5.23
    entrypoints/http_server.py generate_request, managers/tokenizer_manager.py; spec_* only on the last event);
    the answer is the text of the first max_tokens tokens (the first event's at least), decode the time per output
    token between the first and the last event. Not streamed, one object: decode's counts without its pace.
    HTTP 404/405 (no /generate) is raised as HTTPFailure for the caller's fallback."""
    tokens, budget, streamed = params["decode_tokens"], params["max_tokens"], bool(params["stream"])
    payload = {"text": prompt, "stream": streamed,
               "sampling_params": {"max_new_tokens": tokens, "ignore_eos": True, "temperature": 0}}
    start = time.monotonic()

    def meta_of(event):
        meta = event.get("meta_info") if isinstance(event, dict) else None
        if not isinstance(meta, dict) or not isinstance(event.get("text", ""), str):
            raise SmokeFailure("/generate answered %r, not SGLang's {text, meta_info}: is url an SGLang server?"
                               % (str(event)[:200],))
        reason = meta.get("finish_reason")
        if isinstance(reason, dict) and reason.get("type") == "abort":
            # a scheduler's refusal of a /generate is its one output (tokenizer_manager.py: 0.5.9 :1153-1163,
            # 0.5.23 :1891-1922 _handle_abort_finish_reason)
            raise SmokeFailure("/generate aborted the request for the long prompt: %s" % (
                reason.get("message") or "no reason given (the server's log, journalctl -u sglang, says why)"))
        return meta

    def consume(response):
        """[(arrival, completion_tokens) per event], the last meta_info, the answer."""
        if not streamed:
            event = parse_json(client.url + "/generate", read_bounded(response, what="/generate"))
            meta = meta_of(event)
            return [(time.monotonic(), int(meta.get("completion_tokens") or 0))], meta, event.get("text") or ""
        seen, meta, answer = [], None, None
        # the whole stream is not bounded: each event repeats the text so far (its bytes grow with the square of
        # decode_tokens) and only the last is kept; each line is, and the request's deadline ends it
        for event in client.events(response, "/generate", bound_stream=False):
            meta = meta_of(event)
            done = int(meta.get("completion_tokens") or 0)
            seen.append((time.monotonic(), done))
            if answer is None or done <= budget:
                answer = event.get("text") or ""
            if len(seen) == 1 and on_first_text:
                on_first_text(seen[0][0] - start)
            elif len(seen) == 2 and on_decoding:
                on_decoding(meta.get("prompt_tokens"))
        return seen, meta, answer

    seen, meta, text = client.request("POST", "/generate", payload, consume=consume)
    elapsed = time.monotonic() - start
    if meta is None:
        raise SmokeFailure("/generate's stream for the long prompt ended before its first token: the server closed "
                           "it (its log, journalctl -u sglang, says why); the prompt and the answer are not proven.")
    if "prompt_tokens" not in meta:
        raise SmokeFailure("/generate's answer carried no meta_info.prompt_tokens, so the prompt length cannot be "
                           "proven; is url an SGLang server?")
    count = int(meta.get("completion_tokens") or 0)
    if not meta.get("finish_reason"):
        raise SmokeFailure("/generate's stream for the long prompt ended after %d of its %d tokens without a "
                           "finish_reason: the server closed it early (its log, journalctl -u sglang, says why)."
                           % (count, tokens))
    usage = {"prompt_tokens": int(meta["prompt_tokens"]), "completion_tokens": count}
    decode = {"tokens": count, "prompt_tokens": usage["prompt_tokens"], "cached_tokens": meta.get("cached_tokens"),
              "seconds": None, "tpot_ms": None}
    if streamed:
        (first, first_count), (last, last_count) = seen[0], seen[-1]
        # the tokens after the first event's (one, or a first verify's several) took last - first
        decode.update(seconds=round(last - first, 3),
                      tpot_ms=round((last - first) * 1000.0 / (last_count - first_count), 2)
                      if last_count > first_count else None)
    else:
        decode["note"] = "stream is false: one answer, so no time per output token"
    verify = meta.get("spec_verify_ct")
    if verify:
        decode.update(spec_verify_ct=int(verify), accept_length=round(count / float(verify), 3),
                      spec_accept_length=meta.get("spec_accept_length"), spec_accept_rate=meta.get("spec_accept_rate"))
    ttft = seen[0][0] - start if streamed else None
    return text, usage, elapsed, ttft, decode


def long_needle(client, model, prompt, params, on_first_text=None, on_decoding=None):
    """needle_generate; a server without /generate (HTTP 404/405) gets the long prompt through /v1/completions
    (max_tokens, stopping at the end of the answer) and decode is not measured: a second request would prefill the
    full context again."""
    status = 0  # set before the try: pylint sees it bound on every path
    try:
        return needle_generate(client, prompt, params, on_first_text, on_decoding)
    except HTTPFailure as error:
        if error.status not in (404, 405):
            raise
        status = error.status
    text, usage, elapsed, ttft = long_request(client, model, prompt, params["max_tokens"], params["stream"],
                                              on_first_text)
    return text, usage, elapsed, ttft, {"note": "the server serves no /generate (HTTP %d): decode not measured"
                                                % status}
