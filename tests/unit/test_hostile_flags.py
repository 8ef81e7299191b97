"""Extra launch arguments are matched as argparse matches them (allow_abbrev: a unique prefix reaches its option),
against each release's own option table; the router's table is the installed sglang-router 0.3.2's parser."""

import argparse
import importlib.util

import pytest
from sglang_checks import flags


@pytest.mark.parametrize("version", ["0.5.9", "0.5.23"])
def test_resolution_agrees_with_a_real_argparse_parser_built_from_the_table(version):
    table = flags.sglang_table(version)
    parser = argparse.ArgumentParser(prog="sglang serve")
    by_dest = {}
    for name, dest in table.items():
        if dest != "help":
            by_dest.setdefault(dest, []).append(name)
    for dest, names in by_dest.items():
        parser.add_argument(*names, dest=dest, nargs="?")
    probes = ["--hos", "--api-ke", "--api-ke=x", "--tp", "--tp-size", "--max-total", "--cont", "--con", "--mem",
              "--port=1", "--he", "-h", "--model", "--served", "--enable-metric", "--pp", "--dp", "--dist-init",
              "--nccl", "--nnode", "--node", "--kv-cache", "--page", "--speculative-draft-model", "--conf"]
    for probe in probes:
        kind, found = flags.resolve(probe, table)
        if kind == "ambiguous":
            with pytest.raises(SystemExit):  # argparse: "ambiguous option: ... could match ..."
                parser._parse_optional(probe)
            continue
        optional = parser._parse_optional(probe)
        # Python 3.11 returns (action, option string, explicit value); 3.12 a list of such tuples.
        action = (optional[0] if isinstance(optional, list) else optional)[0]
        assert kind == "option" and action is not None and action.dest == found, probe

def test_an_unknown_release_uses_the_newest_older_table():
    # every release from 0.5.9 has its own table (tests/contract/extract_flags.py); a build between takes the older
    assert flags.sglang_table("0.5.12") != flags.sglang_table("0.5.9")
    assert flags.sglang_table("0.5.22.dev0") == flags.sglang_table("0.5.22")
    assert flags.sglang_table("0.5.23+double") == flags.sglang_table("0.5.23")
    assert flags.sglang_table("0.6.0") == flags.sglang_table("0.5.23")


@pytest.mark.skipif(importlib.util.find_spec("sglang_router") is None, reason="sglang-router is not installed")
def test_the_router_table_is_the_installed_routers_parser():
    from sglang_router.router_args import RouterArgs

    parser = argparse.ArgumentParser()
    RouterArgs.add_cli_args(parser, use_router_prefix=False)  # as launch_router.parse_router_args builds it
    real = {name: action.dest for action in parser._actions for name in action.option_strings}
    assert flags.router_table() == real
