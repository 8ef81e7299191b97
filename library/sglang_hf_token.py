#!/usr/bin/python
"""Ansible module: the Hugging Face Hub token as a file only the service user reads, in folders the role owns."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: sglang_hf_token
short_description: Write the Hub token for the service user only (0600), creating only the folders the role owns
description:
  - Writes O(token) and a newline to O(path), owned by O(owner), mode 0600, through a temporary file that is 0600
    before it takes the name. The token never reaches arguments, the environment, logs or C(--diff); the result does
    not hold it.
  - The path is resolved once (the real path of its folder) and written through folder handles opened without
    following links, so what was checked is what is written. A path with a C(..), C(.) or empty component is refused;
    so is a folder on the way that is a symbolic link to somewhere outside the role's own folders (O(home),
    O(etc_dir), O(owned_dirs)), and a home or an owned folder that is (or resolves to) a system folder.
  - Only missing folders are created (below O(home) or an owned folder, the service user's, 0700; O(etc_dir),
    root, group O(owner), 0750; elsewhere at most the file's folder and its parent, the service user's, 0700). An
    existing folder is never chowned or chmodded - a token file at /etc/x/token must never make /etc the service
    user's - and the file goes only into a folder of root or of the service user.
  - An existing file is replaced only when it is the service user's (the file this module writes); a file of
    another user (their own Hub login) is refused, as is a link, a folder or a device where the file goes. When
    anything fails, the folders this call created are removed again.
version_added: "1.1.0"
author: sglang-longctx maintainers (!UNKNOWN)
options:
  path:
    description: The token file (sglang_hf_token_file; the Hub client's own is HF_HOME/token).
    type: path
    required: true
  token:
    description: The token (sglang_hf_token).
    type: str
    required: true
  owner:
    description: The service user (and the group that reads O(etc_dir)).
    type: str
    required: true
  home:
    description: The service user's home (sglang_home).
    type: path
    required: true
  etc_dir:
    description: The service's folder under /etc.
    type: path
    required: true
  owned_dirs:
    description:
      - Other folders the role owns (e.g. the checkpoint folder), which a token path may reach through a symbolic
        link and below which missing folders are created as below O(home).
    type: list
    elements: path
    default: []
notes:
  - Supports check mode (says what would change).
"""

EXAMPLES = r"""
- name: Write the Hub token for the service user only
  sglang_hf_token:
    path: /var/lib/sglang/.cache/huggingface/token
    token: "{{ sglang_hf_token }}"
    owner: sglang
    home: /var/lib/sglang
    etc_dir: /etc/sglang
"""

RETURN = r"""
folders:
  description: The folders created, outermost first.
  returned: success
  type: list
  elements: str
"""

import errno
import grp
import os
import pwd
import secrets
import stat

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.sglang_errors import failures_as_sentences
from ansible.module_utils.sglang_files import write_failed

# Where a home or an owned folder must not resolve to (lib/sglang_checks/kinds.py refuses the same as text; here it is
# the real path, after the links): folders whose owner the role would change, and the trees below system ones.
# Below /tmp is not refused here: the check phase refuses it because the service cannot see it (PrivateTmp), which
# is not this module's concern.
SYSTEM_DIRS = frozenset(("/", "/opt", "/srv", "/var", "/var/lib", "/var/cache", "/var/log", "/var/backups",
                         "/var/spool", "/usr", "/usr/local", "/mnt", "/media", "/data", "/home", "/root", "/tmp",
                         "/var/tmp"))
SYSTEM_TREES = ("/proc", "/sys", "/dev", "/run", "/boot", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32",
                "/etc", "/usr/bin", "/usr/sbin", "/usr/lib", "/usr/include", "/usr/share")
DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
# A Hub token is ~40 bytes; a file much bigger than the one this module writes is compared by its size alone.
READ_LIMIT = 1 << 16


class Refused(ValueError):
    """A refusal: the message names the argument, its value, what is wrong and the fix."""


