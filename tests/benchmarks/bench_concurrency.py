"""Benchmark: eight short requests sent at once, against the old running limit (1: as many full-length requests as a
200k pool holds) and the planner's new one (8: the seed's, side by side in the shared pool).

Runs the full proof's own concurrent step (module_utils/sglang_proof_concurrency.py: eight needle prompts of a
few hundred tokens, each with its own number) against the SGLang double, which admits as SGLang's scheduler does
(tests/sglang_double/sglang/_double_scheduler.py) and decodes at a simulated 250 ms per token. Prints the time to the
last answer and the aggregate decode tokens/s for each limit. A request that fails or answers another number fails
the benchmark: it prints why and exits 1, with no figure.
Run: .venv/bin/python tests/benchmarks/bench_concurrency.py [--requests 8] [--decode-seconds 0.25] [--tokens 32]
(`make test` runs it once with 2 requests, 4 tokens at 10 ms: tests/unit/test_benchmarks_cheap.py)
"""

import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, os.pardir, "sglang_double"))

import ansible.module_utils  # noqa: E402

# the module's shared code (module_utils/), found as Ansible finds it (tests/conftest.py does the same)
ansible.module_utils.__path__.append(os.path.join(HERE, os.pardir, os.pardir, "module_utils"))

from ansible.module_utils.sglang_proof_concurrency import concurrent_prompts  # noqa: E402
from ansible.module_utils.sglang_proof_failures import SmokeFailure  # noqa: E402
from ansible.module_utils.sglang_proof_http import Client  # noqa: E402
from outcome import BenchmarkFailed, finish  # noqa: E402
from run_double import running_double  # noqa: E402

FLAGS = ["--tp", "8", "--trust-remote-code", "--context-length", "200000", "--mem-fraction-static", "0.94"]


def answered_all(out, limit):
    """The run's result, or BenchmarkFailed when a request failed or answered another number."""
    if out["answered"] != out["requests"] or not out["check"]["ok"]:
        raise BenchmarkFailed("--max-running-requests %d: %s" % (limit, out["check"]["detail"]))
    return out


def measure(args):
    lines = ["%-22s %8s %8s %18s %14s" % ("--max-running-requests", "sent", "answered", "to last answer (s)",
                                          "decode tok/s")]
    seconds = {}
    gpu = {"decode_seconds_per_token": args.decode_seconds}  # slow enough that the decode, not HTTP, is timed
    for limit in (1, args.requests):
        with running_double(FLAGS + ["--max-running-requests", str(limit)], gpu) as (url, _):
            client = Client(url, timeout=args.timeout)
            try:
                model = client.json("GET", "/v1/models")["data"][0]["id"]
                alone = answered_all(concurrent_prompts(client, model, 1, args.tokens), limit)["seconds"]
                out = answered_all(concurrent_prompts(client, model, args.requests, args.tokens), limit)
            except SmokeFailure as error:
                raise BenchmarkFailed("--max-running-requests %d: %s" % (limit, error)) from None
        seconds[limit] = out["seconds"]
        lines.append("%-22d %8d %8d %18.2f %14.1f   (one request alone: %.2f s; the %d took %.1fx that)"
                     % (limit, out["requests"], out["answered"], out["seconds"], out["decode_tokens_per_s"], alone,
                        args.requests, out["seconds"] / alone))
    lines.append("limit 1 takes %.1fx as long as limit %d to the last answer"
                 % (seconds[1] / seconds[args.requests], args.requests))
    return lines


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=8, help="requests sent at once (and the second limit)")
    parser.add_argument("--decode-seconds", type=float, default=0.25, help="the double's seconds per token")
    parser.add_argument("--tokens", type=int, default=32, help="completion tokens each request asks for")
    parser.add_argument("--timeout", type=float, default=120, help="seconds each request may take")
    args = parser.parse_args(argv)
    if args.requests < 2:
        parser.error("--requests %d: at least 2, to compare a limit of 1 with requests side by side" % args.requests)
    return finish("bench_concurrency", lambda: measure(args))


if __name__ == "__main__":
    sys.exit(main())
