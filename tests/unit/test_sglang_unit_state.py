"""library/sglang_unit_state.py: the unit's systemctl show lines and the last full proof's record in one call; a
record that is missing, not JSON, not an object or not a plain file is {} with the reason (the proof is then the full
one), never a failure. Run as Ansible runs a module, with a stand-in systemctl first on PATH. A systemctl that hangs
or answers without end, and a unit name with NUL, control characters, '/' or a pattern, end in a sentence (issue 36
item 5, probe 5 N-S5-11)."""

import json
import os
import subprocess
import sys
import time

import pytest
import sglang_unit_state as unit_state

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODULE = os.path.join(REPO, "library", "sglang_unit_state.py")
# systemd 252 (Debian 12) for a running, enabled unit: Id first, then the properties asked
SHOW = ["Id=sglang.service", "ActiveState=active", "UnitFileState=enabled", "InvocationID=1f2e3d4c", "MainPID=4242",
        "ExecMainStartTimestamp=Tue 2026-12-01 08:00:00 UTC"]


def run(tmp_path, systemctl_body=None, **args):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    systemctl = bin_dir / "systemctl"
    systemctl.write_text(systemctl_body or "#!/bin/sh\necho \"$@\" > %s/argv\nprintf '%s\\n'\n"
                         % (tmp_path, "\\n".join(SHOW)))
    systemctl.chmod(0o755)
    path = tmp_path / "args.json"
    path.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": args}))
    env = dict(os.environ, PATH="%s:%s" % (bin_dir, os.environ["PATH"]))
    proc = subprocess.run([sys.executable, MODULE, str(path)], capture_output=True, text=True, timeout=60, env=env)
    assert "Traceback" not in proc.stdout + proc.stderr
    return json.loads(proc.stdout)


def test_the_unit_properties_and_the_record_in_one_call(tmp_path):
    record = tmp_path / "last-full-proof.json"
    record.write_text(json.dumps({"full_at": "2026-12-01T08:05:00+00:00", "process": {"main_pid": "4242"}}))
    got = run(tmp_path, unit="sglang", record=str(record))
    assert got["properties"] == dict(line.split("=", 1) for line in SHOW)
    assert got["record"]["full_at"] == "2026-12-01T08:05:00+00:00"
    assert got["record_problem"] == "" and not got["changed"]
    assert (tmp_path / "argv").read_text().split() == [
        "show", "-p", "Id", "-p", "ActiveState", "-p", "UnitFileState", "-p", "InvocationID", "-p", "MainPID", "-p",
        "ExecMainStartTimestamp", "--", "sglang"]
    assert "record" not in run(tmp_path, unit="sglang")


@pytest.mark.parametrize(("content", "why"), [
    (None, "never proven"), (b"{not json", "cannot be read"), (b"[1, 2]", "is not a JSON object"),
    (b"[" * 100000 + b"]" * 100000, "cannot be read"), (b"\xff\xfe", "cannot be read")])
def test_a_record_that_is_not_one_is_empty_with_its_reason(tmp_path, content, why):
    record = tmp_path / "last-full-proof.json"
    if content is not None:
        record.write_bytes(content)
    value, problem = unit_state.read_record(str(record))
    assert value == {} and why in problem


def test_a_link_or_a_fifo_as_the_record_is_not_followed(tmp_path):
    (tmp_path / "elsewhere.json").write_text("{}")
    (tmp_path / "link.json").symlink_to(tmp_path / "elsewhere.json")
    assert unit_state.read_record(str(tmp_path / "link.json"))[0] == {}
    os.mkfifo(tmp_path / "fifo.json")
    assert unit_state.read_record(str(tmp_path / "fifo.json"))[0] == {}  # refused, not waited on


def test_a_unit_name_that_is_an_option_is_refused(tmp_path):
    got = run(tmp_path, unit="--all")
    assert got["failed"] and "is not a unit's name" in got["msg"]


def test_a_systemctl_that_does_not_answer_ends_in_a_sentence_after_the_timeout(tmp_path):
    # the probe's reproduction (FAKE_SYSTEMCTL_MODE=hang): no answer in 40 s. The sleep is a child of the script and
    # holds its output open: it is ended too, or the read would go on after the script's end.
    started = time.monotonic()
    got = run(tmp_path, "#!/bin/sh\necho $$ > %s/pid\nsleep 600\n" % tmp_path, unit="sglang", timeout=2)
    assert time.monotonic() - started < 30
    assert got["failed"] and got["msg"].startswith("systemctl show -p Id -p ActiveState"), got
    assert "did not answer within 2 s: systemd is busy or stuck" in got["msg"]
    assert "Check `systemctl list-jobs` on the host" in got["msg"]
    pid = int((tmp_path / "pid").read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_a_systemctl_answer_without_end_is_read_up_to_its_limit(tmp_path):
    # the probe's 64 MiB answer
    got = run(tmp_path, "#!/bin/sh\nhead -c 67108864 /dev/zero | tr '\\0' x\n", unit="sglang")
    assert got["failed"] and "answered more than 1048576 bytes, far more than systemd says of a unit" in got["msg"]


@pytest.mark.parametrize(("unit", "why"), [
    ("sgl\x00ang", "holds a NUL, a line break or another control character"),
    ("sglang\nExecStart", "holds a NUL, a line break or another control character"),
    ("../../x", "holds a '/': it is a path, not a unit's name"),
    ("/etc/systemd/system/sglang.service", "holds a '/'"),
    ("*", "holds a character systemd's unit names do not"),
    ("x;id", "holds a character systemd's unit names do not"),
    ("$(id)", "holds a character systemd's unit names do not"),
    ("s" * 300, "is 300 characters long; systemd's names have at most 255"),
    ("", "is empty")])
def test_a_unit_name_systemd_cannot_have_is_refused_before_systemctl_runs(tmp_path, unit, why):
    got = run(tmp_path, unit=unit)
    assert got["failed"] and "is not a unit's name: it %s" % why in got["msg"], got
    assert "Give a systemd unit's name, e.g. sglang" in got["msg"]
    assert not (tmp_path / "argv").exists()


def test_a_timeout_under_one_second_is_refused_by_name(tmp_path):
    got = run(tmp_path, unit="sglang", timeout=0)
    assert got["failed"] and got["msg"].startswith("sglang_unit_state: timeout=0 is not a number of seconds"), got


def test_template_instances_and_typed_names_are_units(tmp_path):
    for unit in ("sglang@0.service", "nvidia-persistenced", "sys-devices-x\\x2dy.device"):
        assert not run(tmp_path, unit=unit).get("failed"), unit


def test_a_systemctl_that_closes_its_output_but_does_not_end_is_ended_too():
    from ansible.module_utils.sglang_systemd import SystemdError, run_bounded

    started = time.monotonic()
    with pytest.raises(SystemdError, match=r"^sh -c .* did not end within 1 s: systemd is busy or stuck"):
        run_bounded(["/bin/sh", "-c", "exec >/dev/null 2>&1; sleep 600"], timeout=1)
    assert time.monotonic() - started < 10
    assert run_bounded(["/bin/sh", "-c", "echo out; echo err >&2; exit 3"]) == (3, "out\n", "err\n")
