"""The page size SGLang really uses, which the pool is floored to and the pin must be a multiple of.

--page-size 1 is not what every GPU gets. On SM100 (compute capability 10.x: B200, GB200, B300) the attention
backend SGLang picks by default forces its own page (the release's rules, releases/rules.json `forced_pages`,
each with its file): trtllm_mha for GQA/MHA models turns any page it does not take (1 among them) into 64,
fa4 (picked for asymmetric K/V from 0.5.17) into 128, trtllm_mla (DeepSeek-style MLA) into 64. The pool is
then floored to that page (0.5.23 model_executor/pool_configurator.py calculate_pool_sizes_from_max_tokens),
so a pin that is not a multiple of it lands below the target. SM90 (Hopper) and SM120 (RTX PRO 6000) keep
the page asked for.

A pin rounded up to a larger page still holds exactly where the page is 1, so:
- GPU family known (gpu_compute_capability): the pin is rounded to the page of that GPU;
- unknown: to the largest page any GPU the release supports would force, so it holds everywhere.
MLA pins are always rounded to trtllm_mla's 64 (as before: a deployed MLA plan keeps its pin whatever the
facts say, and trtllm_mla can be chosen on SM12x too, 0.5.9 server_args.py).
"""

import math

from . import linear, sparse
from .geometry import has_asymmetric_kv, is_mla
from .spec import gpu_is_sm100


def _lcm(a, b):
    return a * b // math.gcd(a, b)


def _sm100_entry(spec):
    """The forced_pages entry of the backend the release picks on SM100 for this model."""
    pages = spec["_rules"]["forced_pages"]
    if is_mla(spec["model_config"]):
        return pages["sm100_mla"]
    if has_asymmetric_kv(spec["model_config"]) and "sm100_mha_asymmetric_kv" in pages:
        return pages["sm100_mha_asymmetric_kv"]
    return pages["sm100_mha"]


def _sm100_page(spec):
    entry = _sm100_entry(spec)
    page = spec["page_size"]
    return page if page in entry["keeps"] else entry["page"]


def sm100_default_is_kept(spec):
    """Whether SGLang keeps SM100's default GQA/MHA backend (trtllm_mha, or fa4) with this speculative setting.
    Every release of the table (0.5.9 server_args.py:1804-1811 to 0.5.23 arg_groups/model_override_base.py:311-325)
    picks it only when is_no_spec_infer_or_topk_one (topk unset, or 1 with page 1) and the algorithm is unset or
    --speculative-eagle-topk was given: EAGLE/EAGLE3 with topk unset (resolved later) and NGRAM get flashinfer,
    which keeps the page asked for; 0.5.23 keeps it for DFLASH too, whose topk it forces to 1
    (_forces_eagle_topk_one: rules.json sm100_default_with_dflash). The real resolvers agree
    (tests/fixtures/sglang_real: llama-eagle3-b200, llama-ngram-b200 resolve flashinfer, page 1)."""
    speculative = spec.get("speculative")
    if not speculative:
        return True
    topk = speculative.get("eagle_topk")
    if topk is not None:
        return topk == 1 and spec["page_size"] == 1
    return speculative["algorithm"] == "DFLASH" and bool(spec["_rules"].get("sm100_default_with_dflash"))


def pool_page(spec):
    """The page SGLang floors this pool to: the forced one on SM100, and for GQA/MHA where the GPU is not known
    (the conservative prediction); the page asked for elsewhere (and for MLA off a known SM100, as before).
    A GQA/MHA model whose speculative setting makes SGLang leave trtllm_mha/fa4 for flashinfer keeps its page on
    every GPU (sm100_default_is_kept)."""
    if sparse.is_sparse(spec["model_config"]):
        return sparse.PAGE  # DeepSeek-V3.2: SGLang sets page 64 on every CUDA GPU (sparse.py)
    sm100 = gpu_is_sm100(spec)
    mla = is_mla(spec["model_config"])
    # A hybrid model whose own SM100 override picks a backend that keeps the page (linear.keeps_page: triton for
    # the Qwen3-Next family, flashinfer for Nemotron-H up to 0.5.18; the real 0.5.23 and 0.5.15 resolvers agree on
    # a B200: tests/fixtures/sglang_real).
    if linear.keeps_page(spec) or (not mla and not sm100_default_is_kept(spec)):
        return spec["page_size"]
    if sm100 or (sm100 is None and not mla):
        return _sm100_page(spec)
    return spec["page_size"]


def pin_granule(spec):
    """What the pin is rounded up to (module docstring)."""
    granule = pool_page(spec)
    if is_mla(spec["model_config"]):
        granule = _lcm(granule, _lcm(spec["page_size"], spec["_rules"]["forced_pages"]["sm100_mla"]["page"]))
    return granule


def page_note(spec):
    """A sentence for the plan's assumptions when the pin follows a page the operator did not ask for."""
    if is_mla(spec["model_config"]) or pin_granule(spec) == spec["page_size"] or linear.keeps_page(spec):
        return None
    entry = _sm100_entry(spec)
    if gpu_is_sm100(spec):
        return ("page size %d: on this SM100 GPU (compute capability %s) SGLang %s serves the model with %s, which "
                "forces page_size %d (%s); the pin is a multiple of it and the pool is floored to it"
                % (pool_page(spec), spec["gpu_compute_capability"], spec["_release"], entry["backend"],
                   entry["page"], entry["source"]))
    return ("GPU family unknown (no gpu_compute_capability): the pin is a multiple of %d, the page SGLang %s forces "
            "with %s on SM100 (B200/GB200/B300, %s), so it holds on every GPU; set sglang_gpu_compute_capability "
            "(nvidia-smi --query-gpu=compute_cap) to plan for the GPU's own page"
            % (pin_granule(spec), spec["_release"], entry["backend"], entry["source"]))
