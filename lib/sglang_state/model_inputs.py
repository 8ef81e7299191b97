"""What the planner reads from the checkpoints on the host, and the key of this setup's calibration
(roles/sglang/tasks/model.yml keeps them).

One calibration per setup that changes P or A (the memory free before and after the weights): the model (path and
config.json's digest), the parallelism, SGLang's release (and the planner's rules for it), the KV dtype, the draft,
and for a server across nodes their number. Each node stores the server's entry under this key; a key that changed
its spelling would orphan every stored calibration, so it is spelled here once.
"""

from __future__ import annotations


def draft_key(speculative, draft):
    """"ALGORITHM:path@digest" of a speculative draft read on the host, else None."""
    if not draft:
        return None
    return "%s:%s@%s" % (str(speculative.get("algorithm")).upper(), speculative.get("draft_model_path"),
                         str(draft.get("sha256"))[:12])


def calibration_key(setup, model, draft_key_=None):
    """setup: the sglang_* knobs without the prefix (model_path, tp_size, pp_size, dp_size, enable_dp_attention,
    version, pool_rules, kv_cache_dtype, speculative, nodes); model: the model's checkpoint ({sha256})."""
    speculative = setup.get("speculative") or {}
    draft = draft_key_ or str(speculative.get("algorithm", "none")).upper()
    nodes = setup.get("nodes") or []
    return "%s@%s tp%s pp%s dp%s%s sglang-%s%s kv-%s draft-%s%s" % (
        setup.get("model_path"), str(model.get("sha256"))[:12], setup.get("tp_size"), setup.get("pp_size"),
        setup.get("dp_size"), "-attn" if setup.get("enable_dp_attention") else "", setup.get("version"),
        "/%s" % setup["pool_rules"] if setup.get("pool_rules") else "", setup.get("kv_cache_dtype"), draft,
        " nodes%d" % len(nodes) if len(nodes) > 1 else "")


def model_inputs(checkpoints, setup):
    """{model, model_config, checkpoint_gib, draft_model_config, draft_checkpoint_gib, draft_key, calibration_key}.

    checkpoints: what model.yml read, by the knob that names each ({config, sha256, gib}):
    sglang_model_path, and sglang_speculative.draft_model_path when setup's speculative names a draft.
    """
    model = checkpoints["sglang_model_path"]
    speculative = setup.get("speculative") or {}
    draft = checkpoints.get("sglang_speculative.draft_model_path") if speculative.get("draft_model_path") else None
    key = draft_key(speculative, draft)
    return {"model": model, "model_config": model.get("config"), "checkpoint_gib": model.get("gib"),
            "draft_model_config": draft.get("config") if draft else None,
            "draft_checkpoint_gib": draft.get("gib") if draft else None, "draft_key": key,
            "calibration_key": calibration_key(setup, model, key)}
