"""Run the REAL SGLang argument parser and resolver on cases, with no GPU: run by a real release's venv python.

    LD_LIBRARY_PATH=<stubcuda> <venv>/bin/python driver.py GPU_KIND CASES.json OUT.json

What a launch does before any GPU work, as `python -m sglang.launch_server` and Engine do it:
prepare_server_args(argv) (parse, --config merged; up to 0.5.21 the whole resolution runs in __post_init__), then
server_args.resolve_once() where the release has it (0.5.22+: the resolution pipeline, arg_groups/pipeline.py, where
every launch refusal lives), then server_args.check_server_args() (0.5.23 entrypoints/engine.py:1153-1165).

Only the device queries are faked, to the target GPU: torch.cuda's is_available/device_count/get_device_capability/
get_device_name/get_device_properties/mem_get_info/current_device/is_initialized and SGLang's nvidia-smi reader
get_nvgpu_memory_capacity. No SGLang logic is patched. The fakes are installed before sglang is imported, once per
process and per GPU kind (helpers such as is_sm100_supported are cached at first call, so one process never serves
two GPU kinds); each case then runs in a forked child so that no case sees another's state.
"""

import json
import logging
import os
import sys
import traceback
import types

# The GPUs the project plans for: (name, compute capability, MiB as nvidia-smi reports the total).
GPUS = {
    "sm120": ("NVIDIA RTX PRO 6000 Blackwell Server Edition", (12, 0), 97887),
    "h100": ("NVIDIA H100 80GB HBM3", (9, 0), 81559),
    "h200": ("NVIDIA H200", (9, 0), 143771),
    "b200": ("NVIDIA B200", (10, 0), 183359),
}

# The resolved values the contract compares, plus the ones that explain them.
FIELDS = ("context_length", "max_total_tokens", "mem_fraction_static", "max_running_requests", "kv_cache_dtype",
          "page_size", "chunked_prefill_size", "cuda_graph_max_bs",
          "attention_backend", "speculative_algorithm", "speculative_num_steps", "speculative_eagle_topk",
          "speculative_num_draft_tokens", "tp_size", "pp_size", "dp_size", "enable_dp_attention", "attn_dp_size")


WARM = ("sglang.srt.arg_groups.pipeline", "sglang.srt.configs.model_config", "sglang.srt.utils.hf_transformers_utils",
        "sglang.srt.layers.quantization", "sglang.srt.speculative.spec_info", "sglang.srt.entrypoints.engine",
        "sgl_kernel", "transformers")


def fake_devices(kind):
    """Point torch's device queries (and SGLang's nvidia-smi reader) at `kind`, before sglang is imported."""
    import torch

    name, capability, mib = GPUS[kind]
    total = mib * 1024 * 1024
    props = types.SimpleNamespace(name=name, major=capability[0], minor=capability[1], total_memory=total,
                                  multi_processor_count=148, is_integrated=False, is_multi_gpu_board=False,
                                  uuid="GPU-00000000-0000-0000-0000-000000000000", L2_cache_size=50 * 2**20,
                                  warp_size=32, gcnArchName="")
    cuda = torch.cuda
    cuda.is_available = lambda: True
    cuda.device_count = lambda: 8
    cuda.get_device_capability = lambda device=None: capability
    cuda.get_device_name = lambda device=None: name
    cuda.get_device_properties = lambda device=None: props
    cuda.mem_get_info = lambda device=None: (total - 600 * 2**20, total)
    cuda.current_device = lambda: 0
    cuda.is_initialized = lambda: True

    from sglang.srt.utils import common

    common.get_nvgpu_memory_capacity = lambda: float(mib)


def _value(value):
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)


def _where(error):
    """The release's file:line that raised, as sglang/srt/...:line."""
    frame = traceback.extract_tb(error.__traceback__)[-1]
    return frame.filename.split("site-packages/")[-1], frame.lineno


