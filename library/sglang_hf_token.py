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
  - Only folders the role owns are created or chowned - those below O(home) that lead to the file (the service user's,
    0700), the service's folder O(etc_dir) when the file is there (root, group O(owner), 0750), and elsewhere the
    file's folder and its parent when they are missing (the service user's, 0700). An existing folder elsewhere is
    left as it is - a token file at /etc/x/token must never make /etc the service user's.
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
  description: The folders created or set (owner, group, mode), outermost first.
  returned: success
  type: list
  elements: str
"""

import grp  # noqa: E402 - ansible-test wants the imports after the documentation
import os  # noqa: E402
import pwd  # noqa: E402

from ansible.module_utils.basic import AnsibleModule  # noqa: E402
from ansible.module_utils.sglang_errors import failures_as_sentences  # noqa: E402
from ansible.module_utils.sglang_files import NotPlainFile, ensure_folder, matches, write_atomic  # noqa: E402


def dirs_below(home, path):
    """The folders strictly below `home` that lead to `path` (itself included), outermost first; [] when `path` is
    not below `home`."""
    home, path = home.rstrip("/"), path.rstrip("/")
    if not path.startswith(home + "/"):
        return []
    parts = path[len(home) + 1:].split("/")
    return [home + "/" + "/".join(parts[:count]) for count in range(1, len(parts) + 1)]


def folders(path, home, etc_dir):
    """[(folder, owner 'user' or 'root', mode, only when missing)] the token file's folders need, outermost first."""
    folder = os.path.dirname(path.rstrip("/"))
    below = dirs_below(home, folder)
    if below:
        return [(d, "user", 0o700, False) for d in below]
    if folder.rstrip("/") == etc_dir.rstrip("/"):
        return [(folder, "root", 0o750, False)]
    return [(os.path.dirname(folder), "user", 0o700, True), (folder, "user", 0o700, True)]


def main():
    module = AnsibleModule(
        argument_spec={
            "path": {"type": "path", "required": True},
            "token": {"type": "str", "required": True, "no_log": True},
            "owner": {"type": "str", "required": True},
            "home": {"type": "path", "required": True},
            "etc_dir": {"type": "path", "required": True},
        },
        supports_check_mode=True,
    )
    with failures_as_sentences(module, "sglang_hf_token"):
        p = module.params
        try:
            user = pwd.getpwnam(p["owner"])
        except KeyError:
            module.fail_json(msg="sglang_user %s does not exist on the host: the role creates it before the token"
                             % p["owner"])
        try:
            group = grp.getgrnam(p["owner"]).gr_gid
        except KeyError:
            group = user.pw_gid
        set_folders = []
        try:
            for folder, who, mode, only_missing in folders(p["path"], p["home"], p["etc_dir"]):
                if only_missing and os.path.lexists(folder):
                    continue
                uid, gid = (user.pw_uid, user.pw_gid) if who == "user" else (0, group)
                if ensure_folder(folder, uid, gid, mode, module.check_mode):
                    set_folders.append(folder)
            content = (p["token"] + "\n").encode("utf-8")
            try:
                write = not matches(p["path"], content, 0o600, (user.pw_uid, user.pw_gid))
            except NotPlainFile:
                raise ValueError("%s is not a regular file (a folder, a link or a device): give sglang_hf_token_file "
                                 "a file's path" % p["path"]) from None
            if write and not module.check_mode:
                write_atomic(p["path"], content, 0o600, (user.pw_uid, user.pw_gid))
        except (OSError, ValueError) as error:
            module.fail_json(msg="The Hub token file %s (sglang_hf_token_file): %s" % (p["path"], error))
        module.exit_json(changed=bool(set_folders) or write, folders=set_folders)


if __name__ == "__main__":
    main()
