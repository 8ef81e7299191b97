#!/usr/bin/python
"""Ansible module: download a Hugging Face Hub repository into a folder, resuming partial files. This file is the
module's shell (its documentation, arguments and exit); the work is in module_utils/sglang_download_*.py. Its action
(action_plugins/hf_download.py) runs it unchanged and keeps the download's marks in the controller's run record."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: hf_download
short_description: Download a Hugging Face Hub model repository into a folder, resuming what an earlier run left
description:
  - Resolves the revision to a commit (C(/api/models/<repo>/revision/<revision>?blobs=true), which lists every
    file with its size), then fetches the files from C(/<repo>/resolve/<commit>/<file>), I(connections) of them
    side by side (a CDN gives one connection about 40 MB/s; many fill the link).
  - Each file's bytes are hashed as they arrive (a resumed C(.part)'s prefix first), so a whole file is checked
    against the listed sha256 (a plain file, not in Git LFS, against its git blob id) without being read again. A
    file the listing gives no size and hash for is refused by name before anything is fetched, unless
    I(allow_unverified) names it.
  - A listed name this module keeps for itself (anything ending C(.part), a top-level C(.sglang-*)) is refused.
  - A redirect is followed only to https (and to http only from an http I(endpoint)); an answer shorter than the
    length its server announced keeps its C(.part) for the next run. A full disk names the file, what its C(.part)
    keeps, and how to resume.
  - A file is written to C(<file>.part) and renamed only once it has the size the Hub lists; a C(.part) left by an
    interrupted run is continued with an HTTP C(Range) request. Files already present at their listed size are kept.
  - Written because huggingface_hub 2.x no longer resumes across processes (each process downloads to its own
    temporary file and deletes it on failure, huggingface_hub PR 4228).
  - The token is read from I(token_file) on the host, so it never appears in the module's arguments, the
    environment or the logs; it is sent to the Hub only, never along a redirect to a storage host.
  - With I(poll), one call downloads for about that many seconds and returns how far the whole download has come
    (RV(bytes_done) of RV(bytes_total), this call's rate, RV(progress)) with RV(done=false); the next call
    continues the C(.part) where it stopped. Meant to run as a retried task (C(until) with C(retries)), so that
    callback_plugins/sglang_progress.py prints one line per try; a failure fails that try, which ends the loop.
version_added: "1.1.0"
author: sglang-longctx maintainers (!UNKNOWN)
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
  connections:
    description:
      - Files downloaded side by side, one HTTP connection and at most 8 MiB in memory each (1 to 64).
    type: int
    default: 16
  max_bytes_per_s:
    description:
      - A cap on the download's rate in bytes per second, all connections together (0 - none), so that a download
        beside a live server (a new revision fetched while the old one serves) leaves it the link.
    type: int
    default: 0
  poll:
    description:
      - Seconds one call downloads before it returns with RV(done=false), leaving the rest to the next call.
      - A file from a server that ignored the C(Range) of a resumed request is finished in the same call
        (stopping would lose it again).
      - Unset, one call downloads everything (no progress until it ends).
      - While the early download (I(background)) runs, a call fetches nothing, it waits up to I(poll) seconds for it
        to end and returns its progress (RV(joined)); once it has ended (done, failed, or killed by a reboot), the
        call continues its C(.part) files itself.
    type: int
  allow_unverified:
    description:
      - Files fetched although the listing gives no size and sha256 (or, for a plain file, git blob id) for them,
        by name or shell pattern (C(*) also crosses C(/)); such a file could be cut off or altered unnoticed.
      - Any other file without them is refused by name before anything is fetched. The Hub lists both for every
        file; a mirror may not.
    type: list
    elements: str
    default: []
  background:
    description:
      - The early download, started before the driver, CUDA and the runtime build so that it runs beside them.
        Fetches every file but the weights (C(config.json), the index, the tokenizer; the plan reads them) before it
        returns, then the weights in a detached process (its own session, as Ansible's C(async_wrapper) starts one)
        that holds the folder's lock and notes its progress in C(<path>/.sglang-download.json) every 2 s.
      - Returns at once; a folder already being downloaded (the lock is held) or marked complete by
        C(hf_checkpoint_status) starts nothing. Nothing starts in check mode.
      - The folder must exist. One downloader at a time per folder - C(flock) on the folder, released when its process
        dies, so a reboot leaves no stale lock and the next call resumes its C(.part) files.
    type: bool
    default: false
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

- name: Start fetching the weights beside the other work (config.json before it returns)
  hf_download:
    repo: moonshotai/Kimi-K2.6
    path: /srv/models/kimi-k2.6
    background: true
  become: true
  become_user: sglang

- name: Fetch the weights, reporting bytes done / total every 30 s
  hf_download:
    repo: moonshotai/Kimi-K2.6
    path: /srv/models/kimi-k2.6
    poll: 30
  register: fetch
  until: fetch is failed or fetch.done
  retries: 2880
  delay: 1
"""

