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
