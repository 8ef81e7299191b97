"""tests/probes/rerun_probe5.py's tally: a reproduction's case that fails counts under the verdict probe 5 gave its
defect, a passing one as handled, and every test it names exists (a renamed test would drop out silently)."""

import ast
import importlib.util
import os
import sys
import xml.etree.ElementTree as ET

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "tests", "probes"))  # the re-runs' shared tally, as the scripts find it
spec = importlib.util.spec_from_file_location("rerun_probe5", os.path.join(REPO, "tests", "probes", "rerun_probe5.py"))
rerun = importlib.util.module_from_spec(spec)
spec.loader.exec_module(rerun)


def _case(classname, name, outcome=""):
    case = ET.Element("testcase", classname=classname, name=name)
    if outcome:
        ET.SubElement(case, outcome)
    return case


def test_a_failing_case_counts_under_its_defects_verdict_and_a_passing_one_as_handled():
    cases = [_case("tests.unit.test_sglang_runtime_prune_units", "test_a_drop_in_that_resets_execstart_is_what_runs"),
             _case("tests.unit.test_sglang_runtime_prune_units", "test_a_unit_through_a_current_link", "failure"),
             _case("tests.unit.test_router_module_hostile", "test_credentials_in_the_router_url", "error"),
             _case("tests.unit.test_router_module_hostile", "test_an_answer_larger_than_any", "failure")]
    rows = rerun.tally(cases)
    assert rows["N-S5-2"] == {"handled": 1, "silent": 0, "unclear": 0, "leaked": 0, "lost": 1, "skipped": 0}
    # the router's unselected test is no reproduction: its failure is not counted
    assert rows["N-S5-15"]["leaked"] == 1 and sum(rows["N-S5-15"].values()) == 1
    assert sum(rows["N-S5-5"].values()) == 0


def test_every_test_a_reproduction_names_exists():
    for defect, (_what, verdict, tests) in rerun.REPRODUCTIONS.items():
        assert verdict in rerun.VERDICTS, defect
        for path, prefixes in tests.items():
            with open(os.path.join(REPO, path), encoding="utf-8") as handle:
                names = [node.name for node in ast.parse(handle.read()).body if isinstance(node, ast.FunctionDef)]
            for prefix in prefixes:
                assert any(name.startswith(prefix) and name.startswith("test_") for name in names), (defect, prefix)
