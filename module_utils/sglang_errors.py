"""The last line of defence of every module: an exception that no code path turned into a sentence still ends the
task with one (the exception's type and message), never with a Python traceback for the operator. fail_json, called
while the exception is handled, adds its traceback to the result only when the controller asks for tracebacks
(ansible-core 2.19: at -vvv, or with DISPLAY_TRACEBACK)."""

from __future__ import annotations

from contextlib import contextmanager


def sentence(error):
    """'ValueError: could not convert string to float' -> a message naming the failure's kind."""
    text = str(error).strip() or "(no message)"
    return "%s: %s" % (type(error).__name__, text)


@contextmanager
def failures_as_sentences(module, doing):
    """Run the block; an unexpected exception becomes fail_json(msg='<doing> failed: <kind>: <message>. ...').
    exit_json and fail_json end the module with SystemExit, which passes through untouched."""
    try:
        yield
    except Exception as error:  # every failure must reach the operator as a sentence
        module.fail_json(msg="%s failed: %s. This is a defect of the module or an input it does not expect; "
                             "run with -vvv for its traceback." % (doing, sentence(error)))
