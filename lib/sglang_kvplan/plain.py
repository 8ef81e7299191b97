"""The plain family: one KV pool over every layer, each layer full attention (MHA/GQA or MLA).

It sizes every config no other family claims (families.py asks it last): the release table's full, mla,
window_one_pool (Gemma 3 among them: the release turns its windows off) and reward classes, a multimodal wrapper by its
text model, and an architecture the release does not register (SGLang's Transformers fallback, the same pool). The
formula is kv_cell.py's over the layers of the fullest pipeline stage. The config.json keys of another layout
(sliding windows, linear or sparse attention) are refused by model.py's key check before this cell is sized.
"""

from .geometry import attn_tp_size
from .kv_cell import layers_per_stage, own_cell

# No architecture by name: the plain formula is the default (architectures.py KNOWN lists the docs' cited examples).
ARCHITECTURES = {}
# The classes of releases/architectures.json it sizes (architectures.py plans these, refuses the rest but the
# families').
POOL_CLASSES = ("full", "mla", "window_one_pool", "reward")
# False: model.py refuses the keys of a layout this formula does not describe (_unsupported_layout).
OWN_LAYOUT_KEYS = False


def claims(_config):
    """Every config: the plain family is the registry's last, so it sizes what no other family claims."""
    return True


def check(_spec):
    """Nothing past model.py's checks (heads over TP, the layout keys, the draft): they are this formula's."""


def kv_cell(spec, elem):
    """KV bytes per token on one GPU: every layer of the fullest pipeline stage."""
    config = spec["model_config"]
    return own_cell(config, elem, attn_tp_size(spec), layers_per_stage(config, spec["pp_size"]))


def describe(_spec, _dtype):
    """None: model.py's words for MLA or GQA/MHA hold as they are."""
    return None