RETURN = r"""
commit:
  description: The commit the revision resolved to.
  returned: success
  type: str
fetched:
  description: Files completed (or, in check mode, to download) by this call.
  returned: success
  type: list
  elements: str
resumed:
  description: Files continued from a partial download, with the byte offset they resumed at.
  returned: success
  type: dict
done:
  description: Whether every file of the revision is now there at its listed size (always true without I(poll)).
  returned: success
  type: bool
bytes_done:
  description: Bytes of the revision's files on disk, whole files and C(.part) files together.
  returned: success
  type: int
bytes_total:
  description: Bytes of the revision's files, as the Hub lists them (files listed without a size count as 0).
  returned: success
  type: int
files_done:
  description: Files of the revision there at their listed size.
  returned: success
  type: int
files_total:
  description: Files of the revision.
  returned: success
  type: int
connections:
  description: The files this call downloaded side by side at most.
  returned: success
  type: int
bytes_fetched:
  description: Bytes this call downloaded (what a resume fetched again shows here).
  returned: success
  type: int
bytes_per_s:
  description: This call's download rate (bytes written / seconds spent downloading), null when it wrote nothing.
  returned: success
  type: float
download_fetched:
  description:
    - Bytes the whole download fetched, the early download's and every call's, once it is done (its ledger is then
      removed); else this call's.
  returned: success
  type: int
download_started:
  description: When the download began (epoch seconds; the early start when there was one), null without a ledger.
  returned: success
  type: float
started:
  description: With I(background), whether this call started the early download.
  returned: with background
  type: bool
running:
  description: With I(background), whether the early download is running now (started by this call or before).
  returned: with background
  type: bool
pid:
  description: With I(background), the early download's process id, null when none runs.
  returned: with background
  type: int
joined:
  description: The early download's process id when this call only waited for it (it holds the folder's lock).
  returned: when the early download runs
  type: int
progress:
  description: One line for people, without a clock (RV(progress_clock) asks the callback for the task's).
  returned: success
  type: str
  sample: "downloading moonshotai/Kimi-K2.6: 112.4 of 595.2 GiB (19%), 14/64 files, 412.0 MiB/s (about 20m left)"
progress_clock:
  description: C(task) - callback_plugins/sglang_progress.py appends the time since the task began on this host.
  returned: success
  type: str
"""


import os
import time

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.sglang_download_call import Failed, download, progress_line, read_token, survey
from ansible.module_utils.sglang_download_early import join_early, start_early
from ansible.module_utils.sglang_download_fetch import MAX_CONNECTIONS
from ansible.module_utils.sglang_download_records import (
    LEDGER,
    add_to_ledger,
    number,
    on_disk,
    read_ledger,
    settle,
    take_lock,
)
from ansible.module_utils.sglang_errors import failures_as_sentences


def refusal(p):
    """The sentence refusing the first bad argument (naming it, its role variable and the fix), or None."""
    if not 1 <= p["connections"] <= MAX_CONNECTIONS:
        return ("connections=%r (sglang_download_connections) must be 1 to %d: the files downloaded side by side, "
                "e.g. 16 for a fast link." % (p["connections"], MAX_CONNECTIONS))
    if p["max_bytes_per_s"] < 0:
        return ("max_bytes_per_s=%r (sglang_download_max_mb_per_s) must be 0 (no cap) or a rate in bytes per second, "
                "e.g. 200000000." % p["max_bytes_per_s"])
    bad = [each for each in p["allow_unverified"] if not each.strip() or "\x00" in each]
    if bad:
        return ("allow_unverified (sglang_download_allow_unverified) holds %r, not a file name: give the names (or "
                "patterns such as '*.bin') of the files to fetch without a listed size and hash, or [] for none."
                % bad[0])
    if p["poll"] is not None and p["poll"] < 1:
        return ("poll=%r must be at least 1 (seconds one call downloads), or unset to download all in one call."
                % p["poll"])
    return None


