"""The proof's current stage in a file, for a task run with async and read by library/async_progress.py."""

from __future__ import annotations

import json
import os
import tempfile
import time


class Progress:
    """The stage, kept in progress_file for library/async_progress.py: {"line": ..., "since": epoch seconds}.

    Written to a new file in the same folder, then renamed over the old one, so a reader sees a whole stage or
    the previous one. Best effort: a file that cannot be written never fails the proof.
    """

    def __init__(self, path):
        self.path = path

    def stage(self, line, since=None):
        if not self.path:
            return
        tmp = None
        try:
            handle, tmp = tempfile.mkstemp(prefix=".sglang-smoke-", dir=os.path.dirname(self.path) or ".")
            with os.fdopen(handle, "w") as out:
                json.dump({"line": line, "since": time.time() if since is None else since}, out)
            os.replace(tmp, self.path)
        except OSError:
            if tmp and os.path.exists(tmp):
                os.unlink(tmp)

    def end(self):
        if self.path:
            try:
                os.unlink(self.path)
            except OSError:
                pass
