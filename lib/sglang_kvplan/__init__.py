"""SGLang KV-pool planner: plain Python, importable without Ansible.

cell_bytes(spec) -> KV bytes per token per GPU
pool_tokens(spec, fraction=None) -> predicted max_total_num_tokens
plan(spec) -> the flags for spec['context_target']
calibrate(spec, boot) -> P and A from one boot's log, A refined by the logged pool
node_placement(nodes, host) -> this host's rank in a server across nodes (sglang_nodes)
server_inputs(per_node) -> the least GPU memory and calibration over a server's nodes, and the node that limits

The files stand in layers (tests/unit/test_kvplan_layers.py): spec.py, geometry.py and kv_cell.py at the floor; the
attention families (plain.py, sliding.py, linear.py, sparse.py) on the floors only; families.py, their registry,
above them; architectures.py and model.py dispatch through it; normalize.py and plan.py on top. To add a family,
write one module with the interface families.py's docstring lists, importing only the floors, and add it to
families.MODELLED: one file and one line.
"""

from .calibration import calibrate
from .memory import forward as _forward
from .model import cell_bytes as _cell_bytes
from .normalize import normalize_spec
from .plan import plan
from .releases import RULES, rules_for
from .server import node_placement, server_inputs
from .spec import KVPlanError, load_presets


def cell_bytes(spec):
    return _cell_bytes(normalize_spec(spec))


def pool_tokens(spec, fraction=None):
    return _forward(normalize_spec(spec), fraction)


__all__ = ["RULES", "KVPlanError", "calibrate", "cell_bytes", "load_presets", "node_placement", "plan", "pool_tokens",
           "rules_for", "server_inputs"]
