"""action_plugins/sglang_run_report.py's read of a file on the host after a rollback (the restored unit, the stored
calibrations): slurp's base64 decoded, and nothing from a read that failed, is not base64 or is larger than a unit or
a calibration fact can be."""

import base64
import importlib.util
import os

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SPEC = importlib.util.spec_from_file_location("sglang_run_report_action",
                                              os.path.join(REPO, "action_plugins", "sglang_run_report.py"))
action = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(action)


def test_a_slurped_unit_is_its_bytes():
    unit = b"[Service]\nExecStart=\"/opt/sglang/runtimes/0.5.23-0123456789ab/bin/sglang-serve\"\n"
    assert action.slurped({"content": base64.b64encode(unit).decode(), "encoding": "base64"}) == unit


def test_a_failed_or_malformed_or_huge_read_is_nothing():
    assert action.slurped({"failed": True, "msg": "file not found: /etc/systemd/system/sglang.service"}) is None
    assert action.slurped({"content": "not base64!"}) is None
    assert action.slurped({"content": ""}) is None and action.slurped(None) is None
    huge = base64.b64encode(b"x" * (action.READ_LIMIT + 1)).decode()
    assert action.slurped({"content": huge}) is None
