"""A speculative drafter held to its target before anything changes on a host (issue 35 item 3).

A drafter of another model is not refused by SGLang until the server loads both models, after the unit is
written and the weights are read (minutes on ct200); some pairings are never refused and serve with an accept
length near zero. So the check phase refuses them from the configs it already has: the target's (the preset or
sglang_model_config) and the drafter's (its config.json read on the host, or its preset for `make plan`).

What SGLang 0.5.23 requires, from its wheel (sglang-0.5.23-cp311-cp311-manylinux_2_34_x86_64.whl):
- the draft's architecture is one of the algorithm's draft classes: DFLASH loads one of models/dflash.py:1317-1324
  EntryClass (DFlashDraftModel, DFlashLagunaForCausalLM, MuseGlimmerAssistantModel, DFlash2DraftModel,
  DFlash2BeamDraftModel, MiniMaxDFlash2DraftModel); EAGLE3 one of the Eagle3 classes (models/llama_eagle3.py:387
  LlamaForCausalLMEagle3, models/kimi_k25_eagle3.py:523 Eagle3DeepseekV2ForCausalLM). EAGLE is not held to a
  list: it also runs MTP heads of the target's own architecture (NEXTN is EAGLE with the target's checkpoint).
- the hidden size: DFLASH's draft has no head and borrows the target's lm_head and input embeddings
  (speculative/dflash_worker_v2.py:135-138, 222-230), EAGLE shares both (speculative/eagle_worker_v2.py:376-378
  set_embed_and_head), EAGLE3 the embeddings (eagle_worker_v2.py:363 set_embed): the draft's hidden_size is the
  target's.
- the vocabulary: the borrowed lm_head and embeddings are the target's vocabulary, so a DFLASH or EAGLE draft's
  vocab_size is the target's (an EAGLE3 draft's own head may be smaller, draft_vocab_size; its vocab_size, the
  embeddings it is given, is still the target's). Compared when both configs carry it (the presets do not), and
  not for a DFLASH draft with embeddings of its own (has_embed_tokens, Nemotron 3.5's: dflash_utils.py:461-470).
- DFLASH's target layers: the draft reads the hidden states of dflash_config.target_layer_ids from the target;
  spec_aux_hidden_state.py:247 resolves them against the running target's num_hidden_layers and
  speculative/dflash_utils.py:580-584 refuses an id past them ('DFLASH target_layer_ids contains an out-of-range
  layer id').
"""

import sglang_kvplan
from sglang_kvplan.geometry import text_config

RELEASE = "0.5.23"
DRAFT_CLASSES = {
    "DFLASH": ("models/dflash.py:1317-1324",
               ("DFlashDraftModel", "DFlashLagunaForCausalLM", "MuseGlimmerAssistantModel", "DFlash2DraftModel",
                "DFlash2BeamDraftModel", "MiniMaxDFlash2DraftModel")),
    "EAGLE3": ("models/llama_eagle3.py:387, models/kimi_k25_eagle3.py:523",
               ("LlamaForCausalLMEagle3", "Eagle3DeepseekV2ForCausalLM")),
}
SHARED = {  # algorithm -> (what of the target the draft uses, where SGLang 0.5.23 does it)
    "DFLASH": ("lm_head and input embeddings", "speculative/dflash_worker_v2.py:135-138, 222-230"),
    "EAGLE": ("input embeddings and lm_head", "speculative/eagle_worker_v2.py:376-378"),
    "EAGLE3": ("input embeddings", "speculative/eagle_worker_v2.py:363"),
}


def _configs(spec):
    """(target config, draft config, where the draft's came from) from a planner spec; None where unknown."""
    target = spec.get("model_config")
    if target is None and spec.get("model"):
        target = (sglang_kvplan.load_presets().get(spec["model"]) or {}).get("config")
    speculative = spec.get("speculative") or {}
    draft, source = speculative.get("draft_model_config"), "its config.json"
    if draft is None and speculative.get("draft_model"):
        draft = (sglang_kvplan.load_presets().get(speculative["draft_model"]) or {}).get("config")
        source = "preset %s" % speculative["draft_model"]
    return target, draft, source


def _int(config, name):
    value = config.get(name)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def refusal(spec):
    """The sentence refusing `spec`'s drafter for its target, or None when it matches (or nothing is known to
    compare). spec: the planner's spec of one host (planspec.spec), before normalize_spec."""
    speculative = spec.get("speculative") or {}
    algorithm = str(speculative.get("algorithm") or "").upper()
    if algorithm not in SHARED:
        return None
    target, draft, source = _configs(spec)
    if not isinstance(target, dict) or not isinstance(draft, dict):
        return None
    target_name = spec.get("model") or "the target in sglang_model_config"
    draft_name = speculative.get("draft_model_path") or speculative.get("draft_model") or "the draft"
    where = "sglang_speculative.draft_model_path %s (%s) for sglang_model %s" % (draft_name, source, target_name)
    fix = ("Fix: point sglang_speculative.draft_model_path (and draft_model, draft_model_hf_repo) at a %s drafter "
           "trained for %s, or put this host in its own model's group (inventory/hosts.yml) without "
           "sglang_speculative." % (algorithm, target_name))
    if algorithm in DRAFT_CLASSES:
        cited, classes = DRAFT_CLASSES[algorithm]
        archs = draft.get("architectures") or []
        if not any(arch in classes for arch in archs):
            return ("%s: the draft's architectures %s are not a %s draft: SGLang %s loads a %s draft as one of %s "
                    "(%s). %s" % (where, list(archs), algorithm, RELEASE, algorithm, ", ".join(classes), cited, fix))
    inner, draft_inner = text_config(target), text_config(draft)
    what, cited = SHARED[algorithm]
    hidden, draft_hidden = _int(inner, "hidden_size"), _int(draft_inner, "hidden_size")
    if hidden and draft_hidden and hidden != draft_hidden:
        return ("%s: the draft's hidden_size is %d, the target's %d: SGLang %s gives the %s draft the target's %s "
                "(%s), so they must be equal. %s" % (where, draft_hidden, hidden, RELEASE, algorithm, what, cited, fix))
    vocab, draft_vocab = _int(inner, "vocab_size"), _int(draft_inner, "vocab_size")
    # A DFLASH draft with its own embeddings (has_embed_tokens: Nemotron 3.5's, "checkpoint-local vocabulary
    # modules", speculative/dflash_utils.py:461-470, used by dflash_worker_v2.py:223-228) names their size, not
    # the target's head's: not compared.
    own_embeddings = algorithm == "DFLASH" and bool(draft.get("has_embed_tokens"))
    if vocab and draft_vocab and vocab != draft_vocab and not own_embeddings:
        return ("%s: the draft's vocab_size is %d, the target's %d: SGLang %s gives the %s draft the target's %s "
                "(%s), one vocabulary. %s" % (where, draft_vocab, vocab, RELEASE, algorithm, what, cited, fix))
    if algorithm == "DFLASH":
        layers = _int(inner, "num_hidden_layers")
        dflash = draft.get("dflash_config") if isinstance(draft.get("dflash_config"), dict) else {}
        ids = dflash.get("target_layer_ids", draft.get("target_layer_ids")) or []
        past = [i for i in ids if isinstance(i, int) and layers and i >= layers]
        if past:
            return ("%s: the draft reads the target's layers %s (dflash_config.target_layer_ids) but the target has "
                    "%d (num_hidden_layers); SGLang %s refuses a layer id past them when it starts "
                    "(spec_aux_hidden_state.py:247, speculative/dflash_utils.py:580-584). %s"
                    % (where, past, layers, RELEASE, fix))
    return None
