"""Benchmark: how close sglang_smoke_test sizes its prompt, and the calls it takes.

Prints asked vs server-counted prompt tokens for 1k, 10k, 60k and 190k against the SGLang double,
with /tokenize (new API) and without it (old API, calibrated with short completions).
Run: .venv/bin/python tests/benchmarks/bench_prompt_sizing.py
"""

import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(HERE, os.pardir, "sglang_double"), os.path.join(HERE, os.pardir, os.pardir, "library")]

import sglang_smoke_test as smoke  # noqa: E402
from run_double import running_double  # noqa: E402

FLAGS = ["--tp", "8", "--context-length", "200000", "--mem-fraction-static", "0.94"]


def main():
    print("%-4s %8s %8s %7s %6s %8s  %s" % ("api", "asked", "counted", "off%", "calls", "seconds", "check"))
    for api in ("new", "old"):
        with running_double(FLAGS, {"api": api}) as (url, _):
            for asked in (1_000, 10_000, 60_000, 190_000):
                result = {"checks": []}
                start = time.monotonic()
                smoke.run({"url": url, "api_key": None, "timeout": 600, "validate_certs": True, "wait_ready": 30,
                           "min_pool_tokens": 200_000, "prompt_tokens": str(asked), "model": None, "stream": False,
                           "filler": "The quick brown fox jumps over the lazy dog. ", "max_tokens": 4,
                           "question": "In one word, what animal is mentioned?", "expect": r"\bdog\b"}, result)
                counted = result["prompt_tokens"]
                print("%-4s %8d %8d %7.3f %6d %8.2f  %s" % (
                    api, asked, counted, 100.0 * abs(counted - asked) / asked, result["calibration_calls"],
                    time.monotonic() - start, "ok" if all(c["ok"] for c in result["checks"]) else "FAILED"))


if __name__ == "__main__":
    main()