def run_case(case):
    """{'accepted': bool, 'refusal': the exception's sentence, 'resolved': {field: value}, 'warnings': [...]}."""
    said = []
    make_record = logging.getLogRecordFactory()

    def keep(*args, **kwargs):
        # every log line resolution writes, whatever handlers SGLang set up: it says why a value changed
        record = make_record(*args, **kwargs)
        if record.levelno >= logging.INFO:
            said.append(record.getMessage()[:400])
        return record

    logging.setLogRecordFactory(keep)
    from sglang.srt import server_args as sa

    try:
        args = sa.prepare_server_args(list(case["argv"]))
        if hasattr(args, "resolve_once"):
            args.resolve_once()
        if hasattr(args, "check_server_args"):
            args.check_server_args()
    except BaseException as error:  # the launch refuses: SystemExit from argparse too
        return {"accepted": False, "refusal": str(error), "error_type": type(error).__name__,
                "where": "%s:%s" % _where(error), "log": said}
    # 0.5.22+ keep what resolution decided beside the input fields (resolved_dict: the values the server runs
    # with); older releases write them into the fields during __post_init__.
    values = args.resolved_dict() if hasattr(args, "resolved_dict") else {}
    resolved = {field: _value(values[field] if field in values else getattr(args, field, None)) for field in FIELDS}
    # 0.5.15 and 0.5.23 keep the decode CUDA graphs' batch bound in cuda_graph_config.decode.max_bs (set during
    # resolution, capped to --max-running-requests: 0.5.23 arg_groups/memory_hook.py:181-188), not in a flat field.
    graphs = values.get("cuda_graph_config")
    if isinstance(graphs, dict) and isinstance(graphs.get("decode"), dict):
        resolved["cuda_graph_max_bs"] = _value(graphs["decode"].get("max_bs"))
    elif resolved["cuda_graph_max_bs"] is None:
        decode = getattr(getattr(args, "cuda_graph_config", None), "decode", None)
        resolved["cuda_graph_max_bs"] = _value(getattr(decode, "max_bs", None))
    out = {"accepted": True, "refusal": None, "log": said, "resolved": resolved}
    if case.get("probe"):  # a sliding-window plan: its two pools as the release's own configurator sizes them
        import pools_real

        try:
            out["pools"] = pools_real.real_pools(args, values, case["probe"])
        except Exception as error:
            out["pools"] = {"error": "%s: %s (%s:%s)" % ((type(error).__name__, error) + _where(error))}
    return out


def in_child(case):
    """run_case in a forked child; its result comes back through a pipe."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        try:
            result = run_case(case)
        except BaseException as error:  # the driver itself failed: say so rather than hang
            result = {"accepted": None, "refusal": "driver: %s: %s" % (type(error).__name__, error)}
        with os.fdopen(write, "w") as out:
            json.dump(result, out)
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as inp:
        text = inp.read()
    os.waitpid(pid, 0)
    return json.loads(text) if text else {"accepted": None, "refusal": "driver: the child died"}


def main():
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # pools_real, beside this file
    kind, cases_file, out_file = sys.argv[1:4]
    with open(cases_file, encoding="utf-8") as handle:
        cases = [c for c in json.load(handle) if c["gpu"] == kind]
    fake_devices(kind)
    import importlib

    import sglang
    from sglang.srt import server_args  # noqa: F401  the one import the children share

    # Modules resolution imports lazily (the model config, the quantization layers that load sgl_kernel, the
    # pipeline): imported once here rather than in every child. Importing runs no resolution, so no case is
    # decided in the parent.
    for name in WARM:
        try:
            importlib.import_module(name)
        except Exception:
            pass

    results = {}
    for case in cases:
        results[case["id"]] = dict(in_child(case), gpu=kind)
        print(case["id"], "accepted" if results[case["id"]]["accepted"] else results[case["id"]]["refusal"][:160],
              flush=True)
    with open(out_file, "w", encoding="utf-8") as handle:
        json.dump({"sglang": sglang.__version__, "gpu": kind, "results": results}, handle, indent=1, sort_keys=True)


if __name__ == "__main__":
    main()
