"""Extract the pool-sizing rules of REAL SGLang wheels into one table (lib/sglang_kvplan/releases/rules.json).

Nothing from a wheel is imported or run: each rule is found by a detector over the release's own source
(`ast` where a call order matters, a pattern over the file where a sentence or a formula says it), and
every rule records the file (under the wheel) it was read from. Detectors, one per rule:

- draft_load: 'before_pool' when `Scheduler.init_model_worker` (managers/scheduler.py) calls
  maybe_init_draft_worker before init_memory_pools (the draft's weights come out of what the profile
  starts from); 'after_pool' when the scheduler has no init_memory_pools (the target's ModelRunner builds its
  pool while it loads, the draft worker comes after and its weights and pool come out of the headroom).
- eagle_cell: 'separate' (no EAGLE term in the cell: the draft runner has its own pool of the same token
  count), 'scaled_product' (`int(cell * (1 + draft_layers / layers))`) or 'scaled_sum'
  (`cell + int(cell * draft_layers / layers)`), from model_executor/pool_configurator.py.
- dflash_cell: None (no DFLASH), 'layer_scaled' (scale_kv_cell_size_per_token_for_dflash by layer count
  only) or 'draft_cell' (the draft's own cell from its config, _dflash_draft_cell_size).
- mm_reserve_mib / mm_feature_reserve_mib: SGLANG_VLM_CACHE_SIZE_MB and SGLANG_MM_FEATURE_CACHE_MB (environ.py)
  where mem_cache/kv_cache_configurator.py has mm_runtime_reservation_gb, else 0; multimodal_archs and
  multimodal_off_archs from configs/model_config.py (is_multimodal).
- forced_pages: the page size SGLang forces for the attention backend it picks on SM100 (compute capability
  major 10): trtllm_mha for GQA/MHA, fa4 for asymmetric K/V where the release picks it, trtllm_mla for
  DeepSeek-style MLA; read from the backend's own "changing page_size ... to N" sentence.
- launch_refusals: the speculative x parallel combinations the release refuses at argument resolution, each
  with its own sentence and file:line, found by the sentence inside a `raise` in server_args.py or arg_groups/
  (LAUNCH_REFUSALS); a kind the release does not raise is absent. The planner refuses the same plans in the check
  phase (lib/sglang_kvplan/refusals.py) and the double refuses the same launches.
- dflash_draft_backend: how a DFLASH draft's attention backend and KV dtype resolve on SM100 (0.5.18+
  speculative_hook.py _resolve_dflash_draft_attention_backend, mem_cache/kv_cache_dtype.py): 'sm100_fa4' where a
  drafter that is neither all-sliding nor `is_causal: true` falls back to fa4 on SM100 and an fa4 draft keeps its
  KV in the model dtype ("DFLASH fa4 draft: overriding KV cache dtype"), 'fa4_model_dtype' where only an fa4
  draft (inherited from an fa4 target) does, None where the draft keeps the target's KV dtype.
- sm100_default_with_dflash: whether SM100's default GQA backend (trtllm_mha) is kept for DFLASH, whose topk is
  still unset when the default is picked (0.5.23 model_override_base.py _forces_eagle_topk_one).
- swa_pool: how a hybrid sliding-window model's pool (gpt-oss) is split: 'ratio_cell' (0.5.11+,
  HybridSWAPoolConfigurator: the cell is full layers + swa_full_tokens_ratio x sliding layers, the pool and
  --max-total-tokens count the full layers' tokens, the sliding pool is ratio x that) or 'split_after_cap'
  (ModelRunner.set_num_tokens_hybrid_swa: a cell over every layer, --max-total-tokens caps that count, and the split
  comes after it); swa_full_tokens_ratio: the release's default --swa-full-tokens-ratio (a field's default, or its
  `fallback=` where the field is resolvable).
- state_pool: how a hybrid linear-attention model's state slots are made of their budget (rest x m / (1 + m)):
  'padded_slot' (0.5.17+: K = int((budget - s) // s) and a padding slot), 'plain' (0.5.13-0.5.16: K =
  int(budget // s)) or None (another way, not read); mamba_full_memory_ratio: the release's default m.
- nemotron_h_sm100: the attention backend Nemotron-H's own override picks on SM100 with none asked and no draft:
  'flashinfer' (0.5.13-0.5.18, the page asked for kept) or 'trtllm_mha' (0.5.19+, its page forced), None where none
  is read.
- dsa_layout: DeepSeek-V3.2's KV dtype, DSA backends, forced page and indexer bytes, 'v32_by_major' where worded
  as 0.5.17-0.5.23 word them (dsa_layout's docstring), 'v32_raw_sized' for 0.5.15-0.5.16 (the pool counted by the
  raw MLA row), else None.
- speculative_algorithms, kv_cache_dtypes: from the release's flag table (extract_flags.py).
- torch, torch_cuda, min_driver_branch: the wheel's METADATA (`torch==`, `cuda-python` pin; CUDA 12.9 needs
  driver branch 575, CUDA 13.0 branch 580, NVIDIA's CUDA toolkit release notes).

Usage: python extract_rules.py WHEEL... [--out lib/sglang_kvplan/releases/rules.json]  (prints without --out)
"""

