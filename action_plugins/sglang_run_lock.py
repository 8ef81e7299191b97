"""Action: the host's run lock (library/sglang_run_lock.py has the design and the documentation).

The module runs on the host and cannot know which ansible-playbook run called it; this plugin runs in a worker that
the run's ansible-playbook process forked, so os.getppid() is that process on the controller. The run id is the
controller's host name, that pid and the start time of that process: unique per run, the same for every task and
every host of the run (the driver's reboot included), and never reused by a later process with the same pid.
When another run holds the lock and ran on this controller, this plugin can prove whether it is gone (its pid is
dead, or belongs to a process that started at another time): then the module takes that record over at once.

Fewer trips to the host: a run takes its lock once and renews it at each phase (site.yml, the role's main, before
the download's tries), and gives it back in the role and again in the play's always. The action remembers, on the
controller, what the module last answered this run for this host (a file per host in ansible-playbook's own
temporary folder: it never outlives the run nor mixes two). A renewal asked less than RENEW_SKIP_FRACTION of the
lease after this run's last one, with the same folder, wait and lease, is answered from that memory: the record on
the host still names this run and has at least 19/20 of its lease left (a reboot in between only keeps it longer,
module_utils/sglang_run_lease.py stale_reason), and nothing but a stale take-over can replace it, which the lease
rules out. A release after this run's own release succeeded, with no take since, is answered too: the record is
gone, and no later run can have taken over one of this run's. The first take, every take after a release, and the
first release always reach the host.
"""

from __future__ import annotations

import getpass
import json
import os
import socket
import tempfile
import time
from datetime import datetime, timezone
from urllib.parse import quote

from ansible import constants as C
from ansible.plugins.action import ActionBase

UTC = timezone.utc  # noqa: UP017
# A renewal within this part of the lease after this run's last one is answered from the run's memory: the download's
# tries end by 9/10 of the lease after the renewal before them, so a remembered renewal (at most 1/20 old) still
# leaves them inside the lease
RENEW_SKIP_FRACTION = 1 / 20
MEMORY_FOLDER = "sglang-run-lock"


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


def memory_path(folder, host):
    # an inventory name may hold any character: quoted whole, it is one file name in the folder
    return os.path.join(folder, quote(str(host), safe="") + ".json")


def read_memory(folder, host):
    """What the module last answered this run for this host, {} when nothing (or nothing readable: then the module
    is asked, which is never wrong)."""
    try:
        with open(memory_path(folder, host), encoding="utf-8") as handle:
            memory = json.load(handle)
    except (OSError, ValueError):
        return {}
    return memory if isinstance(memory, dict) else {}


def write_memory(folder, host, memory):
    """Replace this host's memory atomically (os.replace): a reader sees the old one or the new one."""
    os.makedirs(folder, mode=0o700, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=".memory-", dir=folder)
    try:
        with os.fdopen(handle, "w") as out:
            json.dump(memory, out, default=str)
        os.replace(temporary, memory_path(folder, host))
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise


def remembered(memory, call, now):
    """The module's answer to `call` known without asking the host, or None when the host must be asked.

    memory: what the module last answered this run (remember()); call: {state, dir, run_id, wait, lease} as this task
    asks; now: time.monotonic() (one clock for every process of this controller)."""
    same = memory.get("call") and all(memory["call"].get(key) == call.get(key) for key in ("dir", "run_id"))
    if not same:
        return None
    if call["state"] == "released":
        if memory.get("state") != "released":
            return None
        return {"holder": None, "taken_over": None, "taken_over_reason": None, "waited": 0.0, "remembered": True}
    if memory.get("state") != "held" or any(memory["call"].get(key) != call.get(key) for key in ("wait", "lease")):
        return None
    age = now - memory.get("at", float("-inf"))
    if not 0 <= age < call["lease"] * RENEW_SKIP_FRACTION:
        return None
    return {"holder": memory.get("holder"), "taken_over": None, "taken_over_reason": None, "waited": 0.0,
            "remembered": True}


def remember(call, answer, at):
    """The memory after the module answered `call` (failed answers forget: the next task asks the host)."""
    if answer.get("failed"):
        return {}
    state = "released" if call["state"] == "released" else "held"
    return {"call": call, "state": state, "holder": answer.get("holder"), "at": at}


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
        lease = args.get("lease", 21600)
        call = {"state": args.get("state", "acquired"), "dir": args.get("dir"), "run_id": run_id,
                "wait": int(args.get("wait", 600)), "lease": int(lease) if _whole_number(lease) else None}
        folder, host = os.path.join(C.DEFAULT_LOCAL_TMP, MEMORY_FOLDER), task_vars.get("inventory_hostname")
        # a check run writes no record, and a lease the module has not accepted is the module's to refuse
        use_memory = not self._play_context.check_mode and call["lease"] is not None
        known = remembered(read_memory(folder, host), call, time.monotonic()) if use_memory else None
        if known is not None:
            result.update(known, changed=False)
            return result
        asked = time.monotonic()  # the renewal happens after this: remembered as this old, never younger
        try:
            first = self._ask(args, task_vars, holder)
        except BaseException:
            if use_memory:
                write_memory(folder, host, {})  # what the host holds now is unknown: the next task asks it
            raise
        if use_memory:
            write_memory(folder, host, remember(call, first, asked))
        result.update(first)
        result["changed"] = False  # the lock's record is not a change of the host's state
        result.pop("busy", None)
        return result

    def _ask(self, args, task_vars, holder):
        """The module's answer: one try without waiting, then a take-over of a holder proven gone, or the wait."""
        first = self._execute_module(module_name="sglang_run_lock", module_args=dict(args, wait=0),
                                     task_vars=task_vars)
        if first.get("busy") and isinstance(first.get("holder"), dict) and gone(first["holder"],
                                                                                holder["controller"]):
            first = self._execute_module(module_name="sglang_run_lock", task_vars=task_vars,
                                         module_args=dict(args, take_over=first["holder"]["run_id"]))
        elif first.get("busy") and args.get("state", "acquired") == "acquired" and int(args.get("wait", 600)) > 0:
            first = self._execute_module(module_name="sglang_run_lock", module_args=args, task_vars=task_vars)
        return first
