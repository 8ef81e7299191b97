"""How the planner sizes a checkpoint, by config.json `architectures[0]` and the class its release gives it.

Every architecture a release registers is in releases/architectures.json (read from the release's wheel by
tests/contract/extract_architectures.py): full (MHA/GQA), mla, window_one_pool, reward, a multimodal wrapper by its
text model, hybrid_swa, linear, sparse, encoder, draft, or refused with a reason. The plain classes are planned by
the plain family (plain.py: the cell formula of kv_cell.py); the hybrid and sparse families the planner models name
their architectures in their own files (sliding.py, linear.py, sparse.py: SLIDING, LINEAR, SPARSE here, each citing
the SGLang 0.5.23 EntryClass that serves it), registered in families.py; Gemma 3 (GEMMA3) is planned plainly on the
releases known to turn its windows off. Every other class is refused by name with what SGLang does instead and how
to size it by hand (sglang_max_total_tokens: hand_pool.py). An architecture the release does not register is served
by SGLang's Transformers fallback with the plain pool, and planned so where its config has a plain layout (with a
plan line).
"""

import json
import os
import re

from . import families, linear, plain, sliding, sparse
from .geometry import architecture, text_config
from .spec import HAND_SIZING, KVPlanError

# The planner's first hand list, kept as the docs' cited examples (a test reads each line in the 0.5.23 wheel); the
# release's table decides their class. architectures[0] -> SGLang 0.5.23 model file:line of its EntryClass. Every
# entry is full attention on every layer (the plain formula is SGLang's: model_executor/pool_configurator.py:491-498
# for MHA/GQA, the MLA branch above it), MoE or dense alike: experts change the weights, not the KV cell.
KNOWN = {
    "LlamaForCausalLM": "models/llama.py:968",
    "MistralForCausalLM": "models/mistral.py:191",
    "MixtralForCausalLM": "models/mixtral.py:482",
    "Qwen2ForCausalLM": "models/qwen2.py:797",  # an unused sliding_window: use_sliding_window false (model.py)
    "Qwen2MoeForCausalLM": "models/qwen2_moe.py:1436",
    "Qwen3ForCausalLM": "models/qwen3.py:808",
    "Qwen3MoeForCausalLM": "models/qwen3_moe.py:1298",
    "DeepseekV2ForCausalLM": "models/deepseek_v2.py:3595",  # MLA
    "DeepseekV3ForCausalLM": "models/deepseek_v2.py:3595",  # MLA: DeepSeek-V3/R1, Kimi K2
    "KimiK25ForConditionalGeneration": "models/kimi_k25.py:988",  # MLA text_config (DeepseekV3), Kimi K2.5/K2.6
    # GQA text model (its window attention is in the vision encoder only, which holds no KV), multimodal reserve
    "Qwen2_5_VLForConditionalGeneration": "models/qwen2_5_vl.py:1004",
    # A DFLASH draft (the kimi-k2.6-dflash preset): plain GQA, sized as 0.5.23 speculative/dflash_utils.py
    # dflash_draft_cell_size_per_token does; drafter.py checks it against its target.
    "DFlashDraftModel": "models/dflash.py:1317",
}

# The families' own tables (families.py), by the names the docs and the tests read them by.
SLIDING = sliding.ARCHITECTURES  # two pools, full and sliding-window, split by --swa-full-tokens-ratio
LINEAR = linear.ARCHITECTURES  # a state pool of request slots beside the KV pool of the full-attention layers
SPARSE = sparse.ARCHITECTURES  # DeepSeek sparse attention: the MLA row and the indexer's keys, page 64 (0.5.15+)

# Gemma 3: every release in releases/rules.json, 0.5.9 to 0.5.23, sets disable_hybrid_swa_memory for
# Gemma3ForConditionalGeneration and Gemma3ForCausalLM ("Disable hybrid SWA memory for ... as it is not yet
# supported"; the line of each release below). With it is_hybrid_swa is false (0.5.23 configs/model_config.py:1217)
# and the pool is the plain MHA pool over all layers (0.5.23 model_executor/pool_configurator.py:491-498:
# kv_heads per TP x (head_dim + v_head_dim) x layers x elem), head_dim as text_config gives it (128 for 27B).
# A release not listed here is refused by name.
GEMMA3 = frozenset(("Gemma3ForConditionalGeneration", "Gemma3ForCausalLM"))
_SERVER_ARGS, _OVERRIDES, _GEMMA_FILE = ("server_args.py:", "arg_groups/overrides.py:",
                                         "arg_groups/model_overrides/gemma2_gemma3.py:")
