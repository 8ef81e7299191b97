"""CLI for playbooks/plan.yml (a run's report is the sglang_run_report action's); the facts arrive as JSON on stdin.

  python -m sglang_report plan --out reports/plan      # the picture for facts.host
facts.host names the file (a server's name for a server across nodes); facts.title, when given, heads the
picture instead (e.g. "ct400 (nodes ct400-a, ct400-b)"). Prints what it wrote as one JSON object.
A refusal (facts that are not a mapping, a host or stamp that is not a single file name, a root whose parent does not
exist: inputs.py) is one sentence on stderr and exit status 2, never a traceback.
"""

import argparse
import json
import os
import sys

from .inputs import ReportInputError, check_facts, check_name, kind, write_file
from .report import picture

HOST_FIX = "give the inventory host's name (or the server's); it names the report's files"


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m sglang_report")
    sub = parser.add_subparsers(dest="command", required=True)
    plan = sub.add_parser("plan", help="write <out>/<host>.png")
    plan.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    try:
        facts = json.load(sys.stdin)
    except (ValueError, RecursionError) as error:
        parser.exit(2, "python -m sglang_report: the facts on stdin are not JSON (%s): give them as one JSON object\n"
                    % ("nested too deeply" if isinstance(error, RecursionError) else "at line %s" %
                       getattr(error, "lineno", "?")))
    try:
        return _command(args, facts)
    except ReportInputError as error:
        parser.exit(2, "python -m sglang_report: %s\n" % error)
    except OSError as error:
        parser.exit(2, "python -m sglang_report: cannot write %s: %s\n" % (error.filename, error.strerror))


def _command(args, facts):
    check_facts(facts)
    if not facts.get("host"):
        raise ReportInputError("the facts on stdin need a 'host': %s" % HOST_FIX)
    # <host>.png: the host and its suffix must make one file name (a 252-character host name did not: N-S5-12)
    check_name("host", facts["host"], HOST_FIX, suffix=".png")
    plan_facts = ("sglang_kv_spec", "sglang_kv_plan_result")
    if not all(isinstance(facts.get(name), dict) and facts[name] for name in plan_facts):
        raise ReportInputError("the facts on stdin need sglang_kv_spec and sglang_kv_plan_result as non-empty "
                               "mappings (they are %s and %s): give the plan to draw"
                               % (kind(facts.get("sglang_kv_spec")), kind(facts.get("sglang_kv_plan_result"))))
    title = "%s: %s" % (facts.get("title") or facts["host"], facts["sglang_kv_plan_result"].get("explanation", ""))
    png, data, _key = picture(facts, title)
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(os.path.abspath(args.out), facts["host"] + ".png")
    write_file(path, png)
    # Each boot measured on this host against the planner's forward formula, with calibrate.yml's
    # tolerance (0.1% or 2 tokens): a calibration that no longer predicts the boots shows here.
    # An estimate is not expected to agree (that is what its margin is for): then only the numbers show.
    boots = [dict(b, agrees=abs(b["predicted"] - b["pool_tokens"]) <= max(2, b["pool_tokens"] // 1000)
                  if data["calibrated"] else None) for b in data["measured"]]
    lines = ["measured boot: f %.3f -> %s tokens; the plan's formula: %s%s"
             % (b["mem_fraction_static"], format(b["pool_tokens"], ","), format(b["predicted"], ","),
                {True: "", False: "  <- DISAGREES", None: " (estimated P and A)"}[b["agrees"]]) for b in boots]
    json.dump({"picture": path, "boots": boots, "lines": lines}, sys.stdout)
    print()
    return 0

if __name__ == "__main__":
    sys.exit(main())
