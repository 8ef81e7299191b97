"""The full proof's short needle prompts sent side by side, each with its own number."""

from __future__ import annotations

import random
import threading
import time

from ansible.module_utils.sglang_proof_checks import answer_matches
from ansible.module_utils.sglang_proof_failures import SmokeFailure, fmt
from ansible.module_utils.sglang_proof_generate import long_request
from ansible.module_utils.sglang_proof_prompt import FOX_FILLER, NEEDLE_HEAD, NEEDLE_TAIL

CONCURRENT_MAX = 64  # the most short prompts the full proof sends at once (SGLang's unset default is 2,048)
CONCURRENT_REPEATS = 24  # filler sentences in each concurrent prompt: a few hundred tokens


def concurrent_prompts(client, model, count, max_tokens, expect=None):
    """`count` short needle prompts sent at once, each with its own number: {requests, answered, seconds (to the
    last answer), completion_tokens, decode_tokens_per_s, prompt_tokens, check}. A server that serializes them
    shows it in the seconds; one that mixes them up, or drops one, fails the check. Each answer must hold its own
    number, or match `expect` when the operator gave one (a model that cannot answer the needle)."""
    draw = random.SystemRandom()
    needles = draw.sample(range(1_000_000, 10_000_000), count)
    answers = [None] * count

    def one(index):
        prompt = NEEDLE_HEAD % needles[index] + FOX_FILLER * CONCURRENT_REPEATS + NEEDLE_TAIL
        try:
            answers[index] = long_request(client, model, prompt, max_tokens, False)
        except SmokeFailure as error:
            answers[index] = error

    start = time.monotonic()
    threads = [threading.Thread(target=one, args=(i,), daemon=True) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    seconds = time.monotonic() - start
    wrong = []
    tokens = prompt_tokens = 0
    for index, needle in enumerate(needles):
        answer = answers[index]
        if not isinstance(answer, tuple):
            wrong.append("%d: %s" % (needle, answer))
            continue
        text, usage = answer[0], answer[1]
        tokens += int(usage.get("completion_tokens") or 0)
        prompt_tokens = max(prompt_tokens, int(usage.get("prompt_tokens") or 0))
        if not answer_matches(expect or r"\b%d\b" % needle, text):
            wrong.append("%d answered %r" % (needle, text))
    answered = count - len(wrong)
    detail = ("%d short prompts (%s tokens each) sent at once, %d answered %s; the last answer "
              "after %.2f s, %s completion tokens/s in all" % (count, fmt(prompt_tokens), answered,
                                                               "matching /%s/" % expect if expect else
                                                               "with their own number", seconds,
                                                               fmt(int(tokens / seconds)) if seconds > 0 else "?"))
    if wrong:
        detail += "; wrong: " + "; ".join(wrong[:4]) + (" (and %d more)" % (len(wrong) - 4) if len(wrong) > 4 else "")
    return {"requests": count, "answered": answered, "seconds": round(seconds, 3), "completion_tokens": tokens,
            "decode_tokens_per_s": round(tokens / seconds, 1) if seconds > 0 else None, "prompt_tokens": prompt_tokens,
            "check": {"name": "concurrency", "ok": not wrong, "detail": detail}}
