"""The day-1 clock (lib/sglang_report/clock.py): the marks the role sets, the report's section, the summary's line,
the HTML table, and clocks of the wrong shape named rather than fatal."""

import importlib.util
import os
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "lib"))
sys.path.insert(0, os.path.join(REPO, "filter_plugins"))

from sglang_report import clock  # noqa: E402
from sglang_report.report import build_report, clock_table  # noqa: E402
from sglang_report.summary import summary_lines  # noqa: E402

T0 = 1_764_633_600.0  # 2025-12-02T00:00:00Z


def run_clock():
    """A first run: the download beside the driver and CUDA, a reboot, then the runtime, boot and proof."""
    c = {}
    c = clock.mark(c, "download", "start", T0 + 5)
    c = clock.mark(c, "driver", "start", T0)
    c = clock.mark(c, "driver", "end", T0 + 120, note="installed, rebooted")
    c = clock.mark(c, "cuda", "start", T0 + 120)
    c = clock.mark(c, "cuda", "end", T0 + 160, note="installed")
    c = clock.mark(c, "runtime", "start", T0 + 160)
    c = clock.mark(c, "runtime", "end", T0 + 222, note="built with uv")
    c = clock.mark(c, "download", "end", T0 + 335)
    c = clock.add_download(c, {"bytes_total": 4_294_967_296, "bytes_fetched": 4_294_967_296, "connections": 16})
    c = clock.mark(c, "boot", "start", T0 + 335)
    c = clock.mark(c, "boot", "end", T0 + 405, note="started")
    c = clock.mark(c, "proof", "start", T0 + 405)
    return clock.mark(c, "proof", "end", T0 + 425, note="full")


def test_section_orders_the_phases_and_measures_the_wall_time():
    got = clock.section(run_clock(), {"weight_load_s": 45.2, "graph_capture_s": 12.0, "ready_s": 68.9})
    assert [p["name"] for p in got["phases"]] == ["driver", "cuda", "runtime", "download", "boot", "proof"]
    assert got["wall_s"] == 425.0
    assert got["phases"][0]["start_at"] == "2025-12-02T00:00:00Z"
    download = next(p for p in got["phases"] if p["name"] == "download")
    assert (download["offset_s"], download["seconds"]) == (5.0, 330.0)
    assert got["boot"] == {"weight_load_s": 45.2, "graph_capture_s": 12.0, "ready_s": 68.9}


def test_download_beside_the_phases_it_overlapped_and_its_rate_per_connection():
    got = clock.section(run_clock())
    assert got["download_beside"] == [{"phase": "driver", "seconds": 115.0}, {"phase": "cuda", "seconds": 40.0},
                                      {"phase": "runtime", "seconds": 62.0}]
    assert got["download"]["bytes_per_s"] == round(4_294_967_296 / 330.0, 1)
    assert got["download"]["bytes_per_s_per_connection"] == round(4_294_967_296 / 330.0 / 16, 1)


def test_a_download_after_the_others_overlaps_nothing():
    c = clock.mark(clock.mark({}, "cuda", "start", T0), "cuda", "end", T0 + 10)
    c = clock.mark(clock.mark(c, "download", "start", T0 + 10), "download", "end", T0 + 20)
    assert clock.section(c)["download_beside"] == []


def test_the_summary_line_says_what_this_run_measured():
    report = {"plan": {}, "proof": {}, "restarts": {"starts": 1, "corrective": 0}, "serving_state": "x",
              "clock": clock.section(run_clock(), {"weight_load_s": 45.2, "graph_capture_s": None, "ready_s": 68.9})}
    line = [x for x in summary_lines(report) if x.startswith("day-1 clock:")]
    assert line == [
        "day-1 clock: 7m05s wall; driver 2m00s (installed, rebooted), CUDA 40.0s (installed), runtime 1m02s (built "
        "with uv), download 5m30s (4.29 GB fetched, 13.02 MB/s, 16 connections: 813.44 kB/s each; beside driver "
        "1m55s, CUDA 40.0s, runtime 1m02s), boot 1m10s (started; weights 45.2s; unit start to ready 1m09s), "
        "proof 20.0s (full)"]


