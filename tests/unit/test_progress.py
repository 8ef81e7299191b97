"""The boot wait's progress: stages read from SGLang's real log lines, one try of the module against a fake
systemd, and the callback that prints one line per try (tests/fixtures/progress/README.md cites the logs)."""

import json
import os
import stat
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest
from sglang_wait_ready import boot_progress, progress_line

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIXTURES = os.path.join(REPO, "tests", "fixtures", "progress")
BIN = os.path.dirname(sys.executable)


def fixture(name):
    with open(os.path.join(FIXTURES, name), encoding="utf-8") as handle:
        return handle.read()


def run_retried(tmp_path, library, name, until, delay):
    """Module `name` (in `library`) retried until `until` in a localhost play, with the repository's ansible.cfg
    and so its callbacks; the finished ansible-playbook process."""
    play = tmp_path / "play.yml"
    play.write_text(
        "- hosts: localhost\n  gather_facts: false\n  tasks:\n"
        "    - %s:\n        counter: %s\n      register: r\n"
        "      until: %s\n      retries: 5\n      delay: %d\n" % (name, tmp_path / "count", until, delay))
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_LIBRARY=str(library))
    return subprocess.run([os.path.join(BIN, "ansible-playbook"), str(play)], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=120)


def counting_module(tmp_path, name, body):
    """A stand-in module in tmp_path/library that counts its tries in the file `counter` (n, from 1), then runs
    body; the library folder."""
    library = tmp_path / "library"
    library.mkdir()
    (library / (name + ".py")).write_text(
        "#!/usr/bin/python\n# WANT_JSON\nimport json, os, sys, time\n"
        "args = json.load(open(sys.argv[1]))\n"
        "n = int(open(args['counter']).read()) + 1 if os.path.exists(args['counter']) else 1\n"
        "open(args['counter'], 'w').write(str(n))\n" + body)
    return library


def test_loading_weights_from_a_tp4_boot():
    state = boot_progress(fixture("mimo_tp4_loading.log"))
    assert state["stage"] == "loading weights"
    assert state["shard"] == [4, 145] and state["percent"] == 3
    assert state["avail_mem_gib"] == 176.38  # the last 'avail mem' logged (TP3's)
    assert progress_line(state, 72) == "loading weights 4/145 (3%), 1m12s, avail mem 176.38 GB"


def test_shard_bar_between_worker_prefix_lines():
    state = boot_progress(fixture("worker_prefix_shards.log"))
    assert (state["stage"], state["shard"], state["percent"]) == ("loading weights", [25, 85], 29)
    assert progress_line(state, 5) == "loading weights 25/85 (29%), 5s"


def test_kv_cache_then_cuda_graphs_on_eight_ranks():
    state = boot_progress(fixture("tp8_kv_and_capture.log"))
    assert state["stage"] == "capturing CUDA graphs"
    assert state["kv_tokens"] == 2795207
    assert state["avail_mem_gib"] == 11.82
    assert progress_line(state, 600) == "capturing CUDA graphs (pool 2,795,207 tokens), 10m00s, avail mem 11.82 GB"


def test_capturing_batches_bar_with_a_rank_line_glued_on():
    state = boot_progress(fixture("musa_capturing_batches.log"))
    assert state["stage"] == "capturing CUDA graphs"
    assert state["graphs"] == [0, 5]
    assert state["avail_mem_gib"] == 11.99
    assert state["kv_tokens"] == 1106304


@pytest.mark.parametrize("cut, stage, text", [
    ("loading weights", "loading weights", "loading weights 24/64 (38%), 1m12s, avail mem 85.35 GB"),
    ("allocating the KV cache", "allocating the KV cache", "allocating the KV cache, 1m12s, avail mem 19.42 GB"),
    ("capturing CUDA graphs", "capturing CUDA graphs", "capturing CUDA graphs 2/4, 1m12s, avail mem 6.21 GB"),
    ("loading the draft model", "loading the draft model",
     "loading the draft model 0/1 (0%), 1m12s, avail mem 6.01 GB"),
    ("warming up", "warming up", "warming up (pool 200,229 tokens), 1m12s, avail mem 4.50 GB"),
])
def test_every_stage_of_a_boot_with_a_draft_model(cut, stage, text):
    log = fixture("composed_ct200_draft_boot.log")
    head = log.split("## cut: " + cut)[0]
    state = boot_progress(head)
    assert state["stage"] == stage
    assert progress_line(state, 72) == text


def test_a_whole_boot_ends_ready_and_a_fresh_one_is_starting():
    assert boot_progress(fixture("composed_ct200_draft_boot.log"))["stage"] == "ready"
    assert boot_progress("")["stage"] == "starting"
    assert progress_line(boot_progress(""), 3) == "starting, 3s"


# --- one try of the module, against a fake systemctl/journalctl and a fake /health_generate ---

def _script(path, body):
    with open(path, "w", encoding="utf-8") as handle:
        handle.write("#!/bin/sh\n" + body)
    os.chmod(path, os.stat(path).st_mode | stat.S_IEXEC)


