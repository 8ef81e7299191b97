"""Callback for tests/benchmarks/bench_rerun.py: each task's wall time and the file it comes from, as JSON.

Written to $BENCH_TIMER_OUT at the end of the run: [{"file": "roles/sglang/tasks/install.yml", "task": ...,
"host": ..., "seconds": 1.23, "changed": false}, ...]. A benchmark aid only; the playbooks never enable it.
"""

from __future__ import annotations

import json
import os
import time

from ansible.plugins.callback import CallbackBase

DOCUMENTATION = r"""
name: bench_timer
type: aggregate
short_description: each task's wall time and source file, as JSON (tests/benchmarks/bench_rerun.py)
description: Writes the list to the file named by the BENCH_TIMER_OUT environment variable.
requirements: [enable in callbacks_enabled]
"""


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "bench_timer"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self):
        super().__init__()
        self.rows, self.open = [], {}

    def _start(self, task):
        self.open[task._uuid] = (time.monotonic(), task)

    def v2_playbook_on_task_start(self, task, is_conditional):
        self._start(task)

    def v2_playbook_on_handler_task_start(self, task):
        self._start(task)

    def _end(self, result, status):
        task = result._task
        started, _ = self.open.get(task._uuid, (time.monotonic(), task))
        path = (task.get_path() or "?").split(":")[0]
        root = os.environ.get("BENCH_TIMER_ROOT", "")
        if root and path.startswith(root):
            path = os.path.relpath(path, root)
        self.rows.append({"file": path, "task": task.get_name(), "host": result._host.get_name(),
                          "seconds": round(time.monotonic() - started, 3), "status": status,
                          "changed": bool(result._result.get("changed"))})

    def v2_runner_on_ok(self, result):
        self._end(result, "ok")

    def v2_runner_on_failed(self, result, ignore_errors=False):
        self._end(result, "failed")

    def v2_runner_on_skipped(self, result):
        self._end(result, "skipped")

    def v2_playbook_on_stats(self, stats):
        out = os.environ.get("BENCH_TIMER_OUT")
        if out:
            with open(out, "w", encoding="utf-8") as handle:
                json.dump(self.rows, handle, indent=1)