import ast
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import extract_flags

DRIVER_BRANCH_FOR_CUDA = {"12.9": 575, "13.0": 580}
SRT = "sglang/srt/"


class RuleError(ValueError):
    """A detector found nothing it knows: the release needs a reading by hand before it joins the table."""


def _calls_in_order(function):
    return [extract_flags._name_of(n.func) for n in ast.walk(function) if isinstance(n, ast.Call)]


def draft_load(source):
    rel = SRT + "managers/scheduler.py"
    tree = ast.parse(source.read(rel) or "")
    init = next((n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == "init_model_worker"), None)
    if init is None:
        raise RuleError("%s: no Scheduler.init_model_worker" % rel)
    calls = [c.split(".")[-1] for c in _calls_in_order(init) if c]
    if "init_memory_pools" not in calls:
        return "after_pool", rel
    if "maybe_init_draft_worker" in calls and calls.index("maybe_init_draft_worker") < calls.index("init_memory_pools"):
        return "before_pool", rel
    raise RuleError("%s: init_model_worker builds the pools before the draft in an unknown way" % rel)


def eagle_cell(source):
    rel = SRT + "model_executor/pool_configurator.py"
    text = source.read(rel)
    if text is None or "eagle_draft_num_layers" not in text:
        return "separate", SRT + "model_executor/model_runner_kv_cache_mixin.py (draft runner's own pool)"
    if re.search(r"_cell_size\s*\*\s*\(1 \+ (?:int\(eagle_draft_num_layers\)|draft_num_layers) / int\(num_layers\)\)",
                 text):
        return "scaled_product", rel
    if re.search(r"draft_kv_size = \(?\s*int\(\s*self\._cell_size \* draft_num_layers / int\(num_layers\)\s*\)", text):
        return "scaled_sum", rel
    raise RuleError("%s: an EAGLE cell formula the detector does not know" % rel)


def dflash_cell(source, algorithms):
    if "DFLASH" not in algorithms:
        return None, None
    rel = SRT + "model_executor/pool_configurator.py"
    text = source.read(rel) or ""
    if "_dflash_draft_cell_size" in text:
        return "draft_cell", rel + " + speculative/dflash_utils.py"
    if "scale_kv_cell_size_per_token_for_dflash" in text:
        return "layer_scaled", rel + " + speculative/dflash_utils.py"
    raise RuleError("%s: DFLASH exists but its cell rule was not found" % rel)


