"""The boot's times (weight load, CUDA-graph capture, unit start to ready) and the two issue-34 defects of the
journal reader: 0.5.23's "Multi-thread loading shards" bar, and SGLang's prefix after other text on one line.
Real lines: tests/fixtures/sglang_boots/ (README.md names the release and the source of each)."""
# ruff: noqa: E501 - real log lines, kept whole

import json
import os

import pytest
import sglang_boot_facts as module
from ansible.module_utils.sglang_journal import journal_entries, lines, ready_seconds
from sglang_wait_ready import boot_progress

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def read(*parts):
    with open(os.path.join(HERE, "fixtures", *parts), encoding="utf-8") as handle:
        return handle.read()


REAL_0523 = read("sglang_boots", "0.5.23_cpu_tiny_llama.log")


# ---- issue 34: 0.5.23's shard bar -----------------------------------------------------------------------

def test_real_0523_multithread_bar_is_the_shard_progress():
    while_loading = REAL_0523.split("[2026-12-02 16:32:27] Load weight end")[0]
    state = boot_progress(while_loading)
    assert (state["stage"], state["shard"], state["percent"]) == ("loading weights", [1, 1], 100)


@pytest.mark.parametrize("bar, shard", [
    # every loader bar of the releases' weight_utils.py (0.5.9 :689, :723, :817, :917, :945; 0.5.23 :1166, :1371, :1440)
    ("Loading safetensors checkpoint shards:  33% Completed | 1/3 [00:02<00:05,  2.50s/it]", [1, 3]),
    ("Loading np_cache checkpoint shards:  50% Completed | 2/4 [00:01<00:01,  1.00it/s]", [2, 4]),
    ("Loading pt checkpoint shards:  50% Completed | 32/64", [32, 64]),
    ("Multi-thread loading shards:  25% Completed | 16/64 [01:10<03:30,  3.30s/it]", [16, 64]),
    ("Multi-thread loading pt checkpoint shards: 100% Completed | 8/8", [8, 8]),
])
def test_every_release_loader_bar_is_read(bar, shard):
    state = boot_progress("[2026-12-02 16:32:26 TP0] Load weight begin. avail mem=13.34 GB\n" + bar + "\n")
    assert state["shard"] == shard and state["stage"] == "loading weights"


def test_a_bar_that_is_not_a_loader_is_not_shard_progress():
    state = boot_progress("[TP0] Load weight begin. avail mem=1.00 GB\nMulti-thread loading pots: 50% Completed | 1/2\n")
    assert state["shard"] is None


# ---- issue 34: SGLang's prefix after other text on the same line ------------------------------------------

TWO_RANKS = """[2026-11-29 07:05:21 TP0] Load weight begin. avail mem=85.33 GB
[2026-11-29 07:05:21 TP1] Load weight begin. avail mem=85.41 GB
[2026-11-29 07:05:59 TP0] Load weight end. elapsed=38.10 s, type=DeepseekV3ForCausalLM, avail mem=19.42 GB, mem usage=65.92 GB.
[2026-11-29 07:06:01 TP1] Load weight end. elapsed=40.02 s, type=DeepseekV3ForCausalLM, avail mem=19.50 GB, mem usage=65.91 GB.
"""


@pytest.mark.parametrize("before", [
    "Multi-thread loading shards: 100% Completed | 64/64 [06:11<00:00,  5.80s/it]",  # a bar without its line end
    "some other print ",
    "(Worker_TP1 pid=1701) unrelated text ",
])
def test_a_prefix_inside_a_line_is_read_with_its_rank(before):
    glued = TWO_RANKS.replace("[2026-11-29 07:06:01 TP1] Load weight end", before + "[2026-11-29 07:06:01 TP1] Load weight end")
    facts = module.parse_boot_log(glued)
    assert facts == module.parse_boot_log(TWO_RANKS)
    assert facts["ranks"] == 2 and facts["draft"] is None and facts["post_load_avail_gib"] == 19.42
    assert facts["weight_load_s"] == 40.02


def test_a_glued_line_does_not_invent_a_draft_or_lose_a_rank():
    # Before the cut, both begins glued behind a print were read as rank "": two begins on one rank, which is
    # how a speculative draft's load looks, and the ranks' ends had no begin.
    glued = ("\r" + TWO_RANKS).replace("\n[2026-11-29 07:05:21 TP1]", "\nsome print[2026-11-29 07:05:21 TP1]").replace(
        "\r[2026-11-29 07:05:21 TP0]", "Multi-thread loading shards:   0% Completed | 0/64 [2026-11-29 07:05:21 TP0]")
    assert lines(glued)[0].startswith("Multi-thread loading shards")
    facts = module.parse_boot_log(glued)
    assert facts["draft"] is None and facts["ranks"] == 2
    assert facts == module.parse_boot_log(TWO_RANKS)


