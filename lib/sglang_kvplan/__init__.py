"""SGLang KV-pool planner: plain Python, importable without Ansible.

cell_bytes(spec) -> KV bytes per token per GPU
pool_tokens(spec, fraction=None) -> predicted max_total_num_tokens
plan(spec) -> the flags for spec['context_target']
calibrate(spec, boot) -> P and A from one boot's log, A refined by the logged pool
"""

from .calibration import calibrate
from .memory import forward as _forward
from .model import cell_bytes as _cell_bytes
from .plan import plan
from .releases import RULES, rules_for
from .spec import KVPlanError, load_presets, normalize_spec


def cell_bytes(spec):
    return _cell_bytes(normalize_spec(spec))


def pool_tokens(spec, fraction=None):
    return _forward(normalize_spec(spec), fraction)


__all__ = ["RULES", "KVPlanError", "calibrate", "cell_bytes", "load_presets", "plan", "pool_tokens", "rules_for"]
