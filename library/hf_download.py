#!/usr/bin/python
"""Ansible module: download a Hugging Face Hub repository into a folder, resuming partial files."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: hf_download
short_description: Download a Hugging Face Hub model repository into a folder, resuming what an earlier run left
description:
  - Resolves the revision to a commit (C(/api/models/<repo>/revision/<revision>?blobs=true), which lists every
    file with its size), then fetches each file from C(/<repo>/resolve/<commit>/<file>).
  - A file is written to C(<file>.part) and renamed only once it has the size the Hub lists; a C(.part) left by an
    interrupted run is continued with an HTTP C(Range) request. Files already present at their listed size are kept.
  - Written because huggingface_hub 2.x no longer resumes across processes (each process downloads to its own
    temporary file and deletes it on failure, huggingface_hub PR 4228).
  - The token is read from I(token_file) on the host, so it never appears in the module's arguments, the
    environment or the logs; it is sent to the Hub only, never along a redirect to a storage host.
version_added: "1.1.0"
author: sglang-longctx maintainers
options:
  repo:
    description: Model repository, C(org/name).
    type: str
    required: true
  revision:
    description: Branch, tag or commit.
    type: str
    default: main
  path:
    description: Folder to download into.
    type: path
    required: true
  token_file:
    description: File holding the Hub token (absent or empty - anonymous).
    type: path
  endpoint:
    description: The Hub, or a mirror of it.
    type: str
    default: https://huggingface.co
  timeout:
    description: Seconds without data before a request fails.
    type: int
    default: 60
notes:
  - Supports check mode (lists what would be fetched).
"""

EXAMPLES = r"""
- name: Fetch the weights
  hf_download:
    repo: moonshotai/Kimi-K2.6
    revision: main
    path: /srv/models/kimi-k2.6
    token_file: /var/lib/sglang/.cache/huggingface/token
  become: true
  become_user: sglang
"""

RETURN = r"""
commit:
  description: The commit the revision resolved to.
  returned: success
  type: str
fetched:
  description: Files downloaded (or, in check mode, to download) by this run.
  returned: success
  type: list
  elements: str
resumed:
  description: Files continued from a partial download, with the byte offset they resumed at.
  returned: success
  type: dict
"""

import json
import os
import urllib.error
import urllib.parse
import urllib.request

from ansible.module_utils.basic import AnsibleModule

CHUNK = 8 * 2**20


def request(url, token, timeout, offset=0):
    req = urllib.request.Request(url)
    if token:
        # Unredirected: a redirect to a storage host (signed URL) must not carry the token.
        req.add_unredirected_header("Authorization", "Bearer " + token)
    if offset:
        req.add_header("Range", "bytes=%d-" % offset)
    return urllib.request.urlopen(req, timeout=timeout)  # noqa: S310 - the endpoint is an https/http URL option


def listing(endpoint, repo, revision, token, timeout):
    """(commit, {file: size or None}) of the revision."""
    url = "%s/api/models/%s/revision/%s?blobs=true" % (endpoint, repo, urllib.parse.quote(revision, safe=""))
    with request(url, token, timeout) as response:
        info = json.load(response)
    return info["sha"], {s["rfilename"]: s.get("size") for s in info.get("siblings", [])}


def fetch(url, dest, size, token, timeout):
    """Download url to dest through dest.part, continuing a partial one; returns the offset resumed at."""
    part = dest + ".part"
    offset = os.path.getsize(part) if os.path.exists(part) else 0
    if size is not None and offset > size:
        offset = 0  # not a prefix of this file: start again
    resumed = offset
    if size is None or offset < size:
        try:
            response = request(url, token, timeout, offset)
        except urllib.error.HTTPError as err:
            if err.code != 416:  # 416: nothing left to send
                raise
            response = None
        if response is not None:
            with response:
                if offset and response.status != 206:
                    offset, resumed = 0, 0  # the server ignored the range: the whole file follows
                with open(part, "ab" if offset else "wb") as handle:
                    while True:
                        chunk = response.read(CHUNK)
                        if not chunk:
                            break
                        handle.write(chunk)
    have = os.path.getsize(part)
    if size is not None and have != size:
        raise ValueError("%s: got %d of %d bytes (run again to resume)" % (os.path.basename(dest), have, size))
    os.replace(part, dest)
    return resumed


def main():
    module = AnsibleModule(argument_spec={
        "repo": {"type": "str", "required": True}, "revision": {"type": "str", "default": "main"},
        "path": {"type": "path", "required": True}, "token_file": {"type": "path"},
        "endpoint": {"type": "str", "default": "https://huggingface.co"}, "timeout": {"type": "int", "default": 60},
    }, supports_check_mode=True)
    p = module.params
    token = None
    if p["token_file"] and os.path.exists(p["token_file"]):
        with open(p["token_file"]) as handle:
            token = handle.read().strip() or None
    endpoint = p["endpoint"].rstrip("/")
    try:
        commit, files = listing(endpoint, p["repo"], p["revision"], token, p["timeout"])
    except (urllib.error.URLError, OSError, ValueError, KeyError) as err:
        hint = " (a gated or private model needs sglang_hf_token)" if getattr(err, "code", None) in (401, 403) else ""
        module.fail_json(msg="Cannot list %s@%s on %s: %s%s" % (p["repo"], p["revision"], endpoint, err, hint))
    todo = [name for name, size in sorted(files.items())
            if not (os.path.exists(os.path.join(p["path"], name))
                    and (size is None or os.path.getsize(os.path.join(p["path"], name)) == size))]
    if module.check_mode:
        module.exit_json(changed=bool(todo), commit=commit, fetched=todo, resumed={})
    resumed = {}
    for name in todo:
        dest = os.path.join(p["path"], name)
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        url = "%s/%s/resolve/%s/%s" % (endpoint, p["repo"], commit, urllib.parse.quote(name))
        try:
            offset = fetch(url, dest, files[name], token, p["timeout"])
        except (urllib.error.URLError, OSError, ValueError) as err:
            module.fail_json(msg="Downloading %s from %s failed: %s. The partial file is kept; run again to resume."
                             % (name, p["repo"], err), fetched=todo[:todo.index(name)], resumed=resumed)
        if offset:
            resumed[name] = offset
    module.exit_json(changed=bool(todo), commit=commit, fetched=todo, resumed=resumed)


if __name__ == "__main__":
    main()
