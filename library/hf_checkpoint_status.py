#!/usr/bin/python
"""Ansible module: is a downloaded safetensors checkpoint complete? Optionally mark it so."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: hf_checkpoint_status
short_description: Check a safetensors checkpoint is complete (every indexed file present, none truncated); mark it
description:
  - Reads C(model.safetensors.index.json) and checks every file of its C(weight_map), or the single
    C(model.safetensors) when there is no index, plus C(config.json).
  - A file's expected size comes from the file itself, as safetensors lays it out - 8 bytes of header length N,
    N bytes of JSON header, then the tensor data up to the largest C(data_offsets) end - so a truncated file is
    found without asking the Hub. The data sizes must also add up to the index's C(metadata.total_size).
  - Partial files (C(*.part) left by hf_download, C(.cache/huggingface/download/*.incomplete) by the Hub client)
    make it incomplete.
  - With C(marker), writes that file (JSON) once the checkpoint is complete; a changed repository or revision
    rewrites it. An incomplete checkpoint never gets a marker, and an existing one is removed.
version_added: "1.1.0"
author: sglang-longctx maintainers (!UNKNOWN)
options:
  path:
    description: The checkpoint folder.
    type: path
    required: true
  marker:
    description: Name of the marker file written in I(path) when complete (empty - only check).
    type: str
    default: ""
  repo:
    description: Repository recorded in the marker.
    type: str
    default: ""
  revision:
    description: Revision recorded in the marker.
    type: str
    default: ""
  fail_incomplete:
    description: >-
      Fail, naming what is missing and how to resume, when the checkpoint is not complete (after a download: the
      next run resumes it).
    type: bool
    default: false
notes:
  - Supports check mode (reports what it would write).
"""

EXAMPLES = r"""
- name: Is the checkpoint complete?
  hf_checkpoint_status:
    path: /srv/models/kimi-k2.6
  register: ckpt

- name: Mark it complete after the download
  hf_checkpoint_status:
    path: /srv/models/kimi-k2.6
    marker: .sglang-download-complete
    repo: moonshotai/Kimi-K2.6
    revision: main
"""

RETURN = r"""
complete:
  description: Every expected file is present at its full size, nothing is half-written, config.json exists.
  returned: always
  type: bool
files:
  description: Number of weight files expected.
  returned: always
  type: int
missing:
  description: Expected files that are absent.
  returned: always
  type: list
  elements: str
truncated:
  description: Files shorter (or longer) than their own header says, as "name (have/expected bytes)".
  returned: always
  type: list
  elements: str
partial:
  description: Files left half-written by an interrupted download.
  returned: always
  type: list
  elements: str
problems:
  description: Everything that keeps the checkpoint from being complete, in words.
  returned: always
  type: list
  elements: str
marked:
  description: The marker is (now) present.
  returned: always
  type: bool
"""

import json
import os
import struct

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.sglang_errors import failures_as_sentences
from ansible.module_utils.sglang_files import write_atomic

INDEX = "model.safetensors.index.json"
# safetensors refuses a header over 100 MB (safetensors' MAX_HEADER_SIZE); a larger length is not a header.
MAX_HEADER = 100_000_000
LFS_POINTER = b"version https://git-lfs"


def expected_size(handle):
    """(file size, tensor bytes) a safetensors file must have, from its own header."""
    head = handle.read(8)
    if head.startswith(LFS_POINTER[:8]) and (head + handle.read(len(LFS_POINTER) - 8)).startswith(LFS_POINTER):
        raise ValueError("a git-lfs pointer file, not the weights: the download fetched the pointer; fetch the "
                         "file itself (git lfs pull, or remove it and run again)")
    if len(head) < 8:
        raise ValueError("shorter than the 8-byte header length")
    (length,) = struct.unpack("<Q", head)
    size = os.fstat(handle.fileno()).st_size
    if length > min(MAX_HEADER, size - 8):
        raise ValueError("its header length says %d bytes, more than %s: not a safetensors file"
                         % (length, "the file holds" if length <= MAX_HEADER else "safetensors allows"))
    header = json.loads(handle.read(length))
    if not isinstance(header, dict):
        raise ValueError("its header is not a JSON object")
    ends = [t["data_offsets"][1] for name, t in header.items() if name != "__metadata__"]
    if not all(isinstance(end, int) and not isinstance(end, bool) and end >= 0 for end in ends):
        raise ValueError("its header has a tensor whose data_offsets are not byte offsets")
    data = max(ends) if ends else 0
    return 8 + length + data, data


