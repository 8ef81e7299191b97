"""The planner's files stand in layers: no import circle anywhere in lib/, deferred imports counted too.

spec.py is the floor (it imports no planner file), geometry.py stands on it alone, the attention families
(families.py) on the floors only, normalize.py above the math it checks with. A circle makes a reader walk back into
files already left and lets a lower file break on an upper one's edit.
"""

import ast
import os
import types

import pytest
import sglang_kvplan as kv
from sglang_kvplan import architectures, families, model, plain
from sglang_kvplan.normalize import normalize_spec
from sglang_kvplan.spec import KVPlanError

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LIB = os.path.join(REPO, "lib")


def import_graph(root):
    """{module: modules of `root` it imports} for every .py under `root`, imports inside functions included."""
    mods = {}
    for folder, _dirs, files in os.walk(root):
        for name in files:
            if name.endswith(".py"):
                path = os.path.join(folder, name)
                module = os.path.relpath(path, root)[:-3].replace(os.sep, ".")
                mods[module[:-9] if module.endswith(".__init__") else module] = path
    graph = {}
    for module, path in mods.items():
        package = module if path.endswith("__init__.py") else module.rpartition(".")[0]
        with open(path, encoding="utf-8") as handle:
            tree = ast.parse(handle.read())
        targets = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                targets |= {alias.name for alias in node.names}
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")[:len(package.split(".")) - node.level + 1]
                    base = ".".join(parts + ([base] if base else []))
                targets |= {base} | {base + "." + alias.name for alias in node.names}
        # a package's __init__ re-exporting its own modules is not an arrow back into them
        graph[module] = {t for t in targets if t in mods and t != module
                         and not (path.endswith("__init__.py") and t.startswith(module + "."))}
    return graph


def circles(graph):
    """The modules that reach themselves, sorted."""
    def reach(start):
        seen, todo = set(), [start]
        while todo:
            for target in graph[todo.pop()]:
                if target not in seen:
                    seen.add(target)
                    todo.append(target)
        return seen

    return sorted(module for module in graph if module in reach(module))


def test_lib_has_no_import_circle():
    assert circles(import_graph(LIB)) == []


def test_the_floor_imports_no_planner_file():
    graph = import_graph(LIB)
    assert graph["sglang_kvplan.spec"] == set()
    assert graph["sglang_kvplan.geometry"] == {"sglang_kvplan.spec"}  # its KVPlanError, for a damaged architectures


def test_normalisation_stands_above_the_math_it_checks_with():
    graph = import_graph(LIB)
    assert {"sglang_kvplan.model", "sglang_kvplan.releases", "sglang_kvplan.rope",
            "sglang_kvplan.server"} <= graph["sglang_kvplan.normalize"]
    assert not any("sglang_kvplan.normalize" in graph[m] for m in ("sglang_kvplan.model", "sglang_kvplan.pages",
                                                                   "sglang_kvplan.linear", "sglang_kvplan.spec"))


def test_a_circle_is_found_even_through_a_deferred_import(tmp_path):
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("from .low import floor\n")
    (package / "low.py").write_text("def floor():\n    from .high import top  # deferred\n    return top\n")
    (package / "high.py").write_text("from .low import floor\n\ntop = floor\n")
    (package / "apart.py").write_text("import os\n")
    assert circles(import_graph(str(tmp_path))) == ["pkg.high", "pkg.low"]


# What a family may stand on: the floors below every sizing file, never model.py, plan.py, architectures.py, the
# registry or another family.
FLOORS = {"sglang_kvplan." + name for name in ("spec", "geometry", "kv_cell", "releases", "rope")}
PKG = os.path.join(LIB, "sglang_kvplan")


def module_name(family):
    return family.__name__


def test_every_family_imports_only_the_floors_below_it():
    graph = import_graph(LIB)
    for family in families.FAMILIES:
        assert graph[module_name(family)] <= FLOORS, module_name(family)
    for floor in FLOORS:  # and no floor reaches up into a family
        assert not graph[floor] - FLOORS, floor


def test_an_upward_import_from_a_family_is_seen(tmp_path):
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "spec.py").write_text("import os\n")
    (package / "fam.py").write_text("from .spec import os\n\ndef claims(c):\n    from .model import x  # deferred\n")
    (package / "model.py").write_text("x = 1\n")
    assert import_graph(str(tmp_path))["pkg.fam"] == {"pkg.spec", "pkg.model"}


def _defines_the_interface(path):
    """True where a module defines claims() and kv_cell() at its top level: it is a family, registered or not."""
    with open(path, encoding="utf-8") as handle:
        names = {node.name for node in ast.parse(handle.read()).body if isinstance(node, ast.FunctionDef)}
    return {"claims", "kv_cell"} <= names


def test_every_family_file_is_registered_and_gives_the_whole_interface():
    found = {"sglang_kvplan." + name[:-3] for name in os.listdir(PKG)
             if name.endswith(".py") and _defines_the_interface(os.path.join(PKG, name))}
    assert found == {module_name(family) for family in families.FAMILIES}
    assert families.FAMILIES[-1] is plain and plain not in families.MODELLED  # plain is asked last
    for family in families.FAMILIES:
        for name in ("ARCHITECTURES", "POOL_CLASSES", "OWN_LAYOUT_KEYS", "claims", "check", "kv_cell", "describe"):
            assert hasattr(family, name), (module_name(family), name)
    for family in families.MODELLED:
        assert family.ARCHITECTURES and family.PLANNED_AS and family.OWN_LAYOUT_KEYS is True
        assert callable(family.check_release), module_name(family)


