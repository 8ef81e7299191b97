"""Action: library/hf_download.py on the host, then the download's marks kept in this host's run record.

The module does the download (its documentation, arguments and checks are its own: the task's arguments reach it
unchanged, and its argument spec refuses a bad one before anything on the host changes). This plugin runs on the
controller after each call (a task's until/retries call it once per try) and keeps in the run record
(lib/sglang_state/run_record.py, results["download"]) what the report and the model step read of the download:

- the download phase's start on the day-1 clock: when a background start answers `running`, or when a try of this
  run began (the first one only: a start kept is never moved);
- its end and bytes (lib/sglang_report/clock.py's mark and add_download) when a try answers `done`, and the folder
  that try fetched into (the task's `path`), which the model step reads again.

Times are the controller's (time.time()), as every phase of the day-1 clock. A failed call keeps nothing (the run
stops there); an async call is only started here, and keeps nothing either.
"""

from __future__ import annotations

import os
import sys
import time

from ansible import constants as C
from ansible.module_utils.parsing.convert_bool import boolean
from ansible.plugins.action import ActionBase
from ansible.utils.vars import merge_hash

# As the filters do: the run record and the clock live in lib/ beside this folder (plugins/lib in the collection).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.realpath(__file__)), os.pardir, "lib"))

from sglang_report.clock import add_download, mark
from sglang_state import run_record
from sglang_state.phase_action import documented_options


def noted(kept, answer, path, background, began, now):
    """The download's entry of the run record after one call: kept (the entry so far, or None), answer (the
    module's), path (the folder the task fetches into), background (the task's option), began / now (when the call
    began and answered, epoch seconds). The entry unchanged when the call says nothing the record keeps."""
    kept = kept if isinstance(kept, dict) else {}
    clock = kept.get("clock") if isinstance(kept.get("clock"), dict) else {}
    fetched = [item for item in kept.get("fetched") or [] if isinstance(item, str)]
    if not isinstance(answer, dict) or answer.get("failed") or answer.get("skipped"):
        return kept
    if background:
        if not answer.get("running"):
            return kept
        return dict(kept, clock=mark(clock, "download", "start", began), fetched=fetched)
    # a try: the first of this run starts the phase (mark keeps an earlier start); one that is done ends it
    clock = mark(clock, "download", "start", began)
    if answer.get("done"):
        clock = add_download(mark(clock, "download", "end", now), answer)
        if path not in fetched:
            fetched.append(path)
    return dict(kept, clock=clock, fetched=fetched)


class ActionModule(ActionBase):
    # As Ansible's own action for a module (ansible.builtin.normal): the module says whether it runs in check mode
    _supports_check_mode = True
    _supports_async = True
    # An option the module does not document is refused by name before anything runs (ActionBase.run); the module's
    # argument spec then checks each value's type on the host
    _VALID_ARGS = frozenset(documented_options(__file__, "hf_download"))

    def run(self, tmp=None, task_vars=None):
        began = time.time()
        task_vars = task_vars or {}
        result = super().run(tmp, task_vars)
        del tmp
        wrap_async = self._task.async_val and not self._connection.has_native_async
        # a copy: the executor adds Ansible's internal _ansible_* keys to the arguments it is given, and a retry
        # (until) would find them in the task's own, where _VALID_ARGS refuses them
        answer = self._execute_module(module_args=dict(self._task.args), task_vars=task_vars, wrap_async=wrap_async)
        result = merge_hash(result, answer)
        if wrap_async:
            return result  # the job is only started: its answer comes through async_status
        self._remove_tmp_path(self._connection._shell.tmpdir)
        folder, host = run_record.folder_of(C.DEFAULT_LOCAL_TMP), task_vars.get("inventory_hostname")
        try:
            record = run_record.read(folder, host)
            kept = run_record.result(record, run_record.DOWNLOAD)
            background = boolean(self._task.args.get("background") or False, strict=False)
            entry = noted(kept, answer, self._task.args.get("path"), background, began, time.time())
            if entry != (kept or {}):
                run_record.write(folder, host, run_record.with_result(record, run_record.DOWNLOAD, entry))
        except (OSError, run_record.RecordError) as error:
            # The report's clock and the model step's read of a fetched checkpoint depend on it: said, not lost
            result.update(failed=True, msg="%shf_download: this run's record could not keep the download: %s" % (
                (result["msg"] + "; ") if result.get("failed") and result.get("msg") else "", error))
        return result
