"""What differs between SGLang releases, one table for every release the planner was checked against.

The table, releases/rules.json, is extracted from the released wheels themselves by
tests/contract/extract_rules.py (`make releases` checks it, and the flag tables releases/flags-<version>.json,
against every cached wheel); each rule carries the file (under the wheel) it was read from, and
docs/sglang-releases.md has one row per release. Rules, per release:

- draft_load: 'after_pool' (0.5.9-0.5.13: the target's ModelRunner builds its pool, the draft worker comes
  after, its weights and any pool of its own come out of the (1 - f) x P headroom) or 'before_pool'
  (0.5.14+: Scheduler.init_model_worker loads the draft before init_memory_pools, so its weights come out
  of what the profile starts from).
- eagle_cell (EAGLE/EAGLE3/NEXTN/STANDALONE/FROZEN_KV_MTP): 'separate' (the draft runner's own pool of the
  same token count, beside the target's), 'scaled_product' (cell = int(cell x (1 + Ld / L))) or
  'scaled_sum' (cell + int(cell x Ld / L)), model_executor/pool_configurator.py.
- dflash_cell (DFLASH/DSPARK): 'layer_scaled' (ceil(cell x (L + Ld) / L)) or 'draft_cell' (cell + the
  draft's own cell from its config.json), or None where the release has no DFLASH.
- mm_reserve_mib: what the release keeps out of a multimodal checkpoint's KV budget (0 before 0.5.18).
- forced_pages: the page size the attention backend SGLang picks on SM100 forces (trtllm_mha 64, fa4 128,
  trtllm_mla 64); pages.py turns it into the pin's granule.
- kv_cache_dtypes, speculative_algorithms (the flag table's choices), torch, torch_cuda, min_driver_branch.
"""

import json
import os
import re

from .spec import KVPlanError

_TABLE_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "releases", "rules.json")

# Bytes per KV element for each --kv-cache-dtype the planner can size. fp4/mxfp8 variants exist in the
# releases but carry scale tensors the planner does not model: they are refused with that reason.
ELEM_BYTES = {"bf16": 2, "bfloat16": 2, "fp8_e4m3": 1, "fp8_e5m2": 1}

# NGRAM drafts from the prompt itself: no draft model and no draft KV.
MODEL_FREE_ALGORITHMS = ("NGRAM",)
# Algorithms whose draft has its own attention geometry, read from the draft's config.json (is_dflash_family).
OWN_GEOMETRY_ALGORITHMS = ("DFLASH", "DSPARK")


def version_key(text):
    """(0, 5, 12, 1) for '0.5.12.post1': the order of releases."""
    return tuple(int(n) for n in re.findall(r"\d+", text))


def _load():
    with open(_TABLE_FILE, encoding="utf-8") as handle:
        releases = json.load(handle)["releases"]
    table = {}
    for name, rules in releases.items():
        entry = dict(rules, kv_cache_dtypes=tuple(rules["kv_cache_dtypes"]),
                     speculative_algorithms=tuple(rules["speculative_algorithms"]))
        # The older two-way summary, kept for readers of one word: is the draft inside the profiled budget?
        entry["speculative_pool"] = "in_cell" if rules["draft_load"] == "before_pool" else "separate"
        table[name] = entry
    return dict(sorted(table.items(), key=lambda item: version_key(item[0])))


RULES = _load()
OLDEST, LATEST = next(iter(RULES)), next(reversed(RULES))


def first_release_with(algorithm):
    """The oldest release in the table whose --speculative-algorithm takes `algorithm`, or None."""
    return next((name for name, rules in RULES.items() if algorithm in rules["speculative_algorithms"]), None)


def _release_name(version):
    """'0.5.23' for '0.5.23', 'v0.5.23' or '0.5.23+double' (a local build label changes no rule)."""
    text = str(version).strip()
    text = text[1:] if text[:1] in "vV" else text
    return text.split("+", 1)[0]


def rules_for(version, pool_rules=None):
    """(name, rules) for an SGLang version string. A release outside the table is refused by name:
    its rules were never read. `pool_rules` names a release of the table outright, for a fork or a
    release not yet in the table whose pool sizing follows that release (the plan then says so)."""
    if pool_rules is not None:
        name = _release_name(pool_rules)
        if name not in RULES:
            raise KVPlanError("spec key 'pool_rules' (group_vars sglang_pool_rules): %r is not a release in the "
                              "planner's table (%s to %s: %s); name the release whose pool sizing your build "
                              "follows." % (pool_rules, OLDEST, LATEST, ", ".join(RULES)))
        return name, RULES[name]
    if version is None:
        return LATEST, RULES[LATEST]
    name = _release_name(version)
    if name in RULES:
        return name, RULES[name]
    if not re.match(r"^\d+\.\d+\.\d+", name):
        raise KVPlanError("spec key 'version' (group_vars sglang_version): %r is not an SGLang version like %s; "
                          "for a fork with its own version scheme set sglang_pool_rules to the release whose "
                          "pool sizing it follows (%s to %s)." % (version, LATEST, OLDEST, LATEST))
    where = ("older than %s, the oldest release" % OLDEST if version_key(name) < version_key(OLDEST) else
             "newer than %s, the newest release" % LATEST if version_key(name) > version_key(LATEST) else
             "not a release in the table (%s)" % ", ".join(RULES))
    raise KVPlanError("spec key 'version' (group_vars sglang_version): SGLang %s is %s whose pool rules were read "
                      "from its wheel. Pin one of %s to %s, or add the release to the table "
                      "(tests/contract/extract_rules.py over its wheel, then `make releases`), or set "
                      "sglang_pool_rules to the release whose pool sizing your build follows (the plan notes it)."
                      % (version, where, OLDEST, LATEST))