def plain(value, argument, knob, folder=False):
    """value when it is an absolute path of plain components (a folder may end in '/'); Refused otherwise. A '..'
    is refused, not resolved: walking its text chowned every folder it passed (/etc, /var) to the service user."""
    text = value.rstrip("/") or "/" if folder else value
    parts = text.split("/")[1:] if text != "/" else []
    if not text.startswith("/") or any(part in ("", ".", "..") for part in parts):
        raise Refused("%s (%s=%s) is not an absolute path of plain components (it holds a '..', '.' or empty "
                      "component, or ends in '/'): give the path in its plain form, e.g. /var/lib/sglang/.cache/"
                      "huggingface/token" % (knob, argument, value))
    return text


def below(path, root):
    return path == root or path.startswith(root.rstrip("/") + "/")


def own_root(value, argument, knob, is_etc=False):
    """The real path of one of the role's own folders; Refused when it is, or resolves to, a system folder (a home
    that is a link to /etc would have the service user's folders made in /etc)."""
    real = os.path.realpath(value)
    # The service's folder is under /etc by design: for it only /etc itself (and the like) is refused.
    inside = real in SYSTEM_TREES if is_etc else any(below(real, tree) for tree in SYSTEM_TREES)
    if real in SYSTEM_DIRS or inside:
        raise Refused("%s (%s=%s) %s the system folder %s, which the role must not write into as the service user: "
                      "give the service its own folder (e.g. /var/lib/sglang)"
                      % (knob, argument, value, "is" if real == value else "resolves to", real))
    return real


def first_link(path):
    """The first folder on path's way that is a symbolic link (for the message), or path itself."""
    walked = ""
    for part in path.strip("/").split("/"):
        walked += "/" + part
        if os.path.islink(walked):
            return walked
    return path


def resolve(path, roots):
    """(real folder that exists, [missing names below it], textual folder of the first missing one). The token's
    folder is resolved once here, through the links of its parent chain; a link on the way must lead into one of
    the role's own folders (roots: real paths)."""
    folder, missing = os.path.dirname(path), []
    while not os.path.lexists(folder):
        missing.insert(0, os.path.basename(folder))
        folder = os.path.dirname(folder)
    real = os.path.realpath(folder)
    if not os.path.isdir(real):
        raise Refused("sglang_hf_token_file (path=%s): %s is not a folder: give a path whose folders are folders"
                      % (path, folder))
    if real != folder and not any(below(real, root) for root in roots):
        link = first_link(folder)
        raise Refused("sglang_hf_token_file (path=%s) goes through the symbolic link %s -> %s, outside the role's own "
                      "folders (%s): give sglang_hf_token_file a path without that link (e.g. below sglang_home), "
                      "or, calling the module yourself, list the link's target in owned_dirs"
                      % (path, link, os.path.realpath(link), ", ".join(roots)))
    return real, missing, folder


def creatable(path, real, missing, roots, etc_real):
    """Refused when the missing folders are not the module's to create: outside the role's own folders, at most the
    file's folder and its parent (as before; deeper is an operator's typo, not a place to build a tree as root)."""
    owned = any(below(os.path.join(real, *missing), root) for root in roots if root != etc_real)
    if not owned and not below(os.path.join(real, *missing), etc_real) and len(missing) > 2:
        raise Refused("sglang_hf_token_file (path=%s): %s does not exist, and the module creates at most the file's "
                      "folder and its parent outside sglang_home: create the folders first, or put the file under "
                      "sglang_home" % (path, os.path.join(real, missing[0])))


def folder_owner_ok(path, real, uid):
    """Refused when the folder the file goes into (or below) belongs to another user than root or the service user:
    /home/alice/.cache/huggingface is alice's, and the service's token has no place there."""
    owner = os.stat(real).st_uid
    if owner not in (0, uid):
        raise Refused("sglang_hf_token_file (path=%s): %s belongs to %s, neither root nor the service user: put the "
                      "token in a folder of the service (the default, sglang_home/.cache/huggingface/token)"
                      % (path, real, user_name(owner)))


def user_name(uid):
    try:
        return "%s (uid %d)" % (pwd.getpwuid(uid).pw_name, uid)
    except KeyError:
        return "uid %d" % uid


