"""How the production code finds lib/: the sys.path insertions it makes, and that every plugin imports on its own.

lib/ holds plain packages (sglang_kvplan, sglang_checks, sglang_state, sglang_report, sglang_metrics) that import one
another by their top-level names, so lib/ itself must be on sys.path. Ansible loads a checkout's plugins (ansible.cfg's
filter_plugins, action_plugins) by file path, as ansible.plugins.<type>.<name>: a plugin has no package of its own to
import a sibling from (`from . import x` looks in ansible/plugins/<type>/), and ansible.cfg's module_utils folder is
not importable on the controller (ansible.module_utils.<x> is for the modules sent to hosts). So each filter and
action plugin that uses lib/ puts its own ../lib on sys.path in its import header (plugins/lib -> ../lib in the
collection: tests/collection/build.sh); the tests do it in tests/conftest.py, and `python -m sglang_report` and
`-m sglang_metrics` run with lib/ as their working directory. These tests keep the insertions in the plugins' import
headers, never in shared code, and hold their number to today's.

Issue 47 wants 3 at most. Tried (ansible-core 2.19): a collection's plugins/plugin_utils module that inserts lib/
once, imported by each plugin as ansible_collections.<ns>.<name>.plugins.plugin_utils.<x>, works in the collection
only; a .pth file in .venv (or lib/ installed as a package there) serves .venv's Ansible only: the core-next image's
/venv, any other Ansible run from the checkout (where an action plugin's failed import is a traceback, "Unexpected
Exception, this is probably a bug") and the installed collection would not find lib/, and a second clone run with
that .venv would import the first clone's lib/. Both together would leave one insertion, with build.sh rewriting the
collection's plugin headers and core-next's /venv given the .pth, and an Ansible outside .venv no longer able to run
the checkout.
"""

import ast
import glob
import json
import os
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PRODUCTION = ("filter_plugins", "action_plugins", "callback_plugins", "lib", "library", "module_utils")
# The folders whose files Ansible loads by path: the only entry points allowed to change sys.path.
ENTRY_POINTS = ("filter_plugins", "action_plugins")
# Today's count: 6 filter files and 6 action files. Lower it when a plugin stops inserting; never raise it.
CEILING = 12
LIB_PACKAGES = ("sglang_checks", "sglang_kvplan", "sglang_metrics", "sglang_report", "sglang_state")


def _is_sys_path(node):
    """`sys.path` itself, or a subscript of it (sys.path[0])."""
    if isinstance(node, ast.Subscript):
        node = node.value
    return (isinstance(node, ast.Attribute) and node.attr == "path" and isinstance(node.value, ast.Name)
            and node.value.id == "sys")


def path_changes(source, filename="<source>"):
    """[(line, top_level, text)] for every statement of `source` that changes sys.path: a call of one of its
    mutating methods, an assignment to it or to an item of it. top_level: at module level (an import header), not
    inside a function or class."""
    tree = ast.parse(source, filename)
    changes = []

    def visit(node, top_level):
        for child in ast.iter_child_nodes(node):
            nested = top_level and not isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef |
                                                  ast.Lambda)
            if (isinstance(child, ast.Call) and isinstance(child.func, ast.Attribute) and _is_sys_path(child.func.value)
                    and child.func.attr in ("insert", "append", "extend", "remove", "pop", "clear")):
                changes.append((child.lineno, top_level, ast.unparse(child)))
            elif isinstance(child, ast.Assign | ast.AugAssign | ast.AnnAssign):
                targets = child.targets if isinstance(child, ast.Assign) else [child.target]
                if any(_is_sys_path(target) for target in targets):
                    changes.append((child.lineno, top_level, ast.unparse(child)))
            visit(child, nested)

    visit(tree, True)
    return changes


def _production_files():
    for folder in PRODUCTION:
        yield from sorted(glob.glob(os.path.join(REPO, folder, "**", "*.py"), recursive=True))


def _names(source):
    """{name: text} of the module-level assignments of one name (`_LIB = os.path.join(...)`)."""
    return {node.targets[0].id: ast.unparse(node.value) for node in ast.parse(source).body
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)}


def _all_changes():
    """[(path, line, top_level, text)], a module-level name in the text replaced by what it was assigned."""
    found = []
    for path in _production_files():
        with open(path, encoding="utf-8") as handle:
            source = handle.read()
        names = _names(source)
        for line, top_level, text in path_changes(source, path):
            for name, value in names.items():
                text = text.replace("(0, %s)" % name, "(0, %s)" % value)
            found.append((os.path.relpath(path, REPO), line, top_level, text))
    return found


def test_the_scanner_sees_each_way_of_changing_the_path():
    source = ("import sys\nsys.path.insert(0, 'a')\nsys.path[0] = ''\nsys.path += ['b']\n"
              "def f():\n    sys.path.append('c')\nclass C:\n    sys.path.extend(['d'])\n"
              "print(sys.path[0])\nx = sys.path\n")
    assert [(line, top) for line, top, _ in path_changes(source)] == [(2, True), (3, True), (4, True), (6, False),
                                                                     (8, False)]


