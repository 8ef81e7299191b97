"""sglang_smoke_test against the SGLang double over real HTTP on loopback."""

import pytest
from conftest import CT200


@pytest.mark.parametrize("api", ["new", "old"])
def test_pool_short_fails_naming_both_numbers(smoke, double, api):
    with double(CT200 + ["--mem-fraction-static", "0.85"], {"api": api}) as (url, _):
        rc, result = smoke(url=url, min_pool_tokens=200_000)
    assert rc == 1 and result["failed"]
    assert "101,13" in result["msg"] and "200,000" in result["msg"]
    assert "--mem-fraction-static" in result["msg"]
    assert result["pool_tokens"] < 200_000
    assert [c["name"] for c in result["checks"] if not c["ok"]] == ["pool"]


@pytest.mark.parametrize("api", ["new", "old"])
@pytest.mark.parametrize("asked", [12_000, 30_000])
def test_pool_fine_passes_with_the_prompt_sized_by_the_server(smoke, double, api, asked):
    with double(CT200 + ["--mem-fraction-static", "0.94"], {"api": api}) as (url, _):
        rc, result = smoke(url=url, min_pool_tokens=200_000, prompt_tokens=str(asked))
    assert rc == 0, result["msg"] if rc else ""
    assert result["ok"] and not result["changed"]
    assert result["pool_tokens"] == 218_485  # SGLang's formula on the simulated ct200
    assert abs(result["prompt_tokens"] - asked) / asked <= 0.01
    assert result["completion"].strip() == "Dog."
    assert result["elapsed_s"] > 0 and result["prefill_tokens_per_s"] > 0
    assert all(c["ok"] for c in result["checks"])


def test_full_prompt_fills_the_context(smoke, double):
    with double(CT200 + ["--mem-fraction-static", "0.94"]) as (url, _):
        rc, result = smoke(url=url, min_pool_tokens=200_000, prompt_tokens="full")
    assert rc == 0, result.get("msg")
    assert 0.99 * 199_994 <= result["prompt_tokens"] < result["max_req_input_len"] == 199_994


def test_streaming_measures_time_to_first_token(smoke, double):
    with double(CT200 + ["--mem-fraction-static", "0.94"], {"prefill_tokens_per_s": 200_000}) as (url, _):
        rc, result = smoke(url=url, min_pool_tokens=200_000, prompt_tokens="20000", stream=True)
    assert rc == 0, result.get("msg")
    assert 0.09 <= result["ttft_s"] <= result["elapsed_s"]
    assert result["completion"].strip() == "Dog."


def test_nothing_listening_fails_with_a_message(smoke, double):
    from run_double import free_port

    rc, result = smoke(url="http://127.0.0.1:%d" % free_port(), min_pool_tokens=1000, wait_ready=0)
    assert rc == 1
    assert result["msg"].startswith("Nothing is answering at http://127.0.0.1:")
    assert "systemctl status sglang" in result["msg"]


def test_not_ready_in_time(smoke, double):
    from run_double import free_port

    rc, result = smoke(url="http://127.0.0.1:%d" % free_port(), min_pool_tokens=1000, wait_ready=1)
    assert rc == 1 and "was not ready within 1 s" in result["msg"]


@pytest.mark.parametrize("context, fraction, min_pool, asked, servers_words", [
    ("20000", "0.94", 200_000, "30000", "is longer than the model's context length (20000 tokens)"),  # TokenizerManager
    ("200000", "0.80", 1000, "60000", "exceeds the maximum allowed length"),                          # Scheduler, pool
])
def test_prompt_over_a_limit_reports_the_servers_message(smoke, double, context, fraction, min_pool, asked,
                                                         servers_words):
    flags = ["--tp", "8", "--context-length", context, "--mem-fraction-static", fraction]
    with double(flags) as (url, _):
        rc, result = smoke(url=url, min_pool_tokens=min_pool, prompt_tokens=asked)
    assert rc == 1
    assert "HTTP 400" in result["msg"]
    assert servers_words in result["msg"]


def test_wrong_answer_is_quoted(smoke, double):
    with double(CT200 + ["--mem-fraction-static", "0.94"]) as (url, _):
        rc, result = smoke(url=url, min_pool_tokens=200_000, prompt_tokens="5000", expect=r"\bcat\b")
    assert rc == 1
    assert "answer ' Dog.' does not match /\\bcat\\b/" in result["msg"]
    assert result["completion"] == " Dog."


def test_server_too_slow_for_the_timeout(smoke, double):
    with double(CT200 + ["--mem-fraction-static", "0.94"], {"prefill_tokens_per_s": 5_000}) as (url, _):
        rc, result = smoke(url=url, min_pool_tokens=200_000, prompt_tokens="30000", timeout=2)
    assert rc == 1
    assert "within 2 s (timeout)" in result["msg"] and "raise the module's timeout" in result["msg"]


def test_api_key_the_server_requires(smoke, double):
    with double(CT200 + ["--mem-fraction-static", "0.94", "--api-key", "s3cret"]) as (url, _):
        rc, refused = smoke(url=url, min_pool_tokens=200_000, prompt_tokens="2000")
        rc_ok, result = smoke(url=url, min_pool_tokens=200_000, prompt_tokens="2000", api_key="s3cret")
    assert rc == 1 and "HTTP 401" in refused["msg"] and "Unauthorized" in refused["msg"]
    assert rc_ok == 0, result.get("msg")
    assert "s3cret" not in str(result)


def test_not_json_is_reported(smoke, tmp_path):
    import http.server
    import threading

    class Plain(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b"<html>hello</html>")

        def log_message(self, *args):
            pass

    httpd = http.server.HTTPServer(("127.0.0.1", 0), Plain)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        rc, result = smoke(url="http://127.0.0.1:%d" % httpd.server_port, min_pool_tokens=10, wait_ready=0)
    finally:
        httpd.shutdown()
    assert rc == 1 and "did not answer JSON" in result["msg"] and "<html>" in result["msg"]


def test_pool_from_internal_states_when_top_level_is_missing():
    import sglang_smoke_test as module

    info = {"internal_states": [{"memory_usage": {"token_capacity": 218_484}}]}
    assert module.pool_from_info(info) == 218_484
    assert module.pool_from_info({"max_total_num_tokens": 5, **info}) == 5
    with pytest.raises(module.SmokeFailure, match="neither max_total_num_tokens"):
        module.pool_from_info({"internal_states": []})
