"""library/sglang_hf_token.py: the Hub token as a 0600 file of the service user, only the folders the role owns
created or chowned, the token never in the result, and a second run that changes nothing. Run as Ansible runs a
module (a child process with its arguments file)."""

import json
import os
import stat
import subprocess
import sys

import pytest
import sglang_hf_token as token_module

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODULE = os.path.join(REPO, "library", "sglang_hf_token.py")
TOKEN = "hf_not_a_real_token_0123456789"
USER = "root" if os.getuid() == 0 else os.environ.get("USER", "nobody")


def run(tmp_path, check_mode=False, **args):
    path = tmp_path / "args.json"
    path.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": dict(args, _ansible_check_mode=check_mode)}))
    proc = subprocess.run([sys.executable, MODULE, str(path)], capture_output=True, text=True, timeout=60)
    assert "Traceback" not in proc.stdout + proc.stderr and TOKEN not in proc.stdout + proc.stderr
    return json.loads(proc.stdout)


def mode(path):
    return stat.S_IMODE(os.lstat(path).st_mode)


def test_the_folders_the_role_owns():
    assert token_module.folders("/var/lib/sglang/.cache/hf/token", "/var/lib/sglang", "/etc/sglang") == [
        ("/var/lib/sglang/.cache", "user", 0o700, False), ("/var/lib/sglang/.cache/hf", "user", 0o700, False)]
    assert token_module.folders("/etc/sglang/token", "/var/lib/sglang", "/etc/sglang") == [
        ("/etc/sglang", "root", 0o750, False)]
    # elsewhere: the file's folder and its parent, only when missing (never /etc itself)
    assert token_module.folders("/etc/x/token", "/var/lib/sglang", "/etc/sglang") == [
        ("/etc", "user", 0o700, True), ("/etc/x", "user", 0o700, True)]


def test_a_token_below_home_is_0600_in_0700_folders_and_a_rerun_changes_nothing(tmp_path):
    home = tmp_path / "home"
    home.mkdir(mode=0o755)
    path = home / ".cache" / "huggingface" / "token"
    args = dict(path=str(path), token=TOKEN, owner=USER, home=str(home), etc_dir=str(tmp_path / "etc-sglang"))
    assert run(tmp_path, check_mode=True, **args)["changed"] and not path.exists()
    first = run(tmp_path, **args)
    assert first["changed"] and first["folders"] == [str(home / ".cache"), str(home / ".cache" / "huggingface")]
    assert path.read_text() == TOKEN + "\n" and mode(path) == 0o600 and mode(path.parent) == 0o700
    assert mode(home) == 0o755  # home itself is not the token's to set
    assert not run(tmp_path, **args)["changed"]
    path.chmod(0o644)
    assert run(tmp_path, **args)["changed"] and mode(path) == 0o600
    changed = run(tmp_path, **dict(args, token=TOKEN + "x"))
    assert changed["changed"] and path.read_text() == TOKEN + "x\n"


def test_an_existing_folder_elsewhere_is_left_as_it_is(tmp_path):
    system = tmp_path / "etc"  # stands for /etc: it exists, and is not the role's
    system.mkdir()
    system.chmod(0o755)
    path = system / "x" / "token"
    result = run(tmp_path, path=str(path), token=TOKEN, owner=USER, home=str(tmp_path / "home"),
                 etc_dir=str(tmp_path / "etc-sglang"))
    assert result["folders"] == [str(system / "x")] and mode(system) == 0o755 and mode(system / "x") == 0o700


@pytest.mark.parametrize("what", ["folder", "link"])
def test_a_token_path_that_is_not_a_file_is_refused_by_name(tmp_path, what):
    home = tmp_path / "home"
    (home / "hf").mkdir(parents=True)
    path = home / "hf" / "token"
    if what == "folder":
        path.mkdir()
    else:
        path.symlink_to(tmp_path / "elsewhere")
    result = run(tmp_path, path=str(path), token=TOKEN, owner=USER, home=str(home), etc_dir=str(tmp_path / "e"))
    assert result["failed"] and "is not a regular file" in result["msg"] and "sglang_hf_token_file" in result["msg"]
    assert not (tmp_path / "elsewhere").exists()