def open_real(folder, path):
    """A handle on folder, opened name by name from / without following a link: folder was resolved a moment ago,
    so a link (or a file) on the way now means it was changed since, which is refused rather than followed."""
    fd = os.open("/", DIR_FLAGS)
    walked = ""
    try:
        for name in [part for part in folder.split("/") if part]:
            walked += "/" + name
            child = os.open(name, DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = child
    except OSError as error:
        os.close(fd)
        if error.errno not in (errno.ELOOP, errno.ENOTDIR, errno.ENOENT):
            raise
        raise Refused("sglang_hf_token_file (path=%s): %s changed while the module ran (it is no longer the folder "
                      "it was a moment ago): find out what changes it, and run again" % (path, walked)) from None
    except BaseException:
        os.close(fd)
        raise
    return fd


def make_folders(fd, missing, owners, handles):
    """Create missing (names, outermost first) below the folder of fd, each with its (uid, gid, mode) of owners
    (chown before chmod: it clears setgid). Returns the handle of the innermost folder and [(parent handle, name)]
    of those created; every handle opened is added to handles (the caller closes them). On failure, those created
    are removed again and the error raised."""
    created = []
    try:
        for name, (uid, gid, mode) in zip(missing, owners):  # noqa: B905 - same length; strict= needs Python 3.10
            os.mkdir(name, 0o700, dir_fd=fd)
            created.append((fd, name))
            fd = os.open(name, DIR_FLAGS, dir_fd=fd)
            handles.append(fd)
            os.fchown(fd, uid, gid)
            os.fchmod(fd, mode)
    except BaseException:
        remove_created(created)
        raise
    return fd, created


def remove_created(created):
    """Remove the folders make_folders created (empty: nothing was written in them), innermost first."""
    for parent, name in reversed(created):
        try:
            os.rmdir(name, dir_fd=parent)
        except OSError:
            pass


def inspect(fd, name, content, uid, gid, path):
    """'missing', 'same' or 'differs' for the file at name in fd's folder. Refused for a link, a folder or a device
    there, and for a file of another user. The marker of 'written by this module' is the owner: the module has always
    written the file as the service user's, 0600, and the Hub client reads the file whole as the token, so a marker
    in the content would break it, and an xattr is lost by copies and backups and missing on some file systems. A
    file of another user is theirs (their own `hf auth login`), and replacing it would take their token away; a
    file of the service user is the service's own token, which this module keeps current."""
    try:
        status = os.stat(name, dir_fd=fd, follow_symlinks=False)
    except FileNotFoundError:
        return "missing"
    if not stat.S_ISREG(status.st_mode):
        raise Refused("sglang_hf_token_file (path=%s) is not a regular file (a folder, a link or a device): give "
                      "sglang_hf_token_file a file's path" % path)
    if status.st_uid != uid:
        raise Refused("sglang_hf_token_file (path=%s) is a file of %s, not of the service user: the module replaces "
                      "only the token file it wrote; move that file away, or give sglang_hf_token_file another path"
                      % (path, user_name(status.st_uid)))
    if (status.st_gid, stat.S_IMODE(status.st_mode), status.st_size) != (gid, 0o600, len(content)):
        return "differs"
    return "same" if read_at(fd, name) == content else "differs"


def read_at(fd, name):
    handle = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0), dir_fd=fd)
    try:
        return os.read(handle, READ_LIMIT)
    finally:
        os.close(handle)


def write_at(fd, name, content, uid, gid):
    """Replace name in fd's folder with content, 0600 and the service user's before it takes the name (owner first:
    a chmod before the chown would be undone by it), flushed to disk; the temporary file is removed on failure."""
    tmp = ".%s.%s.tmp" % (name, secrets.token_hex(6))
    handle = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0), 0o600,
                     dir_fd=fd)
    try:
        try:
            view = memoryview(content)
            while view:
                view = view[os.write(handle, view):]
            os.fchown(handle, uid, gid)
            os.fchmod(handle, 0o600)
            os.fsync(handle)
        finally:
            os.close(handle)
        os.replace(tmp, name, src_dir_fd=fd, dst_dir_fd=fd)
    except BaseException:
        try:
            os.unlink(tmp, dir_fd=fd)
        except OSError:
            pass
        raise