def test_a_path_written_inside_a_string_is_not_code():
    # module_utils/sglang_runtime_launcher.py writes `sys.path[0] = ""` into the launcher it installs on a host
    assert path_changes('TEXT = """\nimport sys\nsys.path[0] = ""\n"""\n') == []


def test_only_the_plugins_import_headers_change_sys_path():
    changes = _all_changes()
    outside = [c for c in changes if c[0].split(os.sep)[0] not in ENTRY_POINTS or not c[2]]
    assert outside == [], "sys.path changed outside a plugin's import header (shared code must not): %s" % outside
    for path, line, _top, text in changes:
        assert text.startswith("sys.path.insert(0,") and "__file__" in text and "'lib'" in text, \
            "%s:%d inserts something other than its own ../lib: %s" % (path, line, text)


def test_no_new_insertion():
    changes = _all_changes()
    assert len(changes) <= CEILING, "%d sys.path insertions (at most %d): %s" % (len(changes), CEILING, changes)


# One interpreter that loads each plugin file as Ansible does (by path, under a name of its own), started isolated
# (-I: no PYTHONPATH, no working directory on the path) so that only the plugin itself can put lib/ there.
LOADER = r"""
import importlib.util, json, sys
packages, paths = json.loads(sys.argv[1])
if any(importlib.util.find_spec(p) for p in packages):
    sys.exit("lib/ is already importable in this interpreter (a .pth?): the test proves nothing here")
from ansible.plugins.action import ActionBase
from ansible.plugins.callback import CallbackBase
results = {}
for number, path in enumerate(paths):
    try:
        spec = importlib.util.spec_from_file_location("plugin_under_test_%d" % number, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        if hasattr(module, "FilterModule"):
            filters = module.FilterModule().filters()
            ok = bool(filters) and all(callable(f) for f in filters.values())
        elif hasattr(module, "ActionModule"):
            ok = issubclass(module.ActionModule, ActionBase)
        else:
            ok = issubclass(module.CallbackModule, CallbackBase)
        results[path] = "ok" if ok else "no plugin class"
    except Exception as error:
        results[path] = "%s: %s" % (type(error).__name__, error)
print(json.dumps(results))
"""


def _load_isolated(paths):
    result = subprocess.run([sys.executable, "-I", "-c", LOADER, json.dumps([LIB_PACKAGES, paths])],
                            capture_output=True, text=True, timeout=120, cwd="/")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def _plugins(root, folders):
    return [path for folder in folders for path in sorted(glob.glob(os.path.join(root, folder, "*.py")))]


def test_each_plugin_of_the_checkout_imports_on_its_own():
    paths = _plugins(REPO, ("filter_plugins", "action_plugins", "callback_plugins"))
    assert len(paths) >= 14
    assert _load_isolated(paths) == {path: "ok" for path in paths}


def test_each_plugin_imports_from_the_collections_layout(tmp_path):
    # tests/collection/build.sh: plugins/{filter,action,callback,modules,module_utils}/, lib/ beside plugins/ and
    # plugins/lib -> ../lib
    os.symlink(os.path.join(REPO, "lib"), tmp_path / "lib")
    os.symlink(os.path.join(REPO, "module_utils"), tmp_path / "module_utils")  # sglang_progress's shared code
    (tmp_path / "plugins").mkdir()
    os.symlink("../lib", tmp_path / "plugins" / "lib")
    os.symlink("../module_utils", tmp_path / "plugins" / "module_utils")
    os.symlink(os.path.join(REPO, "library"), tmp_path / "plugins" / "modules")  # the phase actions' documentation
    for checkout, collection in (("filter_plugins", "filter"), ("action_plugins", "action"),
                                 ("callback_plugins", "callback")):
        (tmp_path / "plugins" / collection).mkdir()
        for path in _plugins(REPO, (checkout,)):
            (tmp_path / "plugins" / collection / os.path.basename(path)).write_bytes(open(path, "rb").read())
    paths = _plugins(str(tmp_path / "plugins"), ("filter", "action", "callback"))
    assert _load_isolated(paths) == {path: "ok" for path in paths}


@pytest.mark.parametrize("plugin", ["filter_plugins/sglang_kv.py", "action_plugins/sglang_prove.py"])
def test_a_plugin_without_lib_beside_it_fails_to_import(tmp_path, plugin):
    (tmp_path / "plugins").mkdir()
    copy = tmp_path / "plugins" / os.path.basename(plugin)
    copy.write_bytes(open(os.path.join(REPO, plugin), "rb").read())
    result = _load_isolated([str(copy)])[str(copy)]
    assert result.startswith("ModuleNotFoundError: No module named 'sglang_"), result
