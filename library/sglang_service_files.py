#!/usr/bin/python
"""Ansible module: the server's files (unit, env file, config), rendered on the controller, put in place in one
call - each written only when its content, owner, group or mode differ."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: sglang_service_files
short_description: Put the server's rendered files in place, each only when it differs
description:
  - Makes O(folder) a folder of its owner, group and mode, then compares each of O(files) with what is on the host
    (content, owner, group, mode) and replaces only those that differ, all or nothing. Every file is checked first
    (owner, group, mode, the destination not a folder, its folder there, the same destination not given twice),
    then every changed one is written to a temporary file beside it with its final owner and mode (a full disk
    fails here), and only then are they renamed into place. A failure before the first rename removes the
    temporary files (and the folder, when this call created it) and changes nothing; a rename that fails puts the
    files already renamed back as they were. An error names the file that failed and what to do.
  - The sglang role's deploy transaction (the C(sglang_deploy) action) renders the templates on the controller and
    sends them here in one call, where Ansible's template action costs two module runs a file. The transaction has
    kept the serving files in the backup store before this runs.
  - A file that holds a key (the env file, the config) comes as O(files[].secret_content), which Ansible never logs;
    its diff is never returned.
version_added: "1.2.0"
author: sglang-longctx maintainers (!UNKNOWN)
options:
  folder:
    description: The service's folder under /etc (created when missing, its owner, group and mode set).
    type: dict
    required: true
    suboptions:
      path:
        description: The folder.
        type: path
        required: true
      owner:
        description: Its owner (a user name).
        type: str
        default: root
      group:
        description: Its group (a group name).
        type: str
        required: true
      mode:
        description: Its mode, in octal.
        type: str
        default: "0750"
  files:
    description: The files, in order.
    type: list
    elements: dict
    required: true
    suboptions:
      dest:
        description: Where the file goes. Its folder must exist (or be O(folder)); each destination once.
        type: path
        required: true
      content:
        description: The file's content, for a file without keys (shown with C(--diff)). Exactly one of
          O(files[].content) and O(files[].secret_content).
        type: str
      secret_content:
        description: The content of a file that holds keys (never logged, never in a diff).
        type: str
      owner:
        description: Its owner (a user name).
        type: str
        default: root
      group:
        description: Its group (a group name).
        type: str
        default: root
      mode:
        description: Its mode, in octal.
        type: str
        required: true
notes:
  - Supports check mode (says which files would change) and diff mode (the files without keys).
"""

EXAMPLES = r"""
- name: Put the unit and the env file in place
  sglang_service_files:
    folder: {path: /etc/sglang, group: sglang}
    files:
      - {dest: /etc/systemd/system/sglang.service, content: "{{ unit }}", mode: "0644"}
      - {dest: /etc/sglang/sglang.env, secret_content: "{{ env }}", mode: "0600"}
"""

RETURN = r"""
changed_files:
  description: The files written (or, in check mode, that would be), in order.
  returned: success
  type: list
  elements: str
folder_changed:
  description: Whether the folder was created or its owner, group or mode set.
  returned: success
  type: bool
diff:
  description: Before and after of each changed file without keys (with C(--diff)).
  returned: when diff mode is on and such a file changed
  type: list
  elements: dict
"""

import grp
import os
import pwd
import stat

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.sglang_errors import failures_as_sentences
from ansible.module_utils.sglang_files import (
    NotPlainFile,
    WriteFailed,
    discard,
    matches,
    read_plain,
    replace_all,
    stage,
    write_failed,
)


def ids(owner, group, where):
    """(uid, gid) of a user and a group name; ValueError naming the one that does not exist, and where it is used."""
    try:
        uid = pwd.getpwnam(owner).pw_uid
    except KeyError:
        raise ValueError("%s: the user %s does not exist on the host (owner): create it first, or correct owner"
                         % (where, owner)) from None
    try:
        gid = grp.getgrnam(group).gr_gid
    except KeyError:
        raise ValueError("%s: the group %s does not exist on the host (group): create it first, or correct group"
                         % (where, group)) from None
    return uid, gid