def swa_pool(source):
    configurator = SRT + "model_executor/pool_configurator.py"
    text = source.read(configurator) or ""
    if "class HybridSWAPoolConfigurator" in text and "full_tokens = align_page_size(max_total_num_tokens)" in text \
            and re.search(r"\+\s*self\._swa_full_tokens_ratio\s*\*", text):
        return "ratio_cell", configurator
    mixin = SRT + "model_executor/model_runner_kv_cache_mixin.py"
    # 0.5.9 set_num_tokens_hybrid_swa, 0.5.10 _resolve_hybrid_swa_tokens: the capped count of a cell over every
    # layer, re-split as full_tokens = total_memory / (F x n_full + r x S x n_swa)
    if "int(total_memory / denominator)" in (source.read(mixin) or ""):
        return "split_after_cap", mixin
    raise RuleError("%s: no sliding-window pool split the detector knows" % configurator)


def state_pool(source):
    for rel in (SRT + "mem_cache/kv_cache_configurator.py", SRT + "model_executor/model_runner_kv_cache_mixin.py"):
        text = source.read(rel) or ""
        if "mamba_full_memory_ratio" not in text:
            continue
        # the slots made of the budget, and the memory they take (both must be the rule's)
        if re.search(r"\(mamba_budget_bytes(?: - replayssm_fixed_bytes)? - per_slot\)\s*//\s*per_slot", text) \
                and re.search(r"mamba_state_memory = \(\s*\(get_schedule\(\)\.max_mamba_cache_size \+ 1\)", text):
            return "padded_slot", rel
        if "int(mamba_budget_bytes // per_req)" in text and re.search(
                r"mamba_state_memory = \(\s*server_args\.max_mamba_cache_size\s*\*\s*"
                r"config\.mamba2_cache_params\.mamba_cache_per_req", text):
            return "plain", rel
        return None, rel
    raise RuleError("no mamba_full_memory_ratio split in mem_cache/ or model_executor/")


def nemotron_h_sm100(source):
    """The attention backend the release gives Nemotron-H on SM100 when none is asked and no draft runs, from the
    model's own override (0.5.13-0.5.14 arg_groups/nemotron_h_hook.py, 0.5.15-0.5.18 arg_groups/overrides.py
    _nemotron_h_overrides, 0.5.19+ arg_groups/model_overrides/nemotron_h.py): 'flashinfer' keeps the page asked for,
    'trtllm_mha' forces its page (forced_pages sm100_mha); None where no override is read (the planner refuses the
    family on SM100 there)."""
    assignment = re.compile(r"(?:sm100_default_attention_backend=|is_sm100[^\n]*:\s*\n\s*"
                            r"(?:overrides\[\"attention_backend\"\]|server_args\.attention_backend) = )\"(\w+)\"")
    for rel in (SRT + "arg_groups/model_overrides/nemotron_h.py", SRT + "arg_groups/nemotron_h_hook.py",
                SRT + "arg_groups/overrides.py"):
        text = source.read(rel) or ""
        start, end = 0, len(text)
        if rel.endswith("overrides.py") and "model_overrides" not in rel:
            match = re.search(r"\ndef _nemotron_h_overrides\(", text)
            if not match:
                continue
            start = match.start()
            following = re.search(r"\n(?:@|def )", text[match.end():])
            end = match.end() + following.start() if following else len(text)
        found = [m for m in assignment.finditer(text, start, end)
                 if "speculative" not in text[text.rfind("\n", 0, m.start()) + 1:m.start()]]
        if found:
            last = found[-1]
            return last.group(1), "%s:%d" % (rel, text.count("\n", 0, last.start(1)) + 1)
    return None, None


