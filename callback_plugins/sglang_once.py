"""Stdout callback: Ansible's default output, with an error whose cause chain repeats its message shown once.

ansible-core 2.19 prints a failed templating task three times: the "[ERROR]: Task failed: ..." line, each
"<<< caused by >>>" link of its chain (the innermost one is the planner's sentence again) and the
"fatal: [...] => {msg}" line, which already holds the whole sentence. A planner refusal ran to 48 lines.
This callback leaves out the first two when the fatal line's msg already holds the innermost message, below -vvv;
at -vvv and above the exception is printed as the default callback prints it. It also leaves out "FAILED -
RETRYING" for a try that reports progress (the boot wait): sglang_progress, enabled beside it in ansible.cfg,
prints that try as one line instead. Lines meant for a person are printed as lines: a debug task whose msg is a
list of strings or a multi-line string (make plan's plans), and a failure whose msg has several lines (the check
phase's refusals, one per line), instead of a JSON dump. An unreachable host is reported once. Every other error,
warning and result is printed exactly as the default callback prints it.

Public API only: the v2_runner_* methods, the task result's `result` and `exception` (CallbackTaskResult, the
public contract of 2.19's TaskResult), and the default callback's documented rule that it shows an exception only
while the result holds one (plugins/callback/__init__.py: "display exception ... if `exception` was not removed
from `result`").
"""

from __future__ import annotations

DOCUMENTATION = r"""
name: sglang_once
type: stdout
short_description: The default output, with an error already held by its fatal line printed once
description:
  - The default callback, except that the C([ERROR]) block with its cause chain is left out when the
    failed (or unreachable) result's C(msg) already contains the innermost cause's message (below C(-vvv); from
    C(-vvv) on it is printed), and that a retry whose result carries C(progress) is left to the sglang_progress
    callback.
  - Below C(-v), a debug task's C(msg) that is a list of strings or a multi-line string, and a failure's
    multi-line C(msg), are printed as plain lines.
author: sglang-longctx maintainers (!UNKNOWN)
extends_documentation_fragment:
  - default_callback
  - result_format_callback
requirements:
  - set as stdout in configuration (ansible.cfg C(stdout_callback = sglang_once))
"""

from ansible import constants as C  # noqa: E402 - after the docs
from ansible.plugins.callback.default import CallbackModule as DefaultCallback  # noqa: E402 - after the docs

DEBUG_ACTIONS = ("debug", "ansible.builtin.debug", "ansible.legacy.debug")
# From this verbosity on (-vvv) the exception is always shown: that is where an operator asks for tracebacks.
SHOW_EXCEPTION_VERBOSITY = 3


def innermost_message(event):
    """The message at the end of an error event's cause chain."""
    while getattr(event, "chain", None) is not None and getattr(event.chain, "event", None) is not None:
        event = event.chain.event
    return getattr(event, "msg", None)


def repeats_its_message(result):
    """Whether a failed task result's msg already holds what its exception's cause chain would print."""
    summary = getattr(result, "exception", None)
    inner = innermost_message(getattr(summary, "event", None)) if summary is not None else None
    msg = result.result.get("msg") if isinstance(result.result, dict) else None
    return bool(inner and isinstance(msg, str) and inner.strip() in msg)


def person_lines(msg):
    """msg as lines for a person (a list of strings, or a string of several lines), else None."""
    if isinstance(msg, list) and msg and all(isinstance(line, str) for line in msg):
        return msg
    if isinstance(msg, str) and "\n" in msg.strip():
        return msg.strip().splitlines()
    return None


class CallbackModule(DefaultCallback):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "stdout"
    CALLBACK_NAME = "sglang_once"

    def _print_once(self, result):
        if self._display.verbosity < SHOW_EXCEPTION_VERBOSITY and repeats_its_message(result):
            result.result.pop("exception", None)  # the default callback prints no exception a result does not hold

    def _plain(self, result, keys):
        """The msg's lines when the result holds only `keys` and verbosity is default, else None."""
        if self._display.verbosity > 0 or not isinstance(result.result, dict):
            return None
        if set(k for k in result.result if not k.startswith("_ansible")) - set(keys):
            return None
        return person_lines(result.result.get("msg"))

    def v2_runner_on_ok(self, result):
        lines = self._plain(result, {"msg", "changed"}) if result.task.action in DEBUG_ACTIONS else None
        if lines is None:
            return super().v2_runner_on_ok(result)
        self._display.display("\n".join(lines), color=C.COLOR_OK)

    def v2_runner_on_failed(self, result, ignore_errors=False):
        self._print_once(result)
        lines = None if ignore_errors else self._plain(result, {"msg", "changed", "failed", "exception"})
        if lines is None:
            return super().v2_runner_on_failed(result, ignore_errors=ignore_errors)
        self._display.display("fatal: [%s]: FAILED!\n%s" % (result.host.get_name(), "\n".join(lines)),
                              color=C.COLOR_ERROR, stderr=self.get_option("display_failed_stderr"))

    def v2_runner_on_unreachable(self, result):
        # The fatal UNREACHABLE line holds the connection's error; its chain ends in Ansible's internals
        # ("interpreter discovery needed"), so it is left out below -vvv whatever it says.
        if self._display.verbosity < SHOW_EXCEPTION_VERBOSITY and isinstance(result.result, dict):
            result.result.pop("exception", None)
        super().v2_runner_on_unreachable(result)

    def v2_runner_item_on_failed(self, result):
        self._print_once(result)
        super().v2_runner_item_on_failed(result)

    def v2_runner_retry(self, result):
        if isinstance(result.result, dict) and result.result.get("progress"):
            return  # sglang_progress prints this try as "<host>: <progress>"
        super().v2_runner_retry(result)
