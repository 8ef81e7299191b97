"""The double derives a model's window as SGLang does (0.5.23 utils/hf_transformers/common.py:668-695), with
--json-model-override-args applied to the config first: the planner's sglang_rope_scaling override boots at
131,072 on Qwen3-32B; the model card's override alone (original_max_position_embeddings named) leaves the window at
40,960 and the boot refuses, in SGLang's words."""

import json
import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

from run_double import model_dir  # noqa: E402
from sglang import launch_server  # noqa: E402
from sglang._double_args import load_table  # noqa: E402
from sglang._double_boot import BootError, read_config  # noqa: E402

sys.path.insert(0, os.path.join(REPO, "lib"))
import sglang_kvplan  # noqa: E402

YARN = {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}


def _context(tmp_path, argv):
    path = model_dir(str(tmp_path), "qwen3-32b")
    args = launch_server.prepare_server_args(["--model-path", path, *argv], load_table("0.5.23"))
    return launch_server._context_len(args, read_config(path))  # pylint: disable=protected-access


def test_the_planner_s_override_gives_the_scaled_window(tmp_path):
    plan = sglang_kvplan.plan({"model": "qwen3-32b", "tp_size": 4, "gpu_memory_mib": 81_559, "version": "0.5.23",
                               "context_target": 131_072, "rope_scaling": YARN})
    args = plan["args"]
    override = args[args.index("--json-model-override-args") + 1]
    assert _context(tmp_path, ["--context-length", "131072", "--json-model-override-args", override]) == 131_072


def test_the_model_card_s_override_alone_is_refused_at_131072(tmp_path):
    with pytest.raises(BootError, match=r"User-specified context_length \(131072\) is greater than the derived "
                                        r"context_length \(40960\)"):
        _context(tmp_path, ["--context-length", "131072", "--json-model-override-args",
                            json.dumps({"rope_scaling": YARN})])


def test_a_factor_without_the_original_window_widens_it(tmp_path):
    # SGLang multiplies by the factor only when original_max_position_embeddings is not named
    override = json.dumps({"rope_scaling": {"rope_type": "yarn", "factor": 2.0}})
    assert _context(tmp_path, ["--json-model-override-args", override]) == 81_920
