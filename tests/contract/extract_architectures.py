"""Extract every architecture a REAL SGLang wheel registers, and the pool class it sizes for each, into
lib/sglang_kvplan/releases/architectures.json (one table, every release of rules.json).

Nothing from a wheel is imported or run: the registered names are the `EntryClass` (a class or a list) of each
module under sglang/srt/models/, read with `ast`, and each is put in one class by the release's own lists and
checks, read from its source (the first that names it wins, in this order):

- draft: a speculative draft head (NextN / MTP / EAGLE / DFLASH / DSpark / Medusa classes): sized inside its
  target's cell, never served as a model of its own.
- refused: where the plain formula would size it wrongly although SGLang uses one pool: more attention layers than
  hidden layers (`self.num_attention_layers` set per architecture in configs/model_config.py: LongCat, loop models,
  Whisper), KV heads read from another config key (the module reads multi_query_group_num, multi_query,
  num_attention_groups, n_head_kv or attn_config: ChatGLM, GPTBigCode, Step3, Falcon, DBRX/MPT), per-block KV
  heads (block_configs: Nemotron-NAS), and a hybrid sliding-window architecture whose layers get_hybrid_layer_ids
  splits by a fixed pattern, not the config (Llama 4's ForConditionalGeneration: chunked attention on 3 of 4).
- encoder: `is_generation_model` is False and neither the module nor the model modules it imports (two deep) build
  a causal LM, or it builds ENCODER_ONLY attention (BERT, XLM-R, CLIP).
- reward: `is_generation_model` is False but a decoder (reward, classification, embedding heads on a decoder):
  its KV pool is the generator's, planned like it.
- sparse: DeepSeek sparse attention or MiniMax sparse (`is_deepseek_dsa` names it and it is not only MLA when
  index_topk is set, `is_minimax_sparse`).
- mla: the MLA list (configs/model_config.py, the branches that set AttentionArch.MLA); `mla_if` names the config
  key a conditional branch tests (kv_lora_rank), `sparse_if` index_topk where is_deepseek_dsa also names it.
- hybrid_swa: `is_hybrid_swa_model`'s set (with SWA_SINK_ARCHS and the sets it unpacks), less the architectures a
  model override gives disable_hybrid_swa_memory (those are window_one_pool).
- linear: the module names a config class that configs/hybrid_arch.py (or the release's equivalent) tests with
  isinstance, or PURE_SSM_ARCHITECTURES names it (before the MLA list), or a model module it imports does (after the
  multimodal list: a text-only module over a hybrid model's, Qwen3.5): a state pool beside the KV pool of its
  full-attention layers (none for pure Mamba).
- window_one_pool: windowed layers SGLang still sizes as one pool over every layer (disable_hybrid_swa_memory, or a
  module that reads sliding_window / attention_chunk_size without being hybrid SWA).
- multimodal: in `multimodal_model_archs`, with `text`: the class of the text model behind the wrapper (another
  decoder of the same module, else of the models it imports; 'by_config' where it imports decoders of several
  classes and the config's keys decide).
- full: none of the above: MHA/GQA, one pool over every layer.

Beside the class, `mm_transport_override` names the model override that turns the cuda_ipc feature transport on
by itself (0.5.23: Qwen3-VL on a Hopper GPU of 60 GiB or more), which reserves more of the KV budget.

Usage: python extract_architectures.py WHEEL... [--out lib/sglang_kvplan/releases/architectures.json]
"""

import ast
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import extract_flags

SRT = "sglang/srt/"
MODEL_CONFIG = SRT + "configs/model_config.py"
DRAFT_NAME = re.compile(r"NextN|MTP|Eagle|EAGLE|DFlash|DSpark|Medusa|DraftModel")
# config keys SGLang reads KV heads from instead of num_key_value_heads (model_config.py get_total_num_kv_heads)
OTHER_KV_KEYS = ("multi_query_group_num", "num_attention_groups", "n_head_kv", "multi_query", "attn_config",
                 "block_configs")
WINDOW_KEYS = ("sliding_window", "attention_chunk_size")


def _read(source, rel):
    """A file's text, without the byte-order mark some releases' model files start with."""
    return (source.read(rel) or "").lstrip("\ufeff")


def _files(source, prefix):
    names = source._zip.namelist() if source._zip is not None else [
        os.path.relpath(os.path.join(d, f), source.path) for d, _, fs in os.walk(source.path) for f in fs]
    return sorted(n for n in names if n.startswith(prefix) and n.endswith(".py"))


