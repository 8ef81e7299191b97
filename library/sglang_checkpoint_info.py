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
  - RV(files_sha256) stands for the files the server loads (the paths, sizes and modification times of the files in
    the folder and every subfolder, from stat alone). Another checkpoint put at the same path changes it, and the
    role writes it into the service's env file, so that SGLang restarts on it (the config.json digest alone misses
    new weights under the same config).
  - Fails with one sentence naming O(knob) and the fix when C(config.json) is missing or not a JSON object, when the
    index's C(metadata) is not an object or its C(total_size) not a whole positive byte count (NaN, Infinity,
    negative, absurd), and naming the file when a weights file is a link that reaches nothing (dangling or a loop).
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
  description: The sha256 of the regular files' paths, sizes and modification times, in the folder and every
    subfolder (not their bytes, by stat only, for hundreds of GB), without dot files and folders (the role's own)
    and unfinished C(.part) downloads.
  returned: with path, when found
  type: str
"""

import glob
import hashlib
import json
import math
import os
import stat

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.sglang_errors import failures_as_sentences

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


# A total_size past this is no checkpoint's (the largest are a few TiB): a typo or a hostile index, refused.
MAX_CHECKPOINT_BYTES = 1 << 50
# The files the loader reads as weights (SGLang's DefaultModelLoader: *.safetensors, else *.bin, else *.pt; .pth
# for consolidated checkpoints): a link among them that reaches no file is named, not passed over.
WEIGHTS = (".safetensors", ".bin", ".pt", ".pth")
# More files than any checkpoint holds (Kimi K2: 64 shards and a handful of others): the walk stops there.
MAX_FILES = 100_000
MAX_DEPTH = 16


def index_total_size(index):
    """The safetensors index's metadata.total_size (bytes), None when the index gives none; ValueError naming the
    index and what is wrong with its shape or the number (not finite, not a whole positive count, absurd)."""
    value = read_json(index, index)[0]
    if not isinstance(value, dict):
        raise ValueError("%s is not a JSON object" % index)
    if "metadata" not in value:
        return None
    metadata = value["metadata"]
    if not isinstance(metadata, dict):
        raise ValueError("%s: metadata is %s, not an object such as {\"total_size\": 16060522496}"
                         % (index, json.dumps(metadata)[:80]))
    if "total_size" not in metadata:
        return None
    total = metadata["total_size"]
    if (isinstance(total, bool) or not isinstance(total, (int, float)) or not math.isfinite(total) or total <= 0
            or total != int(total) or total > MAX_CHECKPOINT_BYTES):
        raise ValueError("%s: metadata.total_size is %s, not a checkpoint's size in bytes (a whole number above 0 "
                         "and at most %d)" % (index, json.dumps(total)[:80], MAX_CHECKPOINT_BYTES))
    return int(total)


def weight_size(path):
    """The size of a weights file, following a link (a Hub cache's snapshot); ValueError naming the file when the
    link is dangling or loops."""
    try:
        return os.stat(path).st_size
    except OSError as error:
        raise ValueError("%s is a link that reaches no file (%s): the loader cannot read it; restore the file it "
                         "points to or download the checkpoint again" % (path, error.strerror or error)) from None


def checkpoint_gib(path):
    index = os.path.join(path, "model.safetensors.index.json")
    if os.path.lexists(index):
        total = index_total_size(index)
        if total is not None:
            return total / 1073741824
    return sum(weight_size(each) for each in sorted(glob.glob(os.path.join(path, "*.safetensors")))) / 1073741824


def checkpoint_files(path):
    """The checkpoint's files as paths relative to `path`, in every subfolder: SGLang's weight loader globs the top
    level only (*.safetensors, *.bin, *.pt; consolidated*.safetensors for the Mistral format), but the model's own
    code (trust_remote_code), a processor or a tokenizer may read a subfolder, and a changed subfolder
    (original/consolidated.pth, a new tokenizer/) is another checkpoint at the same path. So every subfolder, down
    to any depth, without following a linked folder (a loop) and without the role's own dot files and folders
    (.sglang-download*, huggingface_hub's .cache/) or unfinished *.part downloads. ValueError past MAX_FILES."""
    found = []
    for folder, subfolders, names in os.walk(path, onerror=_raise):
        relative = os.path.relpath(folder, path)
        deep = relative.count(os.sep) >= MAX_DEPTH  # no checkpoint nests deeper: the walk goes no further
        subfolders[:] = [] if deep else sorted(each for each in subfolders if not each.startswith("."))
        for name in names:
            if name.startswith(".") or name.endswith(".part"):
                continue
            found.append(name if relative == "." else os.path.join(relative, name))
            if len(found) > MAX_FILES:
                raise ValueError("%s holds more than %d files, more than any checkpoint" % (path, MAX_FILES))
    return sorted(found)


def _raise(error):
    raise error


def files_sha256(path):
    """What stands for the checkpoint's files without reading them: each regular file's relative path, size and mtime
    (a symlink followed: a Hub cache's snapshot), in path order, hashed (checkpoint_files: which ones). A dangling or
    looping link to weights is named (ValueError); any other dangling link loads nothing and is left out. A folder
    without subfolders gives the digest it gave before subfolders were covered (the same lines)."""
    lines = []
    for name in checkpoint_files(path):
        try:
            found = os.stat(os.path.join(path, name))
        except OSError:
            if name.endswith(WEIGHTS):
                weight_size(os.path.join(path, name))  # raises, naming the file
            continue
        if stat.S_ISREG(found.st_mode):
            lines.append("%s\t%d\t%d\n" % (name, found.st_size, found.st_mtime_ns))
    return hashlib.sha256("".join(lines).encode("utf-8", "surrogateescape")).hexdigest()


def os_words(error):
    """An error in words that name the file: '<file>: <reason>' for an OSError that has one, else its message."""
    if isinstance(error, OSError) and error.strerror:
        return "%s: %s" % (error.filename, error.strerror) if error.filename else error.strerror
    return str(error)


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
                      % (knob, os_words(error), path)) from None
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
