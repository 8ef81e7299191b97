"""The planner's files stand in layers: no import circle anywhere in lib/, deferred imports counted too.

spec.py and geometry.py are the floor (they import no planner file), normalize.py sits above the math it checks
with. A circle makes a reader walk back into files already left and lets a lower file break on an upper one's edit.
"""

import ast
import os

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
    assert graph["sglang_kvplan.geometry"] == set()


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
