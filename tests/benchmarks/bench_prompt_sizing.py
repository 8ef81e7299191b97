"""Benchmark: how close sglang_smoke_test sizes its prompt, and the calls it takes.

Prints asked vs server-counted prompt tokens against the SGLang double (ct200: 200,000-token context,
216,993-token pool), with /tokenize (new API) and without it (old API, calibrated with short
completions), for the needle question: fixed sizes of 1k, 10k and 60k, `target` (98% of a 200,000
context target; the proof needs 95% counted) and `full`. A proof that fails, or a check of it that does not pass,
fails the benchmark: it prints why and exits 1, with no figure.
Run: .venv/bin/python tests/benchmarks/bench_prompt_sizing.py [--sizes 1000,target] [--apis new] [--target N]
(`make test` runs it once for 1,000 tokens on both APIs: tests/unit/test_benchmarks_cheap.py)
"""

import argparse
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, os.pardir, "sglang_double"))

import ansible.module_utils  # noqa: E402

# the module's shared code (module_utils/), found as Ansible finds it (tests/conftest.py and bench_concurrency.py
# do the same): the proof is ansible.module_utils.sglang_proof_*, which is not on the path otherwise
ansible.module_utils.__path__.append(os.path.join(HERE, os.pardir, os.pardir, "module_utils"))

from ansible.module_utils.sglang_proof_failures import SmokeFailure  # noqa: E402
from ansible.module_utils.sglang_proof_prompt import FOX_FILLER  # noqa: E402
from ansible.module_utils.sglang_proof_run import run  # noqa: E402
from outcome import BenchmarkFailed, finish  # noqa: E402
from run_double import running_double  # noqa: E402

FLAGS = ["--tp", "8", "--context-length", "200000", "--mem-fraction-static", "0.94"]
TARGET = 200_000
SIZES = "1000,10000,60000,target,full"
# Every parameter of the module (library/sglang_smoke_test.py main()'s argument_spec), as AnsibleModule hands them
# to run(): its defaults, and a full proof (the level that sizes the prompt) with a shorter wait.
PARAMS = {"url": None, "info_url": None, "api_key": None, "min_pool_tokens": None, "context_target": TARGET,
          "prompt_tokens": None, "question": "needle", "filler": FOX_FILLER, "expect": None, "max_tokens": 32,
          "level": "full", "expect_pool_tokens": None, "expect_context_length": None, "decode_tokens": 16,
          "concurrent_requests": 0, "timeout": 600, "wait_ready": 30, "model": None, "stream": True,
          "validate_certs": True, "progress_file": None}


def proved(params):
    """The proof's result for `params`, or BenchmarkFailed naming the size when it failed or a check did not pass."""
    result = {"checks": []}
    try:
        run(params, result)
    except SmokeFailure as error:
        raise BenchmarkFailed("prompt_tokens %s: the proof failed: %s" % (params["prompt_tokens"], error)) from None
    failed = [c for c in result["checks"] if not c["ok"]]
    if failed or not result.get("prompt_tokens"):
        raise BenchmarkFailed("prompt_tokens %s: %s" % (params["prompt_tokens"], "; ".join(
            "%s: %s" % (c["name"], c.get("detail", "")) for c in failed) or "the server counted no prompt token"))
    return result


def measure(args):
    lines = ["%-4s %8s %8s %8s %7s %7s %6s %8s" % (
        "api", "asked", "aimed", "counted", "off%", "target%", "calls", "seconds")]
    for api in args.apis.split(","):
        with running_double(FLAGS, {"api": api}) as (url, _):
            for asked in args.sizes.split(","):
                start = time.monotonic()
                result = proved(dict(PARAMS, url=url, prompt_tokens=asked, context_target=args.target))
                aimed, counted = result["prompt_target"], result["prompt_tokens"]
                lines.append("%-4s %8s %8d %8d %7.3f %7.2f %6d %8.2f" % (
                    api, asked, aimed, counted, 100.0 * abs(counted - aimed) / aimed, 100.0 * counted / args.target,
                    result["calibration_calls"], time.monotonic() - start))
    return lines


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default=SIZES, help="comma-separated prompt_tokens values the proof is given")
    parser.add_argument("--apis", default="new,old", help="the double's API: new (/tokenize) and/or old")
    parser.add_argument("--target", type=int, default=TARGET, help="the proof's context_target")
    args = parser.parse_args(argv)
    return finish("bench_prompt_sizing", lambda: measure(args))


if __name__ == "__main__":
    sys.exit(main())
