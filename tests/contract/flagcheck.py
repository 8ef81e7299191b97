"""Check launch arguments against one SGLang release's flag table (lib/sglang_kvplan/releases/).

`check_args(table, argv)` -> a list of problems (empty when the release accepts every flag and value).
Stricter than argparse in one way, on purpose: a flag must be spelled out in full (argparse would also
take a unique prefix, which a later release can make ambiguous).
"""

import json
import os
import re

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RELEASES = os.path.join(REPO, "lib", "sglang_kvplan", "releases")

NO_VALUE = {"store_true", "store_false", "store_const", "deprecated", "deprecated_store_true", "boolean_optional"}


def table_path(version):
    return os.path.join(RELEASES, "flags-%s.json" % release_of(version))


def release_of(version):
    """'0.5.23+double' -> '0.5.23' (a local version suffix names a build of that release)."""
    return str(version).split("+", 1)[0].strip()


def load_table(version):
    path = table_path(version)
    if not os.path.isfile(path):
        known = sorted(n[6:-5] for n in os.listdir(RELEASES) if n.startswith("flags-"))
        raise FileNotFoundError("no flag table for SGLang %s (%s); known releases: %s. Extract one with "
                                "tests/contract/extract_flags.py" % (version, path, ", ".join(known)))
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)


def index(table):
    """flag name -> entry (BooleanOptionalAction also answers to --no-<name>)."""
    out = {}
    for entry in table["flags"]:
        for name in entry["names"]:
            out[name] = entry
            if entry["action"] == "boolean_optional" and name.startswith("--"):
                out["--no-" + name[2:]] = entry
    return out


def _human_readable_int(value):
    # sglang/srt/utils/common.py (0.5.23) accepts e.g. 128k / 1M as well as plain integers
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kKmMgG]?)\s*", value)
    if not match:
        raise ValueError(value)
    return int(float(match.group(1)) * {"": 1, "k": 1e3, "m": 1e6, "g": 1e9}[match.group(2).lower()])


CONVERTERS = {"int": int, "float": float, "json.loads": json.loads, "json_list_type": json.loads,
              "human_readable_int": _human_readable_int}


def _value_problems(flag, entry, value, version):
    problems = []
    convert = CONVERTERS.get(entry.get("type"))
    converted = value
    if convert is not None:
        try:
            converted = convert(value)
        except ValueError:
            problems.append("%s: invalid %s value %r (SGLang %s)" % (flag, entry["type"], value, version))
            return problems
    choices = entry.get("choices")
    if choices is not None and converted not in choices and value not in [str(c) for c in choices]:
        problems.append("%s: %r is not a choice of SGLang %s (choices: %s)"
                        % (flag, value, version, ", ".join(str(c) for c in choices)))
    return problems


def check_args(table, argv):
    """Problems with argv (a list of strings) for the release `table` describes."""
    version = table["version"]
    flags = index(table)
    runtime = table.get("runtime_choices", {})
    problems = []
    i = 0
    while i < len(argv):
        token = str(argv[i])
        i += 1
        if not token.startswith("-"):
            problems.append("%r: a value without a flag (SGLang %s takes no positional arguments)"
                            % (token, version))
            continue
        flag, has_inline, inline = token.partition("=")
        entry = flags.get(flag)
        if entry is None:
            problems.append("%s: not a flag of SGLang %s" % (flag, version))
            while i < len(argv) and not str(argv[i]).startswith("--"):
                i += 1  # skip its values
            continue
        nargs = entry.get("nargs")
        if entry["action"] in NO_VALUE or nargs == 0:
            if has_inline:
                problems.append("%s: takes no value in SGLang %s (got %r)" % (flag, version, inline))
            if entry["action"] == "deprecated":
                problems.append("%s: deprecated in SGLang %s and ignored (it has no effect)" % (flag, version))
            continue
        if has_inline:
            values = [inline]
        elif nargs in ("+", "*"):
            values = []
            while i < len(argv) and not str(argv[i]).startswith("--"):
                values.append(str(argv[i]))
                i += 1
        elif nargs == "?":
            values = [str(argv[i])] if i < len(argv) and not str(argv[i]).startswith("--") else []
            i += len(values)
        else:
            count = nargs if isinstance(nargs, int) else 1
            values = [str(v) for v in argv[i:i + count]]
            if len(values) < count or any(v.startswith("--") for v in values):
                problems.append("%s: expects %d value(s) in SGLang %s" % (flag, count, version))
                continue
            i += count
        if nargs == "+" and not values:
            problems.append("%s: expects at least one value in SGLang %s" % (flag, version))
        for value in values:
            problems.extend(_value_problems(flag, entry, value, version))
            rule = runtime.get(entry["dest"])
            if rule and (value.upper() if rule.get("case_insensitive") else value) not in rule["values"]:
                problems.append("%s: %r is not known to SGLang %s (checked at launch by %s; known: %s)"
                                % (flag, value, version, rule["source"], ", ".join(rule["values"])))
    return problems


def deprecations(table, argv):
    """Flags argv uses that the release still accepts but calls deprecated."""
    flags = index(table)
    return sorted({"%s (%s)" % (t, flags[t]["action"]) for t in (str(a).partition("=")[0] for a in argv)
                   if t in flags and flags[t]["action"].startswith("deprecated")})
