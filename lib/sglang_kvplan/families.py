"""The attention families the planner sizes, and the registry model.py and architectures.py dispatch through.

A family is one module that imports only the floors below it (spec.py, geometry.py, kv_cell.py, releases.py,
rope.py), never model.py, plan.py, architectures.py or this registry (tests/unit/test_kvplan_layers.py holds that),
and gives:

  ARCHITECTURES    {config.json architectures[0]: (model family, SGLang 0.5.23 EntryClass file:line)} it sizes by
                   name ({} for plain, which sizes what no other claims)
  POOL_CLASSES     the classes of releases/architectures.json its architectures carry (architectures.py plans these)
  OWN_LAYOUT_KEYS  whether the config.json keys of a windowed or hybrid layout are its own to read (True), or a
                   layout its formula cannot size, refused by model.py's key check (False: plain)
  claims(config)   whether it sizes this config (refusing a damaged config of its own by name)
  check(spec)      its refusals, naming the knob, after model.py's common checks (a no-op for a config it does not
                   claim)
  kv_cell(spec, elem)    the target model's KV bytes per token on one GPU, `elem` the KV element model.py reads
  describe(spec, dtype)  a few words on that cell, or None where model.py's MLA or GQA/MHA words hold

and, where ARCHITECTURES names any (MODELLED below):

  PLANNED_AS       how docs/planner.md's table says it is planned
  check_release(arch, release, where)  refuse, before the config is checked, a release that sizes the architecture
                   in a way the family does not model (architectures.py asks it)

To add a family: write its module with the above, and add it to MODELLED below. Its architectures are then planned
(architectures.py lets them through and lists them in the docs' table: regenerate docs/planner.md's) and sized by
model.py. A pool class no family had yet also wants its row in architectures.CLASS_PLAN (the layers test holds the
two equal). What a family needs beyond the cell (a second pool, a page, a plan line) is called by name where it is
used (plan.py, pages.py, memory.py, calibration.py), as sliding.py's second pool and linear.py's state pool are.
"""

from . import linear, plain, sliding, sparse

# The families that claim architectures by name, in the order they are asked (their tables are disjoint), then the
# plain formula, which claims every config they leave.
MODELLED = (sliding, linear, sparse)
FAMILIES = MODELLED + (plain,)


def family_of(config):
    """The family that sizes `config`: the first that claims it (plain at the latest)."""
    return next(family for family in FAMILIES if family.claims(config))


def modelled_architectures():
    """{architectures[0]: its family} for every architecture a family sizes by name."""
    return {arch: family for family in MODELLED for arch in family.ARCHITECTURES}
