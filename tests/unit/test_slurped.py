"""lib/sglang_state/slurped.py: a file read on the host through slurp (the report's restored unit and calibrations,
the rescue's restored config) is its bytes, and nothing from a read that failed, is not base64 or is too large."""

import base64

from sglang_state.slurped import slurped


def test_a_slurped_unit_is_its_bytes():
    unit = b"[Service]\nExecStart=\"/opt/sglang/runtimes/0.5.23-0123456789ab/bin/sglang-serve\"\n"
    assert slurped({"content": base64.b64encode(unit).decode(), "encoding": "base64"}, 1 << 20) == unit


def test_a_failed_or_malformed_or_huge_read_is_nothing():
    assert slurped({"failed": True, "msg": "file not found: /etc/systemd/system/sglang.service"}, 1 << 20) is None
    assert slurped({"content": "not base64!"}, 1 << 20) is None
    assert slurped({"content": ""}, 1 << 20) is None and slurped(None, 1 << 20) is None
    assert slurped({"content": base64.b64encode(b"x" * 11).decode()}, 10) is None
    assert slurped({"content": base64.b64encode(b"x" * 10).decode()}, 10) == b"x" * 10
