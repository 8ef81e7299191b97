"""What a probe re-run shares: run the reproductions' tests once under pytest, and tally each defect's cases in the
probe's verdicts (rerun_probe5.py, rerun_probe6.py).

A case that passes is **handled**; a case that fails counts under the verdict the probe gave its defect (lost, silent,
unclear, leaked), so a regression shows in the column where the probe found it. A defect whose selectors find no test
fails the re-run: a renamed test would otherwise drop out of it silently.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
VERDICTS = ("handled", "silent", "unclear", "leaked", "lost")


def selected(testcase, tests):
    """Whether a junit testcase (classname tests.unit.test_file, name test_x[param]) is one of {file: prefixes}."""
    path = testcase.get("classname", "").replace(".", "/") + ".py"
    return any(testcase.get("name", "").startswith(prefix) for prefix in tests.get(path, ()))


def outcome(testcase):
    if testcase.find("skipped") is not None:
        return "skipped"
    return "failed" if testcase.find("failure") is not None or testcase.find("error") is not None else "passed"


def tally(reproductions, cases):
    """{defect: {verdict: count}} from the junit testcases, each counted under every defect that selects it."""
    rows = {}
    for defect, (_what, verdict, selectors) in reproductions.items():
        counts = dict.fromkeys(VERDICTS + ("skipped",), 0)
        for case in cases:
            if selected(case, selectors):
                result = outcome(case)
                counts["handled" if result == "passed" else "skipped" if result == "skipped" else verdict] += 1
        rows[defect] = counts
    return rows


def run_cases(files):
    """Every junit testcase of one pytest run over files."""
    with tempfile.TemporaryDirectory() as scratch:
        junit = os.path.join(scratch, "junit.xml")
        subprocess.run([sys.executable, "-m", "pytest", "-q", "-n", os.environ.get("PYTEST_WORKERS", "2"),
                        "--dist", "loadfile", "-p", "no:cacheprovider", "--junitxml", junit, *files],
                       cwd=REPO, check=False, stdout=subprocess.DEVNULL)
        return list(ET.parse(junit).getroot().iter("testcase"))


def report(reproductions, probe):
    """Run, print the table, and return the exit status: 0 when every case is handled (or skipped)."""
    files = sorted({path for _what, _verdict, tests in reproductions.values() for path in tests})
    rows = tally(reproductions, run_cases(files))
    print("| defect | what %s found | its verdict | cases | %s | skipped |" % (probe, " | ".join(VERDICTS)))
    print("|---|---|---|---|" + "---|" * (len(VERDICTS) + 1))
    totals = dict.fromkeys(VERDICTS + ("skipped",), 0)
    for defect, (what, verdict, _selectors) in reproductions.items():
        counts = rows[defect]
        for key in totals:
            totals[key] += counts[key]
        print("| %s | %s | %s | %d | %s | %d |" % (defect, what, verdict, sum(counts.values()),
                                                   " | ".join(str(counts[key]) for key in VERDICTS),
                                                   counts["skipped"]))
    print("| all | | | %d | %s | %d |" % (sum(totals.values()), " | ".join(str(totals[key]) for key in VERDICTS),
                                         totals["skipped"]))
    empty = [defect for defect, counts in rows.items() if not sum(counts.values())]
    if empty:
        print("no case found for %s: a selector names no test" % ", ".join(empty))
        return 1
    return 0 if all(rows[defect]["handled"] + rows[defect]["skipped"] == sum(rows[defect].values())
                    for defect in rows) else 1
