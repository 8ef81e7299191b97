"""The report through Ansible: playbooks/plan.yml draws each host without connecting, and the role's
report.yml writes reports/<host>/<timestamp>/ on the controller from the role's facts."""

import glob
import json
import os
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PLAYBOOK_BIN = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")


def run(*args):
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg"), ANSIBLE_NOCOLOR="1")
    return subprocess.run([PLAYBOOK_BIN, *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=300)


def test_plan_draws_every_host_and_says_where(tmp_path):
    # ansible_host is unreachable here: any connection attempt would fail the run.
    result = run("playbooks/plan.yml", "-e", "ansible_host=192.0.2.1", "-e", "sglang_report_dir=%s" % tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    picture = tmp_path / "plan" / "ct200.png"
    assert "picture: %s" % picture in result.stdout
    assert picture.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "measured boot: f 0.940 -> 218,484 tokens; the plan's formula: 218,485" in result.stdout
    assert "forward check" not in result.stdout


def test_plan_fails_when_the_calibration_does_not_predict_the_measured_boots(tmp_path):
    result = run("playbooks/plan.yml", "-e", "sglang_report_dir=%s" % tmp_path,
                 "-e", '{"sglang_calibration": {"pre_load_avail_gib": 85.0, "post_load_avail_gib": 19.419}}')
    assert result.returncode != 0
    assert "does not predict the boot(s) measured on this host: f 0.85 gave 101134 tokens, the formula 101900" \
        in result.stdout


def test_an_estimate_lists_the_boots_without_judging_them(tmp_path):
    result = run("playbooks/plan.yml", "-e", "sglang_report_dir=%s" % tmp_path, "-e", '{"sglang_calibration": {}}')
    assert result.returncode == 0, result.stdout + result.stderr
    assert "(estimated P and A)" in result.stdout


def test_a_refusal_is_printed_once(tmp_path):
    result = run("playbooks/plan.yml", "-e", "sglang_context_target=250000", "-e", "sglang_report_dir=%s" % tmp_path)
    assert result.returncode != 0
    output = result.stdout + result.stderr
    assert output.count("context_target 250,000 does not fit") == 1, output
    assert "<<< caused by >>>" not in output


def report_run(tmp_path, report_dir):
    """report.yml alone on localhost, after this run's record holds what the deploy's verify and the proof's record
    phase keep there (written by a test double's action, tests/unit/run_record_seed/)."""
    with open(os.path.join(REPO, "tests", "fixtures", "report_facts_ct200.json"), encoding="utf-8") as handle:
        facts = json.load(handle)
    deployed = {name: facts[name] for name in ("sglang_kv_spec", "sglang_kv_plan_result", "sglang_boot",
                                               "sglang_ready")}
    deployed.update(sglang_starts=2, sglang_restarted_this_run=True, sglang_corrective_restarts=1,
                    calibration_stored=facts["calibration_stored"])
    record = {"results": {"deploy": {"phase": "verify", "facts": deployed},
                          "record": {"phase": "record", "smoke": facts["sglang_smoke"], "level": {}, "last_full": {}}}}
    extra = tmp_path / "facts.json"
    # the plan as plan.yml set it before the deploy (the report then says this run planned the host)
    extra.write_text(json.dumps({"record": record, "sglang_measured_boots": facts["sglang_measured_boots"],
                                 "sglang_kv_plan_result": facts["sglang_kv_plan_result"],
                                 "sglang_report_dir": str(report_dir)}))
    play = tmp_path / "report.yml"
    play.write_text(
        "- hosts: localhost\n  gather_facts: false\n  tasks:\n"
        "    - sglang_seed_run_record:\n        record: '{{ record }}'\n"
        "    - ansible.builtin.include_role:\n        name: sglang\n        tasks_from: report\n")
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_ACTION_PLUGINS=os.pathsep.join([os.path.join(REPO, "action_plugins"),
                                                       os.path.join(REPO, "tests/unit/run_record_seed")]))
    return subprocess.run([PLAYBOOK_BIN, str(play), "-e", "@%s" % extra], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=300)


def test_role_writes_the_run_report_on_the_controller(tmp_path):
    result = report_run(tmp_path, tmp_path / "reports")
    assert result.returncode == 0, result.stdout + result.stderr
    (folder,) = glob.glob(str(tmp_path / "reports" / "localhost" / "*"))
    assert "report: %s/report.html" % folder in result.stdout
    assert "serving: this run's deploy" in result.stdout  # the summary, from the same report
    with open(os.path.join(folder, "report.json"), encoding="utf-8") as handle:
        report = json.load(handle)
    assert report["host"] == "localhost"
    assert report["plan"]["calibration_source"].startswith("this run's first boot")
    assert report["restarts"] == {"starts": 2, "corrective": 1}
    assert report["proof"]["prompt_tokens"] == 60002 and report["boot_wait_s"] == 42.3
    assert "changed=0" in result.stdout


def test_a_report_folder_the_controller_cannot_write_warns_and_the_run_passes(tmp_path):
    # A file where the reports' folder goes stands for any folder the controller cannot write (root writes anywhere)
    blocked = tmp_path / "reports"
    blocked.write_text("not a folder\n")
    result = report_run(tmp_path, blocked)
    assert result.returncode == 0, result.stdout + result.stderr
    output = " ".join((result.stdout + result.stderr).split())
    assert "the run's report was not written in %s: root %s is not a folder" % (blocked, blocked) in output
    assert "report: not written (the warning above says why)" in output
    assert "serving: this run's deploy" in output  # the summary, from the report built in memory
    assert blocked.read_text() == "not a folder\n"
