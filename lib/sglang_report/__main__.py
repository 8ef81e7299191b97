"""CLI for the role and playbooks/plan.yml; the facts arrive as JSON on stdin.

  python -m sglang_report run  --root reports [--stamp 20260101T000000Z]   # one run's report for facts.host
  python -m sglang_report plan --out reports/plan                          # the picture for facts.host
facts.host names the files (a server's name for a server across nodes); facts.title, when given, heads the
picture instead (e.g. "ct400 (nodes ct400-a, ct400-b)").
Prints the paths it wrote; `run` then prints the run's summary, one line each (summary.py), from the same report.
"""

import argparse
import json
import os
import sys
from datetime import UTC, datetime

from .report import picture, write_run_report
from .summary import summary_lines


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m sglang_report")
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="write <root>/<host>/<stamp>/report.json and report.html")
    run.add_argument("--root", required=True)
    run.add_argument("--stamp")
    plan = sub.add_parser("plan", help="write <out>/<host>.png")
    plan.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    facts = json.load(sys.stdin)
    if not facts.get("host"):
        parser.error("the facts on stdin need a 'host'")
    now = datetime.now(UTC)
    if args.command == "run":
        out = write_run_report(facts, args.root, args.stamp or now.strftime("%Y%m%dT%H%M%SZ"),
                               now.isoformat(timespec="seconds"))
        print(os.path.join(out, "report.html"))
        print(os.path.join(out, "report.json"))
        with open(os.path.join(out, "report.json"), encoding="utf-8") as handle:
            report = json.load(handle)
        for line in summary_lines(report):
            print(line)
        return 0
    title = "%s: %s" % (facts.get("title") or facts["host"], facts["sglang_kv_plan_result"].get("explanation", ""))
    png, data, _key = picture(facts, title)
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(os.path.abspath(args.out), facts["host"] + ".png")
    with open(path, "wb") as handle:
        handle.write(png)
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
