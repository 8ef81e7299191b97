"""Benchmark: how close sglang_smoke_test sizes its prompt, and the calls it takes.

Prints asked vs server-counted prompt tokens against the SGLang double (ct200: 200,000-token context,
216,993-token pool), with /tokenize (new API) and without it (old API, calibrated with short
completions), for the needle question: fixed sizes of 1k, 10k and 60k, `target` (98% of a 200,000
context target; the proof needs 95% counted) and `full`.
Run: .venv/bin/python tests/benchmarks/bench_prompt_sizing.py
"""

import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, os.pardir, "sglang_double"))

import ansible.module_utils  # noqa: E402

# the module's shared code (module_utils/), found as Ansible finds it (tests/conftest.py and bench_concurrency.py
# do the same): the proof is ansible.module_utils.sglang_proof_*, which is not on the path otherwise
ansible.module_utils.__path__.append(os.path.join(HERE, os.pardir, os.pardir, "module_utils"))

from ansible.module_utils.sglang_proof_prompt import FOX_FILLER  # noqa: E402
from ansible.module_utils.sglang_proof_run import run  # noqa: E402
from run_double import running_double  # noqa: E402

FLAGS = ["--tp", "8", "--context-length", "200000", "--mem-fraction-static", "0.94"]
TARGET = 200_000
# Every parameter of the module (library/sglang_smoke_test.py main()'s argument_spec), as AnsibleModule hands them
# to run(): its defaults, and a full proof (the level that sizes the prompt) with a shorter wait.
PARAMS = {"url": None, "info_url": None, "api_key": None, "min_pool_tokens": None, "context_target": TARGET,
          "prompt_tokens": None, "question": "needle", "filler": FOX_FILLER, "expect": None, "max_tokens": 32,
          "level": "full", "expect_pool_tokens": None, "expect_context_length": None, "decode_tokens": 16,
          "concurrent_requests": 0, "timeout": 600, "wait_ready": 30, "model": None, "stream": True,
          "validate_certs": True, "progress_file": None}


def main():
    print("%-4s %8s %8s %8s %7s %7s %6s %8s  %s" % (
        "api", "asked", "aimed", "counted", "off%", "target%", "calls", "seconds", "checks"))
    for api in ("new", "old"):
        with running_double(FLAGS, {"api": api}) as (url, _):
            for asked in ("1000", "10000", "60000", "target", "full"):
                result = {"checks": []}
                start = time.monotonic()
                run(dict(PARAMS, url=url, prompt_tokens=asked), result)
                aimed, counted = result["prompt_target"], result["prompt_tokens"]
                print("%-4s %8s %8d %8d %7.3f %7.2f %6d %8.2f  %s" % (
                    api, asked, aimed, counted, 100.0 * abs(counted - aimed) / aimed, 100.0 * counted / TARGET,
                    result["calibration_calls"], time.monotonic() - start,
                    "ok" if all(c["ok"] for c in result["checks"]) else "FAILED"))


if __name__ == "__main__":
    main()