def expected_files(path):
    """(weight files, index total_size or None), or raises OSError/ValueError when there is nothing to read."""
    index = os.path.join(path, INDEX)
    if os.path.exists(index):
        with open(index, "rb") as handle:
            data = json.loads(handle.read(MAX_HEADER + 1))
        return index_files(data)
    return ["model.safetensors"], None


def index_files(data):
    """(weight files, total_size or None) from a parsed index; ValueError saying what is malformed."""
    if not isinstance(data, dict):
        raise ValueError("it is not a JSON object")
    weight_map = data.get("weight_map")
    if not isinstance(weight_map, dict):
        raise ValueError("it has no weight_map object (tensor name -> file)")
    if not weight_map:
        raise ValueError("its weight_map is empty: it names no weight file")
    files = set(weight_map.values())
    for name in files:
        # The index comes from the Hub, a peer: its file names stay inside the checkpoint folder.
        if not isinstance(name, str) or not name or name.startswith("/") or ".." in name.split("/") \
                or "\x00" in name:
            raise ValueError("its weight_map names %r, not a file inside the checkpoint folder" % (name,))
    metadata = data.get("metadata", {})
    total = metadata.get("total_size") if isinstance(metadata, dict) else None
    if total is not None and (not isinstance(total, int) or isinstance(total, bool) or total < 0):
        raise ValueError("its metadata.total_size is %r, not a byte count" % (total,))
    return sorted(files), total


def check(path):
    result = {"complete": False, "files": 0, "missing": [], "truncated": [], "partial": [], "problems": []}
    if not os.path.exists(os.path.join(path, "config.json")):
        result["problems"].append("config.json is missing")
    try:
        files, total = expected_files(path)
    except (OSError, ValueError, KeyError) as err:
        result["problems"].append("%s cannot be read: %s" % (INDEX, err))
        return result
    result["files"] = len(files)
    data_sum = 0
    for name in files:
        full = os.path.join(path, name)
        if not os.path.exists(full):
            result["missing"].append(name)
            continue
        try:
            with open(full, "rb") as handle:
                want, data = expected_size(handle)
        except (OSError, ValueError, KeyError, IndexError, TypeError, AttributeError) as err:
            result["truncated"].append("%s (header unreadable: %s)" % (name, err))
            continue
        have = os.path.getsize(full)
        data_sum += data
        if have != want:
            result["truncated"].append("%s (%d/%d bytes)" % (name, have, want))
    for root, _dirs, names in os.walk(path):
        result["partial"] += sorted(os.path.relpath(os.path.join(root, n), path)
                                    for n in names if n.endswith((".part", ".incomplete")))
    if result["missing"]:
        result["problems"].append("%d of %d weight files missing: %s" % (
            len(result["missing"]), len(files), ", ".join(result["missing"][:5])))
    if result["truncated"]:
        result["problems"].append("not at their full size: " + ", ".join(result["truncated"][:5]))
    if result["partial"]:
        result["problems"].append("half-written by the Hub client: " + ", ".join(result["partial"][:5]))
    if total is not None and not result["missing"] and not result["truncated"] and data_sum != total:
        result["problems"].append("the files hold %d tensor bytes but %s says %d" % (data_sum, INDEX, total))
    result["complete"] = not result["problems"]
    return result


def main():
    module = AnsibleModule(argument_spec={"path": {"type": "path", "required": True},
                                          "marker": {"type": "str", "default": ""},
                                          "repo": {"type": "str", "default": ""},
                                          "revision": {"type": "str", "default": ""},
                                          "fail_incomplete": {"type": "bool", "default": False}},
                           supports_check_mode=True)
    with failures_as_sentences(module, "hf_checkpoint_status"):
        params = module.params
        result = check(params["path"])
        changed, marked = False, False
        if params["marker"]:
            marker = os.path.join(params["path"], params["marker"])
            content = json.dumps({"repo": params["repo"], "revision": params["revision"], "files": result["files"]},
                                 sort_keys=True) + "\n"
            try:
                with open(marker) as handle:
                    current = handle.read()
            except OSError:
                current = None
            if result["complete"]:
                marked = True
                if current != content:
                    changed = True
                    if not module.check_mode:
                        write_atomic(marker, content)
            elif current is not None:
                changed = True  # a marker over an incomplete checkpoint is a lie: remove it
                if not module.check_mode:
                    os.unlink(marker)
        if params["fail_incomplete"] and not result["complete"]:
            module.fail_json(
                msg="%s is not a complete copy of %s@%s: %s. Run again to resume the download; for a gated model set "
                    "sglang_hf_token; check free space where the weights go."
                    % (params["path"], params["repo"], params["revision"], "; ".join(result["problems"])),
                changed=changed, **result)
        module.exit_json(changed=changed, marked=marked, **result)


if __name__ == "__main__":
    main()
