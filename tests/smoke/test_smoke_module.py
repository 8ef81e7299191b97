"""sglang_smoke_test against the SGLang double over real HTTP on loopback: what it proves."""

import re

import pytest
from conftest import CT200

# The double impersonates 0.5.23, which keeps 100 MiB of a multimodal checkpoint's (Kimi K2.6's) KV budget for
# its embedding cache: the simulated ct200's pools are 99,643 at 0.85 and 216,993 at 0.94.
FINE = CT200 + ["--mem-fraction-static", "0.94"]  # pool 216,993 on the simulated ct200


@pytest.mark.parametrize("api, min_pool", [("new", None), ("old", None), ("new", 1000)])
def test_pool_under_the_context_fails_naming_both_numbers(smoke, double, api, min_pool):
    """The pool must hold the server's own context length (200,000), whatever min_pool_tokens allows."""
    with double(CT200 + ["--mem-fraction-static", "0.85"], {"api": api}) as (url, _):
        rc, result = smoke(url=url, **({"min_pool_tokens": min_pool} if min_pool else {}))
    assert rc == 1 and result["failed"]
    assert "99,643" in result["msg"] and "200,000" in result["msg"] and "context length" in result["msg"]
    assert "--mem-fraction-static" in result["msg"]
    assert result["pool_tokens"] < 200_000 == result["context_length"] == result["min_pool_tokens"]
    assert [c["name"] for c in result["checks"] if not c["ok"]] == ["pool"]


def test_pool_under_min_pool_tokens_names_it(smoke, double):
    with double(FINE) as (url, _):
        rc, result = smoke(url=url, min_pool_tokens=250_000)
    assert rc == 1
    assert "216,993" in result["msg"] and "250,000" in result["msg"] and "min_pool_tokens=250000" in result["msg"]
    assert [c["name"] for c in result["checks"] if not c["ok"]] == ["pool"]


def test_context_under_the_target_names_context_target(smoke, double):
    with double(["--tp", "8", "--context-length", "131072", "--mem-fraction-static", "0.94"]) as (url, _):
        rc, result = smoke(url=url, context_target=200_000)
    assert rc == 1
    assert "131,072" in result["msg"] and "200,000" in result["msg"] and "context_target=200000" in result["msg"]
    assert "--context-length 200000" in result["msg"]
    assert [c["name"] for c in result["checks"] if not c["ok"]] == ["context"]


@pytest.mark.parametrize("api", ["new", "old"])
def test_default_needle_fills_the_context_target(smoke, double, api):
    with double(FINE, {"api": api}) as (url, _):
        rc, result = smoke(url=url, context_target=200_000)
    assert rc == 0, result.get("msg")
    assert result["ok"] and not result["changed"]
    assert result["question"] == "needle" and 1_000_000 <= result["needle"] <= 9_999_999
    # the double read it from the prompt; the needle's /generate decodes on past the answer (ignore_eos: 16 tokens)
    assert result["completion"].startswith(" %d." % result["needle"]) and result["completion_tokens"] == 16
    assert 0.95 * 200_000 <= result["prompt_tokens"] < result["max_req_input_len"] == 199_994
    assert result["prompt_target"] == 196_000
    assert result["context_length"] == result["min_pool_tokens"] == result["context_target"] == 200_000
    assert [c["name"] for c in result["checks"]] == ["ready", "context", "pool", "prompt_tokens", "answer"]
    assert all(c["ok"] for c in result["checks"])
    assert result["ttft_s"] > 0 and result["elapsed_s"] >= result["ttft_s"] and result["prefill_tokens_per_s"] > 0


def test_the_needle_is_new_on_every_call(smoke, double):
    with double(FINE) as (url, _):
        needles = {smoke(url=url, prompt_tokens="3000")[1]["needle"] for _ in range(3)}
    assert len(needles) == 3


def test_a_server_that_drops_early_context_fails_the_needle_but_not_the_fox(smoke, double):
    """The fault the needle exists for: the double's "model" sees only the last 50,000 tokens."""
    with double(FINE, {"visible_tokens": 50_000}) as (url, _):
        rc, result = smoke(url=url, context_target=200_000)
        rc_fox, fox = smoke(url=url, context_target=200_000, question="fox")
    assert rc == 1
    assert result["completion"].startswith(" Unknown.")
    assert "does not match /\\b%d\\b/" % result["needle"] in result["msg"]
    assert "dropped early context" in result["msg"]
    assert [c["name"] for c in result["checks"] if not c["ok"]] == ["answer"]
    assert rc_fox == 0 and fox["completion"].startswith(" Dog.")  # why fox alone proves less


