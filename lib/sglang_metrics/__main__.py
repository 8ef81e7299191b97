"""The playbooks' entry points, run on the controller with the inventory's values as JSON on stdin:

  python -m sglang_metrics render --out DIR    playbooks/monitoring.yml: Prometheus' folder and the dashboard
  python -m sglang_metrics levers              playbooks/levers.yml: what a window of traffic used of each lever

Each prints one JSON object on stdout; a bad input is one sentence on stderr and exit status 2, no traceback."""

import argparse
import json
import os
import sys

from sglang_checks import inputs

from sglang_metrics import levers_run, render, targets

ROLES = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "roles")


class InputError(Exception):
    """A value the operator gave that this cannot use: the message names it and the fix."""


def role_default(roles, name):
    """A knob's role default as a plain value; None for a default the role templates at run time (sglang_server_name
    is its nodes' first), which only the role's own run can resolve: the targets derive those themselves."""
    value = roles.default(name)
    return None if isinstance(value, str) and "{{" in value else value


def _render(data, out):
    roles = inputs.roles_at(ROLES)

    def default(name):
        return role_default(roles, name)

    servers, server_notes = targets.server_targets(data.get("servers") or {}, data.get("plans") or {}, default)
    routers, router_notes = targets.router_targets(data.get("routers") or {}, default)
    try:
        interval = int(data.get("interval_s", 15))
    except (TypeError, ValueError):
        interval = 0
    if interval < 1:
        raise InputError("sglang_monitoring_scrape_interval_s is %r: give a whole number of seconds, at least 1"
                         % data.get("interval_s"))
    os.makedirs(out, exist_ok=True)
    written = []
    for name, text in render.files(servers, routers, interval).items():
        path = os.path.join(out, name)
        with open(path + ".tmp", "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(path + ".tmp", path)
        written.append(path)
    return {"files": written, "servers": [s["server"] for s in servers], "routers": [r["server"] for r in routers],
            "notes": server_notes + router_notes}


def main(argv=None):
    parser = argparse.ArgumentParser(prog="sglang_metrics")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("render").add_argument("--out", required=True)
    commands.add_parser("levers")
    args = parser.parse_args(argv)
    try:
        data = json.load(sys.stdin)
        if args.command == "render":
            result = _render(data, args.out)
        else:
            result = levers_run.run(data)
    except (InputError, json.JSONDecodeError) as error:
        sys.stderr.write("%s\n" % error)
        return 2
    json.dump(result, sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
