"""Every refusal and failure of sglang_smoke_test names the parameter at fault, fails at once (no waiting
out wait_ready), and is the same run directly and through Ansible."""

import json
import os
import subprocess
import sys
import time

import pytest
from conftest import CT200, REPO, trickling_server

FINE = CT200 + ["--mem-fraction-static", "0.94"]
NOWHERE = "http://127.0.0.1:9"  # never reached: each of these is refused before any request

# (case id, module args, words the message must hold): the parameter's name first.
REFUSALS = [
    ("min_pool_tokens=0", {"min_pool_tokens": 0}, ["min_pool_tokens=0", "at least 1"]),
    ("min_pool_tokens<0", {"min_pool_tokens": -5}, ["min_pool_tokens=-5", "at least 1"]),
    ("context_target=0", {"context_target": 0}, ["context_target=0", "at least 1"]),
    ("timeout=0", {"timeout": 0}, ["timeout=0", "at least 1"]),
    ("wait_ready<0", {"wait_ready": -1}, ["wait_ready=-1", "at least 0"]),
    ("max_tokens=0", {"max_tokens": 0}, ["max_tokens=0", "at least 1"]),
    ("prompt_tokens=word", {"prompt_tokens": "lots"}, ["prompt_tokens='lots'", "'target', 'full'"]),
    ("prompt_tokens=0", {"prompt_tokens": "0"}, ["prompt_tokens='0'", "positive"]),
    ("filler with a digit", {"filler": "Room 101 is empty. "}, ["filler=", "digit", "question=needle"]),
    ("filler empty", {"filler": "  "}, ["filler=", "empty"]),
    ("expect not a regex", {"expect": "(dog"}, ["expect='(dog'", "regular expression"]),
    ("url without scheme", {"url": "127.0.0.1:30000"}, ["url='127.0.0.1:30000'", "http(s) URL"]),
    ("url without host", {"url": "http://"}, ["url='http://'", "http(s) URL"]),
    ("url with a bad port", {"url": "http://127.0.0.1:30k"}, ["url='http://127.0.0.1:30k'", "not a valid URL"]),
    ("url not http", {"url": "ftp://127.0.0.1:30000"}, ["url='ftp://127.0.0.1:30000'", "http(s) URL"]),
    ("url with a space", {"url": "http://127.0.0.1 :30000"}, ["url='http://127.0.0.1 :30000'", "http(s) URL"]),
    ("question unknown", {"question": "cat"}, ["question", "needle", "fox"]),
]


def _args(args):
    return {"url": NOWHERE, "wait_ready": 300, **args}


@pytest.mark.parametrize("case, args, words", REFUSALS, ids=[r[0] for r in REFUSALS])
def test_bad_parameter_is_refused_at_once(smoke, case, args, words):
    start = time.monotonic()
    rc, result = smoke(**_args(args))
    assert rc == 1 and result["failed"]
    assert time.monotonic() - start < 20  # not the 300 s of wait_ready: nothing was tried
    for word in words:
        assert word in result["msg"], (case, result["msg"])
    assert result.get("checks", []) == []  # (AnsibleModule refuses an unknown choice itself)


@pytest.mark.parametrize("context, asked", [("200000", "300000"), ("20000", "30000")])
def test_prompt_longer_than_the_context_is_not_sent(smoke, double, context, asked):
    with double(["--tp", "8", "--context-length", context, "--mem-fraction-static", "0.94"]) as (url, log):
        rc, result = smoke(url=url, prompt_tokens=asked)
        with open(log, encoding="utf-8") as handle:
            access = handle.read()
    assert rc == 1
    assert "prompt_tokens=%s" % asked in result["msg"] and "Not sent" in result["msg"]
    assert "{:,}".format(int(asked)) in result["msg"] and "{:,}".format(int(context)) in result["msg"]
    assert "/v1/completions" not in access and '"POST /generate' not in access  # refused here, never sent


def test_target_that_the_answer_room_squeezes_under_95_percent_names_max_tokens(smoke, double):
    with double(FINE) as (url, log):
        rc, result = smoke(url=url, context_target=200_000, max_tokens=15_000)
        with open(log, encoding="utf-8") as handle:
            access = handle.read()
    assert rc == 1
    assert "prompt_tokens=target" in result["msg"] and "max_tokens=15000" in result["msg"]
    assert "190,000" in result["msg"] and "184,999" in result["msg"]
    assert "/v1/completions" not in access and '"POST /generate' not in access


@pytest.mark.parametrize("where", ["headers", "body"])
def test_a_trickling_server_is_stopped_by_the_deadline(smoke, where):
    """One byte a second never trips a per-read timeout; the module's one deadline per request must."""
    with trickling_server(where) as (url, _):
        start = time.monotonic()
        rc, result = smoke(url=url, timeout=3, wait_ready=0)
        took = time.monotonic() - start
    assert rc == 1
    assert "/server_info did not finish within 3 s (timeout" in result["msg"] and "timeout" in result["msg"]
    assert took < 10, took  # the body alone is ~700 bytes: ~12 minutes at a byte a second


def test_401_names_api_key(smoke, double):
    with double(FINE + ["--api-key", "s3cret"]) as (url, _):
        rc, refused = smoke(url=url, prompt_tokens="2000")
        rc_wrong, wrong = smoke(url=url, prompt_tokens="2000", api_key="nope")
        rc_ok, result = smoke(url=url, prompt_tokens="2000", api_key="s3cret")
    assert rc == 1 and "HTTP 401" in refused["msg"] and "Unauthorized" in refused["msg"]
    assert "pass it as api_key" in refused["msg"]
    assert rc_wrong == 1 and "refused the api_key given" in wrong["msg"]
    assert rc_ok == 0, result.get("msg")
    assert "s3cret" not in json.dumps(result)


def test_refusals_through_ansible(tmp_path, double):
    """The same refusals as Ansible reports them: one playbook run over every case."""
    bin_dir = os.path.dirname(sys.executable)
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg"), ANSIBLE_NOCOLOR="1")
    with double(FINE + ["--api-key", "s3cret"]) as (url, _), trickling_server("body") as (trickle, _):
        cases = [{"id": case, "args": _args(args), "words": words} for case, args, words in REFUSALS]
        cases += [
            {"id": "401", "args": {"url": url, "prompt_tokens": "2000"}, "words": ["HTTP 401", "api_key"]},
            {"id": "too long", "args": {"url": url, "api_key": "s3cret", "prompt_tokens": "300000"},
             "words": ["prompt_tokens=300000", "300,000", "200,000", "Not sent"]},
            {"id": "trickle", "args": {"url": trickle, "timeout": 3, "wait_ready": 0},
             "words": ["within 3 s (timeout"]},
        ]
        path = tmp_path / "cases.json"
        path.write_text(json.dumps({"cases": cases}))
        start = time.monotonic()
        proc = subprocess.run([os.path.join(bin_dir, "ansible-playbook"), "tests/smoke/refusals_localhost.yml",
                               "-e", "@" + str(path)], cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert "failed=0" in proc.stdout  # (the key shows in the loop items this test prints, not from the module)
    assert time.monotonic() - start < 120