def test_a_run_that_began_a_phase_and_failed_shows_it_not_ended():
    c = clock.mark(clock.mark(clock.mark({}, "runtime", "start", T0), "runtime", "end", T0 + 3), "boot", "start",
                   T0 + 3)
    got = clock.section(c)
    assert got["phases"][-1]["seconds"] is None
    assert clock.line(got) == "day-1 clock: 3.0s wall; runtime 3.0s, boot not ended"


def test_a_phase_met_twice_spans_both():
    c = clock.mark(clock.mark({}, "download", "start", T0), "download", "end", T0 + 5)
    c = clock.mark(clock.mark(c, "download", "start", T0 + 5), "download", "end", T0 + 9)
    c = clock.add_download(clock.add_download(c, {"bytes_total": 10, "connections": 16}),
                           {"bytes_total": 5, "connections": 4})
    assert c["fetch"] == {"bytes_total": 15, "connections": 16}
    assert clock.section(c)["phases"][0]["seconds"] == 9.0


def test_the_early_download_counts_whole_and_beside_the_driver():
    # started early (before the driver), joined after the runtime: the last try's download_fetched is the
    # download's, not the last 30 s try's bytes_fetched
    c = clock.mark({}, "download", "start", T0)
    c = clock.mark(clock.mark(c, "driver", "start", T0 + 1), "driver", "end", T0 + 61)
    c = clock.mark(clock.mark(c, "download", "start", T0 + 70), "download", "end", T0 + 100)
    c = clock.add_download(c, {"bytes_total": 4_000_000_000, "bytes_fetched": 30_000_000,
                               "download_fetched": 4_000_000_000, "connections": 16})
    got = clock.section(c)
    assert got["download"]["bytes_fetched"] == 4_000_000_000 and got["download"]["bytes_per_s"] == 40_000_000
    assert got["download_beside"] == [{"phase": "driver", "seconds": 60.0}]


def test_no_clock_no_line():
    assert clock.section({}) is None
    assert clock.section(None) is None
    report = {"plan": {}, "proof": {}, "restarts": {"starts": 0, "corrective": 0}, "clock": None}
    assert not [x for x in summary_lines(report) if x.startswith("day-1")]


@pytest.mark.parametrize("raw, words", [
    ({"boot": {"start": "yesterday"}}, "boot.start must be epoch seconds, got 'yesterday'"),
    ({"boot": {"start": T0 + 5, "end": T0}}, "boot ends"),
    ({"warmup": {"start": T0}}, "unknown phase warmup"),
    ({"proof": {"end": T0}}, "proof has no start"),
    ({"proof": [T0]}, "proof must be a mapping"),
    ({"boot": {"start": T0}, "fetch": {"bytes_total": -1}}, "fetch.bytes_total must be a number >= 0"),
    ("a string", "expected a mapping of phases"),
])
def test_a_clock_of_the_wrong_shape_is_named(raw, words):
    with pytest.raises(clock.ClockError, match=words.replace("(", r"\(").replace(")", r"\)")):
        clock.section(raw)


def test_mark_refuses_an_unknown_phase_or_edge():
    with pytest.raises(clock.ClockError, match="unknown phase"):
        clock.mark({}, "warmup", "start", T0)
    with pytest.raises(clock.ClockError, match="start or end"):
        clock.mark({}, "boot", "middle", T0)


def test_the_filter_marks_now_and_names_a_wrong_phase():
    from ansible.errors import AnsibleFilterError
    from sglang_proof import FilterModule

    mark = FilterModule().filters()["sglang_clock_mark"]
    got = mark({}, "driver", "start")
    assert abs(got["driver"]["start"] - __import__("time").time()) < 5
    with pytest.raises(AnsibleFilterError, match="unknown phase"):
        mark({}, "drivers", "start")