def entry_classes(source):
    """{architecture: (module rel, line)} of every module's EntryClass; the first module wins a repeated name."""
    found = {}
    for rel in _files(source, SRT + "models/"):
        tree = ast.parse(_read(source, rel))
        for node in tree.body:
            if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "EntryClass"
                                                    for t in node.targets):
                value = node.value
                names = [e for e in value.elts] if isinstance(value, (ast.List, ast.Tuple)) else [value]
                for name in names:
                    text = name.id if isinstance(name, ast.Name) else getattr(name, "attr", None)
                    if text:
                        found.setdefault(text, (rel, node.lineno))
    return found


def _module_sets(tree):
    """{NAME: [strings]} of the module-level names bound to a literal set/list/tuple/frozenset of strings."""
    sets = {}
    for node in tree.body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            target = node.targets[0] if isinstance(node, ast.Assign) else node.target
            if isinstance(target, ast.Name):
                strings = _strings(node.value, sets)
                if strings:
                    sets[target.id] = strings
    return sets


def _strings(node, sets):
    """The string constants of a literal collection, with `*NAME` unpacked from `sets`."""
    if isinstance(node, ast.Call) and node.args:  # frozenset({...}), set([...])
        return _strings(node.args[0], sets)
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.BitOr)):  # ("A",) + OTHER_TUPLE
        return _strings(node.left, sets) + _strings(node.right, sets)
    if isinstance(node, ast.Name):
        return list(sets.get(node.id, []))
    if not isinstance(node, (ast.Set, ast.List, ast.Tuple)):
        return []
    out = []
    for elt in node.elts:
        if isinstance(elt, ast.Constant) and isinstance(elt.value, str):
            out.append(elt.value)
        elif isinstance(elt, ast.Starred) and isinstance(elt.value, ast.Name):
            out += sets.get(elt.value.id, [])
    return out


def _function(tree, name):
    return next((n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == name), None)


def _arch_tests(test):
    """[(architecture, conditional)] of `"X" in ....architectures` in an if-test; conditional where it is and-ed."""
    out = []

    def visit(node, under_and):
        if isinstance(node, ast.BoolOp):
            for value in node.values:
                visit(value, under_and or isinstance(node.op, ast.And))
        elif (isinstance(node, ast.Compare) and isinstance(node.left, ast.Constant)
              and isinstance(node.left.value, str) and isinstance(node.ops[0], ast.In)
              and "architectures" in ast.unparse(node.comparators[0])):
            out.append((node.left.value, under_and))
    visit(test, False)
    return out


def _sets_attr(body, attr, value_src=None):
    for node in body:
        for sub in ast.walk(node):
            if isinstance(sub, ast.Assign) and any(ast.unparse(t) == "self." + attr for t in sub.targets):
                if value_src is None or ast.unparse(sub.value) == value_src:
                    return True
    return False


def _if_chain(tree):
    """Every `if` of the tree with its own body (elif branches are ifs in orelse)."""
    return [n for n in ast.walk(tree) if isinstance(n, ast.If)]


def model_config_lists(source):
    """The release's lists from configs/model_config.py, each with the file:line it was read from."""
    text = source.read(MODEL_CONFIG)
    tree = ast.parse(text)
    sets = _module_sets(tree)
    out = {"mla": {}, "extra_layers": {}, "dsa": [], "hybrid_swa": [], "not_generation": [], "multimodal": [],
           "minimax_sparse": [], "fixed_split": {}, "pure_ssm": []}
    if "PURE_SSM_ARCHITECTURES" in sets:
        line = next(n.lineno for n in tree.body if isinstance(n, ast.Assign)
                    and ast.unparse(n.targets[0]) == "PURE_SSM_ARCHITECTURES")
        out["pure_ssm"] = {"names": sets["PURE_SSM_ARCHITECTURES"], "where": "%s:%d" % (MODEL_CONFIG, line)}
    layer_ids = _function(tree, "get_hybrid_layer_ids")
    for node in _if_chain(layer_ids) if layer_ids is not None else ():
        # a split by a fixed layer pattern, not read from the config: Llama 4's chunked attention (3 of 4 layers)
        if not any(isinstance(sub, ast.Call) and ast.unparse(sub.func) == "getattr"
                   for part in node.body for sub in ast.walk(part)):
            for arch, _ in _arch_tests(node.test):
                out["fixed_split"].setdefault(arch, "%s:%d" % (MODEL_CONFIG, node.lineno))
    for node in _if_chain(tree):
        where = "%s:%d" % (MODEL_CONFIG, node.lineno)
        if _sets_attr(node.body, "attention_arch", "AttentionArch.MLA"):
            for arch, conditional in _arch_tests(node.test):
                out["mla"].setdefault(arch, {"where": where, "conditional": conditional})
        if _sets_attr(node.body, "num_attention_layers"):
            for arch, _ in _arch_tests(node.test):
                out["extra_layers"].setdefault(arch, where)
    for key, fn in (("dsa", "is_deepseek_dsa"), ("minimax_sparse", "is_minimax_sparse"),
                    ("hybrid_swa", "is_hybrid_swa_model"), ("not_generation", "is_generation_model")):
        found = _function(tree, fn)
        if found is None:
            continue
        names = set()
        for sub in ast.walk(found):
            if isinstance(sub, (ast.Set, ast.Tuple, ast.List)):
                names.update(_strings(sub, sets))
            if key == "not_generation":
                names.update(a for a, _ in _arch_tests(sub) if isinstance(sub, ast.Compare))
        out[key] = {"names": sorted(names), "where": "%s:%d" % (MODEL_CONFIG, found.lineno)}
    if "multimodal_model_archs" in sets:
        line = next(n.lineno for n in tree.body if isinstance(n, ast.Assign)
                    and ast.unparse(n.targets[0]) == "multimodal_model_archs")
        out["multimodal"] = {"names": sets["multimodal_model_archs"], "where": "%s:%d" % (MODEL_CONFIG, line)}
    return out


