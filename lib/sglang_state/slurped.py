"""A slurp module's answer as bytes: what the actions that read a file on the host (the report's restored unit and
calibrations, the rescue's restored config) share. Plain Python, tested without Ansible (tests/unit/test_slurped.py).
"""

import base64
import binascii


def slurped(result, limit):
    """The content as bytes; None when the read failed, the content is missing or not base64, or it is over `limit`
    bytes (a file that large is not one of ours)."""
    if not isinstance(result, dict) or result.get("failed") or not result.get("content"):
        return None
    try:
        data = base64.b64decode(result["content"], validate=True)
    except (binascii.Error, ValueError, TypeError):
        return None
    return data if len(data) <= limit else None
