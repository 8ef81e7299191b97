"""lib/sglang_report/inputs.py and write_run_report against arguments the role never sends (issue 36 item 5, probe 5
N-S5-10, N-S5-12, N-S5-13): each refusal is a sentence naming the argument, nothing is written outside the reports'
root, a missing root's parent is not created, and a FIFO where a report is read is never waited on."""

import json
import os
import subprocess
import sys
import threading

import pytest
from sglang_report.inputs import ReportInputError, check_args, file_name_problem, read_regular, write_file
from sglang_report.report import _number, calibration_source, previous_report, write_run_report

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
STAMP, AT = "20261203T090000Z", "2026-12-03T09:00:00+00:00"
GOOD = {"root": "/srv/reports", "host": "ct200", "facts": {}}


@pytest.mark.parametrize(("args", "message"), [
    (dict(GOOD, facts=["a"]), "facts is a list of 1 items, not a mapping: give the run's facts as a mapping"),
    (dict(GOOD, facts="sglang_boot"), "facts is a string of 11 characters, not a mapping"),
    (dict(GOOD, facts=None), "facts is null, not a mapping"),
    (dict(GOOD, facts=7), "facts is a number, not a mapping"),
    ({"root": "/srv/reports", "host": "ct200"}, "facts is missing: it is required"),
    ({"root": "/srv/reports", "facts": {}}, "host is missing: it is required"),
    ({"host": "ct200", "facts": {}}, "root is missing: it is required"),
    (dict(GOOD, facts={"sglang_kv_plan_result": [1]}), "facts.sglang_kv_plan_result is a list of 1 items, not a "
                                                       "mapping"),
    (dict(GOOD, facts={"sglang_smoke": "ok"}), "facts.sglang_smoke is a string of 2 characters, not a mapping"),
    (dict(GOOD, facts={"sglang_boot": 3}), "facts.sglang_boot is a number, not a mapping"),
    (dict(GOOD, facts={"sglang_proof_level": True}), "facts.sglang_proof_level is a boolean, not a mapping"),
    (dict(GOOD, facts={"sglang_measured_boots": [1, 2]}), "facts.sglang_measured_boots is a list of 2 items, not a "
                                                          "list of mappings"),
    (dict(GOOD, facts={"sglang_starts": {"a": 1}}), "facts.sglang_starts is a mapping of 1 keys, not a number"),
    (dict(GOOD, planned="maybe"), "planned is a string of 5 characters, not a boolean: give true or false"),
    (dict(GOOD, restored=["x"]), "restored is a list of 1 items, not a mapping"),
    (dict(GOOD, inventory_calibration="x"), "inventory_calibration is a string of 1 characters, not a mapping"),
    (dict(GOOD, calibration_fact=3), "calibration_fact is a number, not a string"),
    (dict(GOOD, restored={"name": "e1"}, calibration_path="/x"), "unit_path is null, not a path: a rollback's report "
                                                                  "reads it on the host"),
    (dict(GOOD, root=""), "root is empty, not a path"),
    (dict(GOOD, root=["/srv"]), "root is a list of 1 items, not a path"),
    (dict(GOOD, root="/srv/\nreports"), "root holds a NUL, a line break or another control character"),
    (dict(GOOD, colour="red"), "unknown argument colour: the arguments are root, host, facts"),
    (dict(GOOD, host="../../escape-ra"), "host '../../escape-ra' holds a '/', which would make it a path"),
    (dict(GOOD, host="/tmp/abs"), "host '/tmp/abs' holds a '/'"),
    (dict(GOOD, host=".."), "host '..' is '..', which names a folder itself, not a file in it"),
    (dict(GOOD, host="."), "host '.' is '.', which names a folder itself"),
    (dict(GOOD, host="ct200/../../../ra-evil"), "host 'ct200/../../../ra-evil' holds a '/'"),
    (dict(GOOD, host=""), "host is empty"),
    (dict(GOOD, host="ct\x00200"), "host 'ct\\x00200' holds a NUL"),
    (dict(GOOD, host=["ct200"]), "host is a list of 1 items, not a string"),
    (dict(GOOD, host="h" * 256), "is 256 bytes long, more than the 255 a file name may have"),
])
def test_each_argument_of_a_wrong_shape_is_refused_by_name(args, message):
    with pytest.raises(ReportInputError) as refused:
        check_args(args)
    assert message in str(refused.value)
    assert not str(refused.value).startswith(("TypeError", "KeyError", "AttributeError"))


def test_what_the_role_sends_passes_with_planned_as_a_boolean():
    checked = check_args(dict(GOOD, planned="True", restored=None, unit_path="/etc/systemd/system/sglang.service",
                              calibration_path="/etc/ansible/facts.d/sglang_kv.fact", inventory_calibration={},
                              calibration_fact="sglang_kv", facts={"sglang_measured_boots": [], "sglang_starts": "2"}))
    assert checked["planned"] is True
    assert check_args(GOOD)["planned"] is False


def test_a_252_character_host_fits_a_folder_but_not_its_picture():
    # probe 5 N-S5-12: plan.yml's picture is <host>.png
    assert file_name_problem("h" * 252) == ""
    assert file_name_problem("h" * 252, ".png") == ("is 256 bytes long with '.png' after it, more than the 255 a "
                                                    "file name may have")


@pytest.mark.parametrize("host", ["../../escape-ra", "/tmp/abs-ra", "..", "ct200/../../../ra-evil"])
def test_a_host_that_is_a_path_writes_nothing_outside_the_root(tmp_path, host):
    root = tmp_path / "a" / "reports"
    root.mkdir(parents=True)
    with pytest.raises(ReportInputError, match="^host "):
        write_run_report({"host": host}, str(root), STAMP, AT)
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["a", "reports"]


