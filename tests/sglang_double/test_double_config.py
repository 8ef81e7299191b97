"""The double's `--config <yaml>` merge, as SGLang's ConfigArgumentMerger (server_args_config_parser.py)."""

import json
import os
import sys
import threading
import time
import urllib.request

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

from run_double import running_double  # noqa: E402
from sglang import _double_config  # noqa: E402
from sglang.launch_server import prepare_server_args  # noqa: E402


def _write(tmp_path, text, name="sglang.yaml"):
    path = tmp_path / name
    path.write_text(text)
    os.chmod(path, 0o640)
    return str(path)


@pytest.mark.parametrize("with_pyyaml", [True, False])
def test_config_values_merge_and_cli_wins(tmp_path, monkeypatch, with_pyyaml):
    if not with_pyyaml:
        monkeypatch.setattr(_double_config, "safe_load", _double_config._flat_yaml)
    path = _write(tmp_path, "api-key: 's3cret: yes'\ntrust-remote-code: true\ncontext-length: 1000\n"
                            "enable-metrics: false\n")
    args = prepare_server_args(["--model-path", "/m", "--config", path, "--context-length", "2000"])
    assert args.api_key == "s3cret: yes"
    assert args.trust_remote_code is True
    assert args.enable_metrics is False
    assert args.context_length == 2000  # CLI > config


def test_config_must_be_yaml_and_exist(tmp_path):
    path = _write(tmp_path, "api-key: x\n", name="sglang.json")
    with pytest.raises(ValueError, match="Config file must be YAML format, got: .json"):
        prepare_server_args(["--model-path", "/m", "--config", path])
    with pytest.raises(ValueError, match="Config file not found"):
        prepare_server_args(["--model-path", "/m", "--config", str(tmp_path / "none.yaml")])
    with pytest.raises(ValueError, match="No config file specified after --config flag!"):
        prepare_server_args(["--model-path", "/m", "--config"])


def test_flat_reader_lists_and_comments():
    text = "# c\nkey: 1  # one\nlist:\n  - a\n  - 'b'\nflow: [1, 2]\nq: \"x y\"\n"
    assert _double_config._flat_yaml(text) == {"key": 1, "list": ["a", "b"], "flow": [1, 2], "q": "x y"}


def test_underscore_keys_are_refused_as_sglang_refuses_them(tmp_path, capsys):
    # SGLang writes "--<key>" exactly as the key is spelled: write keys with dashes.
    path = _write(tmp_path, "trust_remote_code: true\n")
    with pytest.raises(SystemExit) as exc:
        prepare_server_args(["--model-path", "/m", "--config", path])
    assert exc.value.code == 2
    assert "unrecognized arguments: --trust_remote_code" in capsys.readouterr().err


def test_a_deprecated_flag_in_the_file_is_refused_as_0_5_23_refuses_it(tmp_path):
    path = _write(tmp_path, "enable-dp-attention: true\n")
    with pytest.raises(ValueError, match="Unsupported config option 'enable_dp_attention' with action "
                                         "'DeprecatedStoreTrueAction'"):
        prepare_server_args(["--model-path", "/m", "--config", path])


def test_v1_loads_counts_the_requests_in_flight():
    """0.5.23's /v1/loads core fields: num_running_reqs is what a drain before a restart waits on."""
    def get(url, path, data=None):
        request = urllib.request.Request(url + path, data=data, headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.load(response)

    # 20,000 tokens at 10,000 tokens/s: a request that stays in flight for about two seconds
    with running_double(["--tp", "8", "--trust-remote-code"], gpu={"prefill_tokens_per_s": 1.0e4}) as (url, _):
        assert get(url, "/v1/loads?include=core")["loads"][0]["num_running_reqs"] == 0
        body = json.dumps({"input_ids": [1] * 20_000, "sampling_params": {"max_new_tokens": 1}}).encode()
        worker = threading.Thread(target=get, args=(url, "/generate", body))
        worker.start()
        deadline = time.monotonic() + 5
        while get(url, "/v1/loads")["loads"][0]["num_running_reqs"] != 1 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert get(url, "/v1/loads")["loads"][0]["num_running_reqs"] == 1
        worker.join()
        assert get(url, "/v1/loads")["loads"][0]["num_running_reqs"] == 0
