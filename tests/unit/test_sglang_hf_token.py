"""library/sglang_hf_token.py: the Hub token as a 0600 file of the service user, only the folders the role owns
created (never an existing one chowned), the token never in the result, and a second run that changes nothing; a
'..', a link out of the role's folders or another user's file refused before anything changes. Run as Ansible runs a
module (a child process with its arguments file)."""

import json
import os
import pwd
import stat
import subprocess
import sys

import pytest

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



# --- Resolved once, refused before anything changes (issue 36 item 3; ../shared/reference/probe-5.md N-S5-3) ------
# The service user whose owner a wrong chown would show: nobody when the tests run as root (a chown to it is
# visible), else the user running them (then the tests that need another user are skipped).
SERVICE = "nobody" if os.getuid() == 0 else USER
SERVICE_UID = pwd.getpwnam(SERVICE).pw_uid


def tree(root):
    """{relative path: (kind, uid, gid, mode, content)} below root: what 'nothing changed' compares."""
    seen = {}
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            path = os.path.join(folder, name)
            status = os.lstat(path)
            content = open(path, "rb").read() if stat.S_ISREG(status.st_mode) else None
            seen[os.path.relpath(path, root)] = (stat.S_IFMT(status.st_mode), status.st_uid, status.st_gid,
                                                 stat.S_IMODE(status.st_mode), content)
    return seen


def host(tmp_path):
    """WORK/host standing for /: var/lib/sglang (the home), etc/ssl, srv, each root's 0755 as on a host."""
    root = tmp_path / "host"
    for folder in ("var/lib/sglang", "etc/ssl", "srv"):
        (root / folder).mkdir(parents=True)
    for folder, _dirs, _files in os.walk(root):
        os.chmod(folder, 0o755)
    return root


def token_args(root, path, **more):
    return dict(path=str(path), token=TOKEN, owner=SERVICE, home=str(root / "var/lib/sglang"),
                etc_dir=str(root / "etc/sglang"), **more)


@pytest.mark.parametrize("tail", ["var/lib/sglang/../../../etc/ssl/token", "var/lib/sglang/./.cache/token",
                                  "var/lib/sglang//token", "var/lib/sglang/.cache/"])
def test_a_dotdot_or_odd_component_is_refused_and_no_folder_is_chowned(tmp_path, tail):
    """N-S5-3: with '..' the text walk set '.', etc, etc/ssl, var and var/lib to the service user's 0700."""
    root = host(tmp_path)
    before = tree(tmp_path)
    result = run(tmp_path / "host", **token_args(root, "%s/%s" % (root, tail)))
    assert result["failed"] and "sglang_hf_token_file (path=%s/%s)" % (root, tail) in result["msg"]
    assert "give the path in its plain form" in result["msg"] and "Nothing was changed" in result["msg"]
    (tmp_path / "host" / "args.json").unlink()
    assert tree(tmp_path) == before


def test_a_folder_link_out_of_the_roles_folders_is_refused(tmp_path):
    """N-S5-3: WORK/srv/hf -> WORK/etc/ssl wrote WORK/etc/ssl/token."""
    root = host(tmp_path)
    (root / "srv" / "hf").symlink_to(root / "etc" / "ssl")
    result = run(tmp_path, **token_args(root, root / "srv" / "hf" / "token"))
    link = "goes through the symbolic link %s -> %s" % (root / "srv" / "hf", root / "etc" / "ssl")
    assert result["failed"] and link in result["msg"] and "a path without that link" in result["msg"]
    assert not (root / "etc" / "ssl" / "token").exists()


def test_a_folder_link_into_the_roles_folders_is_followed(tmp_path):
    """A link that leads into sglang_home, or into a folder the module is told it owns, is the role's own."""
    root = host(tmp_path)
    (root / "var/lib/sglang/hf").mkdir()
    (root / "srv" / "hf").symlink_to(root / "var/lib/sglang/hf")
    assert run(tmp_path, **token_args(root, root / "srv" / "hf" / "token"))["changed"]
    assert (root / "var/lib/sglang/hf/token").read_text() == TOKEN + "\n"
    (root / "srv" / "models").mkdir()
    (root / "srv" / "m").symlink_to(root / "srv" / "models")
    args = token_args(root, root / "srv" / "m" / "token", owned_dirs=[str(root / "srv" / "models")])
    assert run(tmp_path, **args)["changed"] and (root / "srv" / "models" / "token").exists()


@pytest.mark.parametrize("system", ["/etc", "/", "/usr/share"])
def test_a_home_that_is_a_link_to_a_system_folder_is_refused(tmp_path, system):
    """N-S5-3: a home that is a link to etc/ had .cache made there, the service user's. Against the code before the
    fix this test would write into the real /etc: run it against the fixed module only."""
    home = tmp_path / "home"
    home.symlink_to(system)
    result = run(tmp_path, path=str(home / ".cache" / "huggingface" / "token"), token=TOKEN, owner=SERVICE,
                 home=str(home), etc_dir=str(tmp_path / "etc-sglang"))
    assert result["failed"] and "sglang_home (home=%s) resolves to the system folder %s" % (home, system) \
        in result["msg"]
    assert not os.path.exists(os.path.join(system, ".cache", "huggingface", "token"))