def octal(mode, where):
    try:
        value = int(str(mode), 8)
    except ValueError:
        raise ValueError("%s: mode %r is not an octal number (e.g. \"0640\")" % (where, mode)) from None
    if not 0 <= value <= 0o7777:
        raise ValueError("%s: mode %r is not a file mode (at most 07777)" % (where, mode))
    return value


def folder_state(path, uid, gid, mode):
    """'missing', 'differs' (owner, group or mode) or 'same'; ValueError when something else is there."""
    try:
        status = os.lstat(path)
    except FileNotFoundError:
        return "missing"
    if not stat.S_ISDIR(status.st_mode):
        raise ValueError("folder.path %s is not a folder (a file or a link): move it away, the service's folder goes "
                         "there" % path)
    return "same" if (status.st_uid, status.st_gid, stat.S_IMODE(status.st_mode)) == (uid, gid, mode) else "differs"


def checked(item, folder):
    """One of files, checked before anything is written: {dest, data, mode, owner, content, key}. ValueError naming
    dest and the fix: a relative path, an unknown owner or group, a bad mode, a folder where the file goes (replacing
    it would lose what is in it), or a missing folder (folder, which this call creates, counts as there)."""
    dest = os.path.normpath(item["dest"])
    if not os.path.isabs(dest):
        raise ValueError("files[].dest %s is not an absolute path: give the file's full path" % dest)
    if dest == folder:
        raise ValueError("files[].dest %s is folder.path itself: give a file's path inside it" % dest)
    try:
        data = (item["content"] if item.get("secret_content") is None else item["secret_content"]).encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate from the arguments' JSON: not text any file can hold
        raise ValueError("%s: its content is not valid text (UTF-8): render it from a UTF-8 template" % dest) from None
    owner = ids(item["owner"], item["group"], dest)
    mode = octal(item["mode"], dest)
    if os.path.isdir(dest) and not os.path.islink(dest):
        raise ValueError("%s is a folder: move it away, the file goes there" % dest)
    parent = os.path.dirname(dest)
    if parent != folder and not os.path.isdir(parent):
        raise ValueError("%s: its folder %s does not exist: create it first, or correct dest" % (dest, parent))
    # Two spellings of one file (a folder reached through a link) are one destination: the key is the real folder.
    key = os.path.join(os.path.realpath(parent), os.path.basename(dest))
    return {"dest": dest, "data": data, "mode": mode, "owner": owner, "content": item.get("content"), "key": key}


def no_twice(files):
    """ValueError when two of files go to the same destination: the second would silently win."""
    seen = {}
    for number, item in enumerate(files, 1):
        if item["key"] in seen:
            first = files[seen[item["key"]] - 1]["dest"]
            raise ValueError("%s is given twice (files %d and %d%s): give each destination once"
                             % (item["dest"], seen[item["key"]], number,
                                "" if first == item["dest"] else ", as %s" % first))
        seen[item["key"]] = number


def differs(item):
    """Whether the file on the host is not yet item (content, owner, group, mode). A link or a special file where
    the file goes is replaced by the file (as Ansible's template action does)."""
    try:
        return not matches(item["dest"], item["data"], item["mode"], item["owner"])
    except NotPlainFile:
        return True


def before_text(dest):
    """What --diff shows as before: the file's text, '' when there is none (or a link, a special file: those are
    replaced), a line saying its size when it is too big to show."""
    try:
        return read_plain(dest).decode("utf-8", "replace")
    except FileNotFoundError:
        return ""
    except NotPlainFile:
        status = os.lstat(dest)
        if stat.S_ISREG(status.st_mode):
            return "(%s holds %d bytes: too big to show)\n" % (dest, status.st_size)
        return ""


def make_folder(path, uid, gid, mode):
    """Create the service's folder: owner first, then mode (chown clears setgid, which a mode may hold). One that
    cannot be given its owner and mode is removed again."""
    try:
        os.mkdir(path, 0o700)
    except OSError as error:
        raise WriteFailed("the folder %s could not be created (%s): create it by hand, or correct folder.path"
                          % (path, error.strerror or error)) from None
    try:
        set_folder(path, uid, gid, mode)
    except WriteFailed:
        remove_folder(path)
        raise