def dsa_layout(source):
    """DeepSeek-V3.2's KV layout rules (DSA), where the release words them as 0.5.15-0.5.23 do: the KV dtype 'auto'
    resolves to fp8_e4m3 on SM100+ and bfloat16 below, fp8 gets the trtllm DSA backends on SM100+ (the MLA row kept
    raw, kv_lora_rank + rope bytes) and flashmla_kv below (scaled: + 4 bytes per 128 and the rope in bf16), bf16 gets
    trtllm decode on SM100+ and fa3 below, the page is forced to 64 and the indexer keeps index_head_dim + 4 bytes per
    128 per layer. 'v32_by_major' with the file:line of the dtype rule ('v32_raw_sized' where the configurator
    counts the tokens by the raw row whatever the kernels allocate, 0.5.15-0.5.16), or None where any is worded
    otherwise (0.5.9-0.5.14 pick flashmla_kv for fp8 on SM100 too: not read, refused)."""
    dtype = re.compile(r"kv_cache_dtype = \(?\s*\"fp8_e4m3\" if major >= 10")
    fp8 = re.compile(r"default = \"trtllm\" if major >= 10 else \"flashmla_kv\"")
    bf16 = re.compile(r"\"dsa_decode_backend\"\] = \"trtllm\" if major >= 10 else \"fa3\"")
    page = re.compile(r"Setting page size to (?:64|\{page_size\}) for DeepSeek DSA")
    indexer = re.compile(r"index_head_dim\s*\+ index_head_dim // \w+\.quant_block_size \* 4")
    found, where = set(), None
    for rel in _python_files(source) + [SRT + "model_executor/pool_configurator.py"]:
        text = source.read(rel) or ""
        for name, pattern in (("dtype", dtype), ("fp8", fp8), ("bf16", bf16), ("page", page), ("indexer", indexer)):
            match = pattern.search(text)
            if match:
                found.add(name)
                if name == "dtype" and where is None:
                    where = "%s:%d" % (rel, text.count("\n", 0, match.start()) + 1)
    if found != {"dtype", "fp8", "bf16", "page", "indexer"}:
        return None, None
    # 0.5.17+ counts the pool's tokens by the row it allocates (calculate_mla_kv_cache_dim in the configurator);
    # 0.5.15-0.5.16 count them by the raw row while flashmla_kv allocates the scaled one
    sized = "calculate_mla_kv_cache_dim(" in (source.read(SRT + "model_executor/pool_configurator.py") or "")
    return ("v32_by_major" if sized else "v32_raw_sized"), where


def _field_default(source, name):
    """A ServerArgs field's default: `name: type = value`, or `fallback=`/`] = value` of its A[...] block."""
    for rel in [SRT + "server_args.py"] + sorted(n for n in source._zip.namelist()
                                                 if n.startswith(SRT + "arg_groups/fields/")):
        text = source.read(rel) or ""
        found = re.search(r"\n    %s:(.*?)\n    [a-z_]+:" % name, text, re.S)
        if not found:
            continue
        value = re.search(r"fallback=([0-9.]+)", found.group(1)) or re.search(r"=\s*([0-9.]+)\s*$", found.group(1))
        if value:
            return float(value.group(1)), rel
    raise RuleError("no default for %s in server_args.py or arg_groups/fields/" % name)


def swa_ratio_default(source):
    return _field_default(source, "swa_full_tokens_ratio")


def _env_int(source, name):
    text = source.read(SRT + "environ.py") or ""
    found = re.search(r"%s = EnvInt\(([0-9 *]+)\)" % name, text)
    if not found:
        raise RuleError("environ.py: no %s" % name)
    return int(eval(found.group(1), {"__builtins__": {}}))  # digits and * only (the pattern)


def multimodal(source):
    rel = SRT + "mem_cache/kv_cache_configurator.py"
    text = source.read(rel) or ""
    config_rel = SRT + "configs/model_config.py"
    module = source.module("sglang.srt.configs.model_config")
    archs = extract_flags.evaluate(module.assigns.get("multimodal_model_archs"), module)
    if archs is extract_flags.UNKNOWN or not archs:
        raise RuleError("%s: multimodal_model_archs not readable" % config_rel)
    config_text = source.read(config_rel)
    off = re.search(r"mm_disabled_models = \[([^\]]*)\]", config_text)
    out = {"multimodal_archs": sorted(archs), "multimodal_archs_source": config_rel,
           "multimodal_off_archs": sorted(re.findall(r'"(\w+)"', off.group(1))) if off else []}
    if "def mm_runtime_reservation_gb" in text:
        out.update(mm_reserve_mib=_env_int(source, "SGLANG_VLM_CACHE_SIZE_MB"),
                   mm_feature_reserve_mib=_env_int(source, "SGLANG_MM_FEATURE_CACHE_MB"), mm_reserve_source=rel)
    else:
        out.update(mm_reserve_mib=0, mm_feature_reserve_mib=0, mm_reserve_source=None)
    return out


