"""Which parser option an extra launch argument reaches, matched as Python's argparse matches it.

SGLang (0.5.9 and 0.5.23 `srt/server_args.py` prepare_server_args) and sglang-router 0.3.2
(`sglang_router/launch_router.py` parse_router_args) build a plain `argparse.ArgumentParser`, whose
`allow_abbrev` is true: `--hos` reaches `--host` when no other option starts with `--hos`, and `--api-ke=X`
reaches `--api-key`. A check by exact name lets those through; this module resolves an argument the way
`ArgumentParser._parse_optional` does (Python 3.11), so that a refusal names the option really reached.
"""

import functools
import json
import os
import re

HERE = os.path.dirname(os.path.abspath(__file__))
RELEASES = os.path.join(HERE, os.pardir, "sglang_kvplan", "releases")
# argparse's own option, present in every parser (add_help=True) but not in the extracted tables.
HELP = {"dest": "help", "names": ["-h", "--help"]}


def _version_key(version):
    return tuple(int(part) for part in re.findall(r"\d+", version)[:3])


def sglang_table(version):
    """The option table of the SGLang release whose parser `version` runs: the release's own table
    (lib/sglang_kvplan/releases/flags-<version>.json), else the newest older one, else the oldest."""
    tables = sorted((name[len("flags-"):-len(".json")] for name in os.listdir(RELEASES)
                     if name.startswith("flags-") and name.endswith(".json")), key=_version_key)
    wanted = _version_key(str(version)) or _version_key(tables[-1])
    older = [name for name in tables if _version_key(name) <= wanted]
    return _load(os.path.join(RELEASES, "flags-%s.json" % (older[-1] if older else tables[0])))


def router_table():
    """sglang-router 0.3.2's option table (extracted from its parser; tests/unit/test_hostile_flags.py
    checks it against the installed package)."""
    return _load(os.path.join(HERE, "router-flags-0.3.2.json"))


def _load(path):
    return dict(_parsed(path))


@functools.lru_cache(maxsize=16)
def _parsed(path):
    """A table parsed once per process (the check phase reads it for every host of a fleet); _load hands out copies."""
    with open(path, encoding="utf-8") as handle:
        flags = json.load(handle)["flags"]
    return {name: flag["dest"] for flag in flags + [HELP] for name in flag["names"]}


def resolve(arg, table):
    """What argparse makes of one argument: ('value', None) for a value, ('option', dest) for an option
    it reaches, ('ambiguous', [names]) for a prefix of several, ('unknown', None) for an option it does not
    know. `table` maps every option string to its dest."""
    if not arg.startswith("-") or arg == "-":
        return "value", None
    if arg == "--":
        return "end", None
    if arg in table:
        return "option", table[arg]
    head = arg.split("=", 1)[0]
    if "=" in arg and head in table:
        return "option", table[head]
    if arg.startswith("--"):
        matches = sorted(name for name in table if name.startswith(head))
    else:  # one dash: a short option with its value attached (-hX), or a prefix of a one-dash option
        matches = sorted(name for name in table
                         if name == arg[:2] or (name.startswith(arg) and not name.startswith("--")))
    if len(matches) == 1:
        return "option", table[matches[0]]
    if len(matches) > 1:
        return "ambiguous", matches
    if re.match(r"^-\d+$|^-\d*\.\d+$", arg) or " " in arg:
        return "value", None
    return "unknown", None