@pytest.fixture
def fake_systemd(tmp_path):
    """systemctl answers from tmp/props; journalctl prints tmp/journal (the fixture log)."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    _script(bindir / "systemctl", 'cat "%s/props"\n' % tmp_path)
    journal = tmp_path / "journal"
    _script(bindir / "journalctl", 'case "$*" in *"-n 15"*) tail -n 15 "%s";; *"-n 1 "*) tail -n 1 "%s";;'
                                   ' *) cat "%s";; esac\n' % (journal, journal, journal))

    def setup(props, journal):
        (tmp_path / "props").write_text("\n".join("%s=%s" % item for item in props.items()) + "\n")
        (tmp_path / "journal").write_text(journal)
        return str(bindir)
    return setup


def _health_server(status, not_before=0):
    """Answers `status`, or 503 to the first `not_before` requests."""
    calls = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            calls.append(self.path)
            self.send_response(status if len(calls) > not_before else 503)
            self.end_headers()
            self.wfile.write(b"ok")

        def log_message(self, *args):
            pass
    httpd = HTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd


def run_module(bindir, tmp_path, **args):
    path = tmp_path / "args.json"
    path.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": args}))
    env = dict(os.environ, PATH=bindir + os.pathsep + os.environ["PATH"])
    proc = subprocess.run([sys.executable, os.path.join(REPO, "library", "sglang_wait_ready.py"), str(path)],
                          env=env, capture_output=True, text=True, timeout=60)
    return json.loads(proc.stdout)


BOOTING = {"ActiveState": "activating", "SubState": "start", "NRestarts": "0", "InvocationID": "abc",
           "ExecMainStartTimestampMonotonic": "1"}


def test_a_try_while_loading_returns_the_stage(fake_systemd, tmp_path):
    httpd = _health_server(503)
    try:
        bindir = fake_systemd(BOOTING, fixture("mimo_tp4_loading.log"))
        result = run_module(bindir, tmp_path, url="http://127.0.0.1:%d" % httpd.server_port, poll=0,
                            timeout=10 ** 9)
    finally:
        httpd.shutdown()
    assert not result.get("failed") and result["ready"] is False
    assert result["stage"] == "loading weights" and result["shard"] == [4, 145]
    assert result["progress"].startswith("loading weights 4/145 (3%), ")


def test_a_crash_into_auto_restart_fails_at_once_with_the_journal(fake_systemd, tmp_path):
    props = dict(BOOTING, SubState="auto-restart")
    journal = fixture("mimo_tp4_loading.log") + (
        "[2025-12-19 07:43:00 TP0] Scheduler hit an exception: RuntimeError: CUDA out of memory\n")
    bindir = fake_systemd(props, journal)
    result = run_module(bindir, tmp_path, url="http://127.0.0.1:9", poll=60, timeout=10 ** 9)
    assert result["failed"] is True
    assert "SGLang stopped while starting" in result["msg"] and "restarting after a crash" in result["msg"]
    assert "CUDA out of memory" in result["msg"]
    assert "Load weight begin" in result["msg"]  # the last 15 lines, not only the last one


def test_past_the_timeout_fails_with_the_stage(fake_systemd, tmp_path):
    bindir = fake_systemd(BOOTING, fixture("tp8_kv_and_capture.log"))
    result = run_module(bindir, tmp_path, url="http://127.0.0.1:9", poll=60, timeout=1)
    assert result["failed"] is True
    assert "did not answer /health_generate within 1 s" in result["msg"]
    assert "stage: capturing CUDA graphs (pool 2,795,207 tokens)" in result["msg"]


def test_an_answer_is_ready(fake_systemd, tmp_path):
    httpd = _health_server(200)
    try:
        bindir = fake_systemd(dict(BOOTING, ActiveState="active", SubState="running"),
                              fixture("composed_ct200_draft_boot.log"))
        result = run_module(bindir, tmp_path, url="http://127.0.0.1:%d" % httpd.server_port, poll=0)
    finally:
        httpd.shutdown()
    assert result["ready"] is True and result["stage"] == "ready"
    assert result["kv_tokens"] == 200229


def test_without_poll_one_call_waits_until_ready(fake_systemd, tmp_path):
    # restore.yml calls the module once, without `poll`: it must block until SGLang answers, as before.
    httpd = _health_server(200, not_before=2)
    try:
        bindir = fake_systemd(BOOTING, fixture("composed_ct200_draft_boot.log"))
        result = run_module(bindir, tmp_path, url="http://127.0.0.1:%d" % httpd.server_port, timeout=10 ** 9)
    finally:
        httpd.shutdown()
    assert result["ready"] is True and not result.get("failed")


# --- the callback, through ansible-playbook with the repository's ansible.cfg ---

def test_the_callback_prints_one_line_per_try(tmp_path):
    sys.path.insert(0, os.path.join(REPO, "callback_plugins"))
    from sglang_progress import progress_message
    assert progress_message("ct200", {"progress": "warming up, 5s"}) == "ct200: warming up, 5s"
    assert progress_message("ct200", {"msg": "other task"}) is None

    # A stand-in that reports progress for its first two tries, then is ready.
    library = counting_module(tmp_path, "fake_progress", "print(json.dumps({'changed': False, 'ready': n >= 3, "
                              "'progress': 'loading weights %d/64' % (n * 20)}))\n")
    proc = run_retried(tmp_path, library, "fake_progress", "r.ready", 0)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.count("localhost: loading weights") == 2
    assert "localhost: loading weights 20/64" in proc.stdout and "localhost: loading weights 40/64" in proc.stdout
    assert "FAILED - RETRYING" not in proc.stdout  # sglang_once leaves a progress try to sglang_progress


def test_the_callback_adds_the_tasks_clock_when_a_result_asks():
    sys.path.insert(0, os.path.join(REPO, "callback_plugins"))
    from sglang_progress import duration, progress_message
    result = {"progress": "downloading org/model: 1.0 of 4.0 GiB (25%), 1/4 files, 1.0 GiB/s (about 3s left)",
              "progress_clock": "task"}
    assert progress_message("ct200", result, 75.4) == ("ct200: downloading org/model: 1.0 of 4.0 GiB (25%), 1/4 "
                                                       "files, 1.0 GiB/s (about 3s left), 1m15s")
    assert progress_message("ct200", result, None) == "ct200: " + result["progress"]  # no start seen: no clock
    # A line with its own clock (the boot wait's, from the unit's start) gets none added.
    assert progress_message("ct200", {"progress": "warming up, 5s"}, 75.4) == "ct200: warming up, 5s"
    assert [duration(s) for s in (0, 59.9, 60, 3599, 3600, 7380)] == ["0s", "59s", "1m00s", "59m59s", "1h00m",
                                                                       "2h03m"]


def test_the_task_clock_through_ansible_playbook(tmp_path):
    # Tries of about a second that cannot know when the task began, like hf_download's (poll).
    library = counting_module(tmp_path, "fake_download", "time.sleep(1)\n"
                              "print(json.dumps({'changed': True, 'done': n >= 3, 'progress_clock': 'task',"
                              " 'progress': 'downloading org/model: %d of 3 files' % n}))\n")
    proc = run_retried(tmp_path, library, "fake_download", "r.done", 1)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = [line for line in proc.stdout.splitlines() if line.startswith("localhost: downloading")]
    assert len(lines) == 2, proc.stdout
    first, second = (int(line.rsplit(", ", 1)[1].rstrip("s")) for line in lines)
    assert lines[0].startswith("localhost: downloading org/model: 1 of 3 files, ")
    assert 1 <= first < second <= first + 4  # one try (1 s) and one delay (1 s) apart, on the controller's clock


@pytest.mark.parametrize("begin, end", [
    ("Capture target decode cuda graph begin. backend=full, num_tokens_per_req=1, avail mem=6.30 GB",
     "Capture target decode cuda graph end. Time elapsed: 9.12 s. mem usage=0.31 GB. avail mem=5.99 GB."),
    ("Capture target prefill CUDA graph begin. backend=full, num_tokens=[8192], avail mem=6.30 GB",
     "Capture target prefill CUDA graph end. Time elapsed: 9.12 s. mem usage=0.31 GB. avail mem=5.99 GB."),
])
def test_sglang_0_5_23_graph_lines(begin, end):
    # 0.5.23 names what it captures (model_runner_components/cuda_graph_setup.py) and logs the pool as
    # "KV Cache is allocated. dtype: ..., #tokens: N" (mem_cache/memory_pool.py).
    head = ("[2026-11-20 10:03:31 TP0] KV Cache is allocated. dtype: torch.bfloat16, #tokens: 200229, "
            "KV size: 13.10 GB\n[2026-11-20 10:03:32 TP0] " + begin + "\n")
    assert boot_progress(head)["stage"] == "capturing CUDA graphs"
    assert boot_progress(head)["kv_tokens"] == 200229
    assert boot_progress(head + "[2026-11-20 10:03:41 TP0] " + end + "\n")["stage"] == "warming up"


@pytest.mark.parametrize("begin", ["[2026-12-01 03:00:00 TP8] Init parallel begin.",  # 0.5.23 distributed/bootstrap.py
                                   "[2025-03-01 10:00:00 TP0] Init torch distributed begin."])  # 0.5.9 model_runner.py
def test_a_boot_waiting_at_the_rendezvous_says_so(begin):
    assert boot_progress(begin + "\n")["stage"] == "joining the process group"
    loading = begin + "\n[2026-12-01 03:00:05 TP8] Load weight begin. avail mem=85.33 GB\n"
    assert boot_progress(loading)["stage"] == "loading weights"


def test_the_callback_leaves_sys_path_alone():
    # module_utils/ on sys.path would make its sglang_router.py shadow the real sglang_router package in the same
    # interpreter (the controller's, or this test run's: test_hostile_flags imports sglang_router.router_args).
    sys.path.insert(0, os.path.join(REPO, "callback_plugins"))
    import sglang_progress  # noqa: F401
    assert os.path.join(REPO, "module_utils") not in [os.path.abspath(p) for p in sys.path]
