"""A benchmark whose run fails prints the failure, no figure, and exits non-zero (issue 47 item 6: bench_rerun's
playbook failed with rc 2, its host outside the model's group, and it printed "re-run: 4.7 s wall ... prompt tokens
the server received: 0" as if it had measured). One failing run per benchmark, each a real failure of what it
measures (a refused input, a request past its timeout, a proof the server cannot pass, a package that is not
there), and the decisions bench_rerun takes on a finished run."""

import importlib.util
import json
import os
import subprocess
import sys

import pytest
import yaml

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BENCHMARKS = os.path.join(REPO, "tests", "benchmarks")
sys.path.insert(0, BENCHMARKS)

import layout  # noqa: E402
from outcome import BenchmarkFailed, finish  # noqa: E402


def load(name):
    """tests/benchmarks/<name>.py as a module (its own path settings applied), to call its main() here."""
    spec = importlib.util.spec_from_file_location(name, os.path.join(BENCHMARKS, name + ".py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def failed(name, *args, timeout=300):
    """The stderr of tests/benchmarks/<name>.py run as its own process, which must exit 1 and print nothing."""
    proc = subprocess.run([sys.executable, os.path.join(BENCHMARKS, name + ".py"), *args], capture_output=True,
                          text=True, timeout=timeout, cwd="/")
    assert proc.returncode == 1, "%s exited %d:\n%s\n%s" % (name, proc.returncode, proc.stdout, proc.stderr)
    assert proc.stdout == "", "a failed run printed figures:\n" + proc.stdout
    assert "%s FAILED (no figures printed): " % name in proc.stderr
    return proc.stderr


def test_finish_prints_the_lines_only_when_the_measure_succeeds(capsys):
    assert finish("bench_x", lambda: ["a: 1.0 s", "b: 2"]) == 0
    assert capsys.readouterr().out == "a: 1.0 s\nb: 2\n"

    def broken():
        raise BenchmarkFailed("the run exited 2")

    assert finish("bench_x", broken) == 1
    captured = capsys.readouterr()
    assert captured.out == "" and "bench_x FAILED (no figures printed): the run exited 2" in captured.err


# bench_rerun


def test_rerun_of_a_missing_instance_fails_without_a_figure():
    # the maintainer's case: the playbook fails (here: no such container, or no stand-ins for the check phase)
    err = failed("bench_rerun", "--instance", "no-such-instance-bench-test", timeout=600)
    assert "ansible-playbook exited" in err and "re-run:" not in err


def test_rerun_plan_only_fails_when_the_host_is_outside_the_model_group(tmp_path, monkeypatch, capsys):
    # the layout the benchmark used to write by hand: ct200 in sglang_servers alone, no model, no drafter, no TP 8
    hosts = tmp_path / "hosts.yml"
    hosts.write_text(yaml.safe_dump({"sglang_servers": {"hosts": {"ct200": {}}}}))
    bench = load("bench_rerun")
    monkeypatch.setattr(sys.modules["layout"], "HOSTS_FILE", str(hosts))
    assert bench.main(["--plan-only"]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "the check phase made no plan for ct200-sim" in captured.err


def test_rerun_plan_only_fails_when_the_check_phase_refuses():
    err = failed("bench_rerun", "--plan-only", "-e", "sglang_context_target=-5")
    assert "ansible-playbook exited 2" in err and "sglang_context_target" in err


RUN_OK = {"rc": 0, "changed": 0, "rows": [{"task": "t", "file": "f", "seconds": 1.0}], "before": 100,
          "after": 108, "report": {"proof": {"level": "check"}}, "output": "..."}


@pytest.mark.parametrize("change, why", [
    ({"rc": 2, "output": "fatal: [ct200-sim]: FAILED!"}, "ansible-playbook exited 2:\nfatal"),
    ({"changed": None}, "no PLAY RECAP"),
    ({"rows": []}, "recorded no task"),
    ({"before": None}, "served no sglang:prompt_tokens_total"),
    ({"after": None}, "served no sglang:prompt_tokens_total"),
    ({"after": 100}, "received 0 prompt tokens"),
    ({"report": {}}, "wrote no report"),
])
def test_rerun_names_what_a_finished_run_lacks(change, why):
    bench = load("bench_rerun")
    run = dict(RUN_OK, **change)
    assert why in bench.failure(run["rc"], run["changed"], run["rows"], run["before"], run["after"],
                                run["report"], run["output"])


def test_rerun_accepts_a_run_with_every_figure():
    bench = load("bench_rerun")
    assert bench.failure(*(RUN_OK[k] for k in ("rc", "changed", "rows", "before", "after", "report", "output"))) \
        is None


def test_rerun_prints_its_figures_for_a_run_that_measured(monkeypatch, capsys):
    # the printing path, with ansible-playbook, the counter and the report replaced (no instance here)
    bench = load("bench_rerun")
    counter = iter([1000, 1054])
    monkeypatch.setattr(bench, "prompt_tokens_total", lambda instance, port: next(counter))
    monkeypatch.setattr(bench, "last_report", lambda instance, since: {"proof": {"level": "check",
                                                                                "level_reason": "nothing changed"}})

    def playbook(argv, env, **_):
        with open(env["BENCH_TIMER_OUT"], "w", encoding="utf-8") as handle:
            json.dump([{"task": "Gathering Facts", "file": "site.yml", "seconds": 1.5},
                       {"task": "Prove", "file": "roles/sglang/tasks/prove.yml", "seconds": 2.0}], handle)
        return subprocess.CompletedProcess(argv, 0, "ct200-sim : ok=91 changed=0 unreachable=0 failed=0\n", "")

    monkeypatch.setattr(bench.subprocess, "run", playbook)
    assert bench.main([]) == 0
    out = capsys.readouterr().out
    assert "rc 0, changed=0, 2 tasks" in out and "prompt tokens the server received: 54" in out
    assert "proof level: check (nothing changed)" in out and "2.0  roles/sglang/tasks/prove.yml" in out


def test_rerun_reads_the_recap_of_its_instance_only():
    bench = load("bench_rerun")
    out = "ct200-sim-2 : ok=3 changed=5\nct200-sim                  : ok=91   changed=0    unreachable=0\n"
    assert bench.recap_changed("ct200-sim", out) == 0
    assert bench.recap_changed("ct200-sim", "PLAY RECAP\n") is None


# the layout every benchmark takes its hosts from


def test_layout_puts_hosts_in_every_group_that_holds_the_model_host():
    inventory = {"sglang_servers": {"children": {"kimi_k26_dflash": {"hosts": {"ct200": {}}},
                                                 "qwen3_32b": {"hosts": {"gpu-07": {}}}}},
                 "monitored": {"hosts": {"ct200": {}}}}
    paths = layout.group_paths(inventory, "ct200")
    assert paths == [["sglang_servers", "kimi_k26_dflash"], ["monitored"]]
    assert layout.place(paths, {"x": {"a": 1}}) == {
        "sglang_servers": {"children": {"kimi_k26_dflash": {"hosts": {"x": {"a": 1}}}}},
        "monitored": {"hosts": {"x": {"a": 1}}}}


def test_layout_refuses_an_inventory_without_the_model_host(tmp_path):
    hosts = tmp_path / "hosts.yml"
    hosts.write_text(yaml.safe_dump({"sglang_servers": {"hosts": {"gpu-07": {}}}}))
    with pytest.raises(BenchmarkFailed, match="holds no host ct200"):
        layout.inventory_like("ct200", {"x": {}}, str(hosts))


# bench_fleet


def test_fleet_fails_when_the_check_phase_refuses():
    err = failed("bench_fleet", "1", "-e", "sglang_context_target=-5")
    assert "playbooks/check.yml exited 2" in err


def test_fleet_names_hosts_make_plan_printed_no_plan_for():
    bench = load("bench_fleet")
    out = "ct000: target 200,000 -> pool 1\nct001: planned once preflight has read the GPUs\n"
    assert bench.unplanned(["ct000", "ct001"], out) == ["ct001"]


# bench_first_boot


def test_first_boot_fails_on_a_setup_the_planner_refuses(monkeypatch, capsys):
    bench = load("bench_first_boot")
    monkeypatch.setattr(bench, "SETUPS", [("Llama 3.1 70B at 50M tokens", {
        "model": "llama-3.1-70b", "tp_size": 4, "gpu_memory_mib": 81_559, "context_target": 50_000_000})])
    assert bench.main(["3"]) == 1
    captured = capsys.readouterr()
    assert captured.out == "" and "Llama 3.1 70B at 50M tokens: the planner refuses the setup" in captured.err


def test_first_boot_fails_when_the_inventory_gives_ct200_no_model(tmp_path, monkeypatch, capsys):
    (tmp_path / "hosts.yml").write_text(yaml.safe_dump({"sglang_servers": {"hosts": {"ct200": {}}}}))
    bench = load("bench_first_boot")
    monkeypatch.setattr(sys.modules["layout"], "HOSTS_FILE", str(tmp_path / "hosts.yml"))
    assert bench.main(["3"]) == 1
    captured = capsys.readouterr()
    assert captured.out == "" and "inventory/ gives ct200 no sglang_model" in captured.err


# the benchmarks on the SGLang double


def test_concurrency_fails_when_a_request_runs_past_its_timeout():
    err = failed("bench_concurrency", "--requests", "2", "--decode-seconds", "0.5", "--tokens", "8",
                 "--timeout", "1")
    assert "did not finish within 1 s" in err


def test_prompt_sizing_fails_when_the_proof_fails():
    # a context target past the double's --context-length 200000: the proof refuses the server
    err = failed("bench_prompt_sizing", "--sizes", "1000", "--apis", "new", "--target", "300000")
    assert "the proof failed" in err and "under the context target of 300,000" in err


# the download and the runtime build


def test_day1_fails_when_the_download_fails():
    err = failed("bench_day1", "--files", "1", "--file-mib", "1", "--runs", "1", "--skip-one-stream",
                 "--connections", "0")
    assert "hf_download failed (rc 1): connections=0" in err


def test_day1_fails_when_the_download_ends_before_the_kill():
    # 1 MiB at 800 MB/s is on disk before the benchmark can kill it halfway: no resume was measured
    err = failed("bench_day1", "--files", "1", "--file-mib", "1", "--runs", "1", "--skip-one-stream",
                 "--per-connection-mb", "800")
    assert "nothing to resume" in err


def test_runtime_build_fails_when_the_wheelhouse_lacks_the_requirement(tmp_path):
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    (wheels / ".downloaded").write_text("nothing\n")  # a finished download that holds no wheel
    err = failed("bench_runtime_build", "--wheelhouse", str(wheels), "--requirement", "benchtiny==0.1",
                 "--work", str(tmp_path / "work"), "--json")
    assert "-m pip install failed (rc 1)" in err and "No matching distribution found for benchtiny==0.1" in err