@pytest.mark.parametrize("api", ["new", "old"])
@pytest.mark.parametrize("asked", [12_000, 30_000])
def test_fox_question_with_a_number_of_tokens(smoke, double, api, asked):
    with double(FINE, {"api": api}) as (url, _):
        rc, result = smoke(url=url, min_pool_tokens=200_000, prompt_tokens=str(asked), question="fox")
    assert rc == 0, result["msg"] if rc else ""
    assert result["pool_tokens"] == 216_993  # SGLang's formula on the simulated ct200
    assert abs(result["prompt_tokens"] - asked) / asked <= 0.01
    assert result["completion"].startswith(" Dog.") and result["needle"] is None and result["expect"] == r"\bdog\b"
    assert all(c["ok"] for c in result["checks"])


def test_full_prompt_fills_the_context(smoke, double):
    with double(FINE) as (url, _):
        rc, result = smoke(url=url, min_pool_tokens=200_000, prompt_tokens="full")
    assert rc == 0, result.get("msg")
    assert 0.99 * 199_967 <= result["prompt_tokens"] <= 199_967  # 200,000 - max_tokens 32 - 1


def test_streaming_measures_time_to_first_token(smoke, double):
    with double(FINE, {"prefill_tokens_per_s": 200_000}) as (url, _):
        rc, result = smoke(url=url, prompt_tokens="20000")
        rc_plain, plain = smoke(url=url, prompt_tokens="20000", stream=False)
    assert rc == 0 and rc_plain == 0, (result.get("msg"), plain.get("msg"))
    assert 0.09 <= result["ttft_s"] <= result["elapsed_s"]
    assert plain["ttft_s"] is None and plain["elapsed_s"] >= 0.09


def test_wrong_answer_is_quoted(smoke, double):
    with double(FINE) as (url, _):
        rc, result = smoke(url=url, prompt_tokens="5000", expect=r"\bcat\b")
    assert rc == 1
    assert re.search(r"answer ' \d{7}\.[a-z ]*' does not match /\\bcat\\b/", result["msg"]), result["msg"]


def test_digit_separators_do_not_hide_the_number():
    from ansible.module_utils.sglang_proof_checks import answer_matches

    for text in (" 4821937.", " 4,821,937", "The secret number is 4 821 937.", "4\u202f821\u202f937"):
        assert answer_matches(r"\b4821937\b", text), text
    assert not answer_matches(r"\b4821937\b", " 48219370")


def test_server_too_slow_for_the_timeout(smoke, double):
    with double(FINE, {"prefill_tokens_per_s": 5_000}) as (url, _):
        rc, result = smoke(url=url, prompt_tokens="30000", timeout=2)
    assert rc == 1
    assert "within 2 s (timeout" in result["msg"] and "raise the module's timeout" in result["msg"]


def test_nothing_listening_fails_with_a_message(smoke):
    from run_double import free_port

    rc, result = smoke(url="http://127.0.0.1:%d" % free_port(), wait_ready=0)
    assert rc == 1
    assert result["msg"].startswith("Nothing is answering at http://127.0.0.1:")
    assert "systemctl status sglang" in result["msg"]


def test_not_ready_in_time(smoke):
    from run_double import free_port

    rc, result = smoke(url="http://127.0.0.1:%d" % free_port(), wait_ready=1)
    assert rc == 1 and "was not ready within 1 s" in result["msg"] and "wait_ready" in result["msg"]


def test_not_json_is_reported(smoke):
    import http.server
    import threading

    class Plain(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b"<html>hello</html>")

        def log_message(self, *args):
            pass

    httpd = http.server.HTTPServer(("127.0.0.1", 0), Plain)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        rc, result = smoke(url="http://127.0.0.1:%d" % httpd.server_port, wait_ready=0)
    finally:
        httpd.shutdown()
    assert rc == 1 and "did not answer JSON" in result["msg"] and "<html>" in result["msg"]


def test_pool_from_internal_states_when_top_level_is_missing():
    from ansible.module_utils.sglang_proof_failures import SmokeFailure
    from ansible.module_utils.sglang_proof_server import pool_from_info

    info = {"internal_states": [{"memory_usage": {"token_capacity": 218_484}}]}
    assert pool_from_info(info) == 218_484
    assert pool_from_info({"max_total_num_tokens": 5, **info}) == 5
    with pytest.raises(SmokeFailure, match="neither max_total_num_tokens"):
        pool_from_info({"internal_states": []})


