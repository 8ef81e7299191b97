"""Read the metric names a release's SGLang serves on /metrics from its wheel: every prometheus_client Counter,
Gauge, Histogram and Summary constructed with a literal `name=` in srt/observability/metrics_collector.py (0.5.23;
earlier releases kept it in srt/metrics/collector.py). Writes tests/fixtures/sglang_metrics/collector-<v>.json,
which tests/integration/test_prometheus_names.py holds lib/sglang_metrics and the double's /metrics to:

    .venv/bin/python tests/integration/extract_metric_names.py .cache/sglang-wheels/sglang-0.5.23-*.whl
"""

import ast
import json
import os
import re
import sys
import zipfile

SOURCES = ("sglang/srt/observability/metrics_collector.py", "sglang/srt/metrics/collector.py")
KINDS = {"Counter": "counter", "Gauge": "gauge", "Histogram": "histogram", "Summary": "summary"}
OUT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fixtures", "sglang_metrics")


def names_in(source):
    """{name: kind} of every metric the collector's source constructs with a literal name."""
    found = {}
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name) or node.func.id not in KINDS:
            continue
        for keyword in node.keywords:
            if keyword.arg == "name" and isinstance(keyword.value, ast.Constant):
                found[keyword.value.value] = KINDS[node.func.id]
    return found


def main(wheel):
    version = re.search(r"sglang-([^-]+)-", os.path.basename(wheel)).group(1)
    with zipfile.ZipFile(wheel) as archive:
        present = [name for name in SOURCES if name in archive.namelist()]
        if not present:
            sys.exit("%s holds none of %s" % (wheel, ", ".join(SOURCES)))
        source = archive.read(present[0]).decode("utf-8")
    os.makedirs(OUT, exist_ok=True)
    path = os.path.join(OUT, "collector-%s.json" % version)
    with open(path, "w", encoding="utf-8") as handle:
        json.dump({"release": "sglang==" + version, "source": present[0], "metrics": names_in(source)}, handle,
                  indent=1, sort_keys=True)
        handle.write("\n")
    print(path)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: extract_metric_names.py <sglang wheel>")
    main(sys.argv[1])
