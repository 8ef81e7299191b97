#!/usr/bin/python
"""Ansible module: has the host stayed as a role's last complete run left it? Or record that it has (the record
lets a re-run with nothing to do skip the role's apt, repository and template work)."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: host_role_record
short_description: Check, or write, a role's record of the host state its last complete run left
description:
  - With C(state=check) (the default), reads the record at O(path) and compares it with the host as it is now and
    with the role's inputs now. The host is C(unchanged) only when the digest of O(inputs) is the recorded one, the
    running kernel is the recorded one, every recorded file has its recorded SHA-256 (or is still absent), and every
    recorded Debian package is installed at its recorded version with its recorded selection (C(hold) or
    C(install)). Anything else, a missing or unreadable record included, gives C(unchanged=false) and says why in
    RV(reasons), so the role runs in full.
  - With C(state=record), writes the record of the host as it is now, for the files O(files) and the packages
    O(packages), with O(facts) kept for the next check. The record is replaced whole or not at all.
  - The record holds digests and versions only, never the inputs themselves.
version_added: "1.1.0"
author: sglang-longctx maintainers (!UNKNOWN)
options:
  path:
    description: The record file (its folder must exist).
    type: path
    required: true
  inputs:
    description: Everything the role was asked (its variables, the distribution); compared by SHA-256 digest.
    type: raw
    required: true
  state:
    description: C(check) reads and compares; C(record) writes.
    type: str
    choices: [check, record]
    default: check
  files:
    description:
      - With C(state=record), the files whose content the role decided (a missing one is recorded absent).
      - A folder is recorded by the names in it, and each regular file in it by its content.
    type: list
    elements: path
    default: []
  packages:
    description: With C(state=record), the Debian packages the role installed.
    type: list
    elements: str
    default: []
  facts:
    description: With C(state=record), values the role derived that a check returns (e.g. the resolved version).
    type: dict
    default: {}
notes:
  - Supports check mode (C(state=record) writes nothing in check mode).
"""

EXAMPLES = r"""
- name: Read whether the host is as the driver role's last run left it
  host_role_record:
    path: /var/lib/nvidia-driver-role-record.json
    inputs: "{{ {'vars': my_role_vars, 'os': ansible_facts['distribution']} }}"
  register: driver_record

- name: Record the host after a complete run
  host_role_record:
    path: /var/lib/nvidia-driver-role-record.json
    inputs: "{{ {'vars': my_role_vars, 'os': ansible_facts['distribution']} }}"
    state: record
    files: [/etc/apt/preferences.d/nvidia-driver]
    packages: [nvidia-open]
    facts: {deb_version: 580.95.05-1}
  when: not driver_record.unchanged
"""

RETURN = r"""
unchanged:
  description: With C(state=check), the host and the inputs are as recorded.
  returned: always
  type: bool
reasons:
  description: With C(state=check), why the host is not as recorded (empty when it is).
  returned: always
  type: list
  elements: str
facts:
  description: The facts stored with the record (with C(state=check), only when unchanged).
  returned: always
  type: dict
recorded_at:
  description: When the record was written (UTC, ISO 8601), or null.
  returned: always
  type: str
"""

import datetime
import hashlib
import json
import os

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.sglang_errors import failures_as_sentences
from ansible.module_utils.sglang_files import load_json, sha256, write_atomic

VERSION = 1


def digest(value):
    """SHA-256 of value as canonical JSON (sorted keys), so that equal inputs always give equal digests."""
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode("utf-8")).hexdigest()


def file_digest(path):
    """SHA-256 of a file's content, or None when there is no such file. For a folder, of its sorted names: a file
    added to /etc/apt/sources.list.d (another source for the same repository?) is a change too."""
    if os.path.isdir(path):
        return hashlib.sha256("\n".join(sorted(os.listdir(path))).encode("utf-8")).hexdigest()
    return sha256(path)


def with_members(paths):
    """paths, each folder followed by the regular files in it: a folder's digest sees a file added or removed, a
    member's sees an edit (an apt source given NVIDIA's URL under another Signed-By keeps its name)."""
    out = []
    for path in paths:
        out.append(path)
        if os.path.isdir(path):
            out.extend(os.path.join(path, name) for name in sorted(os.listdir(path))
                       if os.path.isfile(os.path.join(path, name)))
    return list(dict.fromkeys(out))


def parse_dpkg(text):
    """dpkg-query -W -f '${Package}|${Version}|${Status}\\n' output -> {package: [version, selection]} for the
    installed ones (selection: hold or install); a package dpkg knows but has not installed is left out."""
    found = {}
    for line in text.splitlines():
        parts = line.split("|")
        if len(parts) == 3 and parts[2].endswith(" ok installed"):
            found[parts[0]] = [parts[1], parts[2].split(" ", 1)[0]]
    return found


