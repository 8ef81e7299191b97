#!/usr/bin/python
"""Ansible module: one try of following an async task - its progress line while it runs, or that it ended."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: async_progress
short_description: One try of following a task started with async and poll 0, with the stage its module reports
description:
  - Meant to run as a retried task (C(until) with C(retries)/C(delay)) after a task started with C(async) and
    C(poll=0), so that callback_plugins/sglang_progress.py prints one line per try. The job's own result is then
    collected with C(ansible.builtin.async_status), which fails with the module's message when the job failed.
  - Reads the job's I(results_file) (what the start returned; C(async_wrapper) writes a record with
    C(started=true) and C(finished=false) there when the job starts, and the module's result when it ends;
    C(async_status) reads the same file). Once that holds a result, returns RV(finished=true) - the job ended,
    however it ended, so the loop stops at once and C(async_status) reports it.
  - "While the job runs, reads I(progress_file), a JSON object the module replaces atomically at each stage -
    C(line) (what it is doing) and C(since) (epoch seconds, the host's clock, when that began) - and returns
    C(<line>, <time since>), e.g. C(proof: prefill started, 196,004 prompt tokens, 42s). A progress file older
    than the job (a killed run's) is ignored."
  - Changes nothing.
version_added: "1.2.0"
author: sglang-longctx maintainers (!UNKNOWN)
options:
  results_file:
    description: The C(results_file) returned by the task started with C(async) and C(poll=0).
    type: path
    required: true
  progress_file:
    description: The file the job's module keeps its stage in (its own option, e.g. sglang_smoke_test's).
    type: path
    required: true
notes:
  - Supports check mode.
  - Run it with the same C(become) settings as the job, whose results file lies in that user's async folder.
"""

EXAMPLES = r"""
- name: Start the proof
  sglang_smoke_test:
    context_target: 200000
    progress_file: /run/sglang-smoke-progress.json
  async: 3600
  poll: 0
  register: job
  changed_when: false

- name: Follow the proof
  async_progress:
    results_file: "{{ job.results_file }}"
    progress_file: /run/sglang-smoke-progress.json
  register: follow
  until: follow is failed or follow.finished
  retries: 720
  delay: 5

- name: Collect its result
  ansible.builtin.async_status:
    jid: "{{ job.ansible_job_id }}"
  register: smoke
"""

RETURN = r"""
finished:
  description: Whether the job has ended (its result is in the results file).
  returned: always
  type: bool
progress:
  description: The job's current stage with the time since it began, for people; absent once the job has ended.
  returned: while the job runs
  type: str
  sample: "proof: prefill started, 196,004 prompt tokens, 42s"
"""

import json
import os
import time

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.sglang_errors import failures_as_sentences
from ansible.module_utils.sglang_text import duration


def job_state(results_file):
    """'running' or 'ended', from the results file async_wrapper keeps (ansible/modules/async_wrapper.py: it
    writes {"started": true, "finished": false} first, renamed into place, then the module's result)."""
    with open(results_file) as handle:
        text = handle.read()
    try:
        data = json.loads(text)
    except ValueError:
        return "running"  # async_status reads an unparsable file the same way
    return "running" if isinstance(data, dict) and data.get("started") and not data.get("finished") else "ended"


def progress_line(progress_file, job_began, now):
    """'<line>, <time since>' from the job's progress file; 'starting, <time since the job began>' before its first
    stage, or when the file is older than the job (left by a run that was killed)."""
    try:
        if os.path.getmtime(progress_file) >= job_began:
            with open(progress_file) as handle:
                stage = json.load(handle)
            if isinstance(stage, dict) and stage.get("line"):
                since = stage.get("since")
                if isinstance(since, (int, float)):
                    return "%s, %s" % (stage["line"], duration(now - since))
                return stage["line"]
    except (OSError, ValueError):
        pass
    return "starting, %s" % duration(now - job_began)


def main():
    module = AnsibleModule(argument_spec={
        "results_file": {"type": "path", "required": True},
        "progress_file": {"type": "path", "required": True},
    }, supports_check_mode=True)
    with failures_as_sentences(module, "async_progress"):
        results_file = module.params["results_file"]
        try:
            began = os.path.getmtime(results_file)  # written once when the job starts, again only when it ends
            state = job_state(results_file)
        except OSError as err:
            module.fail_json(msg="results_file=%s cannot be read (%s): give the results_file that the task started "
                                 "with async and poll: 0 returned, with the same become user." % (results_file, err))
        if state == "ended":
            module.exit_json(changed=False, finished=True)
        module.exit_json(changed=False, finished=False,
                         progress=progress_line(module.params["progress_file"], began, time.time()))


if __name__ == "__main__":
    main()
