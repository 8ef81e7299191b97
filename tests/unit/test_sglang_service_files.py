"""library/sglang_service_files.py: the server's files put in place in one call - written only when content, owner,
group or mode differ, a key-holding file never in the result or a diff, --check writing nothing, and a folder where a
file goes refused with a sentence. Run as Ansible runs a module (a child process with its arguments file)."""

import grp
import json
import os
import pwd
import stat
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODULE = os.path.join(REPO, "library", "sglang_service_files.py")
KEY = "sk-not-a-real-key-0123456789"
USER = pwd.getpwuid(os.getuid()).pw_name
GROUP = grp.getgrgid(os.getgid()).gr_name


def run(tmp_path, check_mode=False, diff=False, **args):
    path = tmp_path / "args.json"
    path.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": dict(args, _ansible_check_mode=check_mode,
                                                            _ansible_diff=diff)}))
    proc = subprocess.run([sys.executable, MODULE, str(path)], capture_output=True, text=True, timeout=60)
    assert "Traceback" not in proc.stdout + proc.stderr and KEY not in proc.stdout + proc.stderr
    return json.loads(proc.stdout)


def mode(path):
    return stat.S_IMODE(os.lstat(path).st_mode)


def files_args(tmp_path, unit="ExecStart=python -m sglang.launch_server\n", env="SGLANG_API_KEY=%s\n" % KEY):
    etc = tmp_path / "etc"
    return {"folder": {"path": str(etc), "owner": USER, "group": GROUP, "mode": "0750"},
            "files": [{"dest": str(tmp_path / "sglang.service"), "content": unit, "mode": "0644", "owner": USER,
                       "group": GROUP},
                      {"dest": str(etc / "sglang.env"), "secret_content": env, "mode": "0600", "owner": USER,
                       "group": GROUP}]}


def test_first_write_then_a_rerun_changes_nothing(tmp_path):
    args = files_args(tmp_path)
    first = run(tmp_path, **args)
    assert first["changed"] and first["folder_changed"]
    assert first["changed_files"] == [str(tmp_path / "sglang.service"), str(tmp_path / "etc" / "sglang.env")]
    assert (tmp_path / "etc" / "sglang.env").read_text() == "SGLANG_API_KEY=%s\n" % KEY
    assert mode(tmp_path / "etc" / "sglang.env") == 0o600 and mode(tmp_path / "etc") == 0o750
    assert mode(tmp_path / "sglang.service") == 0o644
    again = run(tmp_path, **args)
    assert not again["changed"] and again["changed_files"] == [] and not again["folder_changed"]


def test_a_mode_or_content_change_rewrites_only_that_file(tmp_path):
    args = files_args(tmp_path)
    run(tmp_path, **args)
    (tmp_path / "etc" / "sglang.env").chmod(0o644)
    assert run(tmp_path, **args)["changed_files"] == [str(tmp_path / "etc" / "sglang.env")]
    assert mode(tmp_path / "etc" / "sglang.env") == 0o600
    changed = run(tmp_path, **files_args(tmp_path, unit="ExecStart=other\n"))
    assert changed["changed_files"] == [str(tmp_path / "sglang.service")]
    assert (tmp_path / "sglang.service").read_text() == "ExecStart=other\n"


def test_the_diff_shows_the_unit_and_never_the_env_file(tmp_path):
    run(tmp_path, **files_args(tmp_path))
    result = run(tmp_path, diff=True, **files_args(tmp_path, unit="ExecStart=new\n", env="SGLANG_API_KEY=%sx\n" % KEY))
    assert result["diff"] == [{"before_header": str(tmp_path / "sglang.service"),
                               "after_header": str(tmp_path / "sglang.service"),
                               "before": "ExecStart=python -m sglang.launch_server\n", "after": "ExecStart=new\n"}]
    assert len(result["changed_files"]) == 2


def test_check_mode_says_what_would_change_and_writes_nothing(tmp_path):
    result = run(tmp_path, check_mode=True, **files_args(tmp_path))
    assert result["changed"] and len(result["changed_files"]) == 2
    assert not (tmp_path / "etc").exists() and not (tmp_path / "sglang.service").exists()


