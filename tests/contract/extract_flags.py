"""Extract SGLang's launch-flag table from a REAL SGLang wheel, by reading its source with `ast`.

Nothing from the wheel is imported or executed. What declares `sglang.launch_server` flags:
- 0.5.9 (and older 0.5.x): `parser.add_argument(...)` calls in `sglang/srt/server_args.py`
  (`ServerArgs.add_cli_args`), choices from module constants there.
- 0.5.23: the `A[T, Arg(...)]` / `A[T, "help"]` fields of the namespace classes in
  `sglang/srt/arg_groups/fields/*.py`, turned into flags by `arg_groups/arg_utils.py`
  (`add_cli_args_from_dataclass`: flag = "--" + field name with "-", bool -> store_true, Literal -> choices,
  list -> nargs "+", no default -> required), plus the manual `add_argument` calls in
  `ServerArgs.add_cli_args` (`server_args.py`: dynamic choices, `--config`, deprecated flags).
Both: plugin hooks (`add_*_choices` functions extending a choices list at run time, recorded per flag as
`extended_by`), deprecated actions (recorded as the action's name). Values a flag's choices do not check
but the launch does (0.5.23's `--speculative-algorithm`, checked by `SpeculativeAlgorithm.from_string`)
are recorded as `runtime_choices`.

Usage: python extract_flags.py WHEEL_OR_DIR [OUT.json] [--version V]   (prints the table without OUT)
WHEEL_OR_DIR: a wheel, an unpacked wheel, or a source tree's python/ folder (a fork: give --version).
Also recorded: the entry-point groups through which installed plugins can hook the parser (0.5.23).
"""

import ast
import json
import os
import re
import sys
import zipfile

UNKNOWN = object()  # a value not computable from the source alone (it depends on the run)


class Source:
    """The files of a wheel (a zip) or of an unpacked wheel folder, by path inside the wheel."""

    def __init__(self, path):
        self.path = path
        self._zip = zipfile.ZipFile(path) if zipfile.is_zipfile(path) else None
        self._modules = {}

    def read(self, rel):
        try:
            if self._zip is not None:
                return self._zip.read(rel).decode("utf-8")
            with open(os.path.join(self.path, rel), encoding="utf-8") as handle:
                return handle.read()
        except (KeyError, FileNotFoundError):
            return None

    def version(self):
        names = self._zip.namelist() if self._zip is not None else os.listdir(self.path)
        for name in names:
            match = re.match(r"sglang-([^/]+)\.dist-info", name)
            if match:
                return match.group(1)
        generated = self.read("sglang/_version.py")  # a built source tree (setuptools-scm)
        match = re.search(r"__version__\s*=\s*(?:version\s*=\s*)?['\"]([^'\"]+)['\"]", generated or "")
        if match:
            return match.group(1)
        raise ValueError("%s: no sglang-*.dist-info or sglang/_version.py: pass the version with --version (a git "
                         "checkout of a fork: point at its python/ folder)" % self.path)

    def module(self, dotted):
        if dotted not in self._modules:
            base = dotted.replace(".", "/")
            text = self.read(base + ".py")
            if text is None:
                text = self.read(base + "/__init__.py")
            self._modules[dotted] = Module(self, dotted, ast.parse(text) if text is not None else None)
        return self._modules[dotted]


class Module:
    """One module's top-level names: assignments, imports, classes, functions."""

    def __init__(self, source, name, tree):
        self.source, self.name, self.tree = source, name, tree
        self.assigns, self.imports, self.classes, self.functions = {}, {}, {}, {}
        self.extended_by = {}  # constant name -> plugin hook function that extends it
        if tree is None:
            return
        for node in tree.body:
            self._top(node)
        for fn in self.functions.values():
            for sub in ast.walk(fn):
                if (isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute)
                        and sub.func.attr in ("extend", "add", "update", "append")
                        and isinstance(sub.func.value, ast.Name) and sub.func.value.id.isupper()):
                    self.extended_by.setdefault(sub.func.value.id, fn.name)

    def _top(self, node):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    self.assigns[target.id] = node.value
                    value = node.value  # 0.5.23 choices.py: `add_x_choices = X_CHOICES.extend`
                    if (isinstance(value, ast.Attribute) and value.attr in ("extend", "add", "update")
                            and isinstance(value.value, ast.Name)):
                        self.extended_by.setdefault(value.value.id, target.id)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            self.assigns[node.target.id] = node.value
        elif isinstance(node, ast.ImportFrom) and node.module:
            for alias in node.names:
                self.imports[alias.asname or alias.name] = (node.module, alias.name)
        elif isinstance(node, ast.ClassDef):
            self.classes[node.name] = node
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            self.functions[node.name] = node
        elif isinstance(node, ast.If):  # e.g. `if TYPE_CHECKING:` imports
            for sub in node.body:
                self._top(sub)

    def lookup(self, name):
        """(module, kind, node) for a top-level name, following `from X import Y`."""
        for kind, table in (("assign", self.assigns), ("class", self.classes), ("function", self.functions)):
            if name in table:
                return self, kind, table[name]
        if name in self.imports:
            module, attr = self.imports[name]
            if module.startswith("sglang"):
                return self.source.module(module).lookup(attr)
        return None