def test_the_cut_keeps_a_tqdm_tail_and_a_carriage_return_apart():
    text = "Multi-thread loading shards:  50% Completed | 1/2 [00:01<00:01, 1.0it/s]\r[TP0] Load weight end. elapsed=2.00 s, avail mem=1.00 GB\n"
    assert lines(text) == ["Multi-thread loading shards:  50% Completed | 1/2 [00:01<00:01, 1.0it/s]",
                           "[TP0] Load weight end. elapsed=2.00 s, avail mem=1.00 GB"]
    assert lines("a [2026-01-01 00:00:00 PP1 TP0] b") == ["a ", "[2026-01-01 00:00:00 PP1 TP0] b"]
    assert lines("[1, 2, 4, 8] and [00:01<00:02]") == ["[1, 2, 4, 8] and [00:01<00:02]"]


# ---- the boot's times ----------------------------------------------------------------------------------

def test_real_0523_weight_load_is_sglangs_own_figure():
    facts = module.parse_boot_log(REAL_0523)
    assert facts["weight_load_s"] == 0.14
    assert "Load weight end. elapsed=0.14 s" in facts["times_source"]["weight_load_s"]
    # a CPU boot captures no CUDA graph: null, and it says why
    assert facts["graph_capture_s"] is None and facts["times_source"]["graph_capture_s"].startswith(
        "no 'Capture ... graph end' with elapsed=")
    assert facts["pool_tokens"] == 8192 and facts["ready_s"] is None


def test_the_slowest_rank_is_the_boots_load_time():
    facts = module.parse_boot_log(read("sglang_logs", "pp2_tp2_elapsed_2026-01.log"))
    assert facts["weight_load_s"] == 6.40 and "PP0 TP0" in facts["times_source"]["weight_load_s"]


def test_without_a_figure_the_bracket_times_are_used():
    old = TWO_RANKS.replace("elapsed=38.10 s, ", "").replace("elapsed=40.02 s, ", "")
    facts = module.parse_boot_log(old)
    assert facts["weight_load_s"] == 40.0  # TP1: 07:05:21 -> 07:06:01
    assert facts["times_source"]["weight_load_s"].startswith("the slowest rank's target load from the bracket times")


def test_the_drafts_load_is_not_the_targets_time():
    text = TWO_RANKS + "[2026-11-29 07:06:05 TP0] Load weight begin. avail mem=19.42 GB\n[2026-11-29 07:07:05 TP0] Load weight end. elapsed=60.00 s, avail mem=18.00 GB\n"
    assert module.parse_boot_log(text)["weight_load_s"] == 40.02


@pytest.mark.parametrize("capture, seconds", [
    # 0.5.9 model_runner.py:2161
    ("[2026-01-01 00:00:10 TP0] Capture cuda graph end. Time elapsed: 12.34 s. mem usage=1.20 GB. avail mem=5.00 GB.\n", 12.34),
    # 0.5.15 model_runner.py:2858-2859, 0.5.23 cuda_graph_setup.py:696-697: every capture of the boot summed
    ("[TP0] Capture target decode CUDA graph end. elapsed=10.00 s, mem usage=0.60 GB, avail mem=5.37 GB.\n"
     "[TP0] Capture target prefill CUDA graph end. elapsed=2.50 s, mem usage=0.10 GB, avail mem=5.27 GB.\n"
     "[TP1] Capture target decode CUDA graph end. elapsed=11.00 s, mem usage=0.60 GB, avail mem=5.37 GB.\n", 12.5),
    # the double's 0.5.23 wording (bs= before elapsed)
    ("[TP0] Capture draft verify CUDA graph end. bs=[1, 2, 4], elapsed=0.05 s, mem usage=0.15 GB, avail mem=5.22 GB.\n", 0.05),
    # no figure: the bracket times of the first begin and the last end
    ("[2026-01-01 00:00:10 TP0] Capture cuda graph begin. This can take up to several minutes. avail mem=6.00 GB\n"
     "[2026-01-01 00:00:52 TP0] Capture cuda graph end. mem usage=1.20 GB. avail mem=5.00 GB.\n", 42.0),
])
def test_graph_capture_time_per_release_wording(capture, seconds):
    assert module.parse_boot_log(capture)["graph_capture_s"] == seconds


@pytest.mark.parametrize("text", ["", "-- No entries --\n", "[TP0] Load weight end. elapsed=1.2.3 s, avail mem=1.00 GB\n",
                                  "[TP0] Capture cuda graph end. Time elapsed: nan s.\n",
                                  "[2026-13-45 00:00:00 TP0] Load weight begin. avail mem=1.00 GB\n"
                                  "[2026-13-45 00:00:09 TP0] Load weight end. avail mem=0.50 GB\n"])
