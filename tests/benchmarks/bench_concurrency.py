"""Benchmark: eight short requests sent at once, against the old running limit (1: as many full-length requests as a
200k pool holds) and the planner's new one (8: the seed's, side by side in the shared pool).

Runs the full proof's own concurrent step (module_utils/sglang_proof_concurrency.py: eight needle prompts of a
few hundred tokens, each with its own number) against the SGLang double, which admits as SGLang's scheduler does
(tests/sglang_double/sglang/_double_scheduler.py) and decodes at a simulated 250 ms per token. Prints the time to the
last answer and the aggregate decode tokens/s for each limit.
Run: .venv/bin/python tests/benchmarks/bench_concurrency.py
"""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, os.pardir, "sglang_double"))

import ansible.module_utils  # noqa: E402

# the module's shared code (module_utils/), found as Ansible finds it (tests/conftest.py does the same)
ansible.module_utils.__path__.append(os.path.join(HERE, os.pardir, os.pardir, "module_utils"))

from ansible.module_utils.sglang_proof_concurrency import concurrent_prompts  # noqa: E402
from ansible.module_utils.sglang_proof_http import Client  # noqa: E402
from run_double import running_double  # noqa: E402

FLAGS = ["--tp", "8", "--trust-remote-code", "--context-length", "200000", "--mem-fraction-static", "0.94"]
GPU = {"decode_seconds_per_token": 0.25}  # slow enough that the decode, not HTTP overhead, is timed
REQUESTS = 8


def main():
    print("%-22s %8s %8s %18s %14s" % ("--max-running-requests", "sent", "answered", "to last answer (s)",
                                      "decode tok/s"))
    seconds = {}
    for limit in (1, REQUESTS):
        with running_double(FLAGS + ["--max-running-requests", str(limit)], GPU) as (url, _):
            client = Client(url, timeout=120)
            model = client.json("GET", "/v1/models")["data"][0]["id"]
            alone = concurrent_prompts(client, model, 1, 32)["seconds"]  # one request, nothing beside it
            out = concurrent_prompts(client, model, REQUESTS, 32)
        seconds[limit] = out["seconds"]
        print("%-22d %8d %8d %18.2f %14.1f   (one request alone: %.2f s; the %d took %.1fx that)"
              % (limit, out["requests"], out["answered"], out["seconds"], out["decode_tokens_per_s"], alone,
                 REQUESTS, out["seconds"] / alone))
    print("limit 1 takes %.1fx as long as limit %d to the last answer" % (seconds[1] / seconds[REQUESTS], REQUESTS))


if __name__ == "__main__":
    main()