def test_existing_folders_are_never_chowned_and_new_ones_are_the_service_users(tmp_path):
    """N-S5-3: ensure_folder set every existing folder below home to the service user's 0700."""
    root = host(tmp_path)
    (root / "var/lib/sglang/.cache").mkdir(mode=0o755)
    os.chmod(root / "var/lib/sglang/.cache", 0o755)
    before = tree(root)
    result = run(tmp_path, **token_args(root, root / "var/lib/sglang/.cache/huggingface/token"))
    assert result["changed"] and result["folders"] == [str(root / "var/lib/sglang/.cache/huggingface")]
    after = tree(root)
    assert {name: after[name] for name in before} == before  # .cache, the home and the rest as they were
    created = os.lstat(root / "var/lib/sglang/.cache/huggingface")
    assert (created.st_uid, stat.S_IMODE(created.st_mode)) == (SERVICE_UID, 0o700)
    token = os.lstat(root / "var/lib/sglang/.cache/huggingface/token")
    assert (token.st_uid, stat.S_IMODE(token.st_mode)) == (SERVICE_UID, 0o600)


@pytest.mark.skipif(os.getuid() != 0, reason="a file of another user needs root to make")
def test_another_users_token_file_is_never_replaced(tmp_path):
    """N-S5-3: /home/alice/.cache/huggingface/token (alice's own Hub login) was replaced by the service's token."""
    root = host(tmp_path)
    theirs = root / "var/lib/sglang/token"
    theirs.write_text("hf_alices_own\n")
    os.chown(theirs, 65534, 65534)
    result = run(tmp_path, **dict(token_args(root, theirs), owner="root"))
    assert result["failed"] and "is a file of nobody (uid 65534), not of the service user" in result["msg"]
    assert theirs.read_text() == "hf_alices_own\n" and os.lstat(theirs).st_uid == 65534


@pytest.mark.skipif(os.getuid() != 0, reason="a folder of another user needs root to make")
def test_a_folder_of_another_user_gets_no_token(tmp_path):
    """N-S5-3: the check phase accepts /home/alice/.cache/huggingface/token; alice's folder is not the service's."""
    alice = tmp_path / "home" / "alice"
    alice.mkdir(parents=True)
    os.chown(alice, 65534, 65534)
    result = run(tmp_path, path=str(alice / ".cache" / "huggingface" / "token"), token=TOKEN, owner="root",
                 home=str(tmp_path / "var-lib-sglang"), etc_dir=str(tmp_path / "etc-sglang"))
    assert result["failed"] and "%s belongs to nobody (uid 65534)" % alice in result["msg"]
    assert os.listdir(alice) == []


@pytest.mark.skipif(os.getuid() != 0, reason="the service's folder under /etc is root's: making it needs root")
def test_a_missing_service_folder_is_made_roots_with_the_services_group(tmp_path):
    root = host(tmp_path)
    result = run(tmp_path, **token_args(root, root / "etc" / "sglang" / "hf_token"))
    assert result["changed"] and result["folders"] == [str(root / "etc" / "sglang")]
    made = os.lstat(root / "etc" / "sglang")
    assert (made.st_uid, made.st_gid, stat.S_IMODE(made.st_mode)) == (0, pwd.getpwnam(SERVICE).pw_gid, 0o750)


# os.fsync fails with ENOSPC inside the module (a full disk, no root needed): the folders it made go again.
FAULT = """
import errno, os, runpy, sys
def full(fd):
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
os.fsync = full
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
"""


def test_a_full_disk_leaves_no_folder_and_no_temporary_file(tmp_path):
    root = host(tmp_path)
    before = tree(root)
    args_file = tmp_path / "args.json"
    args_file.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": token_args(
        root, root / "var/lib/sglang/.cache/huggingface/token")}))
    proc = subprocess.run([sys.executable, "-c", FAULT, MODULE, str(args_file)], capture_output=True, text=True,
                          timeout=60)
    assert "Traceback" not in proc.stdout + proc.stderr and TOKEN not in proc.stdout + proc.stderr
    result = json.loads(proc.stdout)
    assert result["failed"] and "(path=%s)" % (root / "var/lib/sglang/.cache/huggingface/token") in result["msg"]
    assert "No space left on device" in result["msg"] and "[Errno" not in result["msg"]
    assert tree(root) == before


def test_a_folder_swapped_for_a_link_after_the_check_is_not_followed(tmp_path, monkeypatch):
    """The folder is resolved once and then opened name by name without following links: a folder replaced by a
    link to elsewhere between the check and the write (the service user owns it and could) gets nothing written."""
    import sglang_hf_token as token_module

    root = host(tmp_path)
    hf = root / "var/lib/sglang/hf"
    hf.mkdir()
    checked = token_module.resolve

    def resolve_then_swap(path, roots):
        found = checked(path, roots)
        hf.rmdir()
        hf.symlink_to(root / "etc" / "ssl")
        return found

    monkeypatch.setattr(token_module, "resolve", resolve_then_swap)
    params = dict(token_args(root, hf / "token"), owned_dirs=[])
    with pytest.raises(token_module.Refused, match="%s changed while the module ran" % hf):
        token_module.put_token(params, pwd.getpwnam(SERVICE), pwd.getpwnam(SERVICE).pw_gid, False)
    assert os.listdir(root / "etc" / "ssl") == []


def test_a_token_that_is_not_text_is_refused_without_showing_it(tmp_path):
    root = host(tmp_path)
    result = run(tmp_path, **dict(token_args(root, root / "var/lib/sglang/.cache/token"), token=TOKEN + "\ud800"))
    assert result["failed"] and "sglang_hf_token (token) is not valid text (UTF-8)" in result["msg"]
    assert not (root / "var/lib/sglang/.cache").exists()