def owners_of(real, missing, etc_real, user, group):
    """(uid, gid, mode) of each missing folder: the service's folder under /etc is root's, group the service user,
    0750 (the config is read through it); every other one the service user's, 0700."""
    result, folder = [], real
    for name in missing:
        folder = os.path.join(folder, name)
        result.append((0, group, 0o750) if folder == etc_real else (user.pw_uid, user.pw_gid, 0o700))
    return result


def put_token(p, user, group, check_mode):
    """(changed, folders created) for the token file; Refused or OSError (the caller names the file)."""
    path = plain(p["path"], "path", "sglang_hf_token_file")
    home = plain(p["home"], "home", "sglang_home", folder=True)
    etc_dir = plain(p["etc_dir"], "etc_dir", "the service's folder", folder=True)
    if below(os.path.dirname(path), home) and not os.path.isdir(home):
        raise Refused("sglang_home (home=%s) does not exist: the role creates the service user's home before the "
                      "token; run the whole role, or create it" % home)
    roots = [own_root(home, "home", "sglang_home"), own_root(etc_dir, "etc_dir", "the service's folder", True)]
    roots += [own_root(plain(d, "owned_dirs", "owned_dirs", folder=True), "owned_dirs", "owned_dirs")
              for d in p["owned_dirs"]]
    real, missing, text = resolve(path, roots)
    creatable(path, real, missing, roots, roots[1])
    folder_owner_ok(path, real, user.pw_uid)
    created_text = [os.path.join(text, *missing[:count]) for count in range(1, len(missing) + 1)]
    try:
        content = (p["token"] + "\n").encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate from the arguments' JSON; the value is a secret, never shown
        raise Refused("sglang_hf_token (token) is not valid text (UTF-8): give the token as the Hub shows it") from None
    handles = [open_real(real, path)]
    try:
        if missing and check_mode:
            return True, created_text
        fd, created = make_folders(handles[0], missing, owners_of(real, missing, roots[1], user, group), handles)
        try:
            state = inspect(fd, os.path.basename(path), content, user.pw_uid, user.pw_gid, path)
            if state != "same" and not check_mode:
                write_at(fd, os.path.basename(path), content, user.pw_uid, user.pw_gid)
        except BaseException:
            remove_created(created)
            raise
        return bool(created) or state != "same", created_text
    finally:
        for handle in handles:
            os.close(handle)


def main():
    module = AnsibleModule(
        argument_spec={
            "path": {"type": "path", "required": True},
            "token": {"type": "str", "required": True, "no_log": True},
            "owner": {"type": "str", "required": True},
            "home": {"type": "path", "required": True},
            "etc_dir": {"type": "path", "required": True},
            "owned_dirs": {"type": "list", "elements": "path", "default": []},
        },
        supports_check_mode=True,
    )
    with failures_as_sentences(module, "sglang_hf_token"):
        p = module.params
        try:
            user = pwd.getpwnam(p["owner"])
        except KeyError:
            module.fail_json(msg="sglang_user (owner=%s) does not exist on the host: the role creates it before the "
                                 "token; run the whole role, or create the user" % p["owner"])
        try:
            group = grp.getgrnam(p["owner"]).gr_gid
        except KeyError:
            group = user.pw_gid
        try:
            changed, created = put_token(p, user, group, module.check_mode)
        except Refused as refusal:
            module.fail_json(msg="The Hub token file: %s. Nothing was changed." % refusal)
        except OSError as error:
            failed = write_failed(p["path"], error, name="sglang_hf_token_file (path=%s)" % p["path"])
            module.fail_json(msg="The Hub token file: %s. Nothing was changed." % str(failed).rstrip("."))
        module.exit_json(changed=changed, folders=created if changed else [])


if __name__ == "__main__":
    main()
