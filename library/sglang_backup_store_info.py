#!/usr/bin/python
"""Ansible module: read the SGLang backup store (what sglang_backup_store keeps) without changing it."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: sglang_backup_store_info
short_description: List the states kept in an SGLang service's backup store, and which one is live and last proven
description:
  - Reads the store that C(sglang_backup_store) keeps (C(<dir>/<UTC timestamp>/) folders with C(backup.json)
    manifests), newest first, and compares each entry with the live files to tell which entry holds the live state.
  - An entry whose C(backup.json) is not a manifest (C(null), a list, a string, not JSON, no C(files), a
    C(files) naming a file the folder lacks) is left out of C(entries) and listed in C(corrupt) with the problem,
    with a warning naming it; the other entries are listed as ever. Keys of a manifest this module does not know
    pass through to C(entries) unchanged.
  - Changes nothing and takes no lock (entries and manifests appear whole, by rename).
version_added: "1.2.0"
author: sglang-longctx maintainers (!UNKNOWN)
options:
  dir:
    description: The store's folder; a missing folder is an empty store.
    type: path
    required: true
  files:
    description: The live files of one state, by full path (the unit first); an entry keeps them by base name.
    type: list
    elements: path
    required: true
notes:
  - Supports check mode.
"""

EXAMPLES = r"""
- name: Which states were proven
  sglang_backup_store_info:
    dir: /var/backups/sglang
    files: [/etc/systemd/system/sglang.service, /etc/sglang/sglang.env, /etc/sglang/sglang.yaml]
  register: store
"""

RETURN = r"""
entries:
  description: The entries, newest first, each its manifest plus name, path and current (it is the live state).
  type: list
  elements: dict
  returned: always
current:
  description: The entry holding the live state, or null.
  type: str
  returned: always
last_proven:
  description: The entry that served, proven, most recently (the newest C(proven.at)) and is not the live state
    (what a rollback and the rescue restore), or null.
  type: str
  returned: always
lines:
  description: One line per entry, for people - its name, context, proof, SGLang release, C([serving now]) and
    C([rollback default]), and why it was kept.
  type: list
  elements: str
  returned: always
corrupt:
  description: Entries skipped for a corrupt manifest, each C(name), C(path) and C(problem).
  type: list
  elements: dict
  returned: always
skipped:
  description: Odd items the store did not make, each C(path) and C(problem); empty here, as this module cleans nothing.
  type: list
  elements: dict
  returned: always
interrupted_restore:
  description: Whether a restore was killed between its renames and not yet finished (the next
    sglang_backup_store run finishes it before anything else; until then C(current) may be null).
  type: bool
  returned: always
"""

import os

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.sglang_errors import failures_as_sentences
from ansible.module_utils.sglang_store import Store, store_facts


def main():
    module = AnsibleModule(argument_spec={
        "dir": {"type": "path", "required": True},
        "files": {"type": "list", "elements": "path", "required": True},
    }, supports_check_mode=True)
    with failures_as_sentences(module, "sglang_backup_store_info"):
        try:
            facts = store_facts(Store(module.params["dir"], module.params["files"]))
        except OSError as error:
            module.fail_json(msg="Cannot read the backup store %s: %s." % (module.params["dir"], error))
        for bad in facts["corrupt"]:
            module.warn("Backup store entry %s skipped: %s." % (bad["path"], bad["problem"]))
        if facts["interrupted_restore"]:
            module.warn("A restore was killed between its renames (%s): the next sglang_backup_store run finishes it "
                        "before anything else." % os.path.join(module.params["dir"], ".restore-journal.json"))
        module.exit_json(changed=False, **facts)


if __name__ == "__main__":
    main()