def test_a_stamp_that_is_a_path_is_refused(tmp_path):
    with pytest.raises(ReportInputError, match="^stamp '../x' holds a '/'"):
        write_run_report({"host": "ct200"}, str(tmp_path), "../x", AT)


def test_a_root_whose_parent_is_missing_is_refused_and_nothing_is_created(tmp_path):
    root = tmp_path / "missing" / "deeper" / "reports"
    with pytest.raises(ReportInputError) as refused:
        write_run_report({"host": "ct200"}, str(root), STAMP, AT)
    assert str(refused.value) == (
        "root %s is in %s, which does not exist: the report creates its folder, not the folders above it. Create %s "
        "first, or fix the path (sglang_report_dir)" % (root, root.parent, root.parent))
    assert os.listdir(tmp_path) == []
    # its own folder, in a parent that exists, is created
    out = write_run_report({"host": "ct200"}, str(tmp_path / "reports"), STAMP, AT)
    assert os.path.isfile(os.path.join(out, "report.html"))


def test_a_root_that_is_a_file_and_a_host_folder_that_is_a_link_are_refused(tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(ReportInputError, match="is not a folder"):
        write_run_report({"host": "ct200"}, str(tmp_path / "file"), STAMP, AT)
    root, elsewhere = tmp_path / "reports", tmp_path / "elsewhere"
    root.mkdir()
    elsewhere.mkdir()
    (root / "ct200").symlink_to(elsewhere)
    with pytest.raises(ReportInputError, match="ct200 is a link, not a folder: the report writes only in folders"):
        write_run_report({"host": "ct200"}, str(root), STAMP, AT)
    assert os.listdir(elsewhere) == []


def _reader_thread(function, *args):
    """function(*args) in a thread that the test waits for at most 10 s: a FIFO read would never return."""
    box = {}
    thread = threading.Thread(target=lambda: box.setdefault("value", function(*args)), daemon=True)
    thread.start()
    thread.join(10)
    assert not thread.is_alive(), "blocked on a FIFO"
    return box["value"]


def test_a_fifo_as_an_earlier_report_is_never_waited_on(tmp_path):
    host_dir = tmp_path / "ct200"
    (host_dir / "20261201T000000Z").mkdir(parents=True)
    (host_dir / "20261201T000000Z" / "report.json").write_text(json.dumps({"generated_at": "earlier"}))
    (host_dir / "20261202T000000Z").mkdir()
    os.mkfifo(host_dir / "20261202T000000Z" / "report.json")
    path, found = _reader_thread(previous_report, str(host_dir))
    assert found == {"generated_at": "earlier"} and path.endswith("20261201T000000Z/report.json")
    assert _reader_thread(read_regular, str(host_dir / "20261202T000000Z" / "report.json")) is None


def test_a_fifo_or_a_link_at_a_report_file_is_replaced_not_opened(tmp_path):
    os.mkfifo(tmp_path / "report.json")
    (tmp_path / "target").write_text("mine")
    (tmp_path / "report.html").symlink_to(tmp_path / "target")
    _reader_thread(write_file, str(tmp_path / "report.json"), b"{}\n")
    write_file(str(tmp_path / "report.html"), b"<html>")
    assert (tmp_path / "report.json").read_bytes() == b"{}\n" and not (tmp_path / "report.html").is_symlink()
    assert (tmp_path / "target").read_text() == "mine"


def test_infinite_and_huge_numbers_are_not_numbers_of_the_report(tmp_path):
    assert _number(float("inf")) is None and _number("1e999") is None and _number(float("nan")) is None
    assert _number("2") == 2 and _number(0.9) == 0.9
    assert calibration_source({"calibrated": True}, float("inf"), None, None, "f").startswith("inventory")
    facts = {"host": "ct200", "sglang_measured_boots": [{"mem_fraction_static": 0.9, "pool_tokens": float("inf")}],
             "sglang_starts": float("inf"), "sglang_corrective_restarts": float("inf")}
    out = write_run_report(facts, str(tmp_path), STAMP, AT)
    report = json.loads((tmp_path / "ct200" / STAMP / "report.json").read_text())
    assert report["measured_boots"] == [] and report["restarts"] == {"starts": 0, "corrective": 0}
    assert out == str(tmp_path / "ct200" / STAMP)


def cli(tmp_path, command, facts, *args):
    env = dict(os.environ, PYTHONPATH=os.path.join(REPO, "lib"))
    return subprocess.run([sys.executable, "-m", "sglang_report", command, *args], input=facts, env=env,
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)


@pytest.mark.parametrize(("command", "facts", "args", "message"), [
    ("plan", json.dumps(["ct200"]), ["--out", "plan"], "facts is a list of 1 items, not a mapping"),
    ("plan", "[" * 100000 + "]" * 100000, ["--out", "plan"], "the facts on stdin are not JSON (nested too deeply)"),
    ("plan", json.dumps({"host": "h" * 252, "sglang_kv_spec": {"a": 1}, "sglang_kv_plan_result": {"a": 1}}),
     ["--out", "plan"], "is 256 bytes long with '.png' after it"),
    ("plan", json.dumps({"host": "ct200"}), ["--out", "plan"], "need sglang_kv_spec and sglang_kv_plan_result"),
])
def test_the_cli_refuses_with_one_sentence_and_writes_nothing(tmp_path, command, facts, args, message):
    result = cli(tmp_path, command, facts, *args)
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    assert result.stderr.startswith("python -m sglang_report: ") and message in result.stderr, result.stderr
    assert os.listdir(tmp_path) == []
