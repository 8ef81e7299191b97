"""The double refuses a request where the release it impersonates does, and answers the refusal in that release's
shape: the TokenizerManager's length checks (EAGLE's reserved output slots counted, `>=` before 0.5.11), the
Scheduler's max_req_input_len, and for a streamed request HTTP 200 with the refusal in the stream."""

import json
import os
import sys
import urllib.error
import urllib.request

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

from run_double import model_dir, running_double  # noqa: E402
from sglang import _double_gpu as sim  # noqa: E402
from sglang._double_args import load_table, num_reserved_tokens  # noqa: E402
from sglang.launch_server import boot, prepare_server_args  # noqa: E402

LLAMA = "llama-3.1-8b"
CTX = ["--context-length", "1000"]  # max_req_input_len = min(999, pool - 1) - 5 = 994 on the simulated GPU
EAGLE3_DRAFT = {"architectures": ["LlamaForCausalLMEagle3"], "num_hidden_layers": 1, "num_attention_heads": 32,
                "num_key_value_heads": 8, "head_dim": 128, "hidden_size": 4096, "torch_dtype": "bfloat16"}


def _draft(tmp_path):
    path = tmp_path / "draft"
    path.mkdir(exist_ok=True)
    (path / "config.json").write_text(json.dumps(EAGLE3_DRAFT))
    return str(path)


def _state(tmp_path, flags, version="0.5.23", preset=LLAMA):
    gpu = {**sim.DEFAULTS, "load_seconds": 0.0, "graph_seconds": 0.0, "version": version}
    table = load_table(sim.release(gpu))
    args = prepare_server_args(["--model-path", model_dir(str(tmp_path), preset), *flags], table)
    return args, boot(args, gpu, table)