class Enum:
    def __init__(self, names):
        self.names = names


def class_attr(module, cls, attr):
    for node in cls.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == attr for t in node.targets):
            return node.value
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.target.id == attr:
            return node.value
    return None


def evaluate(node, module, local=None):
    """The value of a constant expression in `module`, or UNKNOWN."""
    local = local or {}
    try:
        return _evaluate(node, module, local)
    except (ValueError, TypeError, KeyError, AttributeError, IndexError, RecursionError):
        return UNKNOWN


def _seq(values):
    if any(v is UNKNOWN for v in values):
        raise ValueError
    return values


def _evaluate(node, module, local):
    if node is None:
        return None
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        out = []
        for elt in node.elts:
            if isinstance(elt, ast.Starred):
                out.extend(_seq(list(_iter(_evaluate(elt.value, module, local)))))
            else:
                out.append(_evaluate(elt, module, local))
        return _seq(out) if not isinstance(node, ast.Set) else list(dict.fromkeys(_seq(out)))
    if isinstance(node, ast.Dict):
        return {_evaluate(k, module, local): None for k in node.keys if k is not None}  # keys are what counts
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -_evaluate(node.operand, module, local)
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Mult)):
        left, right = _evaluate(node.left, module, local), _evaluate(node.right, module, local)
        if left is UNKNOWN or right is UNKNOWN:
            raise ValueError
        if isinstance(node.op, ast.Mult):
            return left * right
        return list(left) + list(right) if isinstance(left, (list, dict)) else left + right
    if isinstance(node, ast.Name):
        if node.id in local:
            return local[node.id]
        if node.id in ("None", "True", "False"):
            return {"None": None, "True": True, "False": False}[node.id]
        found = module.lookup(node.id)
        if found is None:
            raise ValueError(node.id)
        owner, kind, value = found
        if kind == "assign":
            return _evaluate(value, owner, {})
        if kind == "class":
            return (owner, value)
        raise ValueError(node.id)
    if isinstance(node, ast.Attribute):
        base = _evaluate(node.value, module, local)
        if isinstance(base, tuple) and len(base) == 2 and isinstance(base[1], ast.ClassDef):
            owner, cls = base
            return _evaluate(class_attr(owner, cls, node.attr), owner, _class_scope(owner, cls))
        if isinstance(base, _Member) and node.attr == "name":
            return base.name
        raise ValueError(node.attr)
    if isinstance(node, ast.ListComp) and len(node.generators) == 1:
        return _list_comprehension(node, module, local)
    if isinstance(node, ast.Call):
        return _call(node, module, local)
    raise ValueError(type(node).__name__)


class _Member:
    """An Enum member met in a comprehension (`[m.name.lower() for m in list(SomeEnum)]`): only its name is known."""

    def __init__(self, name):
        self.name = name


def _class_scope(module, cls):
    """The simple constants of a class body (0.5.23 `Backend.ALL = (FULL, BREAKABLE, DISABLED)` names them)."""
    scope = {}
    for node in cls.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            value = evaluate(node.value, module, scope)
            if value is not UNKNOWN:
                scope[node.targets[0].id] = value
    return scope


def _list_comprehension(node, module, local):
    """`[elt for target in iterable]` without conditions, over a list or an Enum's members."""
    generator = node.generators[0]
    if generator.ifs or not isinstance(generator.target, ast.Name):
        raise ValueError("comprehension")
    source = _evaluate(generator.iter, module, local)
    out = []
    for value in source if isinstance(source, list) else _iter(source):
        out.append(_evaluate(node.elt, module, dict(local, **{generator.target.id: value})))
    return _seq(out)