def test_a_streamed_error_event_is_reported_with_the_servers_words():
    """SGLang answers a streamed request it refuses with HTTP 200 and one `data: {"error": ...}` event
    (serving_base.create_streaming_error_response, 0.5.9); the message must carry its words."""
    import http.server
    import json
    import threading

    from ansible.module_utils.sglang_proof_failures import SmokeFailure
    from ansible.module_utils.sglang_proof_http import Client

    words = "Input length (230000 tokens) exceeds the maximum allowed length (218479 tokens)."

    class Streamed(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            self.rfile.read(int(self.headers["content-length"]))
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.end_headers()
            error = {"object": "error", "message": words, "type": "BadRequestError", "param": None, "code": 400}
            self.wfile.write(b"data: " + json.dumps({"error": error}).encode() + b"\n\ndata: [DONE]\n\n")

        def log_message(self, *args):
            pass

    httpd = http.server.HTTPServer(("127.0.0.1", 0), Streamed)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        client = Client("http://127.0.0.1:%d" % httpd.server_port, timeout=10)
        with pytest.raises(SmokeFailure, match=re.escape("/v1/completions streamed an error: " + words)):
            client.stream("/v1/completions", {"prompt": "x", "stream": True})
    finally:
        httpd.shutdown()


# ---- EAGLE's reserved tokens and streamed refusals, as the real release answers them ----------------------

EAGLE3_DRAFT = {"architectures": ["LlamaForCausalLMEagle3"], "num_hidden_layers": 1, "num_attention_heads": 32,
                "num_key_value_heads": 8, "head_dim": 128, "hidden_size": 4096, "torch_dtype": "bfloat16"}


def test_reserved_tokens_follow_the_resolved_server_args():
    """max(topk x steps, draft tokens) for the EAGLE family (0.5.23 managers/utils.py:484-500), 0 otherwise."""
    from ansible.module_utils.sglang_proof_limits import accepted_tokens, reserved_tokens

    eagle = {"speculative_algorithm": "EAGLE3", "speculative_eagle_topk": 4, "speculative_num_steps": 5,
             "speculative_num_draft_tokens": 8}
    assert reserved_tokens(eagle) == 20
    assert reserved_tokens({**eagle, "speculative_eagle_topk": 1, "speculative_num_draft_tokens": 6}) == 6
    assert reserved_tokens({**eagle, "speculative_algorithm": "NEXTN"}) == 20
    assert reserved_tokens({**eagle, "max_speculative_num_draft_tokens": 32}) == 32
    assert reserved_tokens({**eagle, "speculative_algorithm": "STANDALONE"}) == 0
    assert reserved_tokens({**eagle, "speculative_algorithm": "DFLASH"}) == 0
    assert reserved_tokens({"speculative_algorithm": None}) == reserved_tokens({}) == 0
    assert accepted_tokens(10_000, 1994, 2000, 32, 20) == 2000 - 32 - 20 - 1


def test_a_full_prompt_leaves_eagles_reserved_tokens_free(smoke, double, tmp_path):
    """EAGLE3 on Llama with no parameters: SGLang picks (5 steps, topk 4, 8 tokens) and reserves 20 slots per
    request; a 'full' prompt that ignored them (0.5% under context - max_tokens, 10 tokens here) is refused."""
    draft = tmp_path / "draft"
    draft.mkdir()
    (draft / "config.json").write_text(__import__("json").dumps(EAGLE3_DRAFT))
    flags = ["--context-length", "2000", "--speculative-algorithm", "EAGLE3",
             "--speculative-draft-model-path", str(draft)]
    with double(flags, preset="llama-3.1-8b") as (url, _):
        rc, result = smoke(url=url, prompt_tokens="full", question="fox")
    assert rc == 0, result.get("msg")
    assert result["prompt_tokens"] <= 2000 - 32 - 20 - 1


@pytest.mark.parametrize("version, words", [
    ("0.5.23", "/v1/completions streamed an error: Input length (995 tokens) exceeds the maximum allowed length"),
    ("0.5.9", "/v1/completions ended the streamed request with finish_reason abort")])
def test_a_streamed_scheduler_refusal_fails_the_stream_in_each_release(double, version, words):
    """0.5.10+ sends an error event typed BAD_REQUEST (serving_completions.py 0.5.23:356-371); 0.5.9 an empty
    chunk with finish_reason abort. Either is a failure naming what happened, never an empty answer."""
    from ansible.module_utils.sglang_proof_failures import SmokeFailure
    from ansible.module_utils.sglang_proof_http import Client

    with double(["--context-length", "1000"], {"version": version}, preset="llama-3.1-8b") as (url, _):
        client = Client(url, timeout=20)
        with pytest.raises(SmokeFailure, match=re.escape(words)):
            client.stream("/v1/completions", {"prompt": [1] * 995, "max_tokens": 1, "stream": True,
                                              "stream_options": {"include_usage": True}})
