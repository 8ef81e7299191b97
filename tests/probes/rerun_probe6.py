"""Re-run of probe 6's reproductions (../shared/reference/probe-6.md): each defect's cases, as the tests that
reproduce them against the code as it is, tallied in the probe's verdicts (tests/probes/probe_rerun.py).

The tests are found by name wherever they stand under tests/: `test_probe6_<defect>_...` (d1 ... d9, day2), and for
the plan's absurd numbers, which the probe did not finish, `test_absurd_...`. What this is not: the probe's 1,165 tries
(its harness is not in this repository); these are its reproductions, kept as standing tests.

    .venv/bin/python tests/probes/rerun_probe6.py          # prints the table; rc 0 when every case is handled
"""

from __future__ import annotations

import ast
import glob
import os
import sys

import probe_rerun

# defect -> (what probe 6 found, its verdict, the test-name prefix that reproduces it)
DEFECTS = {
    "D1": ("the prune removes the runtime a stopped unit starts (wrappers, ${VAR}, '|', a symlinked path)", "lost",
           "test_probe6_d1_"),
    "D2": ("the run lock's temp file is written through a planted hard link", "lost", "test_probe6_d2_"),
    "D3": ("a lock folder of another user, world-writable or a link is used: the lock can be poisoned", "silent",
           "test_probe6_d3_"),
    "D4": ("a live run loses its lock: a huge record, a clock jump, NaN/Infinity never stale, raw holder fields",
           "silent", "test_probe6_d4_"),
    "D5": ("wrong-typed action values reach the code ('a defect ... TypeError'), phase start restarts anyway",
           "unclear", "test_probe6_d5_"),
    "D6": ("a phase action hides the module's stderr", "unclear", "test_probe6_d6_"),
    "D7": ("hf_download on a full disk: a generic defect naming no file", "unclear", "test_probe6_d7_"),
    "D8": ("downloads accepted without size or hash; the downloader's own names; a redirect to ftp://", "silent",
           "test_probe6_d8_"),
    "D9": ("the checkpoint reader: no file named, 'a defect', gib=inf, subfolders outside files_sha256", "unclear",
           "test_probe6_d9_"),
    "day2": ("the rescue restores an older proven state and does not prove it", "lost", "test_probe6_day2_"),
    "plan": ("absurd numbers of the new families pass the input check (not finished by the probe)", "silent",
             "test_absurd_"),
}


def test_functions(path):
    with open(path, encoding="utf-8") as handle:
        tree = ast.parse(handle.read())
    return [node.name for node in ast.walk(tree) if isinstance(node, ast.FunctionDef) and node.name.startswith("test_")]


def reproductions(repo=probe_rerun.REPO):
    """probe_rerun's table: {defect: (what, verdict, {test file: [prefix]})}, the files found by the prefix."""
    files = {os.path.relpath(path, repo): test_functions(path)
             for path in glob.glob(os.path.join(repo, "tests", "**", "test_*.py"), recursive=True)}
    return {defect: (what, verdict, {path: [prefix] for path, names in sorted(files.items())
                                     if any(name.startswith(prefix) for name in names)})
            for defect, (what, verdict, prefix) in DEFECTS.items()}


def main():
    return probe_rerun.report(reproductions(), "probe 6")


if __name__ == "__main__":
    sys.exit(main())
