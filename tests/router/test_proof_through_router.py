"""The proof through the real sglang-router: the long prompt goes through the router, the pool is read from the
worker itself (info_url), since the router's own server information describes the router."""

import json
import os
import re
import subprocess
import sys

from router_helpers import running_router

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "tests", "sglang_double"))

from run_double import running_double  # noqa: E402

SMOKE = os.path.join(REPO, "library", "sglang_smoke_test.py")
KEY = "test-worker-key"


def smoke(tmp_path, **args):
    path = tmp_path / "args.json"
    path.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": args}))
    proc = subprocess.run([sys.executable, SMOKE, str(path)], capture_output=True, text=True, timeout=120)
    return proc.returncode, json.loads(proc.stdout)


def test_the_long_prompt_goes_through_the_router_and_the_pool_comes_from_the_worker(tmp_path):
    flags = ["--tp", "8", "--trust-remote-code", "--context-length", "200000", "--max-total-tokens", "200064",
             "--mem-fraction-static", "0.958", "--api-key", KEY]
    with running_double(flags) as (worker, worker_log), running_router([worker], api_key=KEY) as (router, _, log):
        rc, result = smoke(tmp_path, url=router, info_url=worker, api_key=KEY, context_target=200_000,
                           prompt_tokens="20000", wait_ready=10)
        assert rc == 0, result
        assert result["pool_tokens"] == 200_064 and result["prompt_tokens"] > 19_000, result
        with open(worker_log, encoding="utf-8") as handle:
            access = handle.read()
        # the worker answered the long request (uvicorn's access line of the double), which came through the router:
        # one streamed /generate that answered and measured decode (the router passes its events on)
        assert access.count('"POST /generate HTTP/1.1" 200') == 1, access[-2000:]
        assert result["decode"]["tokens"] == 16 and result["decode"]["tpot_ms"] is not None, result["decode"]
        with open(log, encoding="utf-8") as handle:
            routed = re.sub(r"\x1b\[[0-9;]*m", "", handle.read())  # the router colours its log
        assert re.search(r"method=POST uri=/generate .*status_code=200", routed), routed[-2000:]


def test_a_bad_info_url_is_refused_by_name(tmp_path):
    rc, result = smoke(tmp_path, url="http://127.0.0.1:1", info_url="http://:nope", wait_ready=0)
    assert rc != 0 and result["msg"].startswith("info_url='http://:nope' is not"), result