def test_the_report_keeps_the_clock_and_a_bad_one_does_not_fail_it():
    facts = {"host": "h", "sglang_day1_clock": run_clock(), "sglang_boot": {"weight_load_s": 1.0}}
    report = build_report(facts, "2025-12-02T00:10:00+00:00")
    assert report["clock"]["wall_s"] == 425.0
    html = clock_table(report["clock"])
    assert '<table id="clock">' in html and "<th>download</th>" in html and "built with uv" in html
    bad = build_report(dict(facts, sglang_day1_clock={"boot": {"start": "x"}}), "2025-12-02T00:10:00+00:00")
    assert bad["clock"] == {"error": "day-1 clock: boot.start must be epoch seconds, got 'x'"}
    assert "Not shown: day-1 clock: boot.start" in clock_table(bad["clock"])
    assert "This run kept no clock." in clock_table(None)


# --- the runtime's, the boot's and the proof's spans, from the results the role registers ---

def _result(phase, start, end, failed=False, **extra):
    return dict({"phase": phase, "clock": {"start": start, "end": end}, "failed": failed}, **extra)


def test_the_spans_come_from_the_actions_results():
    runtime = _result("install", T0 + 160, T0 + 222, action="build", builder="uv 0.13.8")
    deploy = _result("verify", T0 + 400, T0 + 405, run={"began": T0 + 335, "restarted_this_run": True})
    decided = _result("decide", T0 + 405, T0 + 406)
    recorded = _result("record", T0 + 424, T0 + 425, level={"level": "full", "reason": "after a change"})
    assert clock.from_results(runtime, deploy, decided, recorded) == {
        "runtime": {"start": T0 + 160, "end": T0 + 222, "note": "built with uv 0.13.8"},
        "boot": {"start": T0 + 335, "end": T0 + 405, "note": "started"},
        "proof": {"start": T0 + 405, "end": T0 + 425, "note": "full"}}
    # a re-run: the runtime found complete, nothing started, the check
    got = clock.from_results(dict(runtime, action="use", builder=None), dict(deploy, run={"began": T0 + 335}),
                             decided, dict(recorded, level={"level": "check"}))
    assert got["runtime"]["note"] == "found complete" and got["boot"]["note"] == "no start: nothing changed"
    assert got["proof"]["note"] == "check"


def test_a_phase_begun_and_not_passed_has_no_end_and_one_not_reached_no_entry():
    deploy = _result("start", T0 + 336, T0 + 390, failed=True, run={"began": T0 + 335})
    got = clock.from_results({}, deploy, {}, {})
    assert got == {"boot": {"start": T0 + 335, "note": "no start: nothing changed"}}
    decided = _result("decide", T0 + 405, T0 + 406)
    got = clock.from_results({}, _result("verify", T0 + 400, T0 + 405, run={"began": T0 + 335}), decided,
                             _result("record", T0 + 410, T0 + 411, failed=True))
    assert "end" not in got["proof"] and got["boot"]["end"] == T0 + 405
    # a rollback's restore is no deploy's boot; a skipped task's result carries no span
    assert clock.from_results({"skipped": True}, _result("restore", T0, T0 + 9, run={"began": T0}), {}, {}) == {}
    # a value that is not a result at all (a register of another shape) counts as missing
    assert clock.from_results(None, "x", [], {"clock": "y"}) == {}


def test_the_spans_make_the_same_section_as_the_marks_did():
    marks = run_clock()
    driver_cuda_download = {key: marks[key] for key in ("driver", "cuda", "download", "fetch")}
    # the report's action reads the spans from this run's record (lib/sglang_state/run_record.py)
    spec = importlib.util.spec_from_file_location("report_action", os.path.join(REPO, "action_plugins",
                                                                                "sglang_run_report.py"))
    action = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(action)
    record = {"results": {
        "install": _result("install", T0 + 160, T0 + 222, action="build", builder="uv"),
        "deploy": _result("verify", T0 + 400, T0 + 405, run={"began": T0 + 335, "restarted_this_run": True}),
        "decide": _result("decide", T0 + 405, T0 + 406),
        "record": _result("record", T0 + 420, T0 + 425, level={"level": "full"})}}
    got = action.with_run_clock(driver_cuda_download, record)
    assert clock.section(got) == clock.section(marks)