def no_hybrid_swa_memory(source):
    """{architecture: file:line} of the model overrides that set disable_hybrid_swa_memory (Gemma 2/3, EXAONE 4)."""
    out = {}
    for rel in _files(source, SRT + "arg_groups/") + [SRT + "server_args.py"]:
        text = source.read(rel)
        if not text or "disable_hybrid_swa_memory" not in text:
            continue
        tree = ast.parse(text)
        for node in ast.walk(tree):
            body, tests = None, []
            if isinstance(node, ast.If):
                body, tests = node.body, [node.test]
            elif isinstance(node, ast.FunctionDef) and node.decorator_list:
                body, tests = node.body, node.decorator_list
            if body is None or not _turns_off_swa_memory(body):
                continue
            for test in tests:
                for sub in ast.walk(test):
                    if isinstance(sub, ast.Constant) and isinstance(sub.value, str) and re.fullmatch(
                            r"[A-Z]\w*(ForCausalLM|ForConditionalGeneration|Model)", sub.value):
                        out.setdefault(sub.value, "%s:%d" % (rel, node.lineno))
    return out


def feature_transport_overrides(source):
    """{architecture: file:line} of the model overrides that turn the cuda_ipc feature transport on by themselves
    (0.5.23 arg_groups/model_overrides/qwen3_vl.py: Qwen3-VL on a large Hopper GPU), which reserves
    SGLANG_MM_FEATURE_CACHE_MB of the KV budget (mem_cache/kv_cache_configurator.py mm_runtime_reservation_gb)."""
    out = {}
    for rel in _files(source, SRT + "arg_groups/"):
        text = _read(source, rel)
        if '"cuda_ipc"' not in text:
            continue
        for node in ast.walk(ast.parse(text)):
            if not isinstance(node, ast.FunctionDef) or not node.decorator_list:
                continue
            sets_ipc = any(isinstance(sub, ast.Assign) and "mm_feature_transport" in ast.unparse(sub.targets[0])
                           and ast.unparse(sub.value) == "'cuda_ipc'" for sub in ast.walk(node))
            if not sets_ipc:
                continue
            for test in node.decorator_list:
                for sub in ast.walk(test):
                    if isinstance(sub, ast.Constant) and isinstance(sub.value, str):
                        out.setdefault(sub.value, "%s:%d" % (rel, node.lineno))
    return out


def _turns_off_swa_memory(body):
    for node in body:
        for sub in ast.walk(node):
            if isinstance(sub, ast.Assign) and "disable_hybrid_swa_memory" in ast.unparse(sub.targets[0]) \
                    and ast.unparse(sub.value) == "True":
                return True
            pairs = zip(sub.keys, sub.values, strict=True) if isinstance(sub, ast.Dict) else ()
            if any(isinstance(k, ast.Constant) and k.value == "disable_hybrid_swa_memory" and ast.unparse(v) == "True"
                   for k, v in pairs):
                return True
    return False


