"""playbooks/levers.yml's controller side: each server's window (sampled on its host by samples.py, or asked of
Prometheus), weighed against its check-phase plan by levers.analyse with the real planner; lines to print."""

import sglang_kvplan

from sglang_metrics import levers, samples

TURN_ON = ("set sglang_metrics: true (the role's default; --enable-metrics) and run site.yml on it, then read the "
           "traffic again")


def _window(entry, prometheus_url, window_s, step_s, fetch):
    """(window, None) or (None, the sentence that says why there is none)."""
    server = entry["server"]
    if prometheus_url:
        try:
            return samples.prometheus_window(prometheus_url, server, window_s, step_s, fetch=fetch), None
        except samples.NoMetrics as error:
            return None, "%s: %s: %s" % (server, error, TURN_ON)
        except (OSError, ValueError) as error:
            return None, ("%s: Prometheus at %s cannot be read (%s): check sglang_levers_prometheus_url"
                          % (server, prometheus_url, error))
    sampled = entry.get("sample") or {}
    if "window" in sampled:
        return sampled["window"], None
    if "no_metrics" in sampled:
        return None, "%s: serves no metrics (%s): %s" % (server, sampled["no_metrics"], TURN_ON)
    return None, "%s: its /metrics could not be read (%s)" % (server, sampled.get("unreachable") or "no sample")


def run(data, fetch=samples.fetch_text, planner=sglang_kvplan.plan):
    """{lines, servers: {server: lever}} for data = {servers: [{server, planned, sample}], prometheus_url,
    window_s, step_s}. `planned` is the check phase's entry for the server's rank-0 host ({spec, plan} or why not)."""
    lines, levers_by_server = [], {}
    for entry in data.get("servers") or []:
        server, planned = entry["server"], entry.get("planned") or {}
        if "plan" not in planned:
            lines.append("%s: no plan to weigh the traffic against (%s)"
                         % (server, planned.get("skipped") or planned.get("error") or "not planned"))
            continue
        window, why = _window(entry, data.get("prometheus_url"), float(data["window_s"]), float(data["step_s"]),
                              fetch)
        if window is None:
            lines.append(why)
            continue
        found = levers.analyse(server, window, planned["spec"], planned["plan"], planner, sglang_kvplan.KVPlanError)
        levers_by_server[server] = found["lever"]
        lines += found["lines"]
    lines.append("levers.yml changes nothing: set a knob named above in the inventory, `make plan` to see it, then "
                 "site.yml")
    return {"lines": lines, "servers": levers_by_server}