def _python_files(source):
    names = source._zip.namelist() if source._zip is not None else []
    return [n for n in names if n.startswith(SRT) and n.endswith(".py")
            and (n == SRT + "server_args.py" or n.startswith(SRT + "arg_groups/"))]


SM100_SPECULATIVE_CONDITION = ("is_no_spec_infer_or_topk_one", "speculative_eagle_topk is not None")


def forced_pages(source):
    """{kind: (page, file)} the release forces on SM100 for the backend it picks by default."""
    found = {}
    sentences = {
        "mha": r"TensorRT-LLM MHA only supports page_size of ([^\"]*?), changing page_size from \{[\w.]+\} to (\d+)",
        "mla": r"TensorRT-LLM MLA only supports page_size of ([^\"]*?), changing page_size from \{[\w.]+\} to (\d+)",
        "fa4": r"FA4 backend only supports page size ((\d+)) for non-MLA",
    }
    default_mha = re.compile(r"is_sm100[\s\S]{0,600}?(?:self\.attention_backend = |return )\"trtllm_mha\"")
    asym_fa4 = re.compile(r"has_asymmetric_kv:\s*\n\s*return \"fa4\"")
    picks_mha = picks_fa4 = None
    for rel in _python_files(source):
        text = source.read(rel)
        for kind, pattern in sentences.items():
            match = re.search(pattern, text)
            if match and kind not in found:
                # (forced page, the page sizes the backend keeps as they are, file)
                found[kind] = (int(match.group(2)), [int(n) for n in re.findall(r"\d+", match.group(1))], rel)
        # The general default, not a model's own (GptOss, Olmo2 pick trtllm_mha with no condition): the match
        # under the speculative condition lib/sglang_kvplan/pages.py sm100_default_is_kept reads (trtllm_mha only
        # without speculative decoding or with --speculative-eagle-topk given, 1 at page 1). A release that words
        # it otherwise is found nowhere and refused below, to be read again by hand.
        if picks_mha is None and any(all(word in found_default.group(0) for word in SM100_SPECULATIVE_CONDITION)
                                     for found_default in default_mha.finditer(text)):
            picks_mha = rel
        if picks_fa4 is None and asym_fa4.search(text):
            picks_fa4 = rel
    if picks_mha is None or "mha" not in found or "mla" not in found:
        raise RuleError("no SM100 trtllm_mha default under %s / page sentence found in server_args.py or "
                        "arg_groups/" % " and ".join(SM100_SPECULATIVE_CONDITION))
    def entry(kind, backend, picked_in=None):
        page, keeps, rel = found[kind]
        out = {"page": page, "keeps": keeps, "backend": backend, "source": rel}
        return dict(out, picked_in=picked_in) if picked_in else out

    pages = {"sm100_mha": entry("mha", "trtllm_mha", picks_mha), "sm100_mla": entry("mla", "trtllm_mla")}
    if picks_fa4 and "fa4" in found:
        pages["sm100_mha_asymmetric_kv"] = entry("fa4", "fa4", picks_fa4)
    return pages


