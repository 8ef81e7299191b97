"""The early download's Watchdog (module_utils/sglang_download_early.py) on its own, in a forked process as the early
download runs it: a process whose bytes stop moving reports why, marks a running ledger failed and ends itself; one
whose fetches keep calling moved() lives on. (test_hf_download_early.py hangs a real worker: 40 s; these take 3.)"""

import json
import os
import time

from ansible.module_utils import sglang_download_early as early
from ansible.module_utils.sglang_download_records import read_ledger, write_ledger


def run_in_child(folder, seconds, keep_moving):
    """Fork a process that starts a Watchdog (stalled after 1 s) and lives `seconds`, calling moved() all along when
    keep_moving; returns (its exit code, what it sent)."""
    read_end, write_end = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - the child's end is its exit code and its pipe
        os.close(read_end)
        code = 3
        try:
            dog = early.Watchdog(folder, timeout=5)
            dog.stalled_after = 1

            def send(report):
                os.write(write_end, json.dumps(report).encode())

            dog.start(send)
            end = time.monotonic() + seconds
            while time.monotonic() < end:
                if keep_moving:
                    dog.moved()
                time.sleep(0.1)
            code = 0
        finally:
            os._exit(code)
    os.close(write_end)
    _pid, status = os.waitpid(child, 0)
    with os.fdopen(read_end, "rb") as pipe:
        said = pipe.read().decode()
    return os.waitstatus_to_exitcode(status), json.loads(said) if said else {}


def test_a_process_whose_bytes_stop_ends_itself_and_marks_its_running_ledger_failed(tmp_path):
    write_ledger(str(tmp_path), {"state": "running", "pid": 1})
    code, sent = run_in_child(str(tmp_path), 30, keep_moving=False)
    assert code == 1, "the watchdog ends the process (exit 1) long before its 30 s"
    assert sent["error"].startswith("no byte moved for 1 s (twice the timeout, 5 s, and 30)"), sent
    ledger = read_ledger(str(tmp_path))
    assert ledger["state"] == "failed" and ledger["error"] == sent["error"] and ledger["pid"] == 1, ledger


def test_a_ledger_that_is_not_running_is_left_as_it_is(tmp_path):
    write_ledger(str(tmp_path), {"state": "done"})
    code, sent = run_in_child(str(tmp_path), 30, keep_moving=False)
    assert code == 1 and "stopped itself" in sent["error"], sent
    assert read_ledger(str(tmp_path)) == {"state": "done"}


def test_a_process_whose_bytes_keep_moving_lives_on(tmp_path):
    write_ledger(str(tmp_path), {"state": "running"})
    code, sent = run_in_child(str(tmp_path), 2 * early.LEDGER_EVERY + 1, keep_moving=True)
    assert code == 0 and sent == {}, sent
    assert read_ledger(str(tmp_path)) == {"state": "running"}
