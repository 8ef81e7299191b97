"""The prune never removes what a unit can start (issue 48 item 3, probe-6 D1). The probe's own shape: the live unit
runs 0.5.22 but no process of it runs (a stopped or crash-looping unit), and a plan of 0.5.23 with prune_when_found
finds its runtime complete and prunes in the same call. Each unit below reaches 0.5.22 in a way the prune used to miss
(a wrapper before the program, a shell string, a variable, a later ExecStart, the '|' prefix, a symbolic link to the
runtimes folder): each removed it before. A runtime nothing names (0.5.21) is removed in every case, so a test fails
as surely when the prune keeps everything as when it removes the live one."""

import json
import os
import subprocess
import sys

import pytest
from test_sglang_runtime import fake_python, run

LIVE, UNNAMED = "0.5.22-95b74fa642a9", "0.5.21-aaaaaaaaaaaa"


def complete_runtime(runtimes, name):
    fake_python(runtimes / name, {"sglang": name.split("-")[0]})
    (runtimes / (name + ".json")).write_text(json.dumps({"path": str(runtimes / name)}))
    return runtimes / name


@pytest.fixture
def host(tmp_path):
    """(tmp_path, base arguments of a 0.5.23 plan with prune_when_found, whose runtime is complete): 0.5.22 and 0.5.21
    complete beside it, the unit not written yet."""
    runtimes = tmp_path / "runtimes"
    base = dict(dir=str(runtimes), unit=str(tmp_path / "sglang.service"), store=str(tmp_path / "store"),
                version="0.5.23", python=sys.executable, names=["sglang"], min_free_gib=0)
    plan = run(tmp_path, **base)
    fake_python(runtimes / plan["name"], {"sglang": "0.5.23"})
    done = run(tmp_path, state="complete", dir=base["dir"], path=plan["path"], name=plan["name"],
               digest=plan["digest"], set=plan["set"], versions={"sglang": "0.5.23"})
    assert done["changed"], done
    for name in (LIVE, UNNAMED):
        complete_runtime(runtimes, name)
    return tmp_path, dict(base, prune_when_found=True)


def plan_and_prune(tmp_path, base, unit_text, **extra):
    (tmp_path / "sglang.service").write_text(unit_text)
    result = run(tmp_path, **dict(base, **extra))
    assert result["action"] == "use", result
    return result


def assert_live_kept(tmp_path, result):
    runtimes = tmp_path / "runtimes"
    assert result["pruned"]["removed"] == [str(runtimes / UNNAMED)], result
    assert str(runtimes / LIVE) in result["pruned"]["kept"], result
    assert (runtimes / LIVE / "bin" / "python").exists() and (runtimes / (LIVE + ".json")).exists()
    assert not (runtimes / UNNAMED).exists()


def live_launcher(tmp_path):
    return "%s/runtimes/%s/bin/sglang-serve" % (tmp_path, LIVE)


def test_probe6_d1_env_with_an_assignment_before_the_program(host):
    tmp_path, base = host
    unit = "[Service]\nExecStart=/usr/bin/env A=1 %s --port 30000\n" % live_launcher(tmp_path)
    assert_live_kept(tmp_path, plan_and_prune(tmp_path, base, unit))


def test_probe6_d1_sh_c_exec(host):
    tmp_path, base = host
    unit = '[Service]\nExecStart=/bin/sh -c "exec %s --port 30000"\n' % live_launcher(tmp_path)
    assert_live_kept(tmp_path, plan_and_prune(tmp_path, base, unit))


def test_probe6_d1_numactl_before_the_program(host):
    tmp_path, base = host
    unit = "[Service]\nExecStart=/usr/bin/numactl --interleave=all %s\n" % live_launcher(tmp_path)
    assert_live_kept(tmp_path, plan_and_prune(tmp_path, base, unit))


def test_probe6_d1_a_variable_from_environment(host):
    tmp_path, base = host
    unit = "[Service]\nEnvironment=RT=%s/runtimes/%s\nExecStart=${RT}/bin/sglang-serve\n" % (tmp_path, LIVE)
    assert_live_kept(tmp_path, plan_and_prune(tmp_path, base, unit))


def test_probe6_d1_a_oneshot_with_a_later_execstart(host):
    tmp_path, base = host
    unit = "[Service]\nType=oneshot\nExecStart=%s\nExecStart=/bin/true\n" % live_launcher(tmp_path)
    result = plan_and_prune(tmp_path, base, unit)
    assert_live_kept(tmp_path, result)
    assert result["serving"]["path"] == str(tmp_path / "runtimes" / LIVE), result  # the runtime's command, not true