# (kind, the sentence's pattern, what the release refuses). The sentence is matched in the string constants of
# `raise` statements (adjacent literals joined, as Python joins them), so a warning with the same words is not one.
LAUNCH_REFUSALS = (
    ("dflash_pp", r"^Currently DFLASH speculative decoding only supports pp_size == 1\.$",
     "DFLASH with --pp-size > 1"),
    ("dflash_dp_attention", r"^Currently DFLASH speculative decoding does not support dp attention",
     "DFLASH with DP attention"),
    ("dflash_dp_attention_needs_dp_lm_head", r"^DFLASH with dp attention requires --enable-dp-lm-head\.$",
     "DFLASH with DP attention without --enable-dp-lm-head"),
    ("dspark_pp", r"^Currently DSpark speculative decoding only supports pp_size == 1\.$|^DSpark pipeline "
     r"parallelism requires PD prefill", "DSPARK with --pp-size > 1"),
    ("dspark_dp_attention_needs_dp_lm_head", r"^DSpark with dp attention requires --enable-dp-lm-head\.$",
     "DSPARK with DP attention without --enable-dp-lm-head"),
    ("standalone_dp_attention", r"^Currently standalone speculative decoding does not support dp attention\.$",
     "STANDALONE with DP attention"),
    ("ngram_dp_attention", r"^Currently ngram speculative decoding does not support dp attention\.$",
     "NGRAM with DP attention"),
    ("uno_draft_path", r"^UNO reuses the target model and does not accept --speculative-draft-model-path\.$",
     "UNO with a draft model path"),
    ("uno_lora_path", r"^UNO requires --uno-lora-path\.$", "UNO without --uno-lora-path"),
    ("uno_tp_pp", r"^UNO requires TP=PP=1\.$", "UNO with --tp-size or --pp-size above 1"),
)


def _raised_sentences(source):
    """(sentence, file, line) of every string constant inside a `raise` of the argument-resolution files."""
    found = []
    for rel in _python_files(source):
        tree = ast.parse(source.read(rel))
        parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
        for node in ast.walk(tree):
            if not isinstance(node, ast.Raise) or node.exc is None:
                continue
            tests = []  # the conditions of the `if`s around the raise, innermost first
            up = parents.get(node)
            while up is not None and not isinstance(up, ast.FunctionDef):
                if isinstance(up, ast.If):
                    tests.append(ast.unparse(up.test))
                up = parents.get(up)
            for sub in ast.walk(node.exc):
                if isinstance(sub, ast.Constant) and isinstance(sub.value, str):
                    found.append((sub.value, rel, sub.lineno, tests))
                elif isinstance(sub, ast.JoinedStr):  # an f-string: its literal parts, joined
                    text = "".join(v.value for v in sub.values if isinstance(v, ast.Constant))
                    found.append((text, rel, sub.lineno, tests))
    return found


def _dp_attention_test(tests):
    """How the release tells that DP attention is on where it refuses it: 'flag' (--enable-dp-attention given, any
    --dp-size) or 'attn_dp_size' (attention DP wider than 1: 0.5.22+ turn the flag into --attn-dp-size = --dp-size)."""
    for test in tests:
        if "enable_dp_attention" in test:
            return "flag"
        if "attn_dp" in test:
            return "attn_dp_size"
    raise RuleError("a DP-attention refusal under conditions the detector does not know: %r" % (tests,))


def launch_refusals(source):
    """{kind: {message, refuses, source 'file:line'}} of LAUNCH_REFUSALS the release raises."""
    sentences = _raised_sentences(source)
    out = {}
    for kind, pattern, refuses in LAUNCH_REFUSALS:
        hit = next((found for found in sentences if re.search(pattern, found[0])), None)
        if hit:
            out[kind] = {"message": hit[0], "refuses": refuses, "source": "%s:%d" % (hit[1], hit[2])}
            if "dp_attention" in kind:
                out[kind]["dp_attention_on"] = _dp_attention_test(hit[3])
    return out


def dflash_draft_backend(source, algorithms):
    """(rule, source) of the DFLASH draft's backend and KV dtype on SM100 (module docstring)."""
    if "DFLASH" not in algorithms:
        return None, None
    dtype_rel = SRT + "mem_cache/kv_cache_dtype.py"
    if "DFLASH fa4 draft: overriding KV cache dtype" not in (source.read(dtype_rel) or ""):
        return None, None
    hook_rel = SRT + "arg_groups/speculative_hook.py"
    hook = source.read(hook_rel) or ""
    fallback = re.search(r"is_sm100[^\n]*:\s*\n\s*fallback_backend = \"fa4\"[\s\S]{0,200}?DFLASH only enables "
                         r"'trtllm_mha'", hook)
    if fallback:
        line = hook[:fallback.start()].count("\n") + 1
        return "sm100_fa4", "%s:%d + %s" % (hook_rel, line, dtype_rel)
    return "fa4_model_dtype", dtype_rel