def differences(record, inputs_digest, kernel, files_now, packages_now):
    """Why the host is not as the record says (empty: it is). files_now / packages_now: the current state of the
    record's own files and packages, as file_digest and parse_dpkg give them."""
    if not isinstance(record, dict) or record.get("version") != VERSION:
        return ["the record is not one this module wrote"]
    reasons = []
    if record.get("inputs") != inputs_digest:
        reasons.append("the role's inputs changed")
    if record.get("kernel") != kernel:
        reasons.append("the running kernel is %s, recorded %s" % (kernel, record.get("kernel")))
    for path, recorded in sorted((record.get("files") or {}).items()):
        now = files_now.get(path)
        if now != recorded:
            reasons.append("%s %s" % (path, "is gone" if now is None else "appeared" if recorded is None
                                      else "was changed"))
    for name, recorded in sorted((record.get("packages") or {}).items()):
        now = packages_now.get(name)
        if now != recorded:
            reasons.append("%s is %s, recorded %s" % (name, " ".join(now) if now else "not installed",
                                                      " ".join(recorded)))
    return reasons


def read_record(path):
    """The record, or None when it is missing or unreadable (either way the role runs in full): a small regular
    file of JSON, read without following a link and without waiting on a FIFO."""
    try:
        return load_json(path)
    except (OSError, ValueError):
        return None


def shape_problem(record):
    """Why a JSON object is not a record this module wrote (fields of the wrong type), or None."""
    files, packages, facts = record.get("files"), record.get("packages"), record.get("facts")
    if files is not None and not (isinstance(files, dict) and all(isinstance(v, str) or v is None
                                                                  for v in files.values())):
        return "its files are not {path: sha256}"
    if packages is not None and not (isinstance(packages, dict) and all(
            isinstance(v, list) and all(isinstance(i, str) for i in v) for v in packages.values())):
        return "its packages are not {name: [version, status]}"
    if facts is not None and not isinstance(facts, dict):
        return "its facts are not an object"
    return None


def installed(module, names):
    if not names:
        return {}
    # rc 1 when a name is unknown to dpkg: the known ones are still printed
    _rc, out, _err = module.run_command(["dpkg-query", "-W", "-f=${Package}|${Version}|${Status}\n"] + list(names))
    return parse_dpkg(out)


def main():
    module = AnsibleModule(
        argument_spec={"path": {"type": "path", "required": True},
                       "inputs": {"type": "raw", "required": True},
                       "state": {"type": "str", "choices": ["check", "record"], "default": "check"},
                       "files": {"type": "list", "elements": "path", "default": []},
                       "packages": {"type": "list", "elements": "str", "default": []},
                       "facts": {"type": "dict", "default": {}}},
        supports_check_mode=True)
    with failures_as_sentences(module, "host_role_record"):
        params = module.params
        kernel = os.uname().release
        if params["state"] == "check":
            record = read_record(params["path"])
            if record is None:
                module.exit_json(changed=False, unchanged=False, reasons=["no record of a complete run"], facts={},
                                 recorded_at=None)
            if not isinstance(record, dict):  # JSON, but not a record: differences() names it
                record = {}
            odd = shape_problem(record)
            if odd:
                module.exit_json(changed=False, unchanged=False, facts={}, recorded_at=None,
                                 reasons=["the record %s is not one this module wrote (%s)" % (params["path"], odd)])
            files_now = {path: file_digest(path) for path in record.get("files") or {}}
            packages_now = installed(module, sorted(record.get("packages") or {}))
            reasons = differences(record, digest(params["inputs"]), kernel, files_now, packages_now)
            module.exit_json(changed=False, unchanged=not reasons, reasons=reasons,
                             facts=record.get("facts", {}) if not reasons else {},
                             recorded_at=record.get("recorded_at"))

        state = {"version": VERSION, "inputs": digest(params["inputs"]), "kernel": kernel,
                 "files": {path: file_digest(path) for path in with_members(params["files"])},
                 "packages": installed(module, params["packages"]),
                 "facts": params["facts"]}
        missing = sorted(set(params["packages"]) - set(state["packages"]))
        if missing:
            module.fail_json(msg="Cannot record the host: %s not installed. Nothing was written." % ", ".join(missing))
        old = read_record(params["path"])
        same = isinstance(old, dict) and {k: v for k, v in old.items() if k != "recorded_at"} == state
        folder = os.path.dirname(params["path"]) or "."
        if not os.path.isdir(folder) or os.path.isdir(params["path"]):
            module.fail_json(msg="Cannot record the host at %s: %s. Give a file path in an existing folder."
                             % (params["path"], "it is a folder" if os.path.isdir(params["path"])
                                else "its folder %s does not exist" % folder))
        if not same and not module.check_mode:
            # datetime.UTC is Python 3.11+; the hosts' Python can be older (Ubuntu 22.04: 3.10)
            now = datetime.datetime.now(datetime.timezone.utc)  # noqa: UP017
            state["recorded_at"] = now.isoformat(timespec="seconds")
            write_atomic(params["path"], json.dumps(state, indent=1, sort_keys=True) + "\n", mode=0o644)
        module.exit_json(changed=not same, unchanged=True, reasons=[], facts=params["facts"],
                         recorded_at=(old or {}).get("recorded_at") if same else state.get("recorded_at"))


if __name__ == "__main__":
    main()
