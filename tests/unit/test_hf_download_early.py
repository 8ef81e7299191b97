"""library/hf_download.py's early download (issue 33): `background: true` fetches the small files (config.json, the
index) before it returns and the rest in a detached process holding the folder's lock; the role's download tries
join it (they report its progress while it runs, and fetch themselves once it is gone: a reboot kills it, and the
.part files it left are continued, not fetched again). Against the Hub stand-in of test_hf_download.py."""

import json
import os
import pathlib
import signal
import subprocess
import sys
import threading
import time

import yaml
from test_hf_download import REPO_ROOT, Hub, checkpoint, module_args, one_try
from test_hf_download_parallel import listed, shards


def paced_hub(files, per_request):
    server = Hub(files, siblings=listed(files), bytes_per_s=per_request)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def args_for(server, tmp_path, **extra):
    target = tmp_path / "model"
    target.mkdir(exist_ok=True)
    return dict(module_args("org/model", "main", target, tmp_path / "no-token",
                            "http://127.0.0.1:%d" % server.server_port), **extra), target


def started_at(pid):
    """The process's start time (field 22 of /proc/PID/stat) and whether it is a zombie; None when it is gone. The
    start time tells the early download from a later process given its pid again (pid_max is 32,768 here, and a
    machine running the molecule lanes beside the unit tests goes through pids fast)."""
    try:
        with open("/proc/%d/stat" % pid, encoding="utf-8") as handle:
            fields = handle.read().rsplit(")", 1)[-1].split()
    except OSError:
        return None
    return fields[19], fields[0] == "Z"


def alive(pid, since=None):
    """Whether the process runs (a zombie of this test's process tree counts as gone); with `since` (started_at's
    first answer) only while it is that same process."""
    now = started_at(pid)
    if now is None or now[1]:
        return False
    return since is None or now[0] == since[0]


def stacks(pid):
    """Where a process's threads are (py-spy, in the test venv), for a failure's message."""
    spy = pathlib.Path(sys.executable).parent / "py-spy"
    if not spy.exists():
        return "(no py-spy to show its threads)"
    done = subprocess.run([str(spy), "dump", "--pid", str(pid)], capture_output=True, text=True, timeout=60,
                          check=False)
    return done.stdout + done.stderr


def wait_gone(pid, seconds=180, ledger=None):
    # 180 s: a connection the loaded machine stalled costs the client's 60 s timeout and one more try; a hang no
    # timeout covers ends the process by its watchdog after 150 s (2 x 60 + 30)
    since = started_at(pid)
    until = time.monotonic() + seconds
    while alive(pid, since) and time.monotonic() < until:
        time.sleep(0.1)
    said = ledger.read_text(errors="replace") if ledger and ledger.exists() else "no ledger"
    assert not alive(pid, since), "the early download (pid %d) still runs after %d s; its ledger: %s; its threads: " \
        "%s" % (pid, seconds, said, stacks(pid))


def join(args, tmp_path, tries=60):
    """The role's download loop: tries of `poll` seconds until done."""
    seen = []
    for _ in range(tries):
        rc, out = one_try(dict(args, poll=1), tmp_path)
        assert rc == 0, out
        seen.append(out)
        if out["done"]:
            return seen
    raise AssertionError("not done after %d tries: %s" % (tries, seen[-1]))


def weights_and_config():
    files = shards(4, 2 * 2**20)
    files["config.json"] = b'{"architectures": ["KimiK25ForConditionalGeneration"]}'
    return files


def test_the_early_start_returns_at_once_with_config_json_and_the_tries_join_it(tmp_path):
    files = weights_and_config()
    # each 2 MiB shard ~8 s, side by side: long enough that a loaded CI machine's tries still find it running
    server = paced_hub(files, 256 * 1024)
    try:
        args, target = args_for(server, tmp_path)
        began = time.monotonic()
        rc, out = one_try(dict(args, background=True), tmp_path)
        assert rc == 0 and out["started"] and out["changed"] and not out["done"], out
        assert time.monotonic() - began < 4  # the weights (~8 s) are the background's
        assert (target / "config.json").read_bytes() == files["config.json"]  # the plan reads it now
        pid = out["pid"]
        assert alive(pid)

        rc, again = one_try(dict(args, background=True), tmp_path)
        assert rc == 0 and not again["started"] and again["running"] and again["pid"] == pid, again

        tries = join(args, tmp_path)
        waiting = [t for t in tries if not t["done"]]
        assert waiting and all(t["joined"] == pid and "started early" in t["progress"] for t in waiting), tries
        last = tries[-1]
        total = sum(len(d) for d in files.values())
        # the whole download's bytes, the early part's included, and when it began
        assert last["download_fetched"] == total and last["download_started"] <= time.time(), last
        assert not (target / ".sglang-download.json").exists()  # spent
        wait_gone(pid)
    finally:
        server.shutdown()
    for name, data in files.items():
        assert (target / name).read_bytes() == data


