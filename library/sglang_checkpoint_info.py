#!/usr/bin/python
"""Ansible module: what the planner reads of a checkpoint on the host (config.json, its sha256, the size)."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: sglang_checkpoint_info
short_description: Read a checkpoint's config.json, its sha256 and the checkpoint's size for the KV-pool planner
description:
  - Reads C(config.json) (a regular file of at most 16 MiB, JSON of bounded depth) and its sha256, part of the
    calibration key.
  - The size is the safetensors index's C(metadata.total_size), else the sum of the C(*.safetensors) files' sizes.
  - RV(files_sha256) stands for the files the server loads (the folder's names, sizes and modification times, from
    stat alone). Another checkpoint put at the same path changes it, and the role writes it into the service's env
    file, so that SGLang restarts on it (the config.json digest alone misses new weights under the same config).
  - Fails with one sentence naming O(knob) and the fix when C(config.json) is missing or not a JSON object.
  - Changes nothing.
version_added: "1.1.0"
author: sglang-longctx maintainers (!UNKNOWN)
options:
  path:
    description: The checkpoint folder (or O(checkpoints)).
    type: path
  knob:
    description: The variable that names the folder, for the messages.
    type: str
    default: sglang_model_path
  repo_knob:
    description: The variable that names the folder's Hub repository, for the messages.
    type: str
    default: sglang_model_hf_repo
  checkpoints:
    description: Several checkpoints read in one call (the model's and its draft's), each its own O(path), O(knob)
      and O(repo_knob); RV(checkpoints) has each one's result by its knob.
    type: list
    elements: dict
    suboptions:
      path:
        description: The checkpoint folder.
        type: path
        required: true
      knob:
        description: The variable that names it.
        type: str
        required: true
      repo_knob:
        description: The variable that names its Hub repository.
        type: str
        required: true
      hf_repo:
        description: The Hub repository the role's download step fetches it from; not read here (accepted so that
          the role passes its list of checkpoints as it is).
        type: str
      hf_revision:
        description: That repository's revision; not read here either.
        type: str
  missing_ok:
    description: When C(config.json) is not there, return RV(found=false) instead of failing (a look before the
      deploy fetches the checkpoint).
    type: bool
    default: false
notes:
  - Supports check mode (it only reads).
"""

EXAMPLES = r"""
- name: Read the model for the planner
  sglang_checkpoint_info:
    path: /srv/models/kimi-k2.6
  register: checkpoint
"""

RETURN = r"""
checkpoints:
  description: With O(checkpoints), each one found by its knob, its C(config), C(sha256) and C(gib).
  returned: with checkpoints
  type: dict
missing:
  description: With O(checkpoints) and O(missing_ok), the knobs of those whose C(config.json) is not there.
  returned: with checkpoints
  type: list
  elements: str
found:
  description: Whether C(config.json) is there (false only with O(missing_ok); nothing else is returned then).
  returned: with path
  type: bool
config:
  description: config.json's content.
  returned: with path, when found
  type: dict
sha256:
  description: config.json's sha256.
  returned: with path, when found
  type: str
gib:
  description: The checkpoint's size in GiB (the index's total_size, else the safetensors files').
  returned: with path, when found
  type: float
files_sha256:
  description: The sha256 of the folder's regular files' names, sizes and modification times (not their bytes, by
    stat only, for hundreds of GB), without the role's own dot files and unfinished C(.part) downloads.
  returned: with path, when found
  type: str
"""

import glob  # noqa: E402 - ansible-test wants the imports after the documentation
import hashlib  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import stat  # noqa: E402

from ansible.module_utils.basic import AnsibleModule  # noqa: E402
from ansible.module_utils.sglang_errors import failures_as_sentences  # noqa: E402

# A config.json or an index is a few KiB to a few MiB; anything larger is not one.
LIMIT = 16 << 20


