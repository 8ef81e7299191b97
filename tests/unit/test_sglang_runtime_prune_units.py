"""The runtime prune keeps what runs (issue 36, probe-5 N-S5-2): the unit read as systemd reads it (the prefixes -, !,
the reset idiom of a drop-in, `systemctl edit`'s override, a `current` link), a runtime any running process runs from
whatever the unit says, and nothing pruned at all when a unit cannot be read. Each case failed before: the live
runtime was removed."""

import json
import subprocess
import sys

import pytest
from test_sglang_runtime import fake_python, run

LIVE, OLD = "0.5.22-2ed85052f95f", "0.5.21-aaaaaaaaaaaa"


@pytest.fixture
def host(tmp_path):
    runtimes = tmp_path / "runtimes"
    for name in (LIVE, OLD):
        fake_python(runtimes / name, {})
        (runtimes / (name + ".json")).write_text(json.dumps({"path": str(runtimes / name)}))
    return tmp_path, runtimes


def prune(tmp_path, runtimes, unit_path):
    return run(tmp_path, state="prune", dir=str(runtimes), unit=str(unit_path), store=str(tmp_path / "store"), keep=[])


def launcher(runtimes, name=LIVE):
    return "%s/%s/bin/sglang-serve" % (runtimes, name)


@pytest.mark.parametrize("line", [
    "ExecStart=-{prog} --config /etc/sglang/sglang.yaml",   # failure ignored
    "ExecStart=!{prog}",                                     # full privileges
    "ExecStart=!!{prog}",
    "ExecStart=@{prog} sglang",                              # argv[0] given
    "ExecStart = \"{prog}\" \\\n    --port 30000",          # spaces, quotes, a continued line
])
def test_a_unit_with_systemds_prefixes_or_spacing_keeps_its_runtime(host, line):
    tmp_path, runtimes = host
    unit = tmp_path / "sglang.service"
    unit.write_text("[Service]\n" + line.format(prog=launcher(runtimes)) + "\n")
    result = prune(tmp_path, runtimes, unit)
    assert result["removed"] == [str(runtimes / OLD)], result
    assert (runtimes / LIVE / "bin" / "python").exists()


def test_a_drop_in_that_resets_execstart_is_what_runs(host):
    # systemctl edit sglang: the override's empty ExecStart= clears the file's, the next line is the program
    tmp_path, runtimes = host
    unit = tmp_path / "sglang.service"
    unit.write_text("[Service]\nExecStart=%s\n" % launcher(runtimes, OLD))
    (tmp_path / "sglang.service.d").mkdir()
    (tmp_path / "sglang.service.d" / "override.conf").write_text(
        "[Service]\nExecStart=\nExecStart=%s --enable-metrics\n" % launcher(runtimes))
    result = prune(tmp_path, runtimes, unit)
    assert result["removed"] == [str(runtimes / OLD)], result
    assert (runtimes / LIVE).exists()


def test_a_unit_through_a_current_link_keeps_the_runtime_it_points_at(host):
    tmp_path, runtimes = host
    (runtimes / "current").symlink_to(LIVE)
    unit = tmp_path / "sglang.service"
    unit.write_text("[Service]\nExecStart=%s/current/bin/sglang-serve\n" % runtimes)
    result = prune(tmp_path, runtimes, unit)
    assert result["removed"] == [str(runtimes / OLD)], result
    assert (runtimes / LIVE).exists() and (runtimes / "current").is_symlink()


def test_a_unit_that_cannot_be_read_prunes_nothing(host):
    tmp_path, runtimes = host
    unit = tmp_path / "sglang.service"
    unit.write_text("[Service]\nExecStart=%s\n" % launcher(runtimes) + "# padding\n" * (600 * 1024))  # > 4 MiB
    result = prune(tmp_path, runtimes, unit)
    assert result["removed"] == [] and not result["changed"], result
    assert "no runtime was pruned" in json.dumps(result.get("warnings")), result
    assert (runtimes / OLD).exists() and (runtimes / LIVE).exists()


def test_a_runtime_a_running_process_uses_is_kept_whatever_the_unit_says(host):
    # a server started by hand, or a unit edited since the process started: the process's command line names it
    tmp_path, runtimes = host
    unit = tmp_path / "sglang.service"
    unit.write_text("[Service]\nExecStart=%s\n" % launcher(runtimes))
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", launcher(runtimes, OLD)])
    try:
        result = prune(tmp_path, runtimes, unit)
    finally:
        proc.kill()
        proc.wait()
    assert result["removed"] == [] and str(runtimes / OLD) in result["kept"], result
    result = prune(tmp_path, runtimes, unit)  # once it has stopped, the old runtime goes
    assert result["removed"] == [str(runtimes / OLD)], result


def test_a_stores_own_files_beside_its_entries_are_not_units(host):
    # the store holds its lock and journal files beside the entry folders: not an entry, not an unreadable unit
    tmp_path, runtimes = host
    store = tmp_path / "store"
    (store / "20261201T000000Z").mkdir(parents=True)
    (store / "20261201T000000Z" / "sglang.service").write_text("[Service]\nExecStart=%s\n" % launcher(runtimes))
    (store / ".lock").write_text("")
    unit = tmp_path / "sglang.service"
    unit.write_text("[Service]\nExecStart=%s\n" % launcher(runtimes))
    result = prune(tmp_path, runtimes, unit)
    assert result["removed"] == [str(runtimes / OLD)], result
