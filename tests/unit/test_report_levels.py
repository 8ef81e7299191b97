"""The report says what this run measured: which proof ran and why, decode at the full context, the headroom
SGLang logged (not the plan's estimate), no boot time without a start, the calibration in use, and for a
rollback the restored state's own tp/pp/dp and calibration."""

import copy
import json
import os
from html.parser import HTMLParser

import pytest
from sglang_report.report import build_report, measured_tradeoff, write_run_report

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DECODE = {"tokens": 16, "tpot_ms": 41.3, "seconds": 0.66, "cached_tokens": 196000, "prompt_tokens": 196004,
          "spec_verify_ct": 6, "accept_length": 2.667, "spec_accept_length": 2.667, "spec_accept_rate": 0.11}
# The restored unit as the role renders it: some flags quoted, some not.
UNIT = ('ExecStart=/opt/sglang/venv/bin/python -m sglang.launch_server --tp-size 8 "--context-length" "200000" '
        '--mem-fraction-static 0.958\n')
RECORD = {"full_at": "2026-11-28T07:00:00+00:00", "pool_tokens": 200064, "context_length": 200000,
          "prompt_tokens": 196004, "elapsed_s": 9.8, "prefill_tokens_per_s": 20000.4, "decode": DECODE,
          "process": {"invocation_id": "ab", "main_pid": "42", "exec_main_start": "x"}}


@pytest.fixture
def facts():
    with open(os.path.join(REPO, "tests", "fixtures", "report_facts_ct200.json"), encoding="utf-8") as handle:
        return json.load(handle)


