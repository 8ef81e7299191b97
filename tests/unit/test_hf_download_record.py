"""The download's marks in the run record (action_plugins/hf_download.py): the early start, a try's start, the
end, bytes and folder of the try that is done, nothing from a failed call; a record that cannot be kept fails the
task by name. The first look at the host (sglang_prove's observe) and a run that begins (render) keep the entry, and
the report's day-1 clock reads the download's span from it (action_plugins/sglang_run_report.py)."""

import importlib.util
import os
from unittest.mock import MagicMock

import pytest
from ansible import constants as C
from ansible.errors import AnsibleFilterError
from sglang_report import clock
from sglang_state import run_record

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
T0 = 1_764_633_600.0


def _load(name, path):
    spec = importlib.util.spec_from_file_location(name, os.path.join(REPO, path))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


download = _load("hf_download_action", "action_plugins/hf_download.py")
report = _load("report_action_for_download", "action_plugins/sglang_run_report.py")
prove = _load("prove_action_for_download", "action_plugins/sglang_prove.py")
proof_filters = _load("sglang_proof_filters", "filter_plugins/sglang_proof.py")

DONE = {"done": True, "bytes_total": 3000, "bytes_fetched": 1000, "download_fetched": 3000, "connections": 8}


# --- the decision: what one call keeps ---

def test_a_background_start_that_runs_starts_the_phase_and_one_that_does_not_keeps_nothing():
    assert download.noted(None, {"running": True, "started": True}, "/m", True, T0, T0 + 2) == {
        "clock": {"download": {"start": T0}}, "fetched": []}
    # nothing to download (complete, or check mode): no phase on the clock
    assert download.noted(None, {"running": False, "done": True}, "/m", True, T0, T0 + 2) == {}
    # started again after the driver's reboot: the first start stays
    kept = {"clock": {"download": {"start": T0}}, "fetched": []}
    assert download.noted(kept, {"running": True}, "/m", True, T0 + 300, T0 + 301) == kept


def test_the_first_try_starts_the_phase_and_the_try_that_is_done_ends_it_with_its_bytes_and_folder():
    first = download.noted(None, {"done": False, "bytes_fetched": 10}, "/m", False, T0, T0 + 30)
    assert first == {"clock": {"download": {"start": T0}}, "fetched": []}
    second = download.noted(first, {"done": False}, "/m", False, T0 + 31, T0 + 61)
    assert second == first  # a later try does not move the start
    done = download.noted(second, DONE, "/m", False, T0 + 62, T0 + 70)
    assert done == {"clock": {"download": {"start": T0, "end": T0 + 70},
                              "fetch": {"bytes_total": 3000, "bytes_fetched": 3000, "connections": 8}},
                    "fetched": ["/m"]}


def test_an_early_start_is_kept_by_the_tries_and_the_draft_adds_its_bytes_and_folder():
    early = download.noted(None, {"running": True}, "/m", True, T0, T0 + 1)
    model = download.noted(early, DONE, "/m", False, T0 + 500, T0 + 530)
    draft = download.noted(model, dict(DONE, download_fetched=100, bytes_total=100, connections=4), "/d", False,
                           T0 + 531, T0 + 540)
    assert draft["clock"]["download"] == {"start": T0, "end": T0 + 540}
    assert draft["clock"]["fetch"] == {"bytes_total": 3100, "bytes_fetched": 3100, "connections": 8}
    assert draft["fetched"] == ["/m", "/d"]
    # the same folder done twice is listed once
    assert download.noted(draft, DONE, "/m", False, T0 + 541, T0 + 542)["fetched"] == ["/m", "/d"]


@pytest.mark.parametrize("answer", [{"failed": True, "msg": "the Hub refused"}, {"skipped": True}, None, "x"])
def test_a_failed_or_skipped_call_keeps_nothing(answer):
    kept = {"clock": {"download": {"start": T0}}, "fetched": []}
    assert download.noted(kept, answer, "/m", False, T0 + 5, T0 + 6) == kept
    assert download.noted(None, answer, "/m", True, T0 + 5, T0 + 6) == {}


# --- the action: the module's answer unchanged, the record kept ---

def _action(args, answer, check_mode=False):
    task = MagicMock(async_val=0, check_mode=check_mode, diff=False, no_log=False, args=args)
    connection = MagicMock(has_native_async=False)
    connection._shell.tmpdir = None
    action = download.ActionModule(task, connection, MagicMock(), None, None, None)
    action._execute_module = MagicMock(return_value=dict(answer))
    return action


def _run(action):
    return action.run(task_vars={"inventory_hostname": "gpu-1"})


def _kept():
    return run_record.result(run_record.read(run_record.folder_of(C.DEFAULT_LOCAL_TMP), "gpu-1"), "download")


def test_the_action_passes_the_task_s_arguments_and_returns_the_module_s_answer_keeping_the_marks():
    args = {"repo": "org/m", "path": "/srv/m", "token_file": "/t", "poll": 30}
    action = _action(args, dict(DONE, progress="done"))
    result = _run(action)
    assert action._execute_module.call_args.kwargs["task_vars"] == {"inventory_hostname": "gpu-1"}
    # the task's own, as a copy (the executor adds _ansible_* keys to what it is given; a retry re-checks the task's)
    assert action._execute_module.call_args.kwargs["module_args"] == args
    assert action._execute_module.call_args.kwargs["module_args"] is not action._task.args
    assert result["done"] and result["progress"] == "done" and not result.get("failed"), result
    kept = _kept()
    assert kept["fetched"] == ["/srv/m"] and kept["clock"]["fetch"]["bytes_fetched"] == 3000
    assert kept["clock"]["download"]["start"] <= kept["clock"]["download"]["end"]