def main():
    module = AnsibleModule(argument_spec={
        "repo": {"type": "str", "required": True}, "revision": {"type": "str", "default": "main"},
        "path": {"type": "path", "required": True}, "token_file": {"type": "path"},
        "endpoint": {"type": "str", "default": "https://huggingface.co"}, "timeout": {"type": "int", "default": 60},
        "poll": {"type": "int"}, "connections": {"type": "int", "default": 16},
        "background": {"type": "bool", "default": False}, "max_bytes_per_s": {"type": "int", "default": 0},
        "allow_unverified": {"type": "list", "elements": "str", "default": []},
    }, supports_check_mode=True)
    with failures_as_sentences(module, "hf_download"):
        refused = refusal(module.params)
        if refused:
            module.fail_json(msg=refused)
        try:
            result = run(module.params, module.check_mode, module.warn)
        except Failed as err:
            module.fail_json(msg=str(err), fetched=err.fetched, resumed=err.resumed)
        module.exit_json(**result)


def run(p, check_mode, warn):
    """The module's result for one call: the early start (background), a join of the early download while it
    holds the folder's lock, what would be fetched (check mode), or a download for up to `poll` seconds; Failed."""
    endpoint = p["endpoint"].rstrip("/")
    token = read_token(p["token_file"])
    if p["background"] and not check_mode:
        return start_early(p, endpoint, token, warn)
    start = time.monotonic()
    deadline = start + p["poll"] if p["poll"] else None
    lock = None
    if os.path.isdir(p["path"]) and not check_mode:
        lock = take_lock(p["path"], p["poll"])
        if lock is None:
            return join_early(p, start)
    found = survey(p, endpoint, token)
    commit, files, todo = found.commit, found.files, found.todo
    total = sum(size or 0 for size in files.values())
    if check_mode:
        return {"changed": bool(todo), "commit": commit, "fetched": todo, "resumed": {}, "done": True,
                "bytes_done": on_disk(p["path"], files)[0], "bytes_total": total,
                "files_done": len(files) - len(todo), "files_total": len(files), "bytes_per_s": None,
                "progress": "%d of %d files to download from %s" % (len(todo), len(files), p["repo"])}
    ledger = read_ledger(p["path"]) if lock else {}
    if ledger.get("commit") != commit:
        ledger = {"commit": commit, "repo": p["repo"]}
    ledger = settle(p["path"], ledger, files)
    if ledger.get("state") == "failed":
        warn("The early download of %s stopped: %s. This run continues it." % (p["repo"], ledger.get("error")))
    try:
        fetched, resumed, written = download(p, endpoint, token, found, todo, deadline, warn)
    except Failed as err:
        if lock:
            add_to_ledger(p["path"], ledger, 0, state="joined")
        raise err
    stopped = len(fetched) < len(todo)
    if lock:
        ledger = add_to_ledger(p["path"], ledger, written, state="joined", pid=None)
        if not stopped:  # the download is whole: its ledger is spent (hf_checkpoint_status marks the folder complete)
            os.unlink(os.path.join(p["path"], LEDGER))
    seconds = time.monotonic() - start
    have, whole_files = on_disk(p["path"], files)
    rate = round(written / seconds, 1) if written and seconds > 0 else None
    return {"changed": bool(fetched or written), "commit": commit, "fetched": fetched, "resumed": resumed,
            "done": not stopped, "bytes_done": have, "bytes_total": total, "files_done": whole_files,
            "files_total": len(files), "bytes_per_s": rate, "progress_clock": "task",
            "connections": p["connections"], "bytes_fetched": written,
            "download_fetched": number(ledger.get("bytes_fetched")) if lock else written,
            "download_started": ledger.get("started") if lock else None,
            "progress": progress_line(p["repo"], have, total, whole_files, len(files), rate, not stopped)}


if __name__ == "__main__":
    main()