def test_probe6_d1_the_pipe_prefix(host):
    tmp_path, base = host
    unit = "[Service]\nExecStart=|%s --port 30000\n" % live_launcher(tmp_path)
    assert_live_kept(tmp_path, plan_and_prune(tmp_path, base, unit))


def test_probe6_d1_a_symlink_to_the_runtimes_folder(host):
    tmp_path, base = host
    (tmp_path / "rtlink").symlink_to(tmp_path / "runtimes")
    unit = "[Service]\nExecStart=%s/rtlink/%s/bin/sglang-serve\n" % (tmp_path, LIVE)
    assert_live_kept(tmp_path, plan_and_prune(tmp_path, base, unit))


def test_probe6_d1_the_runtimes_folder_given_through_a_symlink(host):
    # sglang_runtimes_dir is the link; the unit and keep name the real folder: the same runtimes
    tmp_path, base = host
    link = tmp_path / "rtlink"
    link.symlink_to(tmp_path / "runtimes")
    wanted = run(tmp_path, **dict(base, prune_when_found=False))["name"]
    (tmp_path / "sglang.service").write_text("[Service]\nExecStart=%s\n" % live_launcher(tmp_path))
    result = run(tmp_path, state="prune", dir=str(link), unit=str(tmp_path / "sglang.service"),
                 keep=[str(tmp_path / "runtimes" / wanted)])
    assert result["removed"] == [str(link / UNNAMED)], result
    assert str(link / LIVE) in result["kept"] and str(link / wanted) in result["kept"], result
    assert (tmp_path / "runtimes" / LIVE).exists() and (tmp_path / "runtimes" / wanted).exists()


def test_probe6_d1_a_variable_from_an_environment_file_and_a_shell_variable(host):
    tmp_path, base = host
    (tmp_path / "sglang.env").write_text("# written by hand\nexport RT='%s/runtimes/%s'\nHF_TOKEN=hf_not_shown\n"
                                         % (tmp_path, LIVE))
    unit = "[Service]\nEnvironmentFile=%s/sglang.env\nExecStart=/bin/sh -c 'exec $${RT}/bin/sglang-serve'\n" % tmp_path
    result = plan_and_prune(tmp_path, base, unit)
    assert_live_kept(tmp_path, result)
    assert "hf_not_shown" not in json.dumps(result)


def test_probe6_d1_a_bare_program_found_through_path(host):
    tmp_path, base = host
    unit = ("[Service]\nEnvironment=PATH=%s/runtimes/%s/bin:/usr/bin:/bin\nExecStart=/usr/bin/env sglang-serve\n"
            % (tmp_path, LIVE))
    assert_live_kept(tmp_path, plan_and_prune(tmp_path, base, unit))


@pytest.mark.parametrize("key", ["ExecStartPre", "ExecStartPost", "ExecReload", "ExecStop", "ExecStopPost",
                                 "ExecCondition"])
def test_probe6_d1_any_exec_line(host, key):
    tmp_path, base = host
    unit = "[Service]\nExecStart=/bin/true\n%s=-%s --check\n" % (key, live_launcher(tmp_path))
    assert_live_kept(tmp_path, plan_and_prune(tmp_path, base, unit))


def test_probe6_d1_a_runtimes_python_that_links_to_the_hosts_python(host):
    # a real virtualenv's bin/python is a link out of it: the path is inside the runtime, whatever it points at
    tmp_path, base = host
    python = tmp_path / "runtimes" / LIVE / "bin" / "python"
    python.unlink()
    python.symlink_to(sys.executable)
    unit = '[Service]\nExecStart="%s" "-c" "x"\n' % python
    assert_live_kept(tmp_path, plan_and_prune(tmp_path, base, unit))


def test_probe6_d1_a_process_started_through_the_symlinked_folder_keeps_its_runtime(host):
    tmp_path, base = host
    (tmp_path / "rtlink").symlink_to(tmp_path / "runtimes")
    through_link = "%s/rtlink/%s/bin/sglang-serve" % (tmp_path, UNNAMED)
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", through_link])
    try:
        result = plan_and_prune(tmp_path, base, "[Service]\nExecStart=%s\n" % live_launcher(tmp_path))
    finally:
        proc.kill()
        proc.wait()
    assert result["pruned"]["removed"] == [] and str(tmp_path / "runtimes" / UNNAMED) in result["pruned"]["kept"]


# -- what the prune cannot read: nothing is removed, and it says why ------------------------------------------------

def assert_nothing_pruned(tmp_path, result, words):
    assert result["pruned"]["removed"] == [] and not result["changed"], result
    warnings = json.dumps(result.get("warnings"))
    assert "no runtime was pruned" in warnings and all(word in warnings for word in words), warnings
    assert (tmp_path / "runtimes" / UNNAMED).exists() and (tmp_path / "runtimes" / LIVE).exists()