def hybrid_config_classes(source):
    """(config class names the release tests with isinstance to find a hybrid linear/Mamba model, file)."""
    for rel in (SRT + "configs/hybrid_arch.py", SRT + "model_executor/model_runner.py",
                SRT + "configs/model_config.py"):
        text = source.read(rel)
        if not text or "def mambaish_config" not in text and "def hybrid_gdn_config" not in text:
            continue
        names = set()
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.Call) and ast.unparse(node.func) == "isinstance" and len(node.args) == 2:
                names.update(n.id for n in ast.walk(node.args[1]) if isinstance(n, ast.Name)
                             and n.id.endswith("Config"))
        return sorted(names), rel
    return [], None


def _imports(tree):
    """{imported name: module} of `from sglang.srt.... import name`."""
    return {alias.asname or alias.name: node.module + ("." + alias.name if node.module == "sglang.srt.models" else "")
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("sglang.srt.")
            for alias in node.names}


def classify_all(path):
    source = extract_flags.Source(path)
    entries = entry_classes(source)
    lists = model_config_lists(source)
    swa_off = no_hybrid_swa_memory(source)
    transport = feature_transport_overrides(source)
    hybrid_classes, hybrid_where = hybrid_config_classes(source)
    not_generation = set(lists["not_generation"]["names"]) if lists["not_generation"] else set()
    multimodal = set(lists["multimodal"]["names"]) if lists["multimodal"] else set()
    hybrid_swa = set(lists["hybrid_swa"]["names"]) if lists["hybrid_swa"] else set()
    dsa = set(lists["dsa"]["names"]) if lists["dsa"] else set()
    minimax_sparse = set(lists["minimax_sparse"]["names"]) if lists["minimax_sparse"] else set()
    texts, trees = {}, {}
    for rel, _ in entries.values():
        if rel not in texts:
            texts[rel] = _read(source, rel)
            trees[rel] = ast.parse(texts[rel])
    module_of = {rel.replace("/", ".")[:-3]: rel for rel in texts}

    def _text(rel):
        if rel not in texts:
            texts[rel] = _read(source, rel)
        return texts[rel]

    def _names_hybrid(modules):
        return any(re.search(r"\b%s\b" % name, _text(m)) for m in modules for name in hybrid_classes)

    def _reached(rel, tree, depth=2):
        """The model module and the sglang.srt.models modules it imports, `depth` imports deep."""
        found, frontier = [rel], [(rel, tree)]
        for _ in range(depth):
            step = []
            for _, node in frontier:
                for module in _imports(node).values():
                    path = module.replace(".", "/") + ".py"
                    if module.startswith("sglang.srt.models.") and path not in found and _text(path):
                        found.append(path)
                        step.append((path, ast.parse(_text(path))))
            frontier = step
        return found

    def own(arch):
        rel, line = entries[arch]
        text, tree = texts[rel], trees[rel]
        entry = {"module": "%s:%d" % (rel[len(SRT):], line), "generation": arch not in not_generation}
        if DRAFT_NAME.search(arch):
            return dict(entry, **{"class": "draft"})
        if arch in lists["extra_layers"]:
            return dict(entry, **{"class": "refused", "reason": "extra_attention_layers",
                                  "decided_by": lists["extra_layers"][arch]})
        other = [key for key in OTHER_KV_KEYS if re.search(r"\b%s\b" % key, text)]
        if other and arch not in lists["mla"]:
            return dict(entry, **{"class": "refused", "reason": "kv_heads_from:" + other[0],
                                  "decided_by": "%s (reads %s)" % (rel, other[0])})
        if arch in not_generation:
            # a decoder: its own module, or a model module it imports, builds a causal LM
            decoder = "ENCODER_ONLY" not in text and any(
                re.search(r"ForCausalLM|DecoderLayer", _text(m)) for m in _reached(rel, tree))
            kind = "reward" if decoder else "encoder"
            return dict(entry, **{"class": kind, "decided_by": lists["not_generation"]["where"]})
        if lists["pure_ssm"] and arch in lists["pure_ssm"]["names"]:
            return dict(entry, **{"class": "linear", "decided_by": lists["pure_ssm"]["where"]})
        if _names_hybrid([rel]):
            return dict(entry, **{"class": "linear", "decided_by": hybrid_where})
        if arch in minimax_sparse:
            return dict(entry, **{"class": "sparse", "decided_by": lists["minimax_sparse"]["where"]})
        if arch in lists["mla"]:
            mla = lists["mla"][arch]
            if arch in dsa and "V32" in arch:
                return dict(entry, **{"class": "sparse", "decided_by": lists["dsa"]["where"]})
            out = dict(entry, **{"class": "mla", "decided_by": mla["where"]})
            if mla["conditional"]:
                out["mla_if"] = "kv_lora_rank"
            if arch in dsa:
                out["sparse_if"] = "index_topk"
            return out
        if arch in swa_off:
            return dict(entry, **{"class": "window_one_pool", "decided_by": swa_off[arch]})
        if arch in hybrid_swa:
            if arch in lists["fixed_split"]:
                return dict(entry, **{"class": "refused", "reason": "fixed_layer_split",
                                      "decided_by": lists["fixed_split"][arch]})
            return dict(entry, **{"class": "hybrid_swa", "decided_by": lists["hybrid_swa"]["where"]})
        if arch in multimodal:
            return dict(entry, **{"class": "multimodal", "decided_by": lists["multimodal"]["where"]})
        if _names_hybrid(_reached(rel, tree, depth=1)):  # a text-only module over a hybrid model's (Qwen3.5)
            return dict(entry, **{"class": "linear", "decided_by": hybrid_where})
        if any(re.search(r"\b%s\b" % key, text) for key in WINDOW_KEYS):
            return dict(entry, **{"class": "window_one_pool", "decided_by": "%s (reads a window)" % rel})
        return dict(entry, **{"class": "full"})

    table = {arch: own(arch) for arch in entries}
    for arch, where in transport.items():
        if arch in table:
            table[arch]["mm_transport_override"] = where
    for arch, entry in table.items():
        if entry["class"] == "multimodal":
            entry["text"] = _text_class(arch, entries, table, trees, module_of)
    return {"version": source.version(), "architectures": dict(sorted(table.items()))}