GEMMA3_PLAIN_POOL = {
    "0.5.9": _SERVER_ARGS + "1476-1487", "0.5.10": _SERVER_ARGS + "1866-1877",
    "0.5.10.post1": _SERVER_ARGS + "1866-1877", "0.5.11": _SERVER_ARGS + "2075-2086",
    "0.5.12": _SERVER_ARGS + "2212-2223", "0.5.12.post1": _SERVER_ARGS + "2212-2223",
    "0.5.13": _SERVER_ARGS + "2353-2364", "0.5.13.post1": _SERVER_ARGS + "2353-2364",
    "0.5.14": _SERVER_ARGS + "4045-4056", "0.5.15": _OVERRIDES + "450-462", "0.5.15.post1": _OVERRIDES + "450-462",
    "0.5.16": _OVERRIDES + "552-564", "0.5.17": _OVERRIDES + "849-861", "0.5.18": _OVERRIDES + "902-914",
    "0.5.19": _GEMMA_FILE + "16-29", "0.5.20": _GEMMA_FILE + "16-29", "0.5.21": _GEMMA_FILE + "13-26",
    "0.5.22": _GEMMA_FILE + "13-26", "0.5.23": _GEMMA_FILE + "13-26",
}
GEMMA3_PLAIN_POOL_RELEASES = frozenset(GEMMA3_PLAIN_POOL)


# Where a release's table (releases/architectures.json) has no class the planner sizes, what SGLang does instead.
_REFUSED_BY_CLASS = {
    "hybrid_swa": "SGLang sizes a full pool and a sliding-window pool split by --swa-full-tokens-ratio, which the "
                  "planner models for gpt-oss only",
    "linear": "SGLang keeps a state pool of request slots beside the KV pool of its full-attention layers, which the "
              "planner models for Qwen3-Next, Qwen3.5, Nemotron-H and Kimi-Linear only",
    "sparse": "SGLang sizes a sparse-attention pool (an MLA row and indexer keys), which the planner models for "
              "DeepSeek-V3.2 only",
    "encoder": "it is an encoder (embedding or classification) model: SGLang serves it without a decoder's long "
               "context, which is all this planner sizes",
    "draft": "it is a speculative draft head, not a model to serve: name the target model and give the draft with "
             "sglang_speculative (its algorithm and draft path)",
}
_REFUSED_BY_REASON = {
    "extra_attention_layers": "SGLang counts more attention layers than num_hidden_layers for it (two or more per "
                              "block; configs/model_config.py num_attention_layers)",
    "fixed_layer_split": "SGLang splits its layers between a full pool and a windowed one by a fixed pattern "
                         "(Llama 4: chunked attention, window attention_chunk_size, on 3 of 4 layers), which the "
                         "planner does not model",
}
_PLANNED = plain.POOL_CLASSES
TABLE_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "releases", "architectures.json")
_TABLES = {}


def release_table(release):
    """{architecture: entry} that SGLang `release` registers (releases/architectures.json, read from its wheel by
    tests/contract/extract_architectures.py), or None where the table has no such release."""
    if not _TABLES:
        with open(TABLE_FILE, encoding="utf-8") as handle:
            _TABLES.update(json.load(handle)["releases"])
    return _TABLES.get(release)


def pool_class(arch, release):
    """The class the release sizes `arch` by (full, mla, window_one_pool, reward, ...; a multimodal wrapper by its
    text model), 'unregistered' where the release does not register it, None where the release has no table."""
    table = release_table(release)
    if table is None:
        return None
    entry = table.get(arch)
    if entry is None:
        return "unregistered"
    if entry["class"] == "multimodal":
        return entry.get("text") or "multimodal"
    return entry["class"]


def one_pool_over_windows(config, release):
    """True where the release sizes this architecture's windowed layers, if any, as one pool over every layer: a
    registered architecture of a planned class is hybrid SWA only by the release's list (its class would say so) or
    by `is_hybrid_swa` in its config (0.5.23 configs/model_config.py is_hybrid_swa_model), so its window keys are
    not a second pool and the plain formula is SGLang's. Not for the Transformers fallback (its layout is the
    config's alone) nor the modelled families (their own files read the keys)."""
    arch = architecture(config)
    if (arch is None or arch in _sized_by_name() or text_config(config).get("is_hybrid_swa")
            or config.get("is_hybrid_swa")):
        return False
    return pool_class(arch, release) in _PLANNED


