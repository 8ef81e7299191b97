"""hf_download's early download (background: true): the small files fetched before the module returns, the rest in
a detached process that holds the folder's lock, notes its progress in the ledger every LEDGER_EVERY seconds and
ends itself when its bytes stop moving (Watchdog); and a later call that finds it running joins it (join_early)."""

from __future__ import annotations

import json
import os
import threading
import time

from ansible.module_utils.sglang_download_call import Failed, download, progress_line, survey
from ansible.module_utils.sglang_download_records import (
    add_to_ledger,
    marked_complete,
    number,
    on_disk,
    read_ledger,
    settle,
    take_lock,
    write_ledger,
)
from ansible.module_utils.sglang_text import human_bytes as human

# How often the early download notes its progress in the ledger (and its watchdog looks at the clock).
LEDGER_EVERY = 2
# The early download's process name (ps -C sglang-download).
PROCESS_NAME = "sglang-download"
# The files the early start fetches before it returns: all but the weights (config.json, the index, the tokenizer; the
# plan reads them), each at most SMALL.
SMALL = 16 * 2**20
WEIGHTS = (".safetensors", ".bin", ".pt", ".pth", ".ckpt", ".gguf", ".h5", ".msgpack", ".onnx")


def detach(work):
    """Run work(send) in a grandchild that outlives this module (setsid, its own session; stdin, stdout and stderr on
    /dev/null so that Ansible's connection does not wait for it), as Ansible's async_wrapper does; send(mapping) is its
    one report to this process. Returns (its pid, the report: {} when it ended without one)."""
    read_end, write_end = os.pipe()
    child = os.fork()
    if child:
        os.close(write_end)
        with os.fdopen(read_end, "rb") as pipe:
            said = pipe.read().decode("utf-8", "replace").split("\n", 1)  # its pid, then its report (EOF: it sent)
        os.waitpid(child, 0)
        pid = int(said[0]) if said[0].strip().isdigit() else 0
        try:
            report = json.loads(said[1]) if len(said) > 1 and said[1].strip() else {}
        except ValueError:
            report = {}
        return pid, report if isinstance(report, dict) else {}
    os.close(read_end)
    os.setsid()
    grandchild = os.fork()
    if grandchild:
        os.write(write_end, b"%d\n" % grandchild)
        os.close(write_end)
        # a forked child must not run the module's exit handlers
        os._exit(0)  # pylint: disable=protected-access
    os.chdir("/")  # not the module's temporary folder, which Ansible removes
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    sent, once = [], threading.Lock()

    def send(report):
        with once:  # the watchdog's thread may send too
            if not sent:
                sent.append(True)
                os.write(write_end, json.dumps(report).encode())
                os.close(write_end)

    code = 1
    try:
        work(send)
        code = 0
    finally:
        os._exit(code)  # pylint: disable=protected-access


class Watchdog:
    """The early download's guard against a hang that the sockets' timeouts do not cover: its fetches call moved()
    whenever bytes move (read from the Hub, or hashed from a .part; a healthy fetch moves some at least every `timeout`
    seconds, a socket that waits longer raises). Once none moved for longer than any healthy fetch can wait, the
    process ends itself, so that it does not hold the module, or the folder's lock and with it day 1, for good; the
    role's tries then fetch the rest themselves, continuing its .part files."""

    def __init__(self, folder, timeout):
        self.folder, self.timeout = folder, timeout
        self.stalled_after = 2 * timeout + 30
        self.last = time.monotonic()

    def moved(self):
        """Bytes moved just now (called from every fetching thread: one float assigned, no lock needed)."""
        self.last = time.monotonic()

    def start(self, send):
        """Watch from a daemon thread; send(mapping) is the process's one report to the module (detach)."""
        self.last = time.monotonic()
        threading.Thread(target=self.watch, args=(send,), daemon=True).start()

    def watch(self, send):
        while time.monotonic() - self.last <= self.stalled_after:
            time.sleep(LEDGER_EVERY)
        why = ("no byte moved for %d s (twice the timeout, %d s, and 30): the early download stopped itself; the "
               "download's tries fetch the rest" % (self.stalled_after, self.timeout))
        send({"error": why})  # the module, when it still waits for the small files
        ledger = read_ledger(self.folder)
        if ledger.get("state") == "running":
            write_ledger(self.folder, dict(ledger, state="failed", error=why, updated=time.time()))
        os._exit(1)  # pylint: disable=protected-access


def early_start(p, endpoint, token, lock, send):
    """The early download's process, from the start: the listing, then the small files (config.json and the index:
    the plan reads them; send() tells the module, which then returns), then the rest as long as it takes. All of it
    runs here, in a process forked before the module made a connection or a thread: OpenSSL set up in the module and
    then forked hung this process's fetch threads now and then (SSLContext.__new__ under py-spy, 9e09561; in CI also
    with that fixed: no byte in 180 s)."""
    warnings = []
    watchdog = Watchdog(p["path"], p["timeout"])
    watchdog.start(send)
    try:
        found = survey(p, endpoint, token, watchdog.moved)
        files, todo = found.files, found.todo
        small = [name for name in todo if not name.endswith(WEIGHTS) and (files[name] or 0) <= SMALL]
        ledger = read_ledger(p["path"])
        if ledger.get("commit") != found.commit:
            ledger = {"commit": found.commit, "repo": p["repo"]}  # another revision: a new download
        ledger = settle(p["path"], ledger, files)
        written = download(p, endpoint, token, found, small, None, warnings.append, watchdog.moved)[2]
        add_to_ledger(p["path"], ledger, written, started=ledger.get("started") or time.time())
    except Failed as err:
        send({"error": str(err), "fetched": err.fetched, "resumed": err.resumed, "warnings": warnings})
        lock.close()
        return
    except Exception as err:  # the module says it in a sentence; this process only reports
        send({"error": "the early download's start failed: %s: %s" % (type(err).__name__, err), "warnings": warnings})
        lock.close()
        return
    large = [name for name in todo if name not in small]
    have, whole = on_disk(p["path"], files)
    send({"written": written, "have": have, "whole": whole, "count": len(files), "large": len(large),
          "total": sum(size or 0 for size in files.values()), "warnings": warnings})
    if large:
        early_worker(p, endpoint, token, found, large, lock, watchdog.moved)
    else:
        lock.close()