def _iter(value):
    if isinstance(value, tuple) and len(value) == 2 and isinstance(value[1], ast.ClassDef):
        owner, cls = value  # an Enum class: its members, in order
        return [n.targets[0].id for n in cls.body if isinstance(n, ast.Assign)
                and isinstance(n.targets[0], ast.Name) and not n.targets[0].id.startswith("_")]
    if value is UNKNOWN or value is None:
        raise ValueError
    return list(value)


def _call(node, module, local):
    func = node.func
    if isinstance(func, ast.Name) and func.id in ("list", "sorted", "set", "frozenset", "tuple"):
        argument = _evaluate(node.args[0], module, local) if node.args else []
        values = _iter(argument)
        if isinstance(argument, tuple) and len(argument) == 2 and isinstance(argument[1], ast.ClassDef):
            values = [_Member(v) for v in values]  # list(SomeEnum): its members, whose .name is known
        return sorted(values) if func.id == "sorted" else list(dict.fromkeys(values))
    if isinstance(func, ast.Attribute) and func.attr in ("lower", "upper") and not node.args:
        text = _evaluate(func.value, module, local)
        if isinstance(text, str):
            return text.lower() if func.attr == "lower" else text.upper()
    if isinstance(func, ast.Attribute) and func.attr == "keys" and not node.args:
        return list(_evaluate(func.value, module, local))
    if isinstance(func, ast.Name) and not node.args:
        found = module.lookup(func.id)
        if found and found[1] == "function":
            return _function_result(*found[::2])
    raise ValueError("call")


def _function_result(module, fn):
    """A no-argument helper's value: its last top-level `return`, with the imports made inside it."""
    local = {}
    returns = None
    for stmt in fn.body:
        if isinstance(stmt, ast.ImportFrom) and stmt.module and stmt.module.startswith("sglang"):
            for alias in stmt.names:
                value = evaluate(ast.Name(id=alias.name), module.source.module(stmt.module))
                local[alias.asname or alias.name] = value
        elif isinstance(stmt, ast.Return):
            returns = stmt.value
    return _evaluate(returns, module, local)


def _name_of(node):
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return "%s.%s" % (_name_of(node.value), node.attr)
    return None


ACTIONS = {  # the action's class or string -> what the table calls it
    "store_true": "store_true", "store_false": "store_false", "store_const": "store_const",
    "append": "append", "argparse.BooleanOptionalAction": "boolean_optional",
    "DeprecatedAction": "deprecated", "DeprecatedStoreTrueAction": "deprecated_store_true",
    "DeprecatedStoreConstAction": "deprecated_store_const", "DeprecatedAliasStoreAction": "deprecated_alias_store",
    "LoRAPathAction": "lora_path",
}


def _json_value(value):
    if value is UNKNOWN:
        return None
    try:
        json.dumps(value)
        return value
    except TypeError:
        return None


def _choices_origin(node, module):
    """The plugin hook that can extend the choices named by `node` at run time, if any."""
    names = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
    for name in sorted(names):
        found = module.lookup(name)
        if found and found[1] == "assign" and name in found[0].extended_by:
            return found[0].extended_by[name]
        if name in module.imports:
            owner = module.source.module(module.imports[name][0])
            if name in owner.extended_by:
                return owner.extended_by[name]
    return None


def _entry(names, dest, action, type_name, choices_node, nargs, default_node, required, source_rel, module,
           local, extra=None):
    entry = {"names": list(names), "dest": dest, "action": action, "type": type_name}
    if choices_node is not None:
        choices = evaluate(choices_node, module, local)
        entry["choices"] = [str(c) if not isinstance(c, (int, float)) else c for c in choices] \
            if choices is not UNKNOWN else None
        entry["choices_static"] = choices is not UNKNOWN
        hook = _choices_origin(choices_node, module)
        if hook:
            entry["extended_by"] = hook
    else:
        entry["choices"] = None
    if nargs is not None:
        entry["nargs"] = nargs
    if default_node is not None:
        default = evaluate(default_node, module, local)
    else:  # argparse's own defaults
        default = {"store_true": False, "store_false": True}.get(action)
    entry["default"] = _json_value(default)
    if default is UNKNOWN:
        entry["default_static"] = False
    if required:
        entry["required"] = True
    entry["source"] = source_rel
    entry.update(extra or {})
    return entry


