"""The refusal of library/sglang_runtime.py: an exception whose text is the sentence the operator reads, raised by its
module_utils/sglang_runtime_*.py files; the module's shell fails with it as its message."""

from __future__ import annotations


class RuntimeError_(Exception):
    """A refusal with the sentence the operator reads."""