def test_the_action_reads_background_as_ansible_does_and_keeps_nothing_of_a_refusal():
    _run(_action({"repo": "org/m", "path": "/srv/m", "background": "yes"}, {"running": True}))
    assert _kept()["clock"]["download"]["start"] > 0 and _kept()["fetched"] == []
    refused = _run(_action({"repo": "org/m", "path": "/srv/m", "max_bytes_per_s": "x"},
                           {"failed": True, "msg": "argument 'max_bytes_per_s' is of type str"}))
    assert refused["msg"].startswith("argument") and "end" not in _kept()["clock"]["download"]


def test_an_option_the_module_does_not_document_is_refused_by_name_before_the_module_runs():
    assert download.ActionModule._VALID_ARGS >= {"repo", "path", "background", "connections", "token_file"}
    action = _action({"repo": "org/m", "path": "/srv/m", "conections": 4}, DONE)
    with pytest.raises(Exception, match="conections"):
        _run(action)
    action._execute_module.assert_not_called()


def test_a_record_that_cannot_be_kept_fails_the_task_by_name(monkeypatch):
    folder = run_record.folder_of(C.DEFAULT_LOCAL_TMP)
    os.makedirs(os.path.dirname(folder), exist_ok=True)
    with open(folder, "w", encoding="utf-8") as handle:  # a file where the records' folder goes
        handle.write("x")
    result = _run(_action({"repo": "org/m", "path": "/srv/m"}, DONE))
    assert result["failed"] and result["done"], result
    assert result["msg"].startswith("hf_download: this run's record could not keep the download: the run record "
                                    "%s/gpu-1.json cannot be read" % folder), result["msg"]


# --- the run record: a new record and a new run keep the download ---

def test_a_new_record_keeps_only_the_download_and_a_new_run_keeps_it_too():
    entry = {"clock": {"download": {"start": T0}}, "fetched": ["/m"]}
    record = {"run": {"changed_this_run": True}, "results": {"download": entry, "deploy": {}, "observe": {}}}
    assert run_record.fresh(record) == {"results": {"download": entry}}
    assert run_record.fresh({"run": {}, "results": {"deploy": {}}}) == {}
    assert run_record.begin(record, 5.0) == {"run": {"began": 5.0}, "results": {"download": entry, "observe": {}}}


def test_the_first_look_at_the_host_keeps_the_download_begun_before_it(monkeypatch):
    entry = {"clock": {"download": {"start": T0}}, "fetched": []}
    folder = run_record.folder_of(C.DEFAULT_LOCAL_TMP)
    run_record.write(folder, "n0", {"run": {"changed_this_run": True},
                                    "results": {"download": entry, "deploy": {"phase": "verify"}}})
    monkeypatch.setattr(prove.transaction_proof, "observe", lambda *args: {"phase": "observe", "changed": False})
    task = MagicMock(async_val=0, check_mode=False, diff=False, no_log=False,
                     args={"phase": "observe", "record_path": "/var/lib/sglang/proof.json", "service": "sglang"})
    connection = MagicMock()
    connection._shell.tmpdir = None
    result = prove.ActionModule(task, connection, MagicMock(), None, None, None).run(
        task_vars={"inventory_hostname": "n0", "hostvars": {}})
    assert not result.get("failed"), result
    kept = run_record.read(folder, "n0")
    assert set(kept["results"]) == {"download", "observe"} and kept["results"]["download"] == entry, kept


# --- the readers: the filter and the report's clock ---

def test_the_filter_reads_one_step_of_this_host_and_empty_when_it_has_none():
    run_result = proof_filters.FilterModule().filters()["sglang_run_result"]
    assert run_result("gpu-1", "download") == {}
    run_record.write(run_record.folder_of(C.DEFAULT_LOCAL_TMP), "gpu-1", {"results": {"download": {"fetched": ["/m"]}}})
    assert run_result("gpu-1", "download") == {"fetched": ["/m"]} and run_result("gpu-1", "deploy") == {}
    with open(os.path.join(run_record.folder_of(C.DEFAULT_LOCAL_TMP), "gpu-2.json"), "w", encoding="utf-8") as out:
        out.write("[1]")
    with pytest.raises(AnsibleFilterError, match="gpu-2.json is not a mapping"):
        run_result("gpu-2", "download")


def test_the_report_s_clock_reads_the_download_from_the_record_as_the_marks_made_it():
    marks = {}
    marks = clock.mark(marks, "driver", "start", T0)
    marks = clock.mark(marks, "download", "start", T0 + 5)
    marks = clock.mark(marks, "driver", "end", T0 + 120)
    marks = clock.mark(marks, "download", "end", T0 + 335)
    marks = clock.add_download(marks, DONE)
    entry = download.noted(download.noted(None, {"running": True}, "/m", True, T0 + 5, T0 + 6), DONE, "/m", False,
                           T0 + 300, T0 + 335)
    got = report.with_run_clock({"driver": marks["driver"]}, {"results": {"download": entry}})
    assert got == marks
    assert clock.line(clock.section(got)) == clock.line(clock.section(marks))
    assert "download 5m30s (3.00 kB fetched" in clock.line(clock.section(got))
    # a record without the download leaves the clock as given
    assert report.with_run_clock({"driver": marks["driver"]}, {}) == {"driver": marks["driver"]}