def test_a_killed_early_download_is_continued_by_the_tries_not_fetched_again(tmp_path):
    files = weights_and_config()
    total = sum(len(d) for d in files.values())
    server = paced_hub(files, 512 * 1024)  # each shard ~4 s
    try:
        args, target = args_for(server, tmp_path)
        rc, out = one_try(dict(args, background=True), tmp_path)
        assert rc == 0 and out["started"], out
        time.sleep(2.5)
        os.kill(out["pid"], signal.SIGKILL)  # what a reboot does to it
        wait_gone(out["pid"])
        ledger = json.loads((target / ".sglang-download.json").read_text())
        assert ledger["state"] == "running" and ledger["pid"] == out["pid"]
        kept = sum(os.path.getsize(target / n) for n in os.listdir(target) if n.endswith(".part"))
        assert kept > 2**20, "the early download left no .part to continue"

        tries = join(args, tmp_path)
    finally:
        server.shutdown()
    fetched_by_tries = sum(t["bytes_fetched"] for t in tries)
    assert fetched_by_tries <= total - kept, (fetched_by_tries, total, kept)
    for name, data in files.items():
        assert (target / name).read_bytes() == data
    # the early part (its last note, and what it wrote after it) and the tries': every byte of the weights once
    assert total - len(files["config.json"]) <= tries[-1]["download_fetched"] <= total, tries[-1]


def test_a_failed_early_download_is_said_and_continued(tmp_path):
    files = weights_and_config()
    server = Hub(files, siblings=listed(files), broken_file="model-00002.safetensors")
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        args, target = args_for(server, tmp_path)
        rc, out = one_try(dict(args, background=True), tmp_path)
        assert rc == 0 and out["started"], out
        wait_gone(out["pid"])
        ledger = json.loads((target / ".sglang-download.json").read_text())
        assert ledger["state"] == "failed" and "model-00002.safetensors" in ledger["error"], ledger
        server.broken_file = None  # the storage backend is back
        tries = join(args, tmp_path)
    finally:
        server.shutdown()
    assert "The early download of org/model stopped" in json.dumps(tries[0].get("warnings")), sorted(tries[0])
    assert (target / "model-00002.safetensors").read_bytes() == files["model-00002.safetensors"]


# The module as one_try runs it, with a hang no socket timeout covers put into the early download's process alone (the
# forked worker: another pid than the module's), as a deadlock in a library would hang it: in its requests for the
# weights (argv[1] ".safetensors"), or in every request ("").
HANGS_IN_THE_WORKER = """
import http.client, os, runpy, sys, threading
module, where = os.getpid(), sys.argv.pop(1)
putrequest = http.client.HTTPConnection.putrequest
def hang(self, method, url, *args, **kwargs):
    if os.getpid() != module and url.endswith(where):
        threading.Event().wait()
    return putrequest(self, method, url, *args, **kwargs)
http.client.HTTPConnection.putrequest = hang
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
"""


def hanging_start(args, tmp_path, where):
    (tmp_path / "args.json").write_text(json.dumps({"ANSIBLE_MODULE_ARGS": dict(args, background=True)}))
    return subprocess.run([sys.executable, "-c", HANGS_IN_THE_WORKER, where, str(REPO_ROOT / "library/hf_download.py"),
                           str(tmp_path / "args.json")], capture_output=True, text=True, timeout=120, check=False)


def test_an_early_download_that_hangs_ends_itself_and_the_tries_fetch_the_rest(tmp_path):
    # a process that holds the folder's lock and moves no byte would keep every try joining it for good
    files = weights_and_config()
    server = paced_hub(files, 4 * 2**20)
    try:
        args, target = args_for(server, tmp_path, timeout=5)  # the watchdog: 2 x 5 + 30 s without a byte
        began = time.monotonic()
        proc = hanging_start(args, tmp_path, ".safetensors")
        out = json.loads(proc.stdout)
        assert proc.returncode == 0 and out["started"], proc.stdout + proc.stderr
        wait_gone(out["pid"], seconds=120, ledger=target / ".sglang-download.json")
        assert 40 <= time.monotonic() - began, "it ended before its watchdog could"
        ledger = json.loads((target / ".sglang-download.json").read_text())
        assert ledger["state"] == "failed" and "no byte moved for 40 s" in ledger["error"], ledger
        tries = join(args, tmp_path)
    finally:
        server.shutdown()
    assert "stopped itself" in json.dumps(tries[0].get("warnings")), tries[0]
    for name, data in files.items():
        assert (target / name).read_bytes() == data


