"""Stdout callback: Ansible's default output, with an error whose cause chain repeats its message shown once.

ansible-core 2.19 prints a failed templating task three times: the "[ERROR]: Task failed: ..." line, each
"<<< caused by >>>" link of its chain (the innermost one is the planner's sentence again) and the
"fatal: [...] => {msg}" line, which already holds the whole sentence. A planner refusal ran to 48 lines.
This callback leaves out the first two when the fatal line's msg already holds the innermost message.
It also leaves out "FAILED - RETRYING" for a try that reports progress (the boot wait): sglang_progress,
enabled beside it in ansible.cfg, prints that try as one line instead. Every other error, warning and
result is printed exactly as the default callback prints it.
"""

from __future__ import annotations

from ansible.plugins.callback.default import CallbackModule as DefaultCallback

DOCUMENTATION = r"""
name: sglang_once
type: stdout
short_description: The default output, with an error already held by its fatal line printed once
description:
  - The default callback, except that the C([ERROR]) block with its cause chain is left out when the
    failed result's C(msg) already contains the innermost cause's message, and that a retry whose result
    carries C(progress) is left to the sglang_progress callback.
extends_documentation_fragment:
  - default_callback
  - result_format_callback
requirements:
  - set as stdout in configuration (ansible.cfg C(stdout_callback = sglang_once))
"""


def innermost_message(event):
    """The message at the end of an error event's cause chain."""
    while getattr(event, "chain", None) is not None and getattr(event.chain, "event", None) is not None:
        event = event.chain.event
    return getattr(event, "msg", None)


class CallbackModule(DefaultCallback):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "stdout"
    CALLBACK_NAME = "sglang_once"

    def _handle_exception(self, result, use_stderr=False):
        summary = self._current_task_result.exception if self._current_task_result else None
        inner = innermost_message(getattr(summary, "event", None)) if summary is not None else None
        msg = result.get("msg") if isinstance(result, dict) else None
        if inner and isinstance(msg, str) and inner.strip() in msg:
            result.pop("exception", None)
            return
        super()._handle_exception(result, use_stderr=use_stderr)

    def v2_runner_retry(self, result):
        if isinstance(result._result, dict) and result._result.get("progress"):
            return  # sglang_progress prints this try as "<host>: <progress>"
        super().v2_runner_retry(result)