def sm100_default_with_dflash(source):
    """(True, file) where the SM100 GQA default backend (trtllm_mha) is kept for DFLASH although its topk is still
    unset when the default is picked (0.5.23 arg_groups/model_override_base.py _forces_eagle_topk_one); else
    (False, None): DFLASH, like EAGLE with topk unset, gets the non-trtllm default."""
    for rel in _python_files(source):
        if "def _forces_eagle_topk_one" in (source.read(rel) or ""):
            return True, rel
    return False, None


def metadata_pins(source):
    names = source._zip.namelist()
    meta = next(n for n in names if re.match(r"sglang-[^/]+\.dist-info/METADATA$", n))
    text = source.read(meta)
    torch = re.search(r"^Requires-Dist: torch==([\w.]+)\s*$", text, re.M)
    cuda = re.search(r"^Requires-Dist: cuda-python(?:==|>=)(\d+\.\d+)", text, re.M)
    if not torch or not cuda or cuda.group(1) not in DRIVER_BRANCH_FOR_CUDA:
        raise RuleError("%s: no torch== or known cuda-python pin" % meta)
    return {"torch": torch.group(1), "torch_cuda": cuda.group(1),
            "min_driver_branch": DRIVER_BRANCH_FOR_CUDA[cuda.group(1)], "pins_source": meta}


def rules(path):
    source = extract_flags.Source(path)
    flags = extract_flags.extract(path)
    by_name = {n: f for f in flags["flags"] for n in f["names"]}
    algorithm_flag = by_name["--speculative-algorithm"]
    algorithms = algorithm_flag["choices"] or flags["runtime_choices"]["speculative_algorithm"]["values"]
    out = {"version": flags["version"],
           "kv_cache_dtypes": list(by_name["--kv-cache-dtype"]["choices"]),
           "speculative_algorithms": list(algorithms),
           "speculative_algorithms_source": (algorithm_flag["source"] if algorithm_flag["choices"]
                                             else flags["runtime_choices"]["speculative_algorithm"]["source"])}
    out["draft_load"], out["draft_load_source"] = draft_load(source)
    out["eagle_cell"], out["eagle_cell_source"] = eagle_cell(source)
    out["dflash_cell"], out["dflash_cell_source"] = dflash_cell(source, algorithms)
    out.update(multimodal(source))
    out["forced_pages"] = forced_pages(source)
    out["swa_pool"], out["swa_pool_source"] = swa_pool(source)
    out["swa_full_tokens_ratio"], out["swa_full_tokens_ratio_source"] = swa_ratio_default(source)
    out["state_pool"], out["state_pool_source"] = state_pool(source)
    out["mamba_full_memory_ratio"], out["mamba_full_memory_ratio_source"] = _field_default(
        source, "mamba_full_memory_ratio")
    out["nemotron_h_sm100"], out["nemotron_h_sm100_source"] = nemotron_h_sm100(source)
    out["dsa_layout"], out["dsa_layout_source"] = dsa_layout(source)
    out["launch_refusals"] = launch_refusals(source)
    out["dflash_draft_backend"], out["dflash_draft_backend_source"] = dflash_draft_backend(source, algorithms)
    out["sm100_default_with_dflash"], out["sm100_default_with_dflash_source"] = sm100_default_with_dflash(source)
    out.update(metadata_pins(source))
    return out


def table(paths):
    releases = {}
    for path in paths:
        entry = rules(path)
        releases[entry.pop("version")] = entry
    return {"extracted_by": "tests/contract/extract_rules.py", "releases": dict(sorted(
        releases.items(), key=lambda item: tuple(int(x) for x in re.findall(r"\d+", item[0]))))}