def test_an_early_start_that_hangs_before_the_small_files_fails_the_module_in_a_sentence(tmp_path):
    # the module waits for the small files (the plan reads config.json): a hang there must not hang the run
    files = weights_and_config()
    server = paced_hub(files, 4 * 2**20)
    try:
        args, target = args_for(server, tmp_path, timeout=5)
        began = time.monotonic()
        proc = hanging_start(args, tmp_path, "")
        out = json.loads(proc.stdout)
        assert proc.returncode == 1 and out["failed"] and "no byte moved for 40 s" in out["msg"], out
        assert 40 <= time.monotonic() - began < 100
        tries = join(args, tmp_path)  # the lock went with the process
    finally:
        server.shutdown()
    for name, data in files.items():
        assert (target / name).read_bytes() == data
    assert tries[-1]["done"]


def test_a_checkpoint_marked_complete_starts_nothing(tmp_path):
    files = weights_and_config()
    server = paced_hub(files, 1024 * 1024)
    try:
        args, target = args_for(server, tmp_path)
        (target / ".sglang-download-complete").write_text(json.dumps({"repo": "org/model", "revision": "main"}))
        rc, out = one_try(dict(args, background=True), tmp_path)
    finally:
        server.shutdown()
    assert rc == 0 and not out["changed"] and not out["started"] and out["done"], out
    assert server.requests == []


def test_check_mode_starts_nothing(tmp_path):
    files = weights_and_config()
    server = paced_hub(files, 1024 * 1024)
    try:
        args, target = args_for(server, tmp_path)
        rc, out = one_try(dict(args, background=True, _ansible_check_mode=True), tmp_path)
    finally:
        server.shutdown()
    assert rc == 0 and out["done"] and "pid" not in out, out
    assert sorted(os.listdir(target)) == []


def test_started_again_after_a_kill_it_continues_the_parts_and_counts_every_byte_once(tmp_path):
    # site.yml starts the download again after the driver role: the reboot ended the first one
    files = weights_and_config()
    total = sum(len(d) for d in files.values())
    server = paced_hub(files, 512 * 1024)
    try:
        args, target = args_for(server, tmp_path)
        rc, first = one_try(dict(args, background=True), tmp_path)
        assert rc == 0 and first["started"], first
        time.sleep(2.5)
        os.kill(first["pid"], signal.SIGKILL)
        wait_gone(first["pid"])
        kept = sum(os.path.getsize(target / n) for n in os.listdir(target) if n.endswith(".part"))
        rc, second = one_try(dict(args, background=True), tmp_path)
        assert rc == 0 and second["started"] and second["pid"] != first["pid"], second
        assert second["bytes_done"] >= kept  # continued, not begun again
        tries = join(args, tmp_path)
    finally:
        server.shutdown()
    assert total - len(files["config.json"]) <= tries[-1]["download_fetched"] <= total, tries[-1]
    for name, data in files.items():
        assert (target / name).read_bytes() == data