def test_probe6_d1_an_environment_file_that_cannot_be_read_and_a_variable_prunes_nothing(host):
    tmp_path, base = host
    (tmp_path / "sglang.env").mkdir()  # a folder: read_plain refuses it
    unit = "[Service]\nEnvironmentFile=%s/sglang.env\nExecStart=${RT}/bin/sglang-serve\n" % tmp_path
    result = plan_and_prune(tmp_path, base, unit)
    assert_nothing_pruned(tmp_path, result, ["sglang.env", "$RT"])


def test_probe6_d1_a_missing_environment_file_and_a_variable_prunes_nothing(host):
    tmp_path, base = host
    unit = "[Service]\nEnvironmentFile=%s/gone.env\nExecStart=/bin/sh -c 'exec $$RT/bin/sglang-serve'\n" % tmp_path
    assert_nothing_pruned(tmp_path, plan_and_prune(tmp_path, base, unit), ["gone.env does not exist", "$RT"])


def test_probe6_d1_an_environment_file_that_cannot_be_read_without_variables_still_prunes(host):
    # the unit's words mean the same whatever the file holds (and systemd's own $MAINPID is no file's)
    tmp_path, base = host
    unit = ("[Service]\nEnvironmentFile=%s/gone.env\nExecStart=%s\nExecReload=/bin/kill -HUP $MAINPID\n"
            % (tmp_path, live_launcher(tmp_path)))
    assert_live_kept(tmp_path, plan_and_prune(tmp_path, base, unit))


def test_probe6_d1_a_shell_string_that_makes_its_words_with_a_command_prunes_nothing(host):
    tmp_path, base = host
    unit = "[Service]\nExecStart=/bin/sh -c 'exec $(cat /etc/sglang/runtime)/bin/sglang-serve'\n"
    assert_nothing_pruned(tmp_path, plan_and_prune(tmp_path, base, unit), ["runs a command"])


def test_probe6_d1_the_roles_own_unit_still_prunes(host):
    # the rendered unit names an EnvironmentFile that is not on this machine; its words hold no variable ($ doubled)
    from hostile_render import render_all

    tmp_path, base = host
    text = render_all(_sglang_runtime_path=str(tmp_path / "runtimes" / LIVE))["unit"]
    assert "EnvironmentFile=" in text
    result = plan_and_prune(tmp_path, base, text)
    assert_live_kept(tmp_path, result)
    assert result["serving"]["path"] == str(tmp_path / "runtimes" / LIVE), result


# -- the plan's removal of an unfinished build reads the unit the same way --------------------------------------------

@pytest.mark.parametrize("unit_text, says", [
    ("[Service]\nExecStart=/usr/bin/numactl --interleave=all {folder}/bin/sglang-serve\n", "runs it"),
    ("[Service]\nEnvironmentFile=/nonexistent/sglang.env\nExecStart=${{RT}}/bin/sglang-serve\n", "may run it"),
])
def test_a_plan_never_removes_a_folder_without_manifest_that_the_unit_may_run(host, unit_text, says):
    tmp_path, base = host
    wanted = run(tmp_path, **dict(base, prune_when_found=False))["path"]
    os.unlink(wanted + ".json")  # the folder stays, without its manifest: it reads as an unfinished build
    (tmp_path / "sglang.service").write_text(unit_text.format(folder=wanted))
    refused = run(tmp_path, **base)
    assert refused["failed"] and "It is not removed" in refused["msg"] and says in refused["msg"], refused
    assert os.path.isdir(wanted)
    (tmp_path / "sglang.service").write_text("[Service]\nExecStart=%s\n" % live_launcher(tmp_path))
    plan = run(tmp_path, **base)  # once no unit reaches it, it is an unfinished build again, built from nothing
    assert plan["action"] == "build" and plan["removed"] == [wanted] and not os.path.exists(wanted), plan


def test_the_roles_unit_keeps_its_runtime_when_the_runtimes_path_holds_a_percent(tmp_path):
    # the template doubles '%' (systemd's specifier escape): read back as one '%', the path names the runtime
    from hostile_render import render_all

    runtimes = tmp_path / "run%times"
    for name in (LIVE, UNNAMED):
        complete_runtime(runtimes, name)
    text = render_all(_sglang_runtime_path=str(runtimes / LIVE))["unit"]
    assert "run%%times" in text
    (tmp_path / "sglang.service").write_text(text)
    result = run(tmp_path, state="prune", dir=str(runtimes), unit=str(tmp_path / "sglang.service"), keep=[])
    assert result["removed"] == [str(runtimes / UNNAMED)] and str(runtimes / LIVE) in result["kept"], result