def _add_argument_calls(tree_node, module, source_rel, local_scope=True):
    """Every `<x>.add_argument(...)` under tree_node, with the local assignments before it."""
    entries = []
    local = {}
    for node in ast.walk(tree_node):
        if local_scope and isinstance(node, ast.Assign) and len(node.targets) == 1 \
                and isinstance(node.targets[0], ast.Name):
            value = evaluate(node.value, module, local)
            if value is not UNKNOWN:
                local[node.targets[0].id] = value
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr == "add_argument"):
            continue
        names = [evaluate(a, module, local) for a in node.args]
        if not names or not all(isinstance(n, str) and n.startswith("-") for n in names):
            continue  # positional or computed names: not a launch flag
        kw = {k.arg: k.value for k in node.keywords if k.arg}
        action_node = kw.get("action")
        action = "store"
        if action_node is not None:
            raw = evaluate(action_node, module, local) if isinstance(action_node, ast.Constant) else None
            raw = raw or _name_of(action_node)
            action = ACTIONS.get(raw, raw)
        dest = evaluate(kw["dest"], module, local) if "dest" in kw else \
            next((n for n in names if n.startswith("--")), names[0]).lstrip("-").replace("-", "_")
        type_name = _name_of(kw["type"]) if "type" in kw else None
        nargs = evaluate(kw["nargs"], module, local) if "nargs" in kw else None
        if nargs is None and action in ("deprecated", "deprecated_store_true"):
            nargs = 0  # these Action classes default to nargs=0
        if nargs is None and action == "deprecated_store_const":
            nargs = 0 if "nargs" not in kw else None
        extra = {}
        for key in ("const", "const_value"):  # const_value: DeprecatedStoreConstAction's stored value
            if key in kw:
                extra[key] = _json_value(evaluate(kw[key], module, local))
        required = evaluate(kw["required"], module, local) is True if "required" in kw else False
        entries.append(_entry(names, dest, action, type_name, kw.get("choices"), nargs, kw.get("default"),
                              required, source_rel, module, local, extra))
    return entries


# ---- 0.5.23: dataclass fields -------------------------------------------------------------------------

def _unwrap_optional(node):
    if isinstance(node, ast.Subscript) and _name_of(node.value) in ("Optional", "typing.Optional"):
        return node.slice
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        for side, other in ((node.left, node.right), (node.right, node.left)):
            if isinstance(other, ast.Constant) and other.value is None:
                return side
    if isinstance(node, ast.Subscript) and _name_of(node.value) in ("Union",) and isinstance(node.slice, ast.Tuple):
        rest = [e for e in node.slice.elts if not (isinstance(e, ast.Constant) and e.value is None)]
        if len(rest) == 1:
            return rest[0]
    return node


