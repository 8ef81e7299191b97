"""Action: the host's run lock (library/sglang_run_lock.py has the design and the documentation).

The module runs on the host and cannot know which ansible-playbook run called it; this plugin runs in a worker that
the run's ansible-playbook process forked, so os.getppid() is that process on the controller. The run id is the
controller's host name, that pid and the start time of that process: unique per run, the same for every task and
every host of the run (the driver's reboot included), and never reused by a later process with the same pid.
When another run holds the lock and ran on this controller, this plugin can prove whether it is gone (its pid is
dead, or belongs to a process that started at another time): then the module takes that record over at once.
"""

from __future__ import annotations

import getpass
import os
import socket
from datetime import datetime, timezone

from ansible.plugins.action import ActionBase

UTC = timezone.utc  # noqa: UP017


def process_start(pid):
    """The start of process pid, in clock ticks since boot (/proc/<pid>/stat field 22), or None when it is gone."""
    try:
        with open("/proc/%d/stat" % int(pid), encoding="ascii", errors="replace") as handle:
            stat = handle.read()
    except (OSError, ValueError):
        return None
    # The command name (field 2) is in parentheses and may hold spaces: count fields after its closing one.
    fields = stat[stat.rfind(")") + 2:].split()
    return fields[19] if len(fields) > 19 else None


def started_iso(pid):
    """When process pid started (the boot time from /proc/stat plus its start in ticks), for the operator."""
    try:
        with open("/proc/stat", encoding="ascii", errors="replace") as handle:
            btime = next(int(line.split()[1]) for line in handle if line.startswith("btime "))
        ticks = int(process_start(pid))
        when = btime + ticks / os.sysconf("SC_CLK_TCK")
        return datetime.fromtimestamp(when, UTC).isoformat(timespec="seconds")
    except (OSError, ValueError, TypeError, StopIteration):
        return "?"


def this_run():
    pid = os.getppid()
    controller = socket.gethostname()
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = str(os.getuid())
    return "%s:%d:%s" % (controller, pid, process_start(pid) or "?"), {
        "controller": controller, "pid": pid, "user": user, "started": started_iso(pid)}


def gone(record, controller):
    """True only when the holder ran on this controller and its process is provably not running any more."""
    run_id = str(record.get("run_id", ""))
    parts = run_id.rsplit(":", 2)
    if len(parts) != 3 or parts[0] != controller or not parts[1].isdigit():
        return False
    now = process_start(int(parts[1]))
    return now is None or now != parts[2]


def _whole_number(value):
    try:
        int(value)
    except (TypeError, ValueError):
        return False
    return True


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    # Ansible refuses any other option by name before run() does anything (ActionBase.run, as its pause does).
    _VALID_ARGS = frozenset(("state", "dir", "wait", "lease"))

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        args = dict(self._task.args)
        run_id, holder = this_run()
        holder["play"] = self._task.get_play().get_name() if self._task.get_play() else "?"
        args.update(run_id=run_id, holder=holder)
        if not _whole_number(args.get("wait", 600)):
            # the module's argument spec refuses it by name, before it touches the lock (no first try with wait=0)
            result.update(self._execute_module(module_name="sglang_run_lock", module_args=args, task_vars=task_vars))
            result["changed"] = False
            return result
        first = self._execute_module(module_name="sglang_run_lock", module_args=dict(args, wait=0),
                                     task_vars=task_vars)
        if first.get("busy") and isinstance(first.get("holder"), dict) and gone(first["holder"],
                                                                                holder["controller"]):
            first = self._execute_module(module_name="sglang_run_lock", task_vars=task_vars,
                                         module_args=dict(args, take_over=first["holder"]["run_id"]))
        elif first.get("busy") and args.get("state", "acquired") == "acquired" and int(args.get("wait", 600)) > 0:
            first = self._execute_module(module_name="sglang_run_lock", module_args=args, task_vars=task_vars)
        result.update(first)
        result["changed"] = False  # the lock's record is not a change of the host's state
        result.pop("busy", None)
        return result
