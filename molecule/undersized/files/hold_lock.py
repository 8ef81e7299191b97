#!/usr/bin/python3
"""Hold the backup store's lock as a run of sglang_backup_store does (flock on <store>/.lock, the holder described
in it), until killed or for 5 minutes: the run a second rollback must be refused by, naming it."""

import fcntl
import json
import os
import socket
import time
from datetime import UTC, datetime

fd = os.open("/var/backups/sglang/.lock", os.O_RDWR | os.O_CREAT, 0o600)
fcntl.flock(fd, fcntl.LOCK_EX)
holder = {"pid": os.getpid(), "host": socket.gethostname(), "owner": "molecule's holder",
          "doing": "a rollback.yml run in the middle of its restore",
          "started_at": datetime.now(UTC).isoformat(timespec="seconds")}
os.ftruncate(fd, 0)
os.pwrite(fd, json.dumps(holder).encode(), 0)
with open("/root/store-faults/holder.pid", "w") as handle:
    handle.write("%d\n" % os.getpid())
time.sleep(300)
