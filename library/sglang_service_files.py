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
    (content, owner, group, mode) and replaces only those that differ, each through a temporary file in its own
    folder that has its owner and mode before it takes the name.
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
        description: Where the file goes. Its folder must exist.
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

import grp  # noqa: E402 - ansible-test wants the imports after the documentation
import os  # noqa: E402
import pwd  # noqa: E402

from ansible.module_utils.basic import AnsibleModule  # noqa: E402
from ansible.module_utils.sglang_errors import failures_as_sentences  # noqa: E402
from ansible.module_utils.sglang_files import (  # noqa: E402
    NotPlainFile,
    ensure_folder,
    matches,
    read_plain,
    write_atomic,
)


def ids(owner, group):
    """(uid, gid) of a user and a group name; ValueError naming the one that does not exist."""
    try:
        uid = pwd.getpwnam(owner).pw_uid
    except KeyError:
        raise ValueError("the user %s does not exist on the host" % owner) from None
    try:
        gid = grp.getgrnam(group).gr_gid
    except KeyError:
        raise ValueError("the group %s does not exist on the host" % group) from None
    return uid, gid


def octal(mode, where):
    try:
        value = int(str(mode), 8)
    except ValueError:
        raise ValueError("%s: mode %r is not an octal number (e.g. \"0640\")" % (where, mode)) from None
    if not 0 <= value <= 0o7777:
        raise ValueError("%s: mode %r is not a file mode (at most 07777)" % (where, mode))
    return value


def put(item, check_mode):
    """(changed, before text) for one file; written when changed, unless check_mode. A link or a special file where
    the file goes is replaced by the file (as Ansible's template action does); a folder is refused: replacing it
    would lose what is in it."""
    secret = item.get("secret_content") is not None
    data = (item["secret_content"] if secret else item["content"]).encode("utf-8")
    uid, gid = ids(item["owner"], item["group"])
    mode = octal(item["mode"], item["dest"])
    try:
        if matches(item["dest"], data, mode, (uid, gid)):
            return False, None
        before = read_plain(item["dest"]).decode("utf-8", "replace") if os.path.exists(item["dest"]) else ""
    except NotPlainFile:
        if os.path.isdir(item["dest"]) and not os.path.islink(item["dest"]):
            raise ValueError("%s is a folder: move it away, the file goes there" % item["dest"]) from None
        before = ""
    if not check_mode:
        write_atomic(item["dest"], data, mode, (uid, gid))
    return True, before


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
        folder, changed_files, diffs = module.params["folder"], [], []
        try:
            uid, gid = ids(folder["owner"], folder["group"])
            folder_changed = ensure_folder(folder["path"], uid, gid, octal(folder["mode"], folder["path"]),
                                           module.check_mode)
            for item in module.params["files"]:
                changed, before = put(item, module.check_mode)
                if not changed:
                    continue
                changed_files.append(item["dest"])
                if module._diff and item.get("content") is not None:
                    diffs.append({"before_header": item["dest"], "after_header": item["dest"], "before": before,
                                  "after": item["content"]})
        except (OSError, ValueError) as error:
            module.fail_json(msg="The server's files: %s" % error)
        result = {"changed": folder_changed or bool(changed_files), "changed_files": changed_files,
                  "folder_changed": folder_changed}
        if diffs:
            result["diff"] = diffs
        module.exit_json(**result)


if __name__ == "__main__":
    main()
