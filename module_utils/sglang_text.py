"""How the modules and the progress callback write times and sizes for people, in one place."""

from __future__ import annotations


def duration(seconds):
    """'5s', '1m12s', '2h03m': the clock of every progress line (boot wait, proof, download)."""
    seconds = max(0, int(seconds))
    if seconds >= 3600:
        return "%dh%02dm" % (seconds // 3600, seconds % 3600 // 60)
    return "%dm%02ds" % (seconds // 60, seconds % 60) if seconds >= 60 else "%ds" % seconds


def human_bytes(nbytes):
    """1 decimal in GiB from 1 GiB up, else in MiB."""
    return "%.1f GiB" % (nbytes / 2.0**30) if nbytes >= 2**30 else "%.1f MiB" % (nbytes / 2.0**20)