def dumps(data):
    return json.dumps(data, indent=1, sort_keys=True) + "\n"


def _cite(path):
    return "`%s`" % path.replace(SRT, "").replace("sglang/", "") if path else ""


def markdown(data):
    """docs/sglang-releases.md's table: one row per release, each rule with the file it was read from."""
    rows = ["| release | draft loads | EAGLE-family cell | DFLASH cell | multimodal reserve | SM100 forced page "
            "(trtllm_mha / fa4 / trtllm_mla) | sliding-window pool (default ratio) | --speculative-algorithm | "
            "torch, CUDA, driver |",
            "|---|---|---|---|---|---|---|---|---|"]
    for version, r in sorted(data["releases"].items(), key=lambda item: tuple(int(n) for n in
                                                                             re.findall(r"\d+", item[0]))):
        pages = r["forced_pages"]
        fa4 = pages.get("sm100_mha_asymmetric_kv")
        rows.append("| %s | %s (%s) | %s (%s) | %s | %s | %d / %s / %d (%s; picked in %s) | %s, %s (%s) | %s (%s) "
                    "| %s, %s, %d (%s) |"
                    % (version, r["draft_load"], _cite(r["draft_load_source"]), r["eagle_cell"],
                       _cite(r["eagle_cell_source"]),
                       "%s (%s)" % (r["dflash_cell"], _cite(r["dflash_cell_source"])) if r["dflash_cell"] else "none",
                       "%d MiB (+%d with cuda_ipc/vmm transport; %s)" % (
                           r["mm_reserve_mib"], r["mm_feature_reserve_mib"], _cite(r["mm_reserve_source"]))
                       if r["mm_reserve_mib"] else "none",
                       pages["sm100_mha"]["page"], fa4["page"] if fa4 else "not picked", pages["sm100_mla"]["page"],
                       _cite(pages["sm100_mha"]["source"]), _cite(pages["sm100_mha"]["picked_in"]),
                       r["swa_pool"], r["swa_full_tokens_ratio"], _cite(r["swa_pool_source"]),
                       " ".join(r["speculative_algorithms"]), _cite(r["speculative_algorithms_source"].split(" ")[0]),
                       r["torch"], r["torch_cuda"], r["min_driver_branch"], "METADATA"))
    return "\n".join(rows) + "\n"


def refusals_markdown(data):
    """docs/sglang-releases.md's launch-refusal table: one row per refusal, each release with its file:line."""
    order = sorted(data["releases"], key=lambda v: tuple(int(n) for n in re.findall(r"\d+", v)))
    rows = ["| SGLang refuses at launch | in its words | releases (file:line) |", "|---|---|---|"]
    for kind, _, refuses in LAUNCH_REFUSALS:
        found = [(v, data["releases"][v]["launch_refusals"][kind]) for v in order
                 if kind in data["releases"][v]["launch_refusals"]]
        if not found:
            continue
        for message in dict.fromkeys(entry["message"] for _, entry in found):
            where = "; ".join("%s %s" % (v, _cite(e["source"])) for v, e in found if e["message"] == message)
            rows.append("| %s | %s | %s |" % (refuses, message, where))
    return "\n".join(rows) + "\n"


def main(argv):
    if argv[:1] == ["--refusals-markdown"]:
        with open(argv[1], encoding="utf-8") as handle:
            sys.stdout.write(refusals_markdown(json.load(handle)))
        return
    if argv[:1] == ["--markdown"]:
        with open(argv[1], encoding="utf-8") as handle:
            sys.stdout.write(markdown(json.load(handle)))
        return
    out = None
    if "--out" in argv:
        index = argv.index("--out")
        out = argv[index + 1]
        argv = argv[:index] + argv[index + 2:]
    text = dumps(table(argv))
    if out:
        with open(out, "w", encoding="utf-8") as handle:
            handle.write(text)
        print("%s: %d releases" % (out, len(json.loads(text)["releases"])))
    else:
        sys.stdout.write(text)


if __name__ == "__main__":
    main(sys.argv[1:])