class Tables(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tables, self.ids, self._table, self._cells, self._in, self._id = {}, {}, None, [], False, None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "table":
            self._table = attrs.get("id")
            self.tables[self._table] = {}
        elif tag in ("th", "td"):
            self._in, self._cells = True, self._cells + [""]
        elif tag == "p" and attrs.get("id"):
            self._id = attrs["id"]
            self.ids[self._id] = ""

    def handle_endtag(self, tag):
        if tag == "tr" and self._table and len(self._cells) == 2:
            self.tables[self._table][self._cells[0]] = self._cells[1]
        if tag == "tr":
            self._cells = []
        if tag in ("th", "td"):
            self._in = False
        if tag == "p":
            self._id = None

    def handle_data(self, data):
        if self._in:
            self._cells[-1] += data
        elif self._id:
            self.ids[self._id] += data


def page(facts, tmp_path):
    out = write_run_report(facts, str(tmp_path), "20261201T090000Z", "2026-12-01T09:00:00+00:00")
    with open(os.path.join(out, "report.json"), encoding="utf-8") as handle:
        report = json.load(handle)
    parsed = Tables()
    with open(os.path.join(out, "report.html"), encoding="utf-8") as handle:
        parsed.feed(handle.read())
    return report, parsed


def check_run(facts):
    """A re-run that changed nothing: no start, no boot lines read, the check level."""
    facts = copy.deepcopy(facts)
    facts.update(sglang_starts=0, sglang_restarted_this_run=False, sglang_corrective_restarts=0,
                 sglang_boot={"skipped": True},
                 sglang_proof_record=RECORD,
                 sglang_proof_level={"level": "check", "last_full_at": RECORD["full_at"],
                                     "reason": "nothing changed since the full proof of %s" % RECORD["full_at"]},
                 calibration_in_use={"pre_load_avail_gib": 85.33, "post_load_avail_gib": 19.42, "pool_tokens": 200064,
                                     "headroom_gib": 4.71, "measured_at": "2026-11-28T06:58:00+00:00"},
                 calibration_key="/srv/models/kimi-k2.6@0123456789ab tp8 pp1 dp1 sglang-0.5.23 kv-auto draft-DFLASH")
    facts["sglang_smoke"] = {"ok": True, "level": "check", "escalated": None, "decode": None, "pool_tokens": 200064,
                             "context_length": 200000, "prompt_tokens": 41, "completion": " 4821937.",
                             "elapsed_s": 0.05, "checks": []}
    return facts


def test_a_check_says_so_and_why_and_when_the_last_full_proof_was(facts, tmp_path):
    report, parsed = page(check_run(facts), tmp_path)
    assert report["proof"]["level"] == "check" and report["proof"]["prompt_tokens"] == 41
    assert report["proof"]["level_reason"].startswith("nothing changed since the full proof")
    assert report["proof"]["last_full_at"] == "2026-11-28T07:00:00+00:00"
    assert report["last_full_proof"]["decode"]["tpot_ms"] == 41.3 and "process" not in report["last_full_proof"]
    assert parsed.tables["proof"]["level"] == "check"
    assert parsed.tables["proof"]["last full proof"] == "2026-11-28T07:00:00+00:00"
    assert parsed.tables["proof"]["last full proof: decode (ms per token)"] == "41.3"


def test_no_start_shows_no_boot_time(facts, tmp_path):
    report, parsed = page(check_run(facts), tmp_path)
    assert report["boot_wait_s"] is None and report["started_this_run"] is False
    assert parsed.tables["boot"]["boot time (s, unit start to ready)"] == "no start this run"
    report, parsed = page(facts, tmp_path / "started")  # the fixture's run started twice
    assert report["boot_wait_s"] == 42.3
    # the role's flag decides, not a start count carried from an earlier play of the same playbook
    later = dict(facts, sglang_restarted_this_run=False)
    assert build_report(later, "now")["boot_wait_s"] is None


def test_the_headline_is_what_was_measured_not_the_estimate(facts, tmp_path):
    report, parsed = page(check_run(facts), tmp_path)
    assert report["plan"]["headroom_gib"] == 6.314  # the plan's estimate ...
    head = report["headline"]
    assert head["headroom_gib"] == 4.71
    assert head["headroom_measured_at"].startswith("the calibration boot of 2026-11-28")
    assert head["pool_tokens"] == 200064 and head["tpot_ms"] == 41.3 and head["accept_length"] == 2.667
    assert "headroom 4.71 GiB" in parsed.ids["headline"] and "6.314" not in parsed.ids["headline"]
    started = copy.deepcopy(facts)
    started["sglang_boot"]["pool_end_avail_gib"] = 5.02
    assert build_report(started, "now")["headline"]["headroom_gib"] == 5.02  # this run's boot logged it
    assert build_report(started, "now")["headline"]["headroom_measured_at"] == "this run's boot"


def test_a_full_proof_carries_decode_and_the_accept_length(facts, tmp_path):
    facts["sglang_smoke"] = dict(facts["sglang_smoke"], level="full", escalated=None, decode=DECODE)
    facts["sglang_proof_level"] = {"level": "full", "reason": "asked for (sglang_proof=full)",
                                   "last_full_at": "2026-12-01T09:00:00+00:00"}
    report, parsed = page(facts, tmp_path)
    assert report["proof"]["decode"] == DECODE and report["proof"]["level_reason"] == "asked for (sglang_proof=full)"
    assert parsed.tables["proof"]["decode (ms per token, at the full context)"] == "41.3"
    assert parsed.tables["proof"]["accept length (completion tokens / spec_verify_ct)"] == "2.667"
    assert "decode 41.3 ms per token at 196,004 tokens of context, accept length 2.667" in parsed.ids["headline"]


def test_the_calibration_shown_is_the_one_in_use_with_its_key(facts, tmp_path):
    report, parsed = page(check_run(facts), tmp_path)
    assert report["calibration"]["pool_tokens"] == 200064  # not the stored 151,987 of another boot
    assert parsed.ids["calibration-key"].endswith("draft-DFLASH")


def test_a_rollback_names_the_restored_plan_and_its_calibration(tmp_path):
    entries = {
        "a tp8 pp1 dp1 sglang-0.5.23": {"tp_size": 8, "pp_size": 1, "dp_size": 1, "sglang_version": "0.5.23",
                                        "pool_tokens": 200064, "measured_at": "2026-11-28T06:58:00+00:00"},
        "a tp4 pp2 dp1 sglang-0.5.23": {"tp_size": 4, "pp_size": 2, "dp_size": 1, "sglang_version": "0.5.23",
                                        "pool_tokens": 1, "measured_at": "2026-11-30T00:00:00+00:00"}}
    facts = {"host": "ct200", "sglang_starts": 1, "sglang_restarted_this_run": True,
             "restored": {"name": "20261128T065500000000Z", "plan": "target 200,000 -> pool 200,064 tokens",
                          "calibrated": True, "versions": {"sglang": "0.5.23"}, "context_target": 200000,
                          "unit": UNIT},
             "calibration_entries": entries}
    report, parsed = page(facts, tmp_path)
    assert report["plan"]["inputs"] == {"tp_size": 8, "pp_size": 1, "dp_size": 1, "context_target": 200000,
                                        "mem_fraction_static": 0.958}
    assert report["calibration"]["pool_tokens"] == 200064
    assert report["plan"]["explanation"] == "target 200,000 -> pool 200,064 tokens"
    assert report["plan"]["calibration_source"] == ("the restored state 20261128T065500000000Z, planned from a "
                                                    "calibration")
    assert parsed.tables["plan"]["tp / pp / dp"] == "8 / 1 / 1"


def test_a_checks_trade_off_shows_the_last_full_proofs_speed_and_concurrency(facts):
    facts = check_run(facts)
    together = {"requests": 8, "answered": 8, "seconds": 1.9, "completion_tokens": 40, "decode_tokens_per_s": 21.1}
    facts["sglang_proof_record"] = dict(RECORD, concurrency=together)
    report = build_report(facts, "2026-11-30T09:00:00+00:00")
    assert report["last_full_proof"]["concurrency"] == together
    lines = measured_tradeoff(report)
    assert lines[0].startswith("speed (the last full proof, 2026-11-28T07:00:00+00:00): prefill 20,000.4 tokens/s")
    assert "decode 41.3 ms per token at the full context" in lines[0]
    assert lines[1] == ("short requests at once: 8 of 8 answered with their own needle, the last after 1.9 s, 21.1 "
                        "completion tokens/s in all")
