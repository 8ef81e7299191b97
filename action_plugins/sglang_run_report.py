"""Action: this run's report, written on the controller (lib/sglang_report), and its summary lines.

Runs in the controller's process (no module, nothing on the host changes); after a rollback it reads the restored
unit and the host's stored calibrations through the connection. Its documentation is library/sglang_run_report.py
(ansible-doc sglang_run_report).
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from collections.abc import Mapping
from datetime import UTC, datetime

from ansible.plugins.action import ActionBase
from ansible.utils.display import Display

# As the filters do: the report lives in lib/ beside this folder (plugins/lib in the collection).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.realpath(__file__)), os.pardir, "lib"))

from ansible import constants as C
from sglang_checks import kept
from sglang_report.clock import from_results
from sglang_report.inputs import ARGUMENTS, ReportInputError, check_args
from sglang_report.report import build_run_report, calibration_source
from sglang_report.summary import summary_lines
from sglang_state import run_record
from sglang_state.slurped import slurped

display = Display()
# The unit and a calibration fact are a few KiB; anything much larger is not one of ours.
READ_LIMIT = 1 << 20
# What the stat module says a path is, in words, for one that is not a regular file.
FILE_KINDS = (("isdir", "a folder"), ("isfifo", "a FIFO"), ("ischr", "a character device"),
              ("isblk", "a block device"), ("issock", "a socket"))
# A failure while the report is built from facts that passed check_args: a value deeper inside them, in words.
CAUSES = ((RecursionError, "a value in them is nested too deeply"),
          (OverflowError, "a number in them is too large to use, or infinite"),
          ((TypeError, AttributeError, KeyError, IndexError), "a value in them has another type or shape than the "
                                                              "report reads"),
          (ValueError, "a value in them cannot be read as the report expects"))


def not_readable(info):
    """Why a stat result's path is not read ('' when it is a regular file under READ_LIMIT; None when it is
    missing or the stat failed, which the report shows as a file it lacks)."""
    found = info.get("stat") if isinstance(info, dict) and not info.get("failed") else None
    if not isinstance(found, dict) or not found.get("exists"):
        return None
    if not found.get("isreg"):
        what = next((words for key, words in FILE_KINDS if found.get(key)), "not a regular file")
        return "is %s, not a regular file" % what
    if not isinstance(found.get("size"), int) or found["size"] > READ_LIMIT:
        return "is larger than %d bytes, more than a unit or the stored calibrations can be" % READ_LIMIT
    return ""


def built_from_facts_failure(host, error):
    """The sentence for a failure while the report is built: its cause in words, not Python's text."""
    cause = next(words for kinds, words in CAUSES if isinstance(error, kinds))
    return ("sglang_run_report: the report for %s could not be built from facts: %s. Give the facts "
            "roles/sglang/tasks/report.yml sends (run with -vvv for where it failed)" % (host, cause))


def with_run_clock(clock, record):
    """The day-1 clock with the download's, the runtime's, the boot's and the proof's spans, read from this host's
    run record (its actions' results: the download's marks that action_plugins/hf_download.py keeps, the runtime
    install, the deploy's last phase, the proof's decision and record)."""
    downloaded = (run_record.result(record, run_record.DOWNLOAD) or {}).get("clock")
    steps = [run_record.result(record, step) or {} for step in ("install", "deploy", "decide", "record")]
    return {**(clock or {}), **(downloaded if isinstance(downloaded, dict) else {}), **from_results(*steps)}


def keep_calibration(args, facts):
    """The calibration the role plans this host from next time (the one stored for its setup), kept beside its
    reports for the check phase and `make plan` (lib/sglang_checks/kept.py); a rollback plans nothing, and a host
    with none stored plans from the inventory's, as the check phase already does."""
    stored, key = facts.get("calibration_stored"), facts.get("calibration_key")
    if args["planned"] and not facts.get("restored") and isinstance(stored, Mapping) and stored and key:
        kept.write(args["root"], args["host"], key, dict(stored))