def _field_entries(module, cls, source_rel):
    """add_cli_args_from_dataclass over one namespace class (arg_groups/arg_utils.py)."""
    entries = []
    for node in cls.body:
        if not (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)):
            continue
        ann = node.annotation
        if not (isinstance(ann, ast.Subscript) and _name_of(ann.value) in ("A", "Annotated")):
            continue
        parts = ann.slice.elts if isinstance(ann.slice, ast.Tuple) else [ann.slice]
        raw_type, meta = parts[0], {}
        for part in parts[1:]:
            if isinstance(part, ast.Call) and _name_of(part.func) == "Arg":
                meta = {k.arg: k.value for k in part.keywords}
                break
            if isinstance(part, (ast.Constant, ast.JoinedStr, ast.BinOp)):
                meta = {}
                break
        else:
            continue  # no Arg / help string: not a CLI field
        if evaluate(meta.get("no_cli"), module) is True:
            continue
        name = node.target.id
        cli = evaluate(meta["cli_name"], module) if "cli_name" in meta else "--" + name.replace("_", "-")
        aliases = evaluate(meta["aliases"], module) if "aliases" in meta else []
        names = [cli] + list(aliases or [])
        has_default = node.value is not None
        default = node.value
        if isinstance(default, ast.Call) and _name_of(default.func) in ("msgspec.field", "field",
                                                                        "dataclasses.field"):
            kw = {k.arg: k.value for k in default.keywords}
            default = kw.get("default", ast.List(elts=[]) if "default_factory" in kw else None)
        type_parser = _name_of(meta["type_parser"]) if "type_parser" in meta else None
        nargs = evaluate(meta["nargs"], module) if "nargs" in meta else None
        choices_node = meta.get("choices")
        inner = _unwrap_optional(raw_type)
        extra = {}
        if "const" in meta:
            extra["const"] = _json_value(evaluate(meta["const"], module))
        if "action" in meta:
            action_name = _name_of(meta["action"])
            action = ACTIONS.get(action_name, action_name)
            if "action_kwargs" in meta:
                kwargs = evaluate(meta["action_kwargs"], module)
                if isinstance(kwargs, dict):
                    extra["action_kwargs"] = _json_value(kwargs)
            entries.append(_entry(names, name, action, None, choices_node, nargs, default, False, source_rel,
                                  module, {}, extra))
            continue
        origin = _name_of(inner.value) if isinstance(inner, ast.Subscript) else None
        if origin in ("Literal", "typing.Literal"):
            if choices_node is None:
                choices_node = inner.slice if isinstance(inner.slice, ast.Tuple) else ast.Tuple(elts=[inner.slice])
            literals = evaluate(choices_node, module)
            first = literals[0] if literals not in (UNKNOWN, None) and len(literals) else ""
            type_name = type_parser or {int: "int", float: "float"}.get(type(first), "str")
            entries.append(_entry(names, name, "store", type_name, choices_node, None, default, False,
                                  source_rel, module, {}, extra))
            continue
        if origin in ("List", "list", "typing.List") and type_parser is None:
            elem = _name_of(inner.slice)
            entries.append(_entry(names, name, "store", elem if elem in ("int", "float") else "str",
                                  choices_node, nargs or "+", default, False, source_rel, module, {}, extra))
            continue
        if _name_of(inner) == "bool":
            entries.append(_entry(names, name, "store_true", None, None, None, default, False, source_rel,
                                  module, {}, extra))
            continue
        simple = _name_of(inner)
        type_name = type_parser or (simple if simple in ("int", "float") else "str")
        required = evaluate(meta["required"], module) if "required" in meta else None
        required = required is True or (required is None and not has_default)
        entries.append(_entry(names, name, "store", type_name, choices_node, nargs, default, required,
                              source_rel, module, {}, extra))
    return entries


def _runtime_speculative_algorithms(source):
    """0.5.23 checks --speculative-algorithm only at launch: SpeculativeAlgorithm.from_string
    (speculative/spec_info.py) takes any member name but NONE, case-insensitively, plus the reserved
    aliases of speculative/spec_registry.py, plus plugin registrations."""
    info = source.module("sglang.srt.speculative.spec_info")
    if "SpeculativeAlgorithm" not in info.classes:
        return None
    members = [m for m in _iter((info, info.classes["SpeculativeAlgorithm"])) if m != "NONE"]
    aliases = evaluate(ast.Name(id="_RESERVED_ALIASES"), info)
    if isinstance(aliases, tuple):  # frozenset({...}) -> evaluated as a call
        aliases = []
    registry = source.module("sglang.srt.speculative.spec_registry")
    node = registry.assigns.get("_RESERVED_ALIASES")
    if isinstance(node, ast.Call) and node.args:
        aliases = evaluate(node.args[0], registry)
    aliases = list(aliases) if aliases is not UNKNOWN else []
    if not aliases and re.search(r'speculative_algorithm == "NEXTN"', source.read("sglang/srt/server_args.py") or ""):
        aliases = ["NEXTN"]  # 0.5.12: no alias registry, server_args.py turns NEXTN into EAGLE before from_string
    return {"values": members + [a for a in aliases if a not in members],
            "case_insensitive": True, "extended_by": "SpeculativeAlgorithm.register",
            "source": "sglang/srt/speculative/spec_info.py (SpeculativeAlgorithm.from_string)"}


