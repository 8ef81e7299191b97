"""The double admits as SGLang's scheduler does (sglang/_double_scheduler.py): at most --max-running-requests decode
at once and the rest wait; a request whose input and decode do not fit the free pool waits too."""

import json
import os
import sys
import threading
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

from run_double import running_double  # noqa: E402
from sglang._double_scheduler import Admission  # noqa: E402

STEP = 0.1  # simulated seconds per decoded token
TOKENS = 8  # tokens each request decodes: one request decodes for 0.8 s
GPU = {"decode_seconds_per_token": STEP, "load_seconds": 0.0, "graph_seconds": 0.0}
ONE = STEP * TOKENS


def _generate(url, text="The secret number is 4821937.\nWhat is the number?", tokens=TOKENS):
    payload = {"text": text, "sampling_params": {"max_new_tokens": tokens, "ignore_eos": True}}
    request = urllib.request.Request(url + "/generate", json.dumps(payload).encode(),
                                     {"content-type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())


def _all_at_once(url, count, **kwargs):
    """Seconds until the last of `count` requests sent together has its answer, and the answers."""
    start = time.monotonic()
    with ThreadPoolExecutor(count) as pool:
        answers = list(pool.map(lambda _: _generate(url, **kwargs), range(count)))
    return time.monotonic() - start, answers


def test_with_one_slot_n_requests_take_n_times_one_and_with_n_slots_about_one():
    n = 4
    with running_double(["--context-length", "8192", "--max-running-requests", "1"], GPU, preset="llama-3.1-8b") \
            as (url, _log):
        serial, answers = _all_at_once(url, n)
    with running_double(["--context-length", "8192", "--max-running-requests", str(n)], GPU,
                        preset="llama-3.1-8b") as (url, _log):
        together, _ = _all_at_once(url, n)
    assert all(a["meta_info"]["completion_tokens"] == TOKENS for a in answers)
    assert serial >= n * ONE * 0.95, serial  # each waited for the one before it
    assert together < 2 * ONE, together  # decoded side by side: about one request's time


def test_a_request_that_does_not_fit_the_free_pool_waits():
    # The pool pinned at 1,000 tokens: each request reserves ~600 (input + max_new_tokens), so two do not fit
    # together even with four slots: the second waits for the first.
    filler = "The quick brown fox jumps over the lazy dog. " * 60  # ~600 tokens with the double's tokenizer
    flags = ["--context-length", "1000", "--max-total-tokens", "1000", "--max-running-requests", "4"]
    with running_double(flags, GPU, preset="llama-3.1-8b") as (url, _log):
        elapsed, answers = _all_at_once(url, 2, text=filler + "\nWhat animal?")
        small, _ = _all_at_once(url, 2, text="What animal is a fox?")
    assert all(a["meta_info"]["prompt_tokens"] > 450 for a in answers), answers
    assert elapsed >= 2 * ONE * 0.95, elapsed  # one after the other
    assert small < 2 * ONE, small  # two short ones fit side by side


def test_admission_keeps_the_limit_and_the_queue_order():
    admission = Admission(max_running=2, pool_tokens=100)
    order, gate = [], threading.Event()

    def request(name, tokens):
        admission.admit(tokens)
        order.append(name)
        gate.wait(5)
        admission.release(tokens)

    threads = [threading.Thread(target=request, args=(name, tokens))
               for name, tokens in (("a", 10), ("b", 10), ("c", 10))]
    for thread in threads:
        thread.start()
        time.sleep(0.05)
    assert order == ["a", "b"] and admission.running == 2 and admission.waiting() == 1  # c waits for a slot
    gate.set()
    for thread in threads:
        thread.join(5)
    assert order == ["a", "b", "c"] and admission.most_running == 2 and admission.running == 0


def test_admission_waits_for_room_in_the_pool_first_come_first_served():
    admission = Admission(max_running=8, pool_tokens=100)
    admission.admit(admission.tokens_for(50, 20))  # 70 of 100 reserved
    done = []
    big = threading.Thread(target=lambda: (admission.admit(40), done.append("big")))
    big.start()
    time.sleep(0.05)
    small = threading.Thread(target=lambda: (admission.admit(5), done.append("small")))
    small.start()
    time.sleep(0.05)
    assert done == []  # the big one does not fit; the small one waits behind it, as SGLang's queue does
    admission.release(70)
    big.join(5)
    small.join(5)
    assert done == ["big", "small"]
    assert admission.tokens_for(10, 10_000) == 100  # the decode clipped at 4,096, never more than the pool