def early_worker(p, endpoint, token, found, todo, lock, moved):
    """The background download: everything left, as long as it takes; the ledger says how far it came (every
    LEDGER_EVERY seconds: what is on disk beyond where it began) and how it ended. It holds `lock` until it exits."""
    try:  # what ps, top and pkill show (the thread's name; the threads below inherit it)
        with open("/proc/self/comm", "w", encoding="ascii") as handle:
            handle.write(PROCESS_NAME)
    except OSError:
        pass
    files, ledger = found.files, read_ledger(p["path"])
    base, _whole = on_disk(p["path"], files)
    before = number(ledger.get("bytes_fetched"))
    stop = threading.Event()

    def note(state, fetched=None, **extra):
        have, whole = on_disk(p["path"], files)
        got = max(0, have - base) if fetched is None else fetched
        write_ledger(p["path"], dict(ledger, pid=os.getpid(), state=state, updated=time.time(), bytes_done=have,
                                     bytes_total=sum(size or 0 for size in files.values()), files_done=whole,
                                     files_total=len(files), early_fetched=got, bytes_fetched=before + got, **extra))

    def beat():
        while not stop.wait(LEDGER_EVERY):
            note("running")

    note("running")
    threading.Thread(target=beat, daemon=True).start()
    try:
        written = download(p, endpoint, token, found, todo, None, lambda _text: None, moved)[2]
        stop.set()
        note("done", fetched=written)
    except Exception as err:  # the ledger says why it stopped; the join fetches again itself
        stop.set()
        note("failed", error=str(err)[:2000])
    finally:
        lock.close()


def start_early(p, endpoint, token, warn):
    """background=true: the small files now (config.json and the index: the plan reads them), the rest in a
    detached process that holds the folder's lock. Returns the module's result once the small ones are there (or
    at once when the folder is complete or already being downloaded); Failed."""
    if marked_complete(p["path"], p["repo"], p["revision"]):
        return {"changed": False, "started": False, "running": False, "done": True, "pid": None,
                "progress": "%s is complete in %s" % (p["repo"], p["path"])}
    if not os.path.isdir(p["path"]):
        raise Failed("path=%s is not a folder: create it first (the role's download_start does)" % p["path"])
    lock = take_lock(p["path"], 0)
    if lock is None:
        ledger = read_ledger(p["path"])
        return {"changed": False, "started": False, "running": True, "done": False, "pid": ledger.get("pid"),
                "progress": "%s: already downloading (pid %s)" % (p["repo"], ledger.get("pid"))}
    pid, report = detach(lambda send: early_start(p, endpoint, token, lock, send))
    lock.close()  # the worker holds its own copy of the lock
    for text in report.get("warnings") or []:
        warn(str(text))
    if report.get("error") or "large" not in report:
        raise Failed(str(report.get("error") or "the early download (pid %d) ended before it said how its start went"
                         % pid), report.get("fetched") or (), report.get("resumed"))
    have, total, whole = number(report.get("have")), number(report.get("total")), number(report.get("whole"))
    if not report["large"]:
        return {"changed": bool(report.get("written")), "started": False, "running": False, "done": True, "pid": None,
                "bytes_done": have, "bytes_total": total,
                "progress": progress_line(p["repo"], have, total, whole, number(report.get("count")), None, True)}
    return {"changed": True, "started": True, "running": True, "done": False, "pid": pid, "bytes_done": have,
            "bytes_total": total, "progress": "%s: %d files of %s downloading in the background (pid %d)"
            % (p["repo"], number(report["large"]), human(total - have), pid)}


def join_early(p, started):
    """The module's result for a call while the early download holds the lock: how far it came, from its ledger
    (nothing is fetched); `started`: when the call began (time.monotonic())."""
    ledger = read_ledger(p["path"])
    have, total = number(ledger.get("bytes_done")), number(ledger.get("bytes_total"))
    seconds = time.monotonic() - started
    rate = None
    if ledger.get("started") and ledger.get("updated"):
        span = ledger["updated"] - ledger["started"]
        rate = round(number(ledger.get("early_fetched")) / span, 1) if span > 0 else None
    line = progress_line(p["repo"], have, total, number(ledger.get("files_done")),
                         number(ledger.get("files_total")), rate, False)
    return {"changed": False, "done": False, "joined": ledger.get("pid"), "fetched": [], "resumed": {},
            "bytes_done": have, "bytes_total": total, "files_done": number(ledger.get("files_done")),
            "files_total": number(ledger.get("files_total")), "bytes_per_s": rate, "bytes_fetched": 0,
            "connections": p["connections"], "progress_clock": "task", "waited_s": round(seconds, 1),
            "progress": "%s (started early, pid %s)" % (line, ledger.get("pid"))}
