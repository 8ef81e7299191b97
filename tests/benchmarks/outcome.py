"""How every benchmark here ends: its figures are printed only when every run it measured succeeded; otherwise the
failure alone goes to stderr and the exit status is 1 (issue 47 item 6: bench_rerun's playbook failed with rc 2 and
it still printed a wall time and "prompt tokens the server received: 0" as if it had measured).

A benchmark collects its lines while it measures and hands them back; finish() prints them, or none of them."""

import sys


class BenchmarkFailed(Exception):
    """A run the benchmark measures failed, or a result it needs is missing: no figure may be printed."""


def finish(name, measure):
    """Run measure() (returns the lines to print); print them and return 0, or print why it failed and return 1.

    Any other exception is left to Python, which prints its traceback and exits 1: the lines are held until the
    end, so that case prints no figure either."""
    try:
        lines = measure()
    except BenchmarkFailed as failure:
        print("%s FAILED (no figures printed): %s" % (name, failure), file=sys.stderr)
        return 1
    print("\n".join(lines), flush=True)
    return 0
