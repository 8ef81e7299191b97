"""action_plugins/sglang_run_report.py through Ansible against arguments and files the role never sends (its read of
a slurped file: tests/unit/test_slurped.py)."""

import importlib.util
import json
import os
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SPEC = importlib.util.spec_from_file_location("sglang_run_report_action",
                                              os.path.join(REPO, "action_plugins", "sglang_run_report.py"))
action = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(action)


# -- the action through Ansible, against arguments and files the role never sends (issue 36 item 5, probe 5 N-S5-10,
# N-S5-13): refusals are sentences naming the argument, nothing is written outside the root, a FIFO where the
# restored unit is expected is not waited on, and a stored calibration nested past Python's stack is not a failure.
PLAYBOOK_BIN = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")
CASES = {
    "facts_list": {"root": "{{ root }}", "host": "ct200", "facts": [1, 2]},
    "facts_missing": {"root": "{{ root }}", "host": "ct200"},
    "smoke_string": {"root": "{{ root }}", "host": "ct200", "facts": {"sglang_smoke": "passed"}},
    "host_escapes": {"root": "{{ root }}", "host": "../../escape-ra", "facts": {}},
    "host_absolute": {"root": "{{ root }}", "host": "{{ outside }}/abs-ra", "facts": {}},
    "root_parent_missing": {"root": "{{ outside }}/missing/reports", "host": "ct200", "facts": {}},
    "infinite": {"root": "{{ root }}", "host": "ct200", "facts": "{{ infinite_facts }}"},
    "fifo_unit_deep_calibration": {"root": "{{ root }}", "host": "ct200", "facts": {},
                                   "restored": {"name": "entry-1", "calibrated": True},
                                   "unit_path": "{{ outside }}/unit.fifo",
                                   "calibration_path": "{{ outside }}/deep.fact"},
}