def test_a_journal_without_the_lines_gives_null_not_a_crash(text):
    facts = module.parse_boot_log(text)
    assert (facts["weight_load_s"], facts["graph_capture_s"], facts["ready_s"]) == (None, None, None)
    assert all(reason.startswith("no ") or "unit start" in reason for reason in facts["times_source"].values())


# ---- ready_s: the unit's start to "ready to roll", on the host's monotonic clock ---------------------------

def entry(mono, message):
    return json.dumps({"__MONOTONIC_TIMESTAMP": str(mono), "__REALTIME_TIMESTAMP": "1", "MESSAGE": message})


def test_ready_is_counted_from_the_units_start():
    text = "\n".join(entry(5_000_000 + 10 ** 6 * i, line) for i, line in enumerate(REAL_0523.splitlines()))
    entries = journal_entries(text)
    assert len(entries) == 8 and entries[0] == (5_000_000, "[2026-12-02 16:32:26] Load weight begin. avail mem=13.34 GB")
    seconds, source = ready_seconds(entries, "1000000")
    assert seconds == 11.0 and source.endswith("The server is fired up and ready to roll!")


def test_a_message_journald_stored_as_bytes_is_read():
    raw = json.dumps({"__MONOTONIC_TIMESTAMP": "9000000", "MESSAGE": list(b"[TP0] The server is fired up and ready to roll!\xff")})
    assert ready_seconds(journal_entries(raw + "\nnot json\n[1, 2]"), "4000000")[0] == 5.0


@pytest.mark.parametrize("text, start, why", [
    (entry(9_000_000, "[TP0] Load weight begin. avail mem=1.00 GB"), "1000000", "no 'The server is fired up"),
    (entry(9_000_000, "The server is fired up and ready to roll!"), "0", "no ExecMainStartTimestampMonotonic"),
    (entry(9_000_000, "The server is fired up and ready to roll!"), "", "no ExecMainStartTimestampMonotonic"),
    # a ready line older than this start (another invocation's) is not this boot's
    (entry(500, "The server is fired up and ready to roll!"), "1000000", "no 'The server is fired up"),
])
def test_ready_is_null_with_the_reason(text, start, why):
    seconds, source = ready_seconds(journal_entries(text), start)
    assert seconds is None and why in source


def test_the_module_reads_the_journal_as_json_and_returns_the_times(monkeypatch):
    journal = "\n".join(entry(2_000_000 + 10 ** 6 * i, line) for i, line in enumerate(REAL_0523.splitlines()))
    calls = []

    class Fake:
        params = {"unit": "sglang"}

        def get_bin_path(self, name, required):
            return "/usr/bin/" + name

        def exit_json(self, **result):
            raise SystemExit(result)

        def fail_json(self, **result):
            raise AssertionError(result)

    def bounded_run(_module, args, timeout=30, limit=1 << 20, program="systemctl"):
        # the module's systemctl/journalctl go through sglang_systemd.run: a deadline, and a limit that holds a boot
        calls.append([program] + list(args))
        assert timeout > 0 and (program != "journalctl" or limit >= 64 << 20)
        if program == "systemctl":
            return 0, "InvocationID=abc\nExecMainStartTimestampMonotonic=1500000\n", ""
        return 0, journal, ""

    monkeypatch.setattr(module, "AnsibleModule", lambda **kwargs: Fake())
    monkeypatch.setattr(module, "run", bounded_run)
    with pytest.raises(SystemExit) as done:
        module.main()
    result = done.value.args[0]
    assert "json" in calls[1] and "_SYSTEMD_INVOCATION_ID=abc" in calls[1]
    assert (result["weight_load_s"], result["graph_capture_s"], result["ready_s"]) == (0.14, None, 7.5)
    assert result["pool_tokens"] == 8192 and result["invocation_id"] == "abc"
    assert "ready to roll" in result["times_source"]["ready_s"]


@pytest.mark.parametrize("unit", ["-H evil", "x;id", "../x", "a\nb"])
def test_a_unit_name_systemctl_would_misread_is_refused_before_it_runs(monkeypatch, unit):
    ran = []

    class Fake:
        params = {"unit": unit}

        def fail_json(self, **result):
            raise SystemExit(dict(result, failed=True))  # as AnsibleModule's does: it exits

    monkeypatch.setattr(module, "AnsibleModule", lambda **kwargs: Fake())
    monkeypatch.setattr(module, "run", lambda *args, **kwargs: ran.append(args))
    with pytest.raises(SystemExit) as refused:
        module.main()
    result = refused.value.args[0]
    assert not ran and result["failed"] and "give the service's name" in result["msg"], result
