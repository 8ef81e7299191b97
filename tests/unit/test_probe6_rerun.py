"""tests/probes/rerun_probe6.py finds its reproductions by name: every defect of probe 6 has tests under tests/, and a
failing one counts under the defect's verdict (a renamed or deleted test would otherwise drop out silently)."""

import importlib.util
import os
import sys
import xml.etree.ElementTree as ET

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "tests", "probes"))  # the re-runs' shared tally, as the scripts find it
spec = importlib.util.spec_from_file_location("rerun_probe6", os.path.join(REPO, "tests", "probes", "rerun_probe6.py"))
rerun = importlib.util.module_from_spec(spec)
spec.loader.exec_module(rerun)


def test_every_defect_of_probe_6_has_reproductions():
    found = rerun.reproductions()
    assert set(found) == set(rerun.DEFECTS)
    for defect, (_what, verdict, tests) in found.items():
        assert verdict in rerun.probe_rerun.VERDICTS, defect
        assert tests, "no test named %s... reproduces %s" % (rerun.DEFECTS[defect][2], defect)


def test_a_failing_reproduction_counts_under_its_verdict(tmp_path):
    (tmp_path / "tests" / "unit").mkdir(parents=True)
    (tmp_path / "tests" / "unit" / "test_x.py").write_text(
        "def test_probe6_d1_kept():\n    pass\n\n"
        "def test_probe6_d1_removed():\n    pass\n\n"
        "def test_other():\n    pass\n")
    table = {defect: row for defect, row in rerun.reproductions(str(tmp_path)).items() if defect == "D1"}
    cases = [ET.Element("testcase", classname="tests.unit.test_x", name="test_probe6_d1_kept"),
             ET.Element("testcase", classname="tests.unit.test_x", name="test_probe6_d1_removed[env]"),
             ET.Element("testcase", classname="tests.unit.test_x", name="test_other")]
    ET.SubElement(cases[1], "failure")
    rows = rerun.probe_rerun.tally(table, cases)
    assert rows["D1"] == {"handled": 1, "silent": 0, "unclear": 0, "leaked": 0, "lost": 1, "skipped": 0}
