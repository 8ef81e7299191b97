"""Every benchmark in tests/benchmarks run once in a cheap form, as its own process, by `make test` (through `make
unit`), so that a change of the inventory layout, a module or the double cannot break one unseen (issue 47 item 6):
each must exit 0 and print its figures. The cheap forms go through the same code as the full runs: bench_rerun
through the repository's inventory layout and its ansible-playbook command line on playbooks/plan.yml (the check
phase site.yml runs first) instead of the converged instance; bench_fleet for 2 hosts; the double-backed ones with
fewer requests and sizes; bench_day1 on 2 MiB; bench_runtime_build on a one-file wheel made here (uv installed
once into .cache/bench/tools from the package index, as the full run does)."""

import base64
import hashlib
import os
import re
import subprocess
import sys
import zipfile

import yaml

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BENCHMARKS = os.path.join(REPO, "tests", "benchmarks")
sys.path.insert(0, BENCHMARKS)

import layout  # noqa: E402


def bench(name, *args, timeout=300):
    """(rc, stdout, stderr) of tests/benchmarks/<name>.py run with this Python, from the file system's root."""
    proc = subprocess.run([sys.executable, os.path.join(BENCHMARKS, name + ".py"), *args], capture_output=True,
                          text=True, timeout=timeout, cwd="/")
    return proc.returncode, proc.stdout, proc.stderr


def passed(name, *args, timeout=300):
    rc, out, err = bench(name, *args, timeout=timeout)
    assert rc == 0 and "FAILED" not in err, "%s exited %d:\n%s\n%s" % (name, rc, out, err[-3000:])
    return out


def test_rerun_plan_only_plans_the_simulated_host_from_the_model_group():
    out = passed("bench_rerun", "--plan-only")
    assert out.startswith("plan-only: ")
    # the model's group_vars reached the instance: its model, drafter and target were planned before any connection
    assert "ct200-sim: target 200,000 -> pool " in out
    assert "--speculative-algorithm DFLASH" in out and "--context-length 200000" in out


def test_the_layout_puts_the_instance_where_molecule_s_default_scenario_does():
    # bench_rerun replays what `molecule converge -s default` converged: the same groups, from the same inventory
    with open(os.path.join(REPO, "molecule", "default", "molecule.yml"), encoding="utf-8") as handle:
        platform = yaml.safe_load(handle)["platforms"][0]
    paths = layout.group_paths(layout.inventory_like(layout.MODEL_HOST, {platform["name"]: {}}), platform["name"])
    assert {group for chain in paths for group in chain} == set(platform["groups"])


def test_fleet_plans_two_copies_of_ct200():
    out = passed("bench_fleet", "2")
    lines = out.splitlines()
    assert lines[0].startswith("hosts  check phase") and lines[1].split()[0] == "2"


def test_first_boot_simulates_the_inventory_s_ct200_first():
    out = passed("bench_first_boot", "5")
    rows = [line for line in out.splitlines() if line.startswith("ct200 ")]
    assert [re.search(r"\s(fraction|pinned|fill)\s", row).group(1) for row in rows] == ["fraction", "pinned", "fill"]
    assert "kimi-k2.6 + DFLASH, TP8, 200k" in rows[0]


def test_concurrency_on_the_double_with_two_requests():
    out = passed("bench_concurrency", "--requests", "2", "--decode-seconds", "0.01", "--tokens", "4")
    assert "limit 1 takes" in out and out.count("(one request alone:") == 2


def test_prompt_sizing_on_the_double_for_1000_tokens():
    out = passed("bench_prompt_sizing", "--sizes", "1000")
    rows = [line.split() for line in out.splitlines()[1:]]
    assert [row[:2] for row in rows] == [["new", "1000"], ["old", "1000"]]


def test_day1_downloads_2_mib_and_resumes_after_a_kill():
    out = passed("bench_day1", "--files", "2", "--file-mib", "1", "--per-connection-mb", "2", "--total-mb", "4",
                 "--runs", "1", "--skip-one-stream")
    assert "(the role's default)" in out and "resume after kill -9" in out and "done=True" in out


def tiny_wheel(folder, name="benchtiny", version="0.1"):
    """A one-module wheel with a hashed RECORD (what pip and uv install), and the wheelhouse's marker."""
    info = "%s-%s.dist-info" % (name, version)
    files = {name + "/__init__.py": b"VALUE = 1\n",
             info + "/METADATA": ("Metadata-Version: 2.1\nName: %s\nVersion: %s\n" % (name, version)).encode(),
             info + "/WHEEL": b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
    record = ["%s,sha256=%s,%d" % (path, base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
                                   .decode(), len(data)) for path, data in files.items()]
    with zipfile.ZipFile(os.path.join(folder, "%s-%s-py3-none-any.whl" % (name, version)), "w") as wheel:
        for path, data in files.items():
            wheel.writestr(path, data)
        wheel.writestr(info + "/RECORD", "\n".join(record + [info + "/RECORD,,"]) + "\n")
    with open(os.path.join(folder, ".downloaded"), "w", encoding="utf-8") as marker:
        marker.write("%s==%s\n" % (name, version))
    return "%s==%s" % (name, version)


def test_runtime_build_with_pip_and_uv_on_a_tiny_wheel(tmp_path):
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    requirement = tiny_wheel(str(wheels))
    # --work under .cache/bench, so that uv is installed once into .cache/bench/tools, beside the full run's
    work = os.path.join(REPO, ".cache", "bench", "runtimes-cheap")
    out = passed("bench_runtime_build", "--wheelhouse", str(wheels), "--requirement", requirement, "--work", work,
                 timeout=600)
    assert [line.split()[0] + " " + line.split()[1] for line in out.splitlines()[2:5]] == [
        "pip cold", "uv cold", "uv warm"]
    assert not os.path.exists(work)
