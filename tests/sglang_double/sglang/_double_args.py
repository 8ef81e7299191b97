"""The TEST DOUBLE's argument parser, built from the REAL release's flag table.

The table is extracted from the real wheel by tests/contract/extract_flags.py and committed as
lib/sglang_kvplan/releases/flags-<version>.json; build_wheel.py packs it into this package as
_double_flags/. So the double accepts exactly the flags, aliases, types and choices of the release it
impersonates and refuses the rest with argparse's own error text and exit code 2, as SGLang does
(0.5.9 and 0.5.23 `prepare_server_args`, srt/server_args.py, build a plain argparse.ArgumentParser).
"""

import argparse
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
TABLE_DIRS = (os.path.join(HERE, "_double_flags"),  # inside the wheel
              os.path.join(HERE, os.pardir, os.pardir, os.pardir, "lib", "sglang_kvplan", "releases"))  # source


def release_of(version):
    return str(version).split("+", 1)[0]


def load_table(version):
    for folder in TABLE_DIRS:
        path = os.path.join(folder, "flags-%s.json" % release_of(version))
        if os.path.isfile(path):
            with open(path, encoding="utf-8") as handle:
                return json.load(handle)
    raise FileNotFoundError("SGLang double: no flag table for release %s in %s" % (version, ", ".join(TABLE_DIRS)))


# -- the release's type callables, by the names the table records (argparse names them in its errors) ---------

def nullable_str(val):  # srt/utils/common.py
    if not val or val == "None":
        return None
    return val


def json_list_type(value):  # srt/utils/common.py
    try:
        return json.loads(value)
    except json.JSONDecodeError as error:
        raise argparse.ArgumentTypeError(
            f"Invalid JSON list: {value}. Please provide a valid JSON list.") from error


def human_readable_int(value):  # 0.5.23: "128k", "1M" or a plain integer
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kKmMgG]?)\s*", str(value))
    if not match:
        raise ValueError(value)
    return int(float(match.group(1)) * {"": 1, "k": 1e3, "m": 1e6, "g": 1e9}[match.group(2).lower()])


def loads(value):  # json.loads, as argparse names it ("invalid loads value")
    return json.loads(value)


TYPES = {"int": int, "float": float, "str": str, "json.loads": loads, "json_list_type": json_list_type,
         "nullable_str": nullable_str, "human_readable_int": human_readable_int}


def _warn(message):
    print("\033[1;33m%s\033[0m" % message, file=sys.stderr, flush=True)