def test_download_yml_after_an_early_download_that_finished_ends_the_phase_with_its_bytes(tmp_path):
    # the early download may finish before the model step: the step still ends the download phase on the day-1
    # clock (in this run's record), with the whole download's bytes from the ledger (it only lists the revision), and
    # marks it complete
    files = checkpoint([2**20, 2**20, 2**20])  # a checkpoint hf_checkpoint_status can mark complete
    server = paced_hub(files, 4 * 1024 * 1024)
    try:
        args, target = args_for(server, tmp_path)
        rc, out = one_try(dict(args, background=True), tmp_path)
        assert rc == 0 and out["started"], out
        wait_gone(out["pid"], ledger=target / ".sglang-download.json")
        clock_file = tmp_path / "clock.json"
        step = {"_sglang_download_repo": "org/model", "_sglang_download_revision": "main",
                "_sglang_download_path": str(target), "sglang_user": "root", "sglang_hf_token": "",
                "sglang_hf_token_file": str(tmp_path / "no-token"), "sglang_hf_endpoint": args["endpoint"],
                "sglang_backup_dir": str(tmp_path / "backups")}  # the run lock the tries renew
        play = tmp_path / "play.yml"
        play.write_text(yaml.safe_dump([{
            "hosts": "localhost", "connection": "local", "gather_facts": False, "tasks": [
                # the early start's mark, as its action keeps it in this run's record (a test double's action,
                # tests/unit/run_record_seed/)
                {"name": "The early start's mark", "sglang_seed_run_record": {"record": {"results": {"download": {
                    "clock": {"download": {"start": time.time() - 5}}, "fetched": []}}}}},
                {"name": "download", "ansible.builtin.include_role": {"name": "sglang", "tasks_from": "download"},
                 "vars": dict(step, _sglang_internal="download")},
                {"name": "Keep what the run record holds of the download", "ansible.builtin.copy": {
                    "content": "{{ inventory_hostname | sglang_run_result('download') | to_json }}",
                    "dest": str(clock_file)}}]}]))
        env = dict(os.environ, ANSIBLE_CONFIG=str(REPO_ROOT / "ansible.cfg"), ANSIBLE_NOCOLOR="1",
                   ANSIBLE_ACTION_PLUGINS=os.pathsep.join([str(REPO_ROOT / "action_plugins"),
                                                           str(REPO_ROOT / "tests/unit/run_record_seed")]))
        result = subprocess.run([str(pathlib.Path(sys.executable).parent / "ansible-playbook"), str(play),
                                 "-e", "ansible_become=false"], cwd=REPO_ROOT, env=env, capture_output=True,
                                text=True, timeout=300)
    finally:
        server.shutdown()
    assert result.returncode == 0, result.stdout + result.stderr
    kept = json.loads(clock_file.read_text())
    clock = kept["clock"]
    assert kept["fetched"] == [str(target)], kept
    total = sum(len(d) for d in files.values())
    assert clock["download"]["end"] > clock["download"]["start"], clock
    assert clock["fetch"]["bytes_fetched"] == total and clock["fetch"]["bytes_total"] == total, clock
    assert (target / ".sglang-download-complete").exists() and not (target / ".sglang-download.json").exists()


def test_the_early_start_and_the_tries_keep_the_download_in_this_run_s_record(tmp_path):
    # the role's own tasks through ansible-playbook: download_early.yml's action keeps the phase's start when the
    # early download runs; download.yml's tries keep that start, and the try that is done its end, the whole
    # download's bytes and the folder (action_plugins/hf_download.py)
    files = checkpoint([2**20, 2**20, 2**20])
    server = paced_hub(files, 1024 * 1024)
    try:
        args, target = args_for(server, tmp_path)
        step = {"_sglang_download_repo": "org/model", "_sglang_download_revision": "main",
                "_sglang_download_path": str(target), "sglang_user": "root", "sglang_hf_token": "",
                "sglang_hf_token_file": str(tmp_path / "no-token"), "sglang_hf_endpoint": args["endpoint"],
                "sglang_backup_dir": str(tmp_path / "backups")}

        def keep(name):
            return {"name": "Keep the record as it stands (%s)" % name, "ansible.builtin.copy": {
                "content": "{{ inventory_hostname | sglang_run_result('download') | to_json }}",
                "dest": str(tmp_path / (name + ".json"))}}

        play = tmp_path / "play.yml"
        play.write_text(yaml.safe_dump([{
            "hosts": "localhost", "connection": "local", "gather_facts": False, "tasks": [
                keep("before"),
                {"name": "early", "ansible.builtin.include_role": {"name": "sglang", "tasks_from": "download_early"},
                 "vars": dict(step, _sglang_internal="download_early")},
                keep("early"),
                {"name": "download", "ansible.builtin.include_role": {"name": "sglang", "tasks_from": "download"},
                 "vars": dict(step, _sglang_internal="download")},
                keep("after")]}]))
        env = dict(os.environ, ANSIBLE_CONFIG=str(REPO_ROOT / "ansible.cfg"), ANSIBLE_NOCOLOR="1")
        began = time.time()
        result = subprocess.run([str(pathlib.Path(sys.executable).parent / "ansible-playbook"), str(play),
                                 "-e", "ansible_become=false"], cwd=REPO_ROOT, env=env, capture_output=True,
                                text=True, timeout=300)
    finally:
        server.shutdown()
    assert result.returncode == 0, result.stdout + result.stderr
    before, early, after = (json.loads((tmp_path / (name + ".json")).read_text())
                            for name in ("before", "early", "after"))
    assert before == {}  # a run's record begins empty: nothing of an earlier run
    assert began < early["clock"]["download"]["start"] and "end" not in early["clock"]["download"], early
    assert early["fetched"] == []
    total = sum(len(d) for d in files.values())
    assert after["clock"]["download"]["start"] == early["clock"]["download"]["start"], after  # the early start kept
    assert after["clock"]["download"]["end"] > after["clock"]["download"]["start"], after
    assert after["clock"]["fetch"]["bytes_fetched"] == total and after["clock"]["fetch"]["bytes_total"] == total
    assert after["fetched"] == [str(target)]
    assert (target / ".sglang-download-complete").exists()