def read_json(path, what):
    """(the parsed JSON, its sha256) of a regular file of at most LIMIT bytes, or ValueError naming what is wrong.
    A symlink is followed (a Hub cache's snapshot links its files to blobs); what it reaches must be a regular file
    (O_NONBLOCK: a FIFO does not hang the open)."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ValueError("%s is not a regular file" % what)
        with os.fdopen(fd, "rb") as handle:
            fd = None
            data = handle.read(LIMIT + 1)
    finally:
        if fd is not None:
            os.close(fd)
    if len(data) > LIMIT:
        raise ValueError("%s is larger than %d MiB" % (what, LIMIT >> 20))
    try:
        value = json.loads(data)
    except (ValueError, RecursionError) as error:
        raise ValueError("%s is not JSON (%s)" % (what, str(error)[:200])) from None
    return value, hashlib.sha256(data).hexdigest()


def checkpoint_gib(path):
    index = os.path.join(path, "model.safetensors.index.json")
    if os.path.exists(index):
        value = read_json(index, index)[0]
        total = (value.get("metadata") or {}).get("total_size") if isinstance(value, dict) else None
        if isinstance(total, (int, float)) and not isinstance(total, bool) and total >= 0:
            return total / 1073741824
    return sum(os.path.getsize(each) for each in glob.glob(os.path.join(path, "*.safetensors"))) / 1073741824


def files_sha256(path):
    """What stands for the checkpoint's files without reading them: each regular file's name, size and mtime (a
    symlink followed: a Hub cache's snapshot), in name order, hashed; the role's own files (.sglang-download*, other
    dot files) and unfinished downloads (*.part) left out."""
    lines = []
    for name in sorted(os.listdir(path)):
        if name.startswith(".") or name.endswith(".part"):
            continue
        try:
            found = os.stat(os.path.join(path, name))
        except OSError:
            continue  # a dangling link loads nothing
        if stat.S_ISREG(found.st_mode):
            lines.append("%s\t%d\t%d\n" % (name, found.st_size, found.st_mtime_ns))
    return hashlib.sha256("".join(lines).encode("utf-8", "surrogateescape")).hexdigest()


class Refused(Exception):
    """A checkpoint that cannot be read: the message names its knob and the fix."""


def read_checkpoint(path, knob, repo_knob, missing_ok):
    """{found, config, sha256, gib} of one checkpoint folder ({found: false} when config.json is missing and
    missing_ok), or Refused."""
    config_path = os.path.join(path, "config.json")
    if not os.path.lexists(config_path):
        if missing_ok:
            return {"found": False}
        raise Refused("%s: %s is missing. Pre-stage the checkpoint there, or name its Hub repository (%s, and "
                      "sglang_hf_token for a gated model) to fetch it." % (knob, config_path, repo_knob))
    try:
        config, sha256 = read_json(config_path, config_path)
        if not isinstance(config, dict):
            raise ValueError("%s is not a JSON object" % config_path)
        gib = checkpoint_gib(path)
        files = files_sha256(path)
    except (OSError, ValueError) as error:
        raise Refused("%s: %s. Check the checkpoint in %s (a complete copy of its repository)."
                      % (knob, getattr(error, "strerror", None) or error, path)) from None
    return {"found": True, "config": config, "sha256": sha256, "gib": gib, "files_sha256": files}


def main():
    module = AnsibleModule(argument_spec={"path": {"type": "path"},
                                          "knob": {"type": "str", "default": "sglang_model_path"},
                                          "repo_knob": {"type": "str", "default": "sglang_model_hf_repo"},
                                          "checkpoints": {"type": "list", "elements": "dict", "options": {
                                              "path": {"type": "path", "required": True},
                                              "knob": {"type": "str", "required": True},
                                              "repo_knob": {"type": "str", "required": True},
                                              "hf_repo": {"type": "str"}, "hf_revision": {"type": "str"}}},
                                          "missing_ok": {"type": "bool", "default": False}},
                           required_one_of=[["path", "checkpoints"]], mutually_exclusive=[["path", "checkpoints"]],
                           supports_check_mode=True)
    with failures_as_sentences(module, "sglang_checkpoint_info"):
        p = module.params
        try:
            if p["checkpoints"] is None:
                module.exit_json(changed=False, **read_checkpoint(p["path"], p["knob"], p["repo_knob"],
                                                                  p["missing_ok"]))
            read = {item["knob"]: read_checkpoint(item["path"], item["knob"], item["repo_knob"], p["missing_ok"])
                    for item in p["checkpoints"]}
        except Refused as refused:
            module.fail_json(msg=str(refused))
        found = {knob: {key: value for key, value in each.items() if key != "found"}
                 for knob, each in read.items() if each["found"]}
        module.exit_json(changed=False, checkpoints=found, missing=sorted(set(read) - set(found)))


if __name__ == "__main__":
    main()
