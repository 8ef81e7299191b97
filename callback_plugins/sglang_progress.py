"""Callback: one line per try of a retried task that reports progress (the SGLang boot wait, the weights download,
the proof's long request).

Ansible calls v2_runner_retry with each try's result. A result carrying a `progress` string is printed as
"<host>: <progress>", e.g. "ct200: loading weights 24/64 (37%), 1m12s, avail mem 45.10 GB" (library/
sglang_wait_ready.py) or "ct200: proof: prefill started, 196,004 prompt tokens, 42s" (library/async_progress.py).
A module whose tries are separate processes that cannot know when the task began (library/hf_download.py with
`poll`) adds `progress_clock: task`; the line then ends with the time since this host's task began, measured
here on the controller: "ct200: downloading org/model: 12.0 of 595.2 GiB (2%), 1/64 files, 410.0 MiB/s (about
24m left), 31s". Other tasks' retries are left to the stdout callback. Enabled in ansible.cfg
(callbacks_enabled) and, for molecule, by its env.
"""

from __future__ import annotations

DOCUMENTATION = r"""
name: sglang_progress
type: aggregate
short_description: One line per try of a retried task that returns a C(progress) string
description:
  - Prints the host and the C(progress) string, one line for every retry of a task whose result has one.
  - When the result also has C(progress_clock=task), the line ends with the time since the task began on
    that host.
author: sglang-longctx maintainers (!UNKNOWN)
requirements:
  - enable in ansible.cfg with C(callbacks_enabled = sglang_progress)
"""

import importlib.util  # noqa: E402 - ansible-test wants the imports after the documentation
import os  # noqa: E402
import time  # noqa: E402

from ansible.plugins.callback import CallbackBase  # noqa: E402


def _shared(name):
    """One file of the modules' shared code, from module_utils/ beside this folder (plugins/module_utils in the
    collection copy that make sanity checks). Ansible bundles module_utils for modules, not for callbacks, and the
    folder is not put on sys.path: its sglang_router.py would shadow the real sglang_router package there."""
    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "module_utils", name + ".py")
    spec = importlib.util.spec_from_file_location("sglang_longctx_progress_" + name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


duration = _shared("sglang_text").duration

__all__ = ["duration", "progress_message"]


def progress_message(host, result, task_seconds=None):
    """The line for one try, or None when the result carries no progress.

    task_seconds: how long the task has run on this host, appended when the result asks (progress_clock: task).
    """
    progress = result.get("progress") if isinstance(result, dict) else None
    if not progress:
        return None
    if result.get("progress_clock") == "task" and task_seconds is not None:
        progress = "%s, %s" % (progress, duration(task_seconds))
    return "%s: %s" % (host, progress)


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "sglang_progress"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._began = {}  # (host, task uuid) -> time.monotonic() when the task began there

    def v2_runner_on_start(self, host, task):
        self._began[(host.get_name(), task._uuid)] = time.monotonic()

    def v2_runner_retry(self, result):
        host = result.host.get_name()
        began = self._began.get((host, result.task._uuid))
        line = progress_message(host, result.result, None if began is None else time.monotonic() - began)
        if line:
            self._display.display(line)