def test_the_action_refuses_by_name_writes_only_under_its_root_and_never_waits_on_a_fifo(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    os.mkfifo(outside / "unit.fifo")
    (outside / "deep.fact").write_text("[" * 100000 + "]" * 100000)
    root = tmp_path / "work" / "reports"
    root.parent.mkdir()
    tasks = "".join(
        "    - name: %s\n      sglang_run_report: %s\n      register: r_%s\n      ignore_errors: true\n"
        % (name, json.dumps(args), name) for name, args in CASES.items())
    results = tmp_path / "results.json"
    (tmp_path / "play.yml").write_text(
        "- hosts: localhost\n  gather_facts: false\n  tasks:\n" + tasks +
        "    - ansible.builtin.copy:\n        dest: %s\n        content: \"{{ {%s} | to_json }}\"\n"
        % (results, ", ".join("'%s': r_%s" % (name, name) for name in CASES)))
    # JSON's Infinity, as Python writes it: a number the report cannot make an int of (OverflowError before)
    (tmp_path / "vars.json").write_text(json.dumps({
        "root": str(root), "outside": str(outside), "ansible_python_interpreter": sys.executable,
        "infinite_facts": {"sglang_corrective_restarts": float("inf"),
                           "sglang_measured_boots": [{"mem_fraction_static": 0.9, "pool_tokens": float("inf")}]}}))
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg"), ANSIBLE_NOCOLOR="1")
    run = subprocess.run([PLAYBOOK_BIN, "-i", "localhost,", "-c", "local", str(tmp_path / "play.yml"),
                          "-e", "@%s" % (tmp_path / "vars.json")],
                         cwd=REPO, env=env, capture_output=True, text=True, timeout=240)
    assert run.returncode == 0, run.stdout + run.stderr
    got = json.loads(results.read_text())
    refused = {name: got[name].get("msg", "") for name in got if got[name].get("failed")}
    assert refused == {
        "facts_list": "sglang_run_report: facts is a list of 2 items, not a mapping: give the run's facts as a "
                      "mapping of fact names to values (roles/sglang/tasks/report.yml sends it)",
        "facts_missing": "sglang_run_report: facts is missing: it is required (roles/sglang/tasks/report.yml sends it)",
        "smoke_string": "sglang_run_report: facts.sglang_smoke is a string of 6 characters, not a mapping: give the "
                        "module's or the fact's result as it was registered, {} or null (roles/sglang/tasks/report.yml "
                        "sends it)",
        "host_escapes": "sglang_run_report: host '../../escape-ra' holds a '/', which would make it a path (a report "
                        "outside its folder), not a name: give the inventory host's name (or the server's); it names "
                        "the report's folder",
        "host_absolute": refused["host_absolute"],
    }, refused
    # A folder the report cannot be written in is not a refusal: the run goes on (a proven host stays proven), with
    # the reason as a warning and the summary built all the same
    missing = got["root_parent_missing"]
    assert missing["report"] is None and missing["summary"], missing
    assert missing["warnings"] == [
        "the run's report was not written in %s/missing/reports: root %s/missing/reports is in %s/missing, which does "
        "not exist: the report creates its folder, not the folders above it. Create %s/missing first, or fix the path "
        "(sglang_report_dir). The summary below is the report's; make the folder writable for the controller's user, "
        "or set sglang_report_dir to one that is, and the next run writes it" % (outside, outside, outside, outside)]
    absolute = "%s/abs-ra" % outside  # a long name is shown cut at 80 characters
    shown = repr(absolute[:80]) + ("..." if len(absolute) > 80 else "")
    assert refused["host_absolute"].startswith("sglang_run_report: host %s holds a '/'" % shown), refused
    # only the two reports written, both under the root; nothing beside the FIFO and the file outside it
    assert sorted(os.listdir(outside)) == ["deep.fact", "unit.fifo"]
    assert sorted(os.listdir(tmp_path / "work")) == ["reports"] and os.listdir(root) == ["ct200"]
    assert len(os.listdir(root / "ct200")) in (1, 2)  # two reports in the same second share one folder
    fifo = got["fifo_unit_deep_calibration"]
    assert fifo["report"].startswith(str(root / "ct200")) and fifo["summary"], fifo
    assert fifo["warnings"] == [
        "the restored unit %s/unit.fifo is a FIFO, not a regular file: not read; the report shows the restored "
        "state without it" % outside,
        "the stored calibrations %s/deep.fact are not JSON the report can read: the report shows the restored state "
        "without them" % outside]
    assert got["infinite"]["report"].startswith(str(root / "ct200")), got["infinite"]


def _action(args):
    """The action itself, in this process, with a task that holds args; nothing here reaches a host (no rollback)."""
    from unittest.mock import MagicMock

    task = MagicMock(async_val=0, check_mode=False, diff=False, args=args)
    connection = MagicMock()
    connection._shell.tmpdir = None
    return action.ActionModule(task, connection, MagicMock(), None, None, None)


def test_a_fact_nested_past_pythons_stack_or_of_another_shape_is_a_sentence_and_writes_nothing(tmp_path):
    deep = []
    for _ in range(5000):
        deep = [deep]
    root = tmp_path / "reports"
    for facts, cause in (({"sglang_smoke": {"msg": deep}}, "a value in them is nested too deeply"),
                         ({"sglang_smoke": {"checks": [[1]]}}, "a value in them has another type or shape than the "
                                                               "report reads")):
        result = _action({"root": str(root), "host": "ct200", "facts": facts}).run(task_vars={})
        assert result == {"failed": True, "msg": "sglang_run_report: the report for ct200 could not be built from "
                                                 "facts: %s. Give the facts roles/sglang/tasks/report.yml sends (run "
                                                 "with -vvv for where it failed)" % cause}
    assert not root.exists()  # built before the first folder is made
    result = _action({"root": str(root), "host": "ct200", "facts": {}}).run(task_vars={})
    assert result["report"].startswith(str(root / "ct200")) and not result.get("failed"), result
