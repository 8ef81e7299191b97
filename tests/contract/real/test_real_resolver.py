"""The planner against the REAL SGLang resolver, per release (issue 34): installs the releases (about 10 GiB each,
cached under .cache/sglang-real/), so it runs only with SGLANG_REAL=1 (`make real-resolver`).

Each case of tests/contract/real/cases.py is planned by the planner for the release, rendered by the role's
templates, and the argv is put to the real prepare_server_args -> resolve_once -> check_server_args (driver.py).
What the planner accepts SGLang must accept and run with the planned values; what the planner refuses SGLang must
refuse in the words the planner quotes (agreement.py). The run rewrites tests/fixtures/sglang_real/resolver-<v>.json,
which test_stored_real.py checks the planner against on every `make unit`.
"""

import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import agreement  # noqa: E402
import cases  # noqa: E402

pytestmark = pytest.mark.skipif(
    os.environ.get("SGLANG_REAL") != "1",
    reason="the real SGLang resolver needs the releases installed (~10 GiB each under .cache/sglang-real/): "
           "run `make real-resolver` (SGLANG_REAL=1)")

_RUNS = {}


def _run(version):
    """Install (cached) and run the release once per session; the fixture file is rewritten, or with
    SGLANG_REAL_OUT=DIR (make test: every case asked again, nothing in the tree changed) written into DIR."""
    if version not in _RUNS:
        subprocess.run([os.path.join(HERE, "setup_real.sh"), version], check=True)
        import run_real

        out = os.environ.get("SGLANG_REAL_OUT")
        fixture = run_real.run(version, os.path.join(out, "resolver-%s.json" % version) if out else None)
        _RUNS[version] = {case["id"]: case for case in fixture["cases"]}
    return _RUNS[version]


ALL = [(version, case["id"]) for version in cases.RELEASES for case in cases.MATRIX
       if version in case.get("only", [version])]


@pytest.mark.parametrize("version, case_id", ALL)
def test_planner_agrees_with_real_resolver(version, case_id):
    case = _run(version)[case_id]
    problems = agreement.disagreements(case["planner"], case["real"])
    assert not problems, "%s on SGLang %s (%s): %s\nargv: %s" % (
        case_id, version, case["gpu"], "; ".join(problems), " ".join(case["argv"]))


@pytest.mark.parametrize("version, case_id", [
    pytest.param(v, c, marks=pytest.mark.xfail(strict=True, reason=agreement.KNOWN_PAGE[(v, c)]))
    if (v, c) in agreement.KNOWN_PAGE else (v, c) for v, c in ALL])
def test_page_is_the_one_the_planner_predicts(version, case_id):
    case = _run(version)[case_id]
    problem = agreement.page_disagreement(case["planner"], case["real"])
    assert not problem, "%s on SGLang %s (%s): %s" % (case_id, version, case["gpu"], problem)