def test_a_link_at_the_destination_is_replaced_by_the_file_not_followed(tmp_path):
    target = tmp_path / "elsewhere"
    target.write_text("keep me\n")
    (tmp_path / "sglang.service").symlink_to(target)
    run(tmp_path, **files_args(tmp_path))
    assert not (tmp_path / "sglang.service").is_symlink() and target.read_text() == "keep me\n"


def test_a_folder_where_a_file_goes_and_an_unknown_group_are_sentences(tmp_path):
    (tmp_path / "sglang.service").mkdir()
    failed = run(tmp_path, **files_args(tmp_path))
    assert failed["failed"] and "is a folder: move it away" in failed["msg"]
    args = files_args(tmp_path)
    args["folder"]["group"] = "no-such-group-here"
    failed = run(tmp_path, **args)
    assert failed["failed"] and "the group no-such-group-here does not exist on the host" in failed["msg"]


def test_a_file_needs_exactly_one_content(tmp_path):
    args = files_args(tmp_path)
    args["files"][0]["secret_content"] = "x"
    assert run(tmp_path, **args)["failed"]
    del args["files"][0]["secret_content"], args["files"][0]["content"]
    assert run(tmp_path, **args)["failed"]


# --- All or nothing (issue 36 item 3; ../shared/reference/probe-5.md N-S5-4 and N-S5-9) ---------------------------
# Each test below first puts v1 of the files in place, then asks for v2 with one thing wrong: the call must fail,
# name the file that failed (never a temporary name, never a bare "[Errno N]"), and leave every file at v1 with no
# temporary file behind.

# A child process that runs the module with one os function failing on its Nth call: how a full disk (fsync) or a
# rename refused half-way (os.replace) is met in a test that needs no root. The module then runs as it does under
# Ansible, with its arguments file as argv[1].
FAULT = """
import errno, os, runpy, sys
name, nth, code = sys.argv[1], int(sys.argv[2]), getattr(errno, sys.argv[3])
real, calls = getattr(os, name), []
def failing(*args, **kwargs):
    calls.append(args)
    if len(calls) == nth:
        raise OSError(code, os.strerror(code))
    return real(*args, **kwargs)
setattr(os, name, failing)
sys.argv = sys.argv[4:]
runpy.run_path(sys.argv[0], run_name="__main__")
"""


def run_failing(tmp_path, function, nth, code, **args):
    """run(), with os.<function> raising OSError(errno.<code>) on its nth call inside the module."""
    path = tmp_path / "args.json"
    path.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": dict(args, _ansible_check_mode=False, _ansible_diff=False)}))
    proc = subprocess.run([sys.executable, "-c", FAULT, function, str(nth), code, MODULE, str(path)],
                          capture_output=True, text=True, timeout=60)
    assert "Traceback" not in proc.stdout + proc.stderr and KEY not in proc.stdout + proc.stderr
    return json.loads(proc.stdout)


def three_files(root, unit="v1\n", env="SGLANG_API_KEY=%s\n" % KEY, config="v1: 1\n"):
    """The role's three files (unit, env file, config), the last two in the service's folder root/etc."""
    etc = root / "etc"
    return {"folder": {"path": str(etc), "owner": USER, "group": GROUP, "mode": "0750"},
            "files": [{"dest": str(root / "sglang.service"), "content": unit, "mode": "0644", "owner": USER,
                       "group": GROUP},
                      {"dest": str(etc / "sglang.env"), "secret_content": env, "mode": "0600", "owner": USER,
                       "group": GROUP},
                      {"dest": str(etc / "sglang.yaml"), "secret_content": config, "mode": "0640", "owner": USER,
                       "group": GROUP}]}


def snapshot(root):
    """{relative path: (kind, mode, content)} of everything below root: what 'nothing changed' compares."""
    seen = {}
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            path = os.path.join(folder, name)
            status = os.lstat(path)
            content = open(path, "rb").read() if stat.S_ISREG(status.st_mode) else None
            seen[os.path.relpath(path, root)] = (stat.S_IFMT(status.st_mode), stat.S_IMODE(status.st_mode), content)
    return seen