def not_written(root, error):
    """The warning for a report built and not written (the run goes on: the host's state does not depend on it)."""
    cause = (str(error) if isinstance(error, ReportInputError)
             else "%s%s" % (error.strerror or error, " (%s)" % error.filename if error.filename else ""))
    return ("the run's report was not written in %s: %s. The summary below is the report's; make the folder "
            "writable for the controller's user, or set sglang_report_dir to one that is, and the next run writes "
            "it" % (root, cause))


class ActionModule(ActionBase):
    # Ansible refuses any other argument by name before run() does anything (ActionBase.run); check_args then checks
    # each one's type and shape.
    _VALID_ARGS = frozenset(ARGUMENTS)

    TRANSFERS_FILES = False
    _requires_connection = True

    def _read(self, path, what, task_vars, warnings):
        """A regular file on the host as text, or '' when it is missing or cannot be read (the report says what it
        lacks). Stat first: slurp opens the path, and a FIFO there would hold the run for ever."""
        info = self._execute_module(module_name="ansible.legacy.stat", task_vars=task_vars, module_args={
            "path": path, "follow": True, "get_checksum": False, "get_mime": False, "get_attributes": False})
        problem = not_readable(info)
        if problem:
            warnings.append("%s %s %s: not read; the report shows the restored state without it"
                            % (what, path, problem))
        if problem is None or problem:
            return ""
        data = slurped(self._execute_module(module_name="ansible.legacy.slurp", module_args={"src": path},
                                            task_vars=task_vars), READ_LIMIT)
        return (data or b"").decode("utf-8", "replace")

    def run(self, tmp=None, task_vars=None):
        task_vars = task_vars or {}
        super().run(tmp, task_vars)
        args, warnings = dict(self._task.args), []
        try:
            args = check_args(args)  # every argument's type and shape, before anything is read or written
            record = run_record.read(run_record.folder_of(C.DEFAULT_LOCAL_TMP), args["host"])
            # what this run's actions found, from the record; a fact given in the task's own facts wins
            facts = {**run_record.run_facts(record), **args["facts"], "host": args["host"]}
            facts["sglang_day1_clock"] = with_run_clock(facts.get("sglang_day1_clock"), record)
            restored = args.get("restored")
            facts["restored"], facts["calibration_entries"] = None, {}
            if isinstance(restored, Mapping):  # a rollback: the restored entry, its unit, the stored calibrations
                facts["restored"] = dict(restored, unit=self._read(args["unit_path"], "the restored unit",
                                                                   task_vars, warnings))
                text = self._read(args["calibration_path"], "the stored calibrations", task_vars, warnings)
                try:
                    stored = json.loads(text or "{}")
                except (ValueError, RecursionError):
                    warnings.append("the stored calibrations %s are not JSON the report can read: the report shows "
                                    "the restored state without them" % args["calibration_path"])
                    stored = {}
                entries = stored.get("entries") if isinstance(stored, dict) else None
                facts["calibration_entries"] = entries if isinstance(entries, dict) else {}
            facts["calibration_source"] = calibration_source(
                facts.get("sglang_kv_plan_result") if args["planned"] else None,
                facts.get("sglang_corrective_restarts"), facts.get("calibration_in_use"),
                args.get("inventory_calibration"), args.get("calibration_fact"))
            now = datetime.now(UTC)
            built = build_run_report(facts, args["root"], now.strftime("%Y%m%dT%H%M%SZ"),
                                     now.isoformat(timespec="seconds"))
            result = {"changed": False, "report": None, "summary": summary_lines(built.report)}
            try:
                result["report"] = os.path.join(built.write(), "report.html")
                keep_calibration(args, facts)
            except (OSError, ReportInputError) as error:
                # The host is proven whatever the controller's folder: the summary still reaches the console
                warnings.append(not_written(args["root"], error))
            if warnings:
                result["warnings"] = warnings
            return result
        except (ReportInputError, run_record.RecordError) as error:
            return {"failed": True, "msg": "sglang_run_report: %s" % error}
        except (KeyError, TypeError, ValueError, AttributeError, IndexError, RecursionError, OverflowError) as error:
            display.vvv("sglang_run_report: %s" % traceback.format_exc())
            return {"failed": True, "msg": built_from_facts_failure(args.get("host"), error)}
        finally:
            self._remove_tmp_path(self._connection._shell.tmpdir)
