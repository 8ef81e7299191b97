"""What differs between the SGLang releases the planner supports, each rule with the file it comes from.

Paths are under `sglang/srt/` in the released wheel (`pip download --no-deps sglang==X`). The flag tables
in releases/flags-<version>.json are extracted from the same wheels (tests/contract/extract_flags.py); the
contract test checks every flag the repository renders against them.

- pool formula: floor((A - P(1 - f)) / cell) in both; 0.5.9 model_executor/model_runner_kv_cache_mixin.py
  (profile_max_num_token), 0.5.23 mem_cache/kv_cache_configurator.py and model_executor/pool_configurator.py.
- --max-total-tokens: min(profiled, cap), page-rounded, a warning when the cap exceeds the profile (0.5.9
  init_memory_pool, 0.5.23 _apply_token_constraints).
- a speculative draft's KV: 'separate' in 0.5.9 (the draft runner gets the target's token count,
  draft_runner_cache_size, and allocates its own pool after the target's, out of the (1 - f) x P headroom);
  'in_cell' in 0.5.23 (DFLASH adds the draft's own cell, speculative/dflash_utils.py
  dflash_draft_cell_size_per_token, heads split over the draft's attention TP; EAGLE/EAGLE3/NEXTN/STANDALONE
  scale the target cell by draft layers / target layers, model_executor/pool_configurator.py).
- --speculative-algorithm: 0.5.9 EAGLE EAGLE3 NEXTN STANDALONE NGRAM; 0.5.23 adds DFLASH DSPARK UNO FROZEN_KV_MTP.
- --kv-cache-dtype: 0.5.9 auto fp8_e5m2 fp8_e4m3 bf16 bfloat16 fp4_e2m1; 0.5.23 adds mxfp8 nvfp4 fp4_mx_block16
  and drops fp4_e2m1. Neither has fp16.
- torch pinned: 0.5.9 2.9.1 (CUDA 12.9 build), 0.5.23 2.14.1 (CUDA 13 build, driver branch 580+).

Draft weights load after the target's pool in both releases (the second 'Load weight begin/end' pair
in the log), so they always come out of the headroom.
"""

import re

from .spec import KVPlanError

# Bytes per KV element for each --kv-cache-dtype the planner can size. fp4/mxfp8 variants exist in the
# releases but carry scale tensors the planner does not model: they are refused with that reason.
ELEM_BYTES = {"bf16": 2, "bfloat16": 2, "fp8_e4m3": 1, "fp8_e5m2": 1}

RULES = {
    "0.5.9": {
        "kv_cache_dtypes": ("auto", "fp8_e5m2", "fp8_e4m3", "bf16", "bfloat16", "fp4_e2m1"),
        "speculative_algorithms": ("EAGLE", "EAGLE3", "NEXTN", "STANDALONE", "NGRAM"),
        "speculative_pool": "separate",
        "torch": "2.9.1", "torch_cuda": "12.9", "min_driver_branch": 575,
    },
    "0.5.23": {
        "kv_cache_dtypes": ("auto", "fp8_e5m2", "fp8_e4m3", "mxfp8", "bf16", "bfloat16", "nvfp4",
                            "fp4_mx_block16"),
        "speculative_algorithms": ("EAGLE", "EAGLE3", "NEXTN", "STANDALONE", "NGRAM", "DFLASH", "DSPARK",
                                   "UNO", "FROZEN_KV_MTP"),
        "speculative_pool": "in_cell",
        "torch": "2.14.1", "torch_cuda": "13.0", "min_driver_branch": 580,
    },
}
LATEST = "0.5.23"

# NGRAM drafts from the prompt itself: no draft model and no draft KV.
MODEL_FREE_ALGORITHMS = ("NGRAM",)
# Algorithms whose draft has its own attention geometry, read from the draft's config.json.
OWN_GEOMETRY_ALGORITHMS = ("DFLASH", "DSPARK")


def _version_tuple(text):
    numbers = re.match(r"^v?(\d+)\.(\d+)\.(\d+)", str(text))
    return tuple(int(n) for n in numbers.groups()) if numbers else None


def rules_for(version, pool_rules=None):
    """(name, rules) for an SGLang version string ('0.5.23', '0.5.23+double', '0.5.20.post1').

    A version between two supported releases takes the older one's rules (a rule changes when a
    release changes it); `pool_rules` names the rules outright, for forks whose version says nothing.
    """
    if pool_rules is not None:
        if pool_rules not in RULES:
            raise KVPlanError("spec key 'pool_rules' (group_vars sglang_pool_rules): %r is not a release the "
                              "planner knows; use one of %s (the release whose pool sizing your build follows)."
                              % (pool_rules, ", ".join(RULES)))
        return pool_rules, RULES[pool_rules]
    if version is None:
        return LATEST, RULES[LATEST]
    wanted = _version_tuple(version)
    if wanted is None:
        raise KVPlanError("spec key 'version' (group_vars sglang_version): %r is not an SGLang version like "
                          "0.5.23; for a fork with its own version scheme set sglang_pool_rules to %s."
                          % (version, " or ".join(RULES)))
    known = sorted(RULES, key=_version_tuple)
    if wanted < _version_tuple(known[0]):
        raise KVPlanError("spec key 'version' (group_vars sglang_version): SGLang %s is older than %s, the "
                          "oldest release whose pool sizing the planner was checked against. Use %s or newer, "
                          "or set sglang_pool_rules if your build sizes its pool like one of %s."
                          % (version, known[0], known[0], ", ".join(known)))
    name = [k for k in known if _version_tuple(k) <= wanted][-1]
    return name, RULES[name]