TEXT_CLASSES = ("full", "mla", "window_one_pool", "hybrid_swa", "linear", "sparse")


def _text_class(arch, entries, table, trees, module_of, seen=()):
    """The class of the text model behind a multimodal wrapper: 'by_config' where it imports decoders of several
    classes (its config.json's keys decide), else another decoder of its module's EntryClass, else of the first
    model module it imports that registers one (followed through wrappers)."""
    rel = entries[arch][0]
    same = [a for a, (r, _) in entries.items() if r == rel and a != arch]
    imported = [module_of[m] for m in dict.fromkeys(_imports(trees[rel]).values()) if m in module_of
                and module_of[m] != rel]
    backbones = {table[a]["class"] for r in imported for a, (r2, _) in entries.items()
                 if r2 == r and table[a]["class"] in TEXT_CLASSES}
    if len(backbones) > 1:  # one wrapper over decoders of several classes (MiniCPM-V): its config decides
        return "by_config"
    for candidate in same + [a for r in imported for a, (r2, _) in entries.items() if r2 == r]:
        entry = table[candidate]
        if entry["class"] in TEXT_CLASSES:
            return entry["class"]
        if entry["class"] == "multimodal" and candidate not in seen:
            found = _text_class(candidate, entries, table, trees, module_of, seen + (arch,))
            if found:
                return found
    return None


def table(paths):
    releases = {}
    for path in paths:
        entry = classify_all(path)
        releases[entry["version"]] = entry["architectures"]
    return {"extracted_by": "tests/contract/extract_architectures.py", "releases": dict(sorted(
        releases.items(), key=lambda item: tuple(int(x) for x in re.findall(r"\d+", item[0]))))}


def dumps(data):
    """The table as JSON, one line per release and architecture (a release's change is a diff of its lines)."""
    lines = ['{"extracted_by": %s, "releases": {' % json.dumps(data["extracted_by"])]
    for index, (version, archs) in enumerate(data["releases"].items()):
        lines.append(' %s: {' % json.dumps(version))
        rows = ['  %s: %s' % (json.dumps(arch), json.dumps(entry, sort_keys=True))
                for arch, entry in sorted(archs.items())]
        lines.append(",\n".join(rows))
        lines.append(" }" + ("," if index < len(data["releases"]) - 1 else ""))
    return "\n".join(lines) + "\n}}\n"


def counts(data):
    """{release: {class: count}}, for the closing note and the docs."""
    out = {}
    for version, archs in data["releases"].items():
        per = {}
        for entry in archs.values():
            key = entry["class"] + ("(%s)" % entry["text"] if entry.get("text") else "")
            per[key] = per.get(key, 0) + 1
        out[version] = dict(sorted(per.items()))
    return out


def main(argv):
    out = None
    if "--out" in argv:
        index = argv.index("--out")
        out = argv[index + 1]
        argv = argv[:index] + argv[index + 2:]
    data = table(argv)
    text = dumps(data)
    if out:
        with open(out, "w", encoding="utf-8") as handle:
            handle.write(text)
        for version, per in counts(data).items():
            print(version, sum(per.values()), per)
    else:
        sys.stdout.write(text)


if __name__ == "__main__":
    main(sys.argv[1:])
