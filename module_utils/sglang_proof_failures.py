"""The proof's failures (library/sglang_smoke_test.py): each a sentence that says what happened and what to do,
one kind worth another try while the server starts, one that carries the HTTP status a fallback reads. Also how
those sentences write a number (218,485)."""

from __future__ import annotations


class SmokeFailure(Exception):
    """A failed step; the message says what happened and what to do."""


class Retryable(SmokeFailure):
    """Nothing answered, or not in time: worth another try while waiting for the server."""


class HTTPFailure(SmokeFailure):
    """An HTTP error answer; its status tells a caller whether a fallback applies (404/405: no such endpoint)."""

    def __init__(self, path, status, message):
        self.status, self.server_message = status, message
        super().__init__("%s answered HTTP %d: %s" % (path, status, message))


def fmt(number):
    """218485 -> '218,485': every token count in a sentence."""
    return f"{number:,}"
