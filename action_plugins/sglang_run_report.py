"""Action: this run's report, written on the controller (lib/sglang_report), and its summary lines.

Runs in the controller's process (no module, nothing on the host changes); after a rollback it reads the restored
unit and the host's stored calibrations through the connection. Its documentation is library/sglang_run_report.py
(ansible-doc sglang_run_report).
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import sys
from collections.abc import Mapping
from datetime import UTC, datetime

from ansible.plugins.action import ActionBase

# As the filters do: the report lives in lib/ beside this folder (plugins/lib in the collection).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.realpath(__file__)), os.pardir, "lib"))

from sglang_report.report import calibration_source, write_run_report  # noqa: E402
from sglang_report.summary import summary_lines  # noqa: E402

# The unit and a calibration fact are a few KiB; anything much larger is not one of ours.
READ_LIMIT = 1 << 20


def slurped(result):
    """A slurp result's content as bytes; None when the read failed, the content is not base64 or is over
    READ_LIMIT."""
    if not isinstance(result, dict) or result.get("failed") or not result.get("content"):
        return None
    try:
        data = base64.b64decode(result["content"])
    except (binascii.Error, ValueError, TypeError):
        return None
    return data if len(data) <= READ_LIMIT else None


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = True

    def _read(self, path, task_vars):
        """A file on the host as text, or '' when it cannot be read (the report says what it lacks)."""
        data = slurped(self._execute_module(module_name="ansible.legacy.slurp", module_args={"src": path},
                                            task_vars=task_vars))
        return (data or b"").decode("utf-8", "replace")

    def run(self, tmp=None, task_vars=None):
        task_vars = task_vars or {}
        super().run(tmp, task_vars)
        args = dict(self._task.args)
        try:
            facts = dict(args["facts"], host=args["host"])
            restored = args.get("restored")
            facts["restored"], facts["calibration_entries"] = None, {}
            if isinstance(restored, Mapping):  # a rollback: the restored entry, its unit, the stored calibrations
                facts["restored"] = dict(restored, unit=self._read(args["unit_path"], task_vars))
                try:
                    stored = json.loads(self._read(args["calibration_path"], task_vars) or "{}")
                except ValueError:
                    stored = {}
                entries = stored.get("entries") if isinstance(stored, dict) else None
                facts["calibration_entries"] = entries if isinstance(entries, dict) else {}
            facts["calibration_source"] = calibration_source(
                facts.get("sglang_kv_plan_result") if args.get("planned") else None,
                facts.get("sglang_corrective_restarts"), facts.get("calibration_in_use"),
                args.get("inventory_calibration"), args.get("calibration_fact"))
            now = datetime.now(UTC)
            out = write_run_report(facts, args["root"], now.strftime("%Y%m%dT%H%M%SZ"),
                                   now.isoformat(timespec="seconds"))
            with open(os.path.join(out, "report.json"), encoding="utf-8") as handle:
                report = json.load(handle)
            return {"changed": False, "report": os.path.join(out, "report.html"), "summary": summary_lines(report)}
        except (KeyError, TypeError, ValueError, AttributeError, OSError) as error:
            return {"failed": True, "msg": "sglang_run_report: the report could not be written in %s: %s: %s"
                                           % (args.get("root"), type(error).__name__, error)}
        finally:
            self._remove_tmp_path(self._connection._shell.tmpdir)
