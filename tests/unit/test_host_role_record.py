"""host_role_record: a re-run skips the driver and CUDA roles' apt and template work only when the host is still as
their last complete run left it. Every way it can differ must be seen; the module runs as Ansible runs it (a child
process with its arguments file), against this machine's own dpkg database."""

import json
import os
import subprocess
import sys

import host_role_record as record
import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODULE = os.path.join(REPO, "library", "host_role_record.py")
PACKAGE = "dpkg"  # installed wherever dpkg-query runs


def run(tmp_path, **args):
    path = tmp_path / "args.json"
    path.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": args}))
    proc = subprocess.run([sys.executable, MODULE, str(path)], capture_output=True, text=True, timeout=60)
    return json.loads(proc.stdout)


def dpkg_available():
    return subprocess.run(["sh", "-c", "command -v dpkg-query"], capture_output=True).returncode == 0


def test_parse_dpkg_keeps_installed_packages_with_their_selection():
    text = ("nvidia-open|580.95.05-1|hold ok installed\nlinux-headers-x|6.1-1|install ok installed\n"
            "gone|1.0|deinstall ok config-files\n")
    assert record.parse_dpkg(text) == {"nvidia-open": ["580.95.05-1", "hold"], "linux-headers-x": ["6.1-1", "install"]}


def test_differences_names_each_change():
    recorded = {"version": 1, "inputs": "a", "kernel": "6.1", "files": {"/p": "x", "/q": None, "/r": "y"},
                "packages": {"nvidia-open": ["580.95.05-1", "hold"]}}
    same = record.differences(recorded, "a", "6.1", {"/p": "x", "/q": None, "/r": "y"},
                              {"nvidia-open": ["580.95.05-1", "hold"]})
    assert same == []
    reasons = record.differences(recorded, "b", "6.2", {"/p": "z", "/q": "new", "/r": None},
                                 {"nvidia-open": ["580.95.05-1", "install"]})
    assert reasons == ["the role's inputs changed", "the running kernel is 6.2, recorded 6.1", "/p was changed",
                       "/q appeared", "/r is gone", "nvidia-open is 580.95.05-1 install, recorded 580.95.05-1 hold"]
    assert record.differences(recorded, "a", "6.1", {"/p": "x", "/q": None, "/r": "y"}, {}) == [
        "nvidia-open is not installed, recorded 580.95.05-1 hold"]
    for corrupt in (None, [], "x", {"version": 99}):
        assert record.differences(corrupt, "a", "6.1", {}, {}) == ["the record is not one this module wrote"]


def test_the_digest_ignores_key_order_and_sees_any_value():
    assert record.digest({"a": 1, "b": [1, 2]}) == record.digest({"b": [1, 2], "a": 1})
    assert record.digest({"a": 1}) != record.digest({"a": "1"})


def test_a_folder_is_recorded_by_its_names(tmp_path):
    (tmp_path / "a.sources").write_text("x")
    before = record.file_digest(str(tmp_path))
    (tmp_path / "a.sources").write_text("changed content, same names")
    assert record.file_digest(str(tmp_path)) == before
    (tmp_path / "cuda-keyring.list").write_text("deb ...")
    assert record.file_digest(str(tmp_path)) != before
    assert record.file_digest(str(tmp_path / "missing")) is None


@pytest.mark.skipif(not dpkg_available(), reason="needs dpkg-query")
def test_record_then_check_round_trip_and_every_change_seen(tmp_path):
    pin = tmp_path / "nvidia-driver.pref"
    pin.write_text("Package: nvidia-*\nPin: version 580.95.05-1\n")
    path = str(tmp_path / "record.json")
    inputs = {"vars": {"nvidia_driver_branch": "580"}, "os": "Debian-12"}
    first = run(tmp_path, path=path, inputs=inputs)
    assert first["unchanged"] is False and first["reasons"] == ["no record of a complete run"]

    wrote = run(tmp_path, path=path, inputs=inputs, state="record", files=[str(pin), str(tmp_path / "absent")],
                packages=[PACKAGE], facts={"deb_version": "580.95.05-1"})
    assert wrote["changed"] is True and wrote["recorded_at"]
    again = run(tmp_path, path=path, inputs=inputs, state="record", files=[str(pin), str(tmp_path / "absent")],
                packages=[PACKAGE], facts={"deb_version": "580.95.05-1"})
    assert again["changed"] is False and again["recorded_at"] == wrote["recorded_at"]  # idempotent
    stored = json.load(open(path))
    assert "580" not in json.dumps(stored["inputs"]) and stored["packages"][PACKAGE][0]  # digests, not inputs

    ok = run(tmp_path, path=path, inputs=inputs)
    assert ok["unchanged"] is True and ok["facts"] == {"deb_version": "580.95.05-1"}

    assert run(tmp_path, path=path, inputs=dict(inputs, os="Debian-13"))["reasons"] == ["the role's inputs changed"]
    pin.write_text("Package: nvidia-*\nPin: version 580.105.08-1\n")
    changed = run(tmp_path, path=path, inputs=inputs)
    assert changed["unchanged"] is False and changed["reasons"] == ["%s was changed" % pin] and changed["facts"] == {}


@pytest.mark.skipif(not dpkg_available(), reason="needs dpkg-query")
def test_a_package_that_is_not_installed_is_never_recorded(tmp_path):
    path = tmp_path / "record.json"
    result = run(tmp_path, path=str(path), inputs={}, state="record", packages=["no-such-package-xyz"])
    assert result["failed"] and "no-such-package-xyz not installed" in result["msg"] and not path.exists()


def test_a_corrupt_record_runs_the_role_in_full(tmp_path):
    path = tmp_path / "record.json"
    for content in ("{not json", "null", "[]", '"x"', '{"version": 1}'):
        path.write_text(content)
        result = run(tmp_path, path=str(path), inputs={})
        assert result["unchanged"] is False and result["reasons"] and "failed" not in result, content


@pytest.mark.skipif(not dpkg_available(), reason="needs dpkg-query")
def test_an_edited_file_in_a_recorded_folder_is_seen(tmp_path):
    sources = tmp_path / "sources.list.d"
    sources.mkdir()
    (sources / "other.list").write_text("deb http://deb.example/ bookworm main\n")
    path = str(tmp_path / "record.json")
    run(tmp_path, path=path, inputs={}, state="record", files=[str(sources)])
    assert run(tmp_path, path=path, inputs={})["unchanged"] is True
    # NVIDIA's repository added under another Signed-By, in a file that keeps its name
    (sources / "other.list").write_text("deb [signed-by=/k.gpg] https://developer.download.nvidia.com/ /\n")
    assert run(tmp_path, path=path, inputs={})["reasons"] == ["%s was changed" % (sources / "other.list")]
