"""Callback: one line per try of a retried task that reports progress (the SGLang boot wait).

Ansible calls v2_runner_retry with each try's result. A result carrying a `progress` string (library/
sglang_wait_ready.py returns one) is printed as "<host>: <progress>", e.g.
"ct200: loading weights 24/64 (37%), 1m12s, avail mem 45.10 GB". Other tasks' retries are left to the
stdout callback. Enabled in ansible.cfg (callbacks_enabled) and, for molecule, by its env.
"""

from __future__ import annotations

from ansible.plugins.callback import CallbackBase

DOCUMENTATION = r"""
name: sglang_progress
type: aggregate
short_description: One line per try of a retried task that returns a C(progress) string
description:
  - Prints the host and the C(progress) string, one line for every retry of a task whose result has one.
requirements:
  - enable in ansible.cfg with C(callbacks_enabled = sglang_progress)
"""


def progress_message(host, result):
    """The line for one try, or None when the result carries no progress."""
    progress = result.get("progress") if isinstance(result, dict) else None
    if not progress:
        return None
    return "%s: %s" % (host, progress)


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "sglang_progress"
    CALLBACK_NEEDS_ENABLED = True

    def v2_runner_retry(self, result):
        line = progress_message(result._host.get_name(), result._result)
        if line:
            self._display.display(line)
