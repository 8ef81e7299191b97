"""library/sglang_unit_state.py: the unit's systemctl show lines and the last full proof's record in one call; a
record that is missing, not JSON, not an object or not a plain file is {} with the reason (the proof is then the full
one), never a failure. Run as Ansible runs a module, with a stand-in systemctl first on PATH."""

import json
import os
import subprocess
import sys

import pytest
import sglang_unit_state as unit_state

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODULE = os.path.join(REPO, "library", "sglang_unit_state.py")
# systemd 252 (Debian 12) for a running, enabled unit: Id first, then the properties asked
SHOW = ["Id=sglang.service", "ActiveState=active", "UnitFileState=enabled", "InvocationID=1f2e3d4c", "MainPID=4242",
        "ExecMainStartTimestamp=Tue 2026-12-01 08:00:00 UTC"]


def run(tmp_path, **args):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    systemctl = bin_dir / "systemctl"
    systemctl.write_text("#!/bin/sh\necho \"$@\" > %s/argv\nprintf '%s\\n'\n" % (tmp_path, "\\n".join(SHOW)))
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