def set_folder(path, uid, gid, mode):
    try:
        os.chown(path, uid, gid)
        os.chmod(path, mode)
    except OSError as error:
        raise WriteFailed("the folder %s could not be given its owner and mode (%s): run the task as root "
                          "(become: true)" % (path, error.strerror or error)) from None


def put_all(folder, state, changed):
    """Write the changed files all or nothing: the folder when missing, every file staged beside its destination
    (owner, mode, space), the folder's owner and mode, and only then the renames. A failure leaves the host as it
    was: the temporary files are removed, a folder this call created is removed again, an existing one gets its
    owner and mode back (replace_all puts back the files it had renamed)."""
    path, uid, gid, mode = folder
    before = os.lstat(path) if state == "differs" else None
    if state == "missing":
        make_folder(path, uid, gid, mode)
    staged = []
    try:
        for item in changed:
            staged.append((item["dest"], stage(item["dest"], item["data"], item["mode"], item["owner"])))
        if state == "differs":
            set_folder(path, uid, gid, mode)
        replace_all(staged)
    except BaseException as error:
        discard(staged)  # those replace_all renamed are gone already: removing a missing name is a no-op
        if not getattr(error, "partial", False):
            undo_folder(path, state, before)
        raise


def undo_folder(path, state, before):
    """Put the folder back as it was before this call: removed when this call created it (it is empty again), its
    owner and mode when this call set them (before: its lstat then). Quietly: the first error is the one to report."""
    try:
        if state == "missing":
            os.rmdir(path)
        elif state == "differs":
            os.chown(path, before.st_uid, before.st_gid)
            os.chmod(path, stat.S_IMODE(before.st_mode))
    except OSError:
        pass


def remove_folder(path):
    """Remove the folder this call created, now empty again; one that cannot go stays (the first error is the one
    to report)."""
    try:
        os.rmdir(path)
    except OSError:
        pass


def failure(error, folder):
    """The sentence for a failure: it names a file the task was given (an OSError met while reading one becomes
    'could not be read', with the fix) and says whether the host was left as it was."""
    if isinstance(error, OSError) and not isinstance(error, NotPlainFile):
        error = write_failed(getattr(error, "filename", None) or folder, error, "read")
    tail = ("Part of the new files are in place (named above)." if getattr(error, "partial", False)
            else "Nothing on the host was changed.")
    return "The server's files: %s. %s" % (str(error).rstrip("."), tail)


def main():
    module = AnsibleModule(
        argument_spec={
            "folder": {"type": "dict", "required": True, "options": {
                "path": {"type": "path", "required": True},
                "owner": {"type": "str", "default": "root"},
                "group": {"type": "str", "required": True},
                "mode": {"type": "str", "default": "0750"},
            }},
            "files": {"type": "list", "elements": "dict", "required": True, "options": {
                "dest": {"type": "path", "required": True},
                "content": {"type": "str"},
                "secret_content": {"type": "str", "no_log": True},
                "owner": {"type": "str", "default": "root"},
                "group": {"type": "str", "default": "root"},
                "mode": {"type": "str", "required": True},
            }, "required_one_of": [["content", "secret_content"]],
                "mutually_exclusive": [["content", "secret_content"]]},
        },
        supports_check_mode=True,
    )
    with failures_as_sentences(module, "sglang_service_files"):
        spec = module.params["folder"]
        try:
            path = os.path.normpath(spec["path"])
            uid, gid = ids(spec["owner"], spec["group"], "folder.path %s" % path)
            mode = octal(spec["mode"], path)
            state = folder_state(path, uid, gid, mode)
            files = [checked(item, path) for item in module.params["files"]]
            no_twice(files)
            changed = [item for item in files if differs(item)]
            diffs = [{"before_header": item["dest"], "after_header": item["dest"], "before": before_text(item["dest"]),
                      "after": item["content"]} for item in changed if module._diff and item["content"] is not None]
            if not module.check_mode and (changed or state != "same"):
                put_all((path, uid, gid, mode), state, changed)
        except (OSError, ValueError) as error:
            module.fail_json(msg=failure(error, path))
        result = {"changed": state != "same" or bool(changed), "changed_files": [item["dest"] for item in changed],
                  "folder_changed": state != "same"}
        if diffs:
            result["diff"] = diffs
        module.exit_json(**result)


if __name__ == "__main__":
    main()
