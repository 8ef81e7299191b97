"""A hybrid sliding-window model's two pools (gpt-oss), as SGLang 0.5.11 and newer size them.

SGLang keeps one pool for the full-attention layers and one for the sliding-window layers (0.5.23
model_executor/pool_configurator.py:656-922, HybridSWAPoolConfigurator; the same formula since 0.5.11:
releases/rules.json `swa_pool`, read from each wheel). Per token of the full pool the budget pays

    cell = F x n_full + r x S x n_sliding      (:786-803; r = --swa-full-tokens-ratio, rules.json's default 0.8)

with F and S one layer's KV bytes per token (KV heads over attention TP x (head_dim + v_head_dim) x element). The
count SGLang profiles, reports as max_total_num_tokens and lets --max-total-tokens cap is the FULL layers' N:

    N = floor(available / cell) // page x page      (:907-916 and _solve_pool_sizes :859-893)
    sliding tokens = int(N x r) // page x page

A request of L tokens holds L full tokens and about its window + a page of sliding ones, so the context target is
a question for the full pool alone; r trades sliding tokens (cached prefixes and requests side by side past the
window) for full tokens. 0.5.23 refuses a sliding pool of window + page tokens or fewer (:198-216).

Not modelled, so refused by name: a speculative draft (0.5.23 adds draft layers to either side, :725-770),
pipeline stages (each holds its own share of each kind), and --disable-radix-cache (0.5.15+ then sizes the sliding
pool from --max-running-requests: SWARequestCapPoolConfigurator, :971-1046).
"""

from .geometry import architecture, attn_tp_size, text_config
from .kv_cell import config_field, own_cell
from .releases import RULES
from .spec import HAND_SIZING, KVPlanError

# The architectures this family sizes (families.py): architectures[0] -> (the model family, the SGLang 0.5.23
# EntryClass that serves it). SGLang 0.5.23 marks them hybrid SWA (configs/model_config.py SWA_SINK_ARCHS,
# is_hybrid_swa_model) and reads the full and sliding layers from config.json's layer_types (get_hybrid_layer_ids).
ARCHITECTURES = {
    "GptOssForCausalLM": ("gpt-oss", "models/gpt_oss.py:1446"),
}
POOL_CLASSES = ("hybrid_swa",)  # the class of releases/architectures.json its architectures carry
OWN_LAYOUT_KEYS = True  # sliding_window and layer_types are this family's to read, not a refusal (model.py)
PLANNED_AS = "two pools, full and sliding-window (`sliding.py`), from 0.5.11"  # docs/planner.md's table
LAYER_KINDS = ("full_attention", "sliding_attention")


def layout(config):
    """(full layers, sliding layers, window) of a SLIDING architecture's config.json, else None."""
    if architecture(config) not in ARCHITECTURES:
        return None
    cfg = config.get("text_config") if isinstance(config.get("text_config"), dict) else config
    kinds = cfg.get("layer_types")
    layers = cfg.get("num_hidden_layers")
    # SGLang reads both sets from layer_types (0.5.23 configs/model_config.py get_hybrid_layer_ids, SWA_SINK_ARCHS)
    if not isinstance(kinds, list) or len(kinds) != layers or not set(kinds) <= set(LAYER_KINDS):
        raise KVPlanError("model_config: layer_types must list %r or %r for each of the num_hidden_layers (%r) "
                          "layers of this sliding-window model, got %s. Stage the checkpoint's config.json again."
                          % (LAYER_KINDS + (layers, _short(kinds))))
    full, sliding = kinds.count("full_attention"), kinds.count("sliding_attention")
    if not full or not sliding:
        raise KVPlanError("model_config: layer_types has %d full-attention and %d sliding-window layers; the "
                          "planner sizes a model with both (an all-sliding pool is sized another way). Size it by "
                          "hand with --max-total-tokens." % (full, sliding))
    # the window: the first of these keys that is set (0.5.23 configs/model_config.py _get_sliding_window_size)
    window = next((cfg[k] for k in ("sliding_window_size", "sliding_window", "window_size") if cfg.get(k) is not None),
                  None)
    if isinstance(window, bool) or not isinstance(window, int) or window < 1:
        raise KVPlanError("model_config: sliding_window must be the window in tokens (a whole number > 0), got %r. "
                          "Stage the checkpoint's config.json again." % (window,))
    return full, sliding, window


def _short(value):
    text = repr(value)
    return text if len(text) <= 60 else text[:40] + "..."


def ratio(spec):
    """--swa-full-tokens-ratio the server runs with: sglang_extra_args', else the release's default."""
    given = spec.get("swa_full_tokens_ratio")
    return given if given is not None else spec["_rules"]["swa_full_tokens_ratio"]


