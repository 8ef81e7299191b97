"""The context window SGLang derives from a config.json, and the RoPE scaling an operator names to go past it
(sglang_rope_scaling).

SGLang's rule, the same in 0.5.15 and 0.5.23 (utils/hf_transformers/common.py get_context_length: 0.5.23
:668-695, 0.5.15 :371-397): the first of CONTEXT_LENGTH_KEYS the language model's config has, times rope_scaling's
factor, except that the factor counts as 1 when rope_scaling names original_max_position_embeddings or is llama3's.
A --context-length past that window is refused at boot (configs/model_config.py _derive_context_length, 0.5.23
:1291-1318, 0.5.15 :675-700) unless SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1, which lifts the check for any
length.

So the scaling a model card documents (Qwen3: yarn, factor 4, original_max_position_embeddings 32768) leaves the
window where it was: SGLang takes the factor as 1 because the original window is named. The plan therefore
overrides, with --json-model-override-args, both the rope_scaling and the window key SGLang reads, set to factor x
original: the window becomes what the scaling provides, and the boot's check still refuses anything longer. The
key is read by the YaRN rotary embedding only as a fallback for original_max_position_embeddings
(layers/rotary_embedding/factory.py, "yarn": 0.5.23 :311-317, 0.5.15 :234-241), which the override names.
"""

import json
import math

from .geometry import MAX_CONFIG_INT
from .spec import KVPlanError

CONTEXT_LENGTH_KEYS = ("max_sequence_length", "seq_length", "max_seq_len", "model_max_length",
                       "max_position_embeddings")
# The scalings the plan renders: static YaRN, the one Qwen3 and Qwen2.5 document for SGLang.
ROPE_TYPES = ("yarn",)
ROPE_KEYS = ("rope_type", "factor", "original_max_position_embeddings")
MAX_FACTOR = 64


def _number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def window_key(text):
    """The key SGLang derives the window from: the first of CONTEXT_LENGTH_KEYS present (None when none is)."""
    return next((key for key in CONTEXT_LENGTH_KEYS if text.get(key) is not None), None)


def derived_context(text):
    """SGLang's get_context_length over the language model's config `text` (2048 when it names no window)."""
    scaling = text.get("rope_scaling")
    factor = 1
    if isinstance(scaling, dict) and scaling:
        factor = scaling.get("factor", 1)
        # checked even where SGLang leaves it out of the window: the rotary embedding still scales by it
        if not _number(factor) or not 0 < factor <= MAX_CONFIG_INT:
            raise KVPlanError("model_config: rope_scaling factor %r in the model's config.json is not a positive "
                              "finite number: the file is damaged. Stage the checkpoint's config.json again."
                              % (factor,))
        if "original_max_position_embeddings" in scaling or scaling.get("rope_type") == "llama3":
            factor = 1
    key = window_key(text)
    if key is None:
        return 2048
    value = text[key]
    if not _number(value) or not _number(factor):
        raise KVPlanError("model_config: %s %r with rope_scaling factor %r is not a window SGLang can derive (it "
                          "multiplies them): check the checkpoint's config.json" % (key, value, factor))
    if not 0 < value <= MAX_CONFIG_INT or not 0 < factor * value <= MAX_CONFIG_INT:
        raise KVPlanError("model_config: %s %r (rope_scaling factor %r) is not a window any model has (positive, at "
                          "most %s): the file is damaged. Stage the checkpoint's config.json again."
                          % (key, value, factor, format(MAX_CONFIG_INT, ",")))
    return int(factor * value)


def check_rope_scaling(value):
    """sglang_rope_scaling as given: {} (none) or {rope_type: yarn, factor, original_max_position_embeddings}."""
    where = "sglang_rope_scaling"
    if not isinstance(value, dict):
        raise KVPlanError("%s: expected a mapping such as {rope_type: yarn, factor: 4.0, "
                          "original_max_position_embeddings: 32768} (what the model card documents), got %r."
                          % (where, value))
    if not value:
        return {}
    unknown = sorted(str(k) for k in value if k not in ROPE_KEYS)
    missing = [k for k in ROPE_KEYS if k not in value]
    if unknown or missing:
        raise KVPlanError("%s: %s; it takes exactly %s (from the model card)."
                          % (where, "unknown key(s) %s" % ", ".join(unknown) if unknown
                             else "missing %s" % ", ".join(missing), ", ".join(ROPE_KEYS)))
    if value["rope_type"] not in ROPE_TYPES:
        raise KVPlanError("%s.rope_type: %r is not one the plan renders; use %s (static YaRN, as Qwen3 documents "
                          "for SGLang)." % (where, value["rope_type"], " or ".join(ROPE_TYPES)))
    factor, original = value["factor"], value["original_max_position_embeddings"]
    if not _number(factor) or not 1 < factor <= MAX_FACTOR:
        raise KVPlanError("%s.factor: expected a number above 1 and at most %d (the window is factor x "
                          "original_max_position_embeddings), got %r." % (where, MAX_FACTOR, factor))
    if isinstance(original, bool) or not isinstance(original, int) or original <= 0:
        raise KVPlanError("%s.original_max_position_embeddings: expected the window the model was trained on, a "
                          "positive whole number (32768 for Qwen3), got %r." % (where, original))
    return {"rope_type": value["rope_type"], "factor": factor, "original_max_position_embeddings": original}


def scaled_window(config_text, scaling):
    """(window, --json-model-override-args value) for the operator's scaling over the model's config; the window
    SGLang derives when there is none. Refused, by name, where the override would not do what it says."""
    native = derived_context(config_text)
    if not scaling:
        return native, None
    where = "sglang_rope_scaling"
    if config_text.get("rope_scaling"):
        raise KVPlanError("%s: the checkpoint's config.json already sets rope_scaling %s (its window, %s tokens, "
                          "includes it); leave sglang_rope_scaling empty."
                          % (where, json.dumps(config_text["rope_scaling"], sort_keys=True), format(native, ",")))
    window = int(scaling["factor"] * scaling["original_max_position_embeddings"])
    if window <= native:
        raise KVPlanError("%s: factor %s x original_max_position_embeddings %s = %s tokens is not beyond the "
                          "model's own window (%s); leave sglang_rope_scaling empty."
                          % (where, scaling["factor"], format(scaling["original_max_position_embeddings"], ","),
                             format(window, ","), format(native, ",")))
    override = {"rope_scaling": dict(scaling), window_key(config_text) or "max_position_embeddings": window}
    return window, json.dumps(override, sort_keys=True, separators=(",", ":"))


def quality_note(scaling):
    """What the operator trades, in the plan's assumptions."""
    trained = format(scaling["original_max_position_embeddings"], ",")
    return ("sglang_rope_scaling: static YaRN, factor %s over %s trained positions, applies to every request, short "
            "ones too, which may cost quality on short texts (as the Qwen3 model card warns); name it only when "
            "long contexts are what the host serves" % (scaling["factor"], trained))