def extract(path, version=None):
    source = Source(path)
    version = version or source.version()
    server_args = source.module("sglang.srt.server_args")
    if server_args.tree is None:
        raise ValueError("%s: sglang/srt/server_args.py not found" % path)
    cls = server_args.classes["ServerArgs"]
    add_cli = next(n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "add_cli_args")
    fields_dir = "sglang/srt/arg_groups/fields"
    field_files = []
    if source._zip is not None:
        field_files = sorted(n for n in source._zip.namelist()
                             if n.startswith(fields_dir + "/") and n.endswith(".py") and n.count("/") == 4)
    elif os.path.isdir(os.path.join(path, fields_dir)):
        field_files = sorted("%s/%s" % (fields_dir, n) for n in os.listdir(os.path.join(path, fields_dir))
                             if n.endswith(".py"))
    flags = []
    if field_files:
        style = "arg_groups/fields dataclasses (arg_groups/arg_utils.py add_cli_args_from_dataclass)"
        namespaces = evaluate(server_args.assigns.get("_INPUT_NAMESPACES"), server_args)
        for rel in field_files:
            module = source.module(rel[:-3].replace("/", "."))
            for cls_node in module.classes.values():
                if class_attr(module, cls_node, "_NS_PATH") is None:
                    continue
                if namespaces is not UNKNOWN and not any(
                        isinstance(ns, tuple) and ns[1] is cls_node for ns in namespaces):
                    continue  # a namespace ServerArgs does not collect
                flags.extend(_field_entries(module, cls_node, rel))
    elif any(isinstance(n, ast.Call) and _name_of(n.func) == "add_cli_args_from_dataclass" for n in ast.walk(add_cli)):
        # 0.5.14-0.5.19: the A[T, Arg(...)] fields sit on ServerArgs itself in server_args.py.
        style = "ServerArgs dataclass fields (arg_groups/arg_utils.py add_cli_args_from_dataclass)"
        # A field annotated twice in the class body (0.5.16's dcp_size) is one dataclass field: the last wins.
        by_dest = {}
        for entry in _field_entries(server_args, cls, "sglang/srt/server_args.py"):
            by_dest.pop(entry["dest"], None)
            by_dest[entry["dest"]] = entry
        flags.extend(by_dest.values())
    else:
        style = "argparse add_argument in server_args.py (ServerArgs.add_cli_args)"
    flags.extend(_add_argument_calls(add_cli, server_args, "sglang/srt/server_args.py"))
    runtime = {}
    algorithm_flag = next((f for f in flags if "--speculative-algorithm" in f["names"]), {})
    if field_files or style.startswith("ServerArgs dataclass") or algorithm_flag.get("choices", []) is None:
        algorithms = _runtime_speculative_algorithms(source)
        if algorithms:
            runtime["speculative_algorithm"] = algorithms
    seen = {}
    for flag in flags:
        for name in flag["names"]:
            if name in seen:
                raise ValueError("%s declared twice (%s and %s)" % (name, seen[name], flag["source"]))
            seen[name] = flag["source"]
    prog = evaluate(next((k.value for n in ast.walk(server_args.functions["prepare_server_args"])
                          if isinstance(n, ast.Call) and _name_of(n.func) == "argparse.ArgumentParser"
                          for k in n.keywords if k.arg == "prog"), None), server_args)
    plugins = source.module("sglang.srt.plugins")  # 0.5.23: entry-point plugins may hook add_cli_args
    groups = sorted(evaluate(node, plugins) for name, node in plugins.assigns.items() if name.endswith("_GROUP"))
    return {
        "version": version,
        "plugin_entry_points": [g for g in groups if isinstance(g, str)],
        "extracted_by": "tests/contract/extract_flags.py",
        "declared_by": style,
        "prog": prog if isinstance(prog, str) else None,
        "flag_count": sum(len(f["names"]) for f in flags),
        "flags": sorted(flags, key=lambda f: f["names"][0]),
        "runtime_choices": runtime,
    }


def dumps(table):
    return json.dumps(table, indent=1, sort_keys=True) + "\n"


def main(argv):
    version = None
    if "--version" in argv:
        index = argv.index("--version")
        version = argv[index + 1]
        argv = argv[:index] + argv[index + 2:]
    table = extract(argv[0], version)
    text = dumps(table)
    if len(argv) > 1:
        with open(argv[1], "w", encoding="utf-8") as handle:
            handle.write(text)
        print("%s: %d flags (%d names) from sglang %s" % (argv[1], len(table["flags"]), table["flag_count"],
                                                           table["version"]))
    else:
        sys.stdout.write(text)


if __name__ == "__main__":
    main(sys.argv[1:])