def check(spec):
    """Refuse what the sliding-window formula does not describe, naming the knob."""
    if layout(spec["model_config"]) is None:
        return
    if spec["speculative"]:
        raise KVPlanError("sglang_speculative: a draft beside a sliding-window model adds its layers to either pool "
                          "(0.5.23 model_executor/pool_configurator.py:725-770), which the planner does not model; "
                          "leave sglang_speculative empty for this model, or size it by hand with --max-total-tokens.")
    if spec["pp_size"] > 1:
        raise KVPlanError("sglang_pp_size: %d pipeline stages split a sliding-window model's full and sliding "
                          "layers unevenly, which the planner does not model; use sglang_pp_size 1 (more GPUs by "
                          "sglang_tp_size)." % spec["pp_size"])
    if spec["disable_radix_cache"]:
        raise KVPlanError("sglang_extra_args: --disable-radix-cache makes SGLang 0.5.15+ size a sliding-window "
                          "model's sliding pool from --max-running-requests (SWARequestCapPoolConfigurator), which "
                          "the planner does not model; remove it from sglang_extra_args for this model.")


def claims(config):
    """True for an architecture of this family (a damaged layer_types or window is refused by name)."""
    return layout(config) is not None


def check_release(arch, release, where="model_config"):
    """Refuse a release that splits the pool after --max-total-tokens caps a count over every layer (0.5.9-0.5.10:
    rules.json swa_pool), before the config is checked: the formula here is 0.5.11's and newer."""
    rule = RULES[release]["swa_pool"]
    if rule != "ratio_cell":
        raise KVPlanError("%s: %s (architectures %s) has sliding-window layers, and SGLang %s splits its pool "
                          "after --max-total-tokens caps a count over every layer (%s, rule %r), which the "
                          "planner does not model. Use SGLang 0.5.11 or newer, or %s."
                          % (where, ARCHITECTURES[arch][0], arch, release, RULES[release]["swa_pool_source"], rule,
                             HAND_SIZING))


def kv_cell(spec, elem):
    """KV bytes per token of the full pool on one GPU (cell below), each layer's bytes as kv_cell.py's formula and
    the sliding layers' own heads and dims."""
    config, attn_tp = spec["model_config"], attn_tp_size(spec)
    return cell(spec, own_cell(config, elem, attn_tp, 1), _sliding_layer_bytes(config, elem, attn_tp))


def _sliding_layer_bytes(config, elem, attn_tp):
    """One sliding layer's KV bytes per token: its own heads and dims where config.json gives them, else the full
    layers' (0.5.23 configs/model_config.py get_swa_num_kv_heads, and swa_head_dim/swa_v_head_dim :1357-1365)."""
    cfg = text_config(config)
    heads = config_field(cfg, "num_attention_heads")
    kv_heads = config_field(cfg, "swa_num_key_value_heads", config_field(cfg, "num_key_value_heads", heads))
    full_head_dim = config_field(cfg, "head_dim", config_field(cfg, "hidden_size") // heads)
    head_dim = config_field(cfg, "swa_head_dim", full_head_dim)
    v_head_dim = config_field(cfg, "swa_v_head_dim", head_dim)
    return max(1, kv_heads // attn_tp) * (head_dim + v_head_dim) * elem


def describe(spec, dtype):
    """The cell's words: the full layers and the ratio's share of the sliding ones."""
    full, layers, _window = layout(spec["model_config"])
    return ("%s GQA KV of %d full-attention layers + --swa-full-tokens-ratio %s x %d sliding-window layers, heads "
            "split over attention TP" % (dtype, full, ratio(spec), layers))


def cell(spec, full_layer_bytes, sliding_layer_bytes):
    """Bytes per token of the full pool: F x n_full + r x S x n_sliding (a float, as SGLang's is)."""
    full, sliding, _window = layout(spec["model_config"])
    return full_layer_bytes * full + ratio(spec) * (sliding_layer_bytes * sliding)


def sliding_tokens(spec, pool, page):
    """The sliding pool beside a full pool of `pool` tokens."""
    return int(pool * ratio(spec)) // page * page


def check_pool(spec, pool, page):
    """0.5.23's admission floor (validate_swa_pool_size): a sliding pool of window + page or fewer tokens admits
    no request. Refused with the ratio to raise."""
    window = layout(spec["model_config"])[2]
    tokens = sliding_tokens(spec, pool, page)
    if tokens <= window + page:
        raise KVPlanError("sglang_extra_args: --swa-full-tokens-ratio %s leaves a sliding-window pool of %s tokens "
                          "beside %s full ones, at most the window (%s) + a page (%s): SGLang admits no request. "
                          "Raise --swa-full-tokens-ratio." % (ratio(spec), format(tokens, ","), format(pool, ","),
                                                              format(window, ","), page))


def tradeoff(spec, pool, page):
    """The plan's trade-off line for a sliding-window model: the two pools and what the ratio trades; [] else."""
    if layout(spec["model_config"]) is None:
        return []
    full, sliding, window = layout(spec["model_config"])
    return ["sliding window: %d full-attention layers hold the %s-token pool, %d sliding-window layers (window "
            "%s) a second pool of %s tokens (--swa-full-tokens-ratio %s%s); a request needs its whole length in the "
            "first and about its window in the second, so a lower ratio buys full tokens with cached prefixes"
            % (full, format(pool, ","), sliding, format(window, ","), format(sliding_tokens(spec, pool, page), ","),
               ratio(spec), "" if spec.get("swa_full_tokens_ratio") is not None else
               ", SGLang %s's default" % spec["_release"])]