def test_every_family_the_architectures_table_names_is_registered():
    # the docs' and tests' tables are the families' own
    assert architectures.SLIDING is families.sliding.ARCHITECTURES
    assert architectures.LINEAR is families.linear.ARCHITECTURES
    assert architectures.SPARSE is families.sparse.ARCHITECTURES
    by_arch = families.modelled_architectures()
    assert sum(len(family.ARCHITECTURES) for family in families.MODELLED) == len(by_arch)  # tables are disjoint
    # every class architectures.py plans (CLASS_PLAN less the refused ones and the wrapper, planned as its text
    # model's class) is a family's, and no family claims a class the table does not plan
    planned = {name for name, _plan in architectures.CLASS_PLAN} - {"multimodal", "refused", "encoder", "draft"}
    assert {cls for family in families.FAMILIES for cls in family.POOL_CLASSES} == planned
    assert set(plain.POOL_CLASSES) == set(architectures._PLANNED)  # the classes planned whatever the architecture
    # the release the families' tables cite gives each of their architectures that family's class (an older one
    # may class it otherwise, gpt-oss as window_one_pool in 0.5.9: the family's release rules refuse those)
    for arch, family in by_arch.items():
        assert architectures.pool_class(arch, "0.5.23") in family.POOL_CLASSES, arch


def test_each_preset_is_sized_by_the_family_that_names_its_architecture():
    by_arch = families.modelled_architectures()
    seen = set()
    for name, preset in kv.load_presets().items():
        family = families.family_of(preset["config"])
        assert family is by_arch.get(preset["config"]["architectures"][0], plain), name
        seen.add(family)
    assert seen == set(families.FAMILIES)  # every family is exercised by a preset


def test_a_damaged_layout_of_a_modelled_family_is_refused_by_its_claim():
    config = dict(kv.load_presets()["gpt-oss-120b"]["config"], layer_types=["full_attention"])
    with pytest.raises(KVPlanError, match="layer_types must list"):
        families.family_of(config)


def _toy_family(calls):
    """A family registered by one line, to show model.py dispatches through the registry (a test double)."""
    def check(spec):
        calls.append("check")
        if spec["tp_size"] > 2:
            raise KVPlanError("sglang_tp_size: the toy family is sized on at most 2 GPUs; use 1 or 2.")

    def check_release(arch, release, where="model_config"):
        calls.append("check_release")
        if release != "0.5.23":
            raise KVPlanError("%s: %s is sized as SGLang 0.5.23 sizes it; use 0.5.23." % (where, arch))

    return types.SimpleNamespace(
        __name__="toy", ARCHITECTURES={"ToyForCausalLM": ("Toy", "models/toy.py:1")}, POOL_CLASSES=(),
        OWN_LAYOUT_KEYS=True, PLANNED_AS="a toy", check=check, check_release=check_release,
        claims=lambda config: config.get("architectures") == ["ToyForCausalLM"],
        kv_cell=lambda spec, elem: 1000 * elem, describe=lambda spec, dtype: "%s toy KV" % dtype)


def test_a_family_added_to_the_registry_is_the_one_model_dispatches_to(monkeypatch):
    calls = []
    toy = _toy_family(calls)
    monkeypatch.setattr(families, "MODELLED", families.MODELLED + (toy,))
    monkeypatch.setattr(families, "FAMILIES", families.MODELLED + (plain,))
    config = dict(kv.load_presets()["llama-3.1-8b"]["config"], architectures=["ToyForCausalLM"],
                  sliding_window=4096)  # a key of the toy's own layout: not refused by the plain key check
    spec = normalize_spec({"model_config": config, "tp_size": 2, "version": "0.5.23"})
    assert calls == ["check_release", "check"]  # the release first, its config after the common checks
    assert model.target_cell_bytes(spec) == 2000  # bf16
    assert model.describe_cell(spec) == "bf16 toy KV"
    assert architectures.check_architecture(config, "0.5.23") == "ToyForCausalLM"
    assert architectures.fallback_note(config, "0.5.23") is None  # its family's, not SGLang's Transformers fallback
    assert "`ToyForCausalLM` | a toy | `models/toy.py:1`" in architectures.markdown()
    with pytest.raises(KVPlanError, match="sglang_tp_size: the toy family"):
        normalize_spec({"model_config": config, "tp_size": 4, "version": "0.5.23"})
    with pytest.raises(KVPlanError, match="model_config: ToyForCausalLM is sized as SGLang 0.5.23"):
        normalize_spec({"model_config": config, "tp_size": 4, "version": "0.5.22"})  # refused before the TP
    # unregistered, the same config is the plain family's, whose key check refuses its window
    monkeypatch.undo()
    assert "Transformers fallback" in architectures.fallback_note(config, "0.5.23")
    with pytest.raises(KVPlanError, match="sliding-window attention"):
        normalize_spec({"model_config": config, "tp_size": 2, "version": "0.5.23"})