def v1_in_place(root):
    """v1 of the three files below root (the arguments file goes beside root, not in it); root's snapshot."""
    root.mkdir(exist_ok=True)
    assert run(root.parent, **three_files(root))["changed"]
    return snapshot(root)


def failed_without_change(root, result, before, dest):
    assert result["failed"], result
    assert dest in result["msg"] and "Nothing on the host was changed" in result["msg"], result["msg"]
    assert ".tmp" not in result["msg"] and "[Errno" not in result["msg"], result["msg"]
    assert snapshot(root) == before  # the unit is still v1, and no temporary file is left


def test_a_folder_where_the_env_file_goes_changes_no_file(tmp_path):
    """N-S5-4: the env file's destination is a folder; the unit was already rewritten before the refusal."""
    root = tmp_path / "host"
    before = v1_in_place(root)
    os.unlink(root / "etc" / "sglang.env")
    (root / "etc" / "sglang.env").mkdir()
    before = snapshot(root)
    result = run(tmp_path, **three_files(root, unit="v2\n"))
    failed_without_change(root, result, before, str(root / "etc" / "sglang.env"))
    assert "is a folder: move it away" in result["msg"]


def test_a_missing_folder_of_the_third_file_changes_no_file(tmp_path):
    """N-S5-4: the 3rd file's folder is missing."""
    root = tmp_path / "host"
    before = v1_in_place(root)
    args = three_files(root, unit="v2\n", env="SGLANG_API_KEY=%sx\n" % KEY)
    args["files"][2]["dest"] = str(root / "gone" / "sglang.yaml")
    result = run(tmp_path, **args)
    failed_without_change(root, result, before, str(root / "gone" / "sglang.yaml"))
    assert "its folder %s does not exist: create it first" % (root / "gone") in result["msg"]


def test_a_missing_folder_is_named_not_a_bare_errno(tmp_path):
    """N-S5-9: a missing parent was a bare '[Errno 2] ...'."""
    root = tmp_path / "host"
    root.mkdir()
    args = three_files(root)
    args["files"][0]["dest"] = str(root / "systemd" / "sglang.service")
    result = run(tmp_path, **args)
    assert result["failed"] and "%s: its folder %s does not exist" % (root / "systemd" / "sglang.service",
                                                                     root / "systemd") in result["msg"]
    assert not (root / "etc").exists()  # the service's folder this call would have created is not left behind


def test_a_full_disk_on_the_second_file_changes_no_file(tmp_path):
    """N-S5-4 / N-S5-9: the disk fills on the 2nd file (fsync reports ENOSPC, as it does on a full file system)."""
    root = tmp_path / "host"
    before = v1_in_place(root)
    result = run_failing(tmp_path, "fsync", 2, "ENOSPC", **three_files(root, unit="v2\n", env="SGLANG_API_KEY=y\n"))
    failed_without_change(root, result, before, str(root / "etc" / "sglang.env"))
    assert "No space left on device" in result["msg"] and "is full: free space there" in result["msg"]


def test_a_rename_refused_half_way_puts_the_first_file_back(tmp_path):
    """A rename that fails after the first (an immutable env file, chattr +i): the unit gets v1 back."""
    root = tmp_path / "host"
    before = v1_in_place(root)
    result = run_failing(tmp_path, "replace", 2, "EPERM", **three_files(root, unit="v2\n", env="SGLANG_API_KEY=y\n"))
    failed_without_change(root, result, before, str(root / "etc" / "sglang.env"))
    assert "lsattr" in result["msg"]


@pytest.fixture
def small_disk(tmp_path):
    """A 64 KiB tmpfs (root only: the real ENOSPC and EROFS of a kernel file system, not a patched call)."""
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root; test_a_full_disk_on_the_second_file_changes_no_file covers "
                    "the same with a failing fsync")
    disk = tmp_path / "disk"
    disk.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k,mode=0755", "tmpfs", str(disk)],
                             capture_output=True, text=True)
    if mounted.returncode:
        pytest.skip("no tmpfs can be mounted here: %s" % mounted.stderr.strip())
    try:
        yield disk
    finally:
        subprocess.run(["umount", str(disk)], check=True)