def fallback_note(config, release):
    """The plan's line for an architecture the release does not register (served by SGLang's Transformers
    fallback), else None."""
    arch = architecture(config)
    if arch is None or arch in _sized_by_name() or pool_class(arch, release) != "unregistered":
        return None
    return ("%s is not registered by SGLang %s: it is served through SGLang's Transformers fallback "
            "(TransformersForCausalLM), whose pool is the plain one-pool formula over every layer, as planned"
            % (arch, release))


def check_architecture(config, release, where="model_config"):
    """Refuse an architecture the release sizes in a way the planner cannot, by name; return it (or None)."""
    arch = architecture(config, where)
    if arch is None or arch == "DFlashDraftModel":
        return arch  # DFLASH draft: checked against its target (drafter.py)
    family = families.modelled_architectures().get(arch)
    if family is not None:
        family.check_release(arch, release, where)  # a release that sizes it another way, refused first
        return arch
    if arch in GEMMA3:
        if release in GEMMA3_PLAIN_POOL_RELEASES:
            return arch
        raise KVPlanError("%s: Gemma 3 (architectures %s) has sliding-window layers; SGLang %s is not one of the "
                          "releases known to disable hybrid SWA memory for it (0.5.9-0.5.23, "
                          "arg_groups/model_overrides/gemma2_gemma3.py in 0.5.23), so its pool split cannot be "
                          "sized. Use one of those releases, or %s." % (where, arch, release, HAND_SIZING))
    table = release_table(release)
    if table is None:
        raise KVPlanError("%s: SGLang %s has no architecture table (lib/sglang_kvplan/releases/architectures.json), "
                          "so the planner cannot tell how it sizes %s. Use a release of the table (%s), or %s."
                          % (where, release, arch, ", ".join(_tables_known()), HAND_SIZING))
    entry = table.get(arch)
    if entry is None:
        return _unregistered(config, arch, release, where)
    kind = pool_class(arch, release)
    if kind == "mla" and entry.get("sparse_if") and text_config(config).get(entry["sparse_if"]) is not None:
        raise KVPlanError("%s: %s with %r in its config.json is DeepSeek sparse attention in SGLang %s (%s), which "
                          "the planner sizes for DeepseekV32ForCausalLM only; %s."
                          % (where, arch, entry["sparse_if"], release, entry.get("decided_by"), HAND_SIZING))
    if kind in _PLANNED or kind == "by_config":  # by_config: the text config's keys decide (model.py)
        return arch
    if kind == "refused":
        what = _REFUSED_BY_REASON.get(entry["reason"]) or (
            "SGLang reads its KV heads from %r, not num_key_value_heads (configs/model_config.py "
            "get_total_num_kv_heads), a layout the planner's formula does not read" % entry["reason"].split(":")[-1])
    elif kind == "multimodal":
        what = "the text model behind this multimodal wrapper is not one the release's table resolves"
    else:
        what = _REFUSED_BY_CLASS[kind]
    raise KVPlanError("%s: architectures %s (SGLang %s: %s, %s) cannot be planned: %s. Instead, %s."
                      % (where, arch, release, entry["module"], kind, what, HAND_SIZING))


def _unregistered(config, arch, release, where):
    """An architecture the release does not register: SGLang serves it by its Transformers fallback with the plain
    pool, which the planner plans where the config has a plain attention layout (model.py checks the keys)."""
    cfg = text_config(config)
    other = [key for key in _OTHER_KV_KEYS if cfg.get(key) is not None]
    if other:
        raise KVPlanError("%s: architectures %s is not registered by SGLang %s, and its config.json gives KV heads "
                          "by %r, not num_key_value_heads, so the Transformers fallback's pool cannot be sized from "
                          "it. Instead, %s." % (where, arch, release, other[0], HAND_SIZING))
    return arch


# config keys SGLang reads KV heads from before num_key_value_heads (0.5.23 model_config.py get_total_num_kv_heads)
_OTHER_KV_KEYS = ("multi_query_group_num", "num_attention_groups", "n_head_kv", "num_kv_heads", "multi_query",
                  "attn_config", "block_configs")


def _sized_by_name():
    """The architectures planned by name, not by their release class: the families' (families.py, read when asked,
    so a family registered is one at once), Gemma 3 and the DFLASH draft."""
    return set(families.modelled_architectures()) | GEMMA3 | {"DFlashDraftModel"}


def _tables_known():
    release_table("0.5.23")
    return sorted(_TABLES, key=lambda v: tuple(int(n) for n in re.findall(r"\d+", v)))