class DeprecatedAction(argparse.Action):  # 0.5.9 server_args.py: warns, stores nothing
    def __init__(self, option_strings, dest, nargs=0, **kwargs):
        super().__init__(option_strings, dest, nargs=nargs, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        _warn(f"The command line argument '{option_string}' is deprecated and will be removed in future versions.")


class DeprecatedStoreTrueAction(argparse.Action):  # 0.5.23 arg_groups/argparse_actions.py
    def __init__(self, option_strings, dest, nargs=0, const=True, default=False, **kwargs):
        super().__init__(option_strings, dest, nargs=nargs, const=const, default=default, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        _warn(f"'{option_string}' is deprecated and will be removed in a future release.")
        setattr(namespace, self.dest, True)


class DeprecatedStoreConstAction(argparse.Action):
    def __init__(self, option_strings, dest, const_value=None, nargs=0, default=None, **kwargs):
        self.const_value = const_value
        super().__init__(option_strings, dest, nargs=nargs, default=default, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        _warn(f"'{option_string}' is deprecated and will be removed in a future release.")
        setattr(namespace, self.dest, self.const_value)


class StoreListAction(argparse.Action):  # LoRAPathAction and friends: keep the list as given
    def __call__(self, parser, namespace, values, option_string=None):
        setattr(namespace, self.dest, values)


def build_parser(table):
    """An argparse parser equivalent, flag for flag, to the release's own."""
    parser = argparse.ArgumentParser(prog=table.get("prog"))  # 0.5.9: None -> sys.argv[0]'s name, as real
    for entry in table["flags"]:
        kwargs = {"dest": entry["dest"], "default": entry.get("default")}
        action = entry["action"]
        if action in ("store_true", "store_false"):
            kwargs["action"] = action
            if kwargs["default"] is None:
                kwargs.pop("default")
        elif action == "boolean_optional":
            kwargs["action"] = argparse.BooleanOptionalAction
        elif action == "deprecated":
            kwargs["action"] = DeprecatedAction
        elif action == "deprecated_store_true":
            kwargs["action"] = DeprecatedStoreTrueAction
            kwargs["default"] = bool(kwargs["default"])
        elif action == "deprecated_store_const":
            kwargs.update(action=DeprecatedStoreConstAction, nargs=entry.get("nargs", 0),
                          const_value=entry.get("const_value", True))
            if entry.get("choices"):
                kwargs["choices"] = entry["choices"]
        elif action == "store_const":
            kwargs.update(action="store_const", const=entry.get("const"))
        else:  # store, lora_path, deprecated_alias_store: values with a type
            if action != "store":
                kwargs["action"] = StoreListAction
            kwargs["type"] = TYPES.get(entry.get("type") or "str", str)
            if entry.get("nargs") is not None:
                kwargs["nargs"] = entry["nargs"]
            if entry.get("choices") is not None:
                kwargs["choices"] = entry["choices"]
            if entry.get("required"):
                kwargs["required"] = True
        parser.add_argument(*entry["names"], **kwargs)
    return parser


# 0.5.9 ServerArgs.from_cli_args copies the long parallel dests onto the short names (srt/server_args.py).
ALIASES_059 = {"tp_size": "tensor_parallel_size", "pp_size": "pipeline_parallel_size", "dp_size": "data_parallel_size",
               "ep_size": "expert_parallel_size"}


def server_args(namespace):
    """The parsed flags as ServerArgs sees them, plus the few defaults the double relies on."""
    for short, long in ALIASES_059.items():
        if hasattr(namespace, long):
            setattr(namespace, short, getattr(namespace, long))
    for name, value in (("tp_size", 1), ("pp_size", 1), ("dp_size", 1), ("enable_dp_attention", False),
                        ("attn_dp_size", None), ("speculative_draft_kv_cache_dtype", None)):
        if getattr(namespace, name, None) is None:
            setattr(namespace, name, value)
    return namespace


def check_speculative_algorithm(table, name):
    """0.5.23 accepts any string on the command line and checks it at launch
    (speculative/spec_info.py SpeculativeAlgorithm.from_string); 0.5.9's argparse choices already did."""
    rule = table.get("runtime_choices", {}).get("speculative_algorithm")
    if name is None or rule is None:
        return name
    if name.upper() not in rule["values"]:
        raise ValueError(f"Unknown speculative algorithm name: {name}")
    return name.upper()


# EAGLE-family parameter resolution (0.5.9 srt/server_args.py:2422-2450 and auto_choose_speculative_params
# :5741-5775; 0.5.23 arg_groups/speculative_hook.py:1159-1174, 1255-1266 and _auto_choose_speculative_params
# :1430-1461, reached for is_eagle() or is_standalone(), speculative/spec_info.py:262-264): all three unset ->
# (steps, topk, draft tokens) by architecture; topk 1 -> draft tokens = steps + 1. /server_info then reports the
# resolved values, as the real one does (its server_args are the resolved ones).
EAGLE_FAMILY = ("EAGLE", "EAGLE3", "NEXTN", "STANDALONE")
# speculative/spec_info.py is_eagle() (0.5.9:36-38 EAGLE, EAGLE3; 0.5.12+ adds FROZEN_KV_MTP; NEXTN is EAGLE:
# 0.5.9 server_args.py:2352 rewrites it, 0.5.23 spec_info.py:60-61 maps the alias)
RESERVING = ("EAGLE", "EAGLE3", "NEXTN", "FROZEN_KV_MTP")


# NGRAM's draft tokens when none are given: 0.5.23 arg_groups/speculative_hook.py:1309-1330, 0.5.15
# server_args.py:477-481 (the real resolver resolves 12 in both, tests/fixtures/sglang_real/resolver-*.json)
NGRAM_DEFAULT_DRAFT_TOKENS = 12


def resolve_speculative(args, config):
    algorithm = (args.speculative_algorithm or "").upper()
    if algorithm == "NGRAM" and args.speculative_num_draft_tokens is None:
        args.speculative_num_draft_tokens = NGRAM_DEFAULT_DRAFT_TOKENS
    if algorithm not in EAGLE_FAMILY:
        return
    if args.speculative_num_steps is None:
        # 0.5.23 arg_groups/speculative_hook.py:1159-1163 (0.5.9 server_args.py:2422-2426): a bare assert
        assert args.speculative_eagle_topk is None and args.speculative_num_draft_tokens is None
        arch = (config.get("architectures") or [""])[0]
        wide = algorithm != "STANDALONE" and arch in ("LlamaForCausalLM", "Grok1ForCausalLM", "Grok1VForCausalLM")
        (args.speculative_num_steps, args.speculative_eagle_topk,
         args.speculative_num_draft_tokens) = (5, 4, 8) if wide else (3, 1, 4)
    if args.speculative_eagle_topk == 1 and args.speculative_num_steps is not None:
        args.speculative_num_draft_tokens = args.speculative_num_steps + 1


def resolve_chunked_prefill(args, gpu_memory_mib, attn_dp):
    """--chunked-prefill-size as the release resolves it: the given one, else a tier of the GPU's memory (0.5.23
    arg_groups/memory_hook.py:160-169, 0.5.9 server_args.py _handle_gpu_memory_settings: under 20 GiB 2,048, under
    60 GiB 4,096, under 160 GiB 8,192, else 16,384); then, under DP attention, divided by the attention-DP width
    (0.5.23 arg_groups/parallel_hook.py:327-336, 0.5.15 server_args.py:4899-4906)."""
    chunk = args.chunked_prefill_size
    if chunk is None:
        chunk = next((tokens for below, tokens in ((20, 2048), (60, 4096), (160, 8192))
                      if gpu_memory_mib < below * 1024), 16384)
    if chunk > 0 and attn_dp > 1:  # 0.5.22+ resolves DP attention into --attn-dp-size (_double_attention.py)
        chunk //= attn_dp
    args.chunked_prefill_size = chunk


def num_reserved_tokens(args):
    """Output slots the tokenizer adds to every input before its length checks: EAGLE stores its draft tokens
    there (0.5.9 managers/tokenizer_manager.py:250-261; 0.5.17+ managers/utils.py compute_num_reserved_tokens,
    0.5.23:484-500, with max_speculative_num_draft_tokens = the draft tokens for a non-adaptive draft,
    runtime_context.py:1982-2000)."""
    if (args.speculative_algorithm or "").upper() not in RESERVING:
        return 0
    return max((args.speculative_eagle_topk or 0) * (args.speculative_num_steps or 0),
               args.speculative_num_draft_tokens or 0)