def test_a_really_full_disk_changes_no_file(small_disk):
    """N-S5-4 / N-S5-9 on a real full file system: the env file (200 KB) does not fit in 64 KiB."""
    before = v1_in_place(small_disk)
    result = run(small_disk.parent, **three_files(small_disk, unit="v2\n", env="X=%s\n" % ("y" * 200000)))
    failed_without_change(small_disk, result, before, str(small_disk / "etc" / "sglang.env"))
    assert "is full: free space there" in result["msg"]


def test_a_read_only_file_system_is_named_by_the_file(small_disk, tmp_path):
    """N-S5-9: a read-only file system named the temporary file ('.sglang.service.q0zho3sf.tmp')."""
    before = v1_in_place(small_disk)
    subprocess.run(["mount", "-o", "remount,ro", str(small_disk)], check=True)
    result = run(tmp_path, **three_files(small_disk, unit="v2\n"))
    assert result["failed"] and result["msg"].startswith(
        "The server's files: %s could not be written (Read-only file system)" % (small_disk / "sglang.service"))
    assert ".tmp" not in result["msg"] and "remount it read-write" in result["msg"]
    assert snapshot(small_disk) == before


def test_the_same_destination_twice_is_refused(tmp_path):
    """N-S5-9: the same dest twice was accepted, and the second won."""
    args = three_files(tmp_path)
    args["files"][2]["dest"] = args["files"][1]["dest"]
    result = run(tmp_path, **args)
    assert result["failed"] and "%s is given twice (files 2 and 3)" % args["files"][1]["dest"] in result["msg"]
    assert not (tmp_path / "etc").exists() and not (tmp_path / "sglang.service").exists()


@pytest.mark.parametrize("wanted", ["4755", "2750", "6755"])
def test_a_setuid_or_setgid_mode_settles(tmp_path, wanted):
    """N-S5-9: chown after chmod cleared the setuid/setgid bits, so the file never matched: changed on every run."""
    args = files_args(tmp_path)
    args["files"][0]["mode"] = wanted
    assert run(tmp_path, **args)["changed"]
    assert mode(tmp_path / "sglang.service") == int(wanted, 8)
    assert not run(tmp_path, **args)["changed"]


def test_a_file_over_4_mib_settles(tmp_path):
    """N-S5-9: a file over 4 MiB was 'changed' on every run (the comparison refused to read it)."""
    args = files_args(tmp_path, unit="#" * (5 * 1024 * 1024) + "\n")
    assert run(tmp_path, **args)["changed"]
    again = run(tmp_path, **args)
    assert not again["changed"] and again["changed_files"] == []
    bigger = run(tmp_path, diff=True, **files_args(tmp_path, unit="#" * (5 * 1024 * 1024) + "x\n"))
    assert bigger["changed_files"] == [str(tmp_path / "sglang.service")]
    assert bigger["diff"][0]["before"].endswith("holds %d bytes: too big to show)\n" % (5 * 1024 * 1024 + 1))


@pytest.mark.parametrize("field, value, said", [
    ("owner", "no-such-user-here", "the user no-such-user-here does not exist on the host (owner)"),
    ("group", "no-such-group-here", "the group no-such-group-here does not exist on the host (group)"),
    ("mode", "0999", "mode '0999' is not an octal number"),
    ("mode", "77777", "mode '77777' is not a file mode"),
])
def test_a_bad_owner_group_or_mode_of_the_second_file_changes_no_file(tmp_path, field, value, said):
    """N-S5-4: owner, group and mode were checked file by file, after the unit was already rewritten."""
    root = tmp_path / "host"
    before = v1_in_place(root)
    args = three_files(root, unit="v2\n")
    args["files"][1][field] = value
    result = run(tmp_path, **args)
    failed_without_change(root, result, before, str(root / "etc" / "sglang.env"))
    assert said in result["msg"]


def test_content_that_is_not_text_is_refused_by_its_file(tmp_path):
    """A lone surrogate (valid in the arguments' JSON, not in UTF-8) was a bare UnicodeEncodeError, file unnamed."""
    result = run(tmp_path, **files_args(tmp_path, unit="ExecStart=\ud800\n"))
    assert result["failed"] and "%s: its content is not valid text (UTF-8)" % (tmp_path / "sglang.service") \
        in result["msg"]
    assert not (tmp_path / "etc").exists()