def _post(url, payload):
    """(status, body text) of a POST /v1/completions or /generate."""
    request = urllib.request.Request(url, json.dumps(payload).encode(), {"content-type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=20) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def _events(text):
    return [json.loads(line[5:]) for line in text.splitlines()
            if line.startswith("data:") and line[5:].strip() != "[DONE]"]


# ---- EAGLE's parameters and reserved tokens, as the release resolves them ----------------------------------

@pytest.mark.parametrize("version", ["0.5.9", "0.5.23"])
def test_eagle3_without_parameters_gets_the_architectures_defaults_and_reserves_topk_x_steps(tmp_path, version):
    """0.5.9 server_args.py:2422-2431 / 0.5.23 speculative_hook.py:1159-1174: LlamaForCausalLM -> (5, 4, 8);
    reserved max(4 x 5, 8) = 20 (0.5.9 tokenizer_manager.py:253-261, 0.5.23 managers/utils.py:484-500)."""
    args, state = _state(tmp_path, [*CTX, "--speculative-algorithm", "EAGLE3",
                                    "--speculative-draft-model-path", _draft(tmp_path)], version)
    assert (args.speculative_num_steps, args.speculative_eagle_topk, args.speculative_num_draft_tokens) == (5, 4, 8)
    assert state["num_reserved_tokens"] == 20


def test_topk_1_makes_the_draft_tokens_steps_plus_1(tmp_path):
    args, state = _state(tmp_path, [*CTX, "--speculative-algorithm", "EAGLE3", "--speculative-draft-model-path",
                                    _draft(tmp_path), "--speculative-num-steps", "3", "--speculative-eagle-topk", "1",
                                    "--speculative-num-draft-tokens", "8"])
    assert args.speculative_num_draft_tokens == 4  # speculative_hook.py:1255-1266
    assert state["num_reserved_tokens"] == 4


def test_standalone_resolves_its_parameters_but_reserves_nothing(tmp_path):
    args, state = _state(tmp_path, [*CTX, "--speculative-algorithm", "STANDALONE",
                                    "--speculative-draft-model-path", _draft(tmp_path)])
    assert (args.speculative_num_steps, args.speculative_eagle_topk, args.speculative_num_draft_tokens) == (3, 1, 4)
    assert state["num_reserved_tokens"] == 0  # is_eagle() is False for STANDALONE (spec_info.py:102-109)


def test_topk_without_num_steps_stops_the_launch_as_sglang_asserts(tmp_path):
    with pytest.raises(AssertionError):  # 0.5.23 arg_groups/speculative_hook.py:1159-1163
        _state(tmp_path, [*CTX, "--speculative-algorithm", "EAGLE3", "--speculative-draft-model-path",
                          _draft(tmp_path), "--speculative-eagle-topk", "4"])


def test_no_draft_reserves_nothing(tmp_path):
    args, state = _state(tmp_path, CTX)
    assert num_reserved_tokens(args) == 0 and state["num_reserved_tokens"] == 0


# ---- the length checks ------------------------------------------------------------------------------------

@pytest.mark.parametrize("version, refused", [("0.5.9", True), ("0.5.10", True), ("0.5.11", False),
                                              ("0.5.23", False)])
def test_input_plus_max_tokens_equal_to_the_context(version, refused):
    """`(max_new_tokens + input) >= ctx` up to 0.5.10, `>` from 0.5.11 (tokenizer_manager.py 0.5.9:781,
    0.5.11:845, 0.5.23:1358)."""
    with running_double(CTX, {"version": version}, preset=LLAMA) as (url, _):
        status, body = _post(url + "/v1/completions", {"prompt": [1] * 900, "max_tokens": 100})
        below, _ = _post(url + "/v1/completions", {"prompt": [1] * 900, "max_tokens": 99})
    assert below == 200
    if refused:
        assert status == 400, body
        error = json.loads(body)
        assert error["type"] == "BadRequestError" and error["object"] == "error" and error["code"] == 400
        assert "You requested a total of 1000 tokens: 900 tokens from the input messages" in error["message"]
    else:
        assert status == 200, body


def test_eagles_reserved_tokens_count_in_the_tokenizers_checks(tmp_path):
    """Reserved 4 (topk 1, 3 steps): 500 + 4 + 497 = 1001 > 1000 is refused, 496 passes; the scheduler's own
    check reads the raw input."""
    flags = [*CTX, "--speculative-algorithm", "EAGLE3", "--speculative-draft-model-path", _draft(tmp_path),
             "--speculative-num-steps", "3", "--speculative-eagle-topk", "1", "--speculative-num-draft-tokens", "4"]
    with running_double(flags, {}, preset=LLAMA) as (url, _):
        over, body = _post(url + "/v1/completions", {"prompt": [1] * 500, "max_tokens": 497})
        fits, _ = _post(url + "/v1/completions", {"prompt": [1] * 500, "max_tokens": 496})
        long_input, long_body = _post(url + "/v1/completions", {"prompt": [1] * 996, "max_tokens": 0})
    assert over == 400 and "You requested a total of 1001 tokens: 504 tokens from the input" in body
    assert fits == 200
    assert long_input == 400 and "The input (1000 tokens) is longer than the model's context length" in long_body


# ---- refusals of streamed requests ------------------------------------------------------------------------

SCHEDULER_WORDS = "Input length (995 tokens) exceeds the maximum allowed length (994 tokens)."


@pytest.mark.parametrize("version", ["0.5.9", "0.5.23"])
def test_a_scheduler_refusal_is_http_400_unstreamed(version):
    with running_double(CTX, {"version": version}, preset=LLAMA) as (url, _):
        status, body = _post(url + "/v1/completions", {"prompt": [1] * 995, "max_tokens": 1})
    assert status == 400
    error = json.loads(body)
    assert error["type"] == "BadRequestError" and error["message"].startswith(SCHEDULER_WORDS)


def test_a_streamed_scheduler_refusal_is_an_error_event_from_0_5_10():
    """0.5.23 serving_completions.py:356-371: HTTP 200, the error typed by the status's name, the usage chunk,
    [DONE]."""
    with running_double(CTX, {"version": "0.5.23"}, preset=LLAMA) as (url, _):
        status, body = _post(url + "/v1/completions", {"prompt": [1] * 995, "max_tokens": 1, "stream": True,
                                                       "stream_options": {"include_usage": True}})
    assert status == 200
    events = _events(body)
    assert events[0]["error"]["type"] == "BAD_REQUEST" and events[0]["error"]["code"] == 400
    assert events[0]["error"]["message"].startswith(SCHEDULER_WORDS)
    assert events[1]["usage"]["prompt_tokens"] == 1 and body.rstrip().endswith("data: [DONE]")


def test_a_streamed_scheduler_refusal_is_an_empty_abort_chunk_in_0_5_9():
    """0.5.9 serving_completions.py:204-300 has no abort branch: the abort passes as a chunk."""
    with running_double(CTX, {"version": "0.5.9"}, preset=LLAMA) as (url, _):
        status, body = _post(url + "/v1/completions", {"prompt": [1] * 995, "max_tokens": 1, "stream": True})
    assert status == 200
    (chunk,) = _events(body)
    assert chunk["choices"][0]["finish_reason"] == "abort" and chunk["choices"][0]["text"] == ""


@pytest.mark.parametrize("version, streamed", [("0.5.9", True), ("0.5.23", False)])
def test_a_streamed_tokenizer_refusal(version, streamed):
    """0.5.9 streams before validating (serving_completions.py:171-182, :362-364): HTTP 200 + error event;
    0.5.10+ kick-starts the generator first (0.5.23 :208-212): HTTP 400."""
    with running_double(CTX, {"version": version}, preset=LLAMA) as (url, _):
        status, body = _post(url + "/v1/completions", {"prompt": [1] * 950, "max_tokens": 60, "stream": True})
    if streamed:
        assert status == 200
        (event,) = _events(body)
        assert event["error"]["type"] == "BadRequestError" and "maximum context length" in event["error"]["message"]
    else:
        assert status == 400 and json.loads(body)["type"] == "BadRequestError"


@pytest.mark.parametrize("version", ["0.5.9", "0.5.23"])
def test_a_streamed_generate_refused_by_the_scheduler_ends_with_an_abort(version):
    with running_double(CTX, {"version": version}, preset=LLAMA) as (url, _):
        status, body = _post(url + "/generate", {"input_ids": [1] * 995, "stream": True,
                                                 "sampling_params": {"max_new_tokens": 1}})
        tokenizer_status, tokenizer_body = _post(url + "/generate", {
            "input_ids": [1] * 1000, "stream": True, "sampling_params": {"max_new_tokens": 1}})
    assert status == 200
    (event,) = _events(body)
    reason = event["meta_info"]["finish_reason"]
    assert reason["type"] == "abort" and reason["status_code"] == 400 and reason["message"].startswith(SCHEDULER_WORDS)
    assert tokenizer_status == 200  # native /generate streams before validating in every release
    (error,) = _events(tokenizer_body)
    assert "longer than the model's context length" in error["error"]["message"]
    assert ("type" in error["error"]) == (version != "0.5.9")  # type/code/retryable from 0.5.13


# ---- max_running_requests, as each release resolves a given one ---------------------------------------------

@pytest.mark.parametrize("version, running", [("0.5.9", 4000), ("0.5.10", 2048), ("0.5.13.post1", 2048),
                                              ("0.5.14", 500), ("0.5.23", 500)])
def test_a_given_max_running_requests_per_release(tmp_path, capsys, version, running):
    """Pool 1,000, context 1,000, --max-running-requests 4000: 0.5.9 keeps it (model_runner.py:593-600),
    0.5.10-0.5.13 cap it at the estimate 2,048 (model_runner_kv_cache_mixin.py 0.5.10:840-851), 0.5.14+ at
    pool // 2 with a warning (0.5.23 kv_cache_configurator.py:3119-3172)."""
    _, state = _state(tmp_path, [*CTX, "--max-total-tokens", "1000", "--max-running-requests", "4000"], version)
    out = capsys.readouterr().out
    assert state["max_total_num_tokens"] == 1000
    assert state["max_running_requests"] == running
    assert "max_running_requests=%d, context_len=1000" % running in out
    warned = "max_running_requests was reduced from the requested 4000 to 500 (per dp worker)" in out
    assert warned == (running == 500)


@pytest.mark.parametrize("version", ["0.5.9", "0.5.23"])
def test_an_unset_max_running_requests_is_the_estimate_under_half_the_pool(tmp_path, version):
    _, state = _state(tmp_path, [*CTX, "--max-total-tokens", "1000"], version)
    assert state["max_running_requests"] == 500  # min(2048, 1000 // 2)