def markdown():
    """docs/planner.md's table of architectures, from the tables above (a test keeps the two equal)."""
    rows = ["| config.json `architectures[0]` | planned as | SGLang 0.5.23 |", "|---|---|---|"]
    rows += ["| `%s` | one pool, every layer full attention | `%s` |" % (arch, where) for arch, where in KNOWN.items()]
    rows += ["| `%s` | one pool over every layer: 0.5.9-0.5.23 turn its sliding-window split off | `%s` |"
             % (arch, GEMMA3_PLAIN_POOL["0.5.23"]) for arch in sorted(GEMMA3)]
    rows += ["| `%s` | %s | `%s` |" % (arch, family.PLANNED_AS, where)
             for family in families.MODELLED for arch, (_name, where) in family.ARCHITECTURES.items()]
    return "\n".join(rows) + "\n\n" + classes_markdown()


# How the planner plans each class of releases/architectures.json (docs/planner.md's tables).
CLASS_PLAN = (
    ("full", "planned: one pool over every layer (MHA/GQA)"),
    ("mla", "planned: one MLA latent row per layer; DeepSeek sparse attention (index_topk) refused"),
    ("window_one_pool", "planned: one pool over every layer (the release sizes its windows so)"),
    ("reward", "planned like its generator (a decoder's reward/classification/embedding head)"),
    ("multimodal", "as its text model (`multimodal(<class>)`; `by_config`: a wrapper over decoders of several "
                   "classes, planned by the plain formula where its config's keys show a plain layout), plus the "
                   "multimodal reserve"),
    ("hybrid_swa", "refused but gpt-oss (`sliding.py`)"),
    ("linear", "refused but Qwen3-Next, Qwen3.5, Nemotron-H, Kimi-Linear (`linear.py`)"),
    ("sparse", "refused but DeepSeek-V3.2 (`sparse.py`)"),
    ("refused", "refused by name: extra attention layers, KV heads from another key, a fixed window split"),
    ("encoder", "refused: an encoder"),
    ("draft", "refused as a model: a draft head, sized inside its target's cell"),
)


def _label(entry):
    return "multimodal(%s)" % (entry.get("text") or "unresolved") if entry["class"] == "multimodal" else entry["class"]


def _ordered_releases():
    return _tables_known()


def classes_markdown():
    """Per release, how many architectures fall in each class; then per class, every architecture any release
    registers (with the releases where it differs), from releases/architectures.json."""
    releases = _ordered_releases()
    counts = {v: {} for v in releases}
    for version in releases:
        for entry in release_table(version).values():
            counts[version][_label(entry)] = counts[version].get(_label(entry), 0) + 1
    labels = sorted({label for per in counts.values() for label in per},
                    key=lambda lab: ([c for c, _plan in CLASS_PLAN].index(lab.split("(")[0]), lab))
    rows = ["| class | planned | %s |" % " | ".join(releases), "|---|---|%s" % ("---|" * len(releases))]
    plan_of = dict(CLASS_PLAN)
    for label in labels:
        planned = ("refused: its text model is not resolved from the wheel" if label == "multimodal(unresolved)"
                   else plan_of[label.split("(")[0]])
        rows.append("| %s | %s | %s |" % (label, planned,
                                          " | ".join(str(counts[v].get(label, 0)) for v in releases)))
    rows.append("| all | | %s |" % " | ".join(str(sum(counts[v].values())) for v in releases))
    history = {}
    for version in releases:
        for arch, entry in release_table(version).items():
            history.setdefault(arch, []).append((version, _label(entry)))
    last = releases[-1]
    by_label = {}
    for arch, seen in history.items():
        label = seen[-1][1]
        notes = []
        if seen[0][0] != releases[0]:
            notes.append("from %s" % seen[0][0])
        if seen[-1][0] != last:
            notes.append("to %s" % seen[-1][0])
        earlier = [(v, lab) for v, lab in seen if lab != label]
        if earlier:
            notes.append("%s in %s-%s" % (earlier[0][1], earlier[0][0], earlier[-1][0]))
        by_label.setdefault(label, []).append("`%s`%s" % (arch, " (%s)" % ", ".join(notes) if notes else ""))
    rows += ["", "| class (in the last release that registers it) | architectures |", "|---|---|"]
    for label in sorted(by_label, key=lambda lab: ([c for c, _plan in CLASS_PLAN].index(lab.split("(")[0]), lab)):
        rows.append("| %s | %s |" % (label, ", ".join(sorted(by_label[label]))))
    return "\n".join(rows) + "\n"
