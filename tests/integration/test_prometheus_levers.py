"""playbooks/levers.yml on the repository's inventory, its ct200 served by the SGLang double on this machine (a local
connection): after a scripted load (twelve requests at once on ct200's 8 slots, short against the 200k target) it
names the concurrency lever and the --max-running-requests the planner accepts; against a server without metrics it
says how to turn them on; a window that is no duration is refused by name."""

import json
import os
import subprocess
import sys
import threading
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "sglang_double"))
from run_double import running_double  # noqa: E402

REPO = os.path.dirname(os.path.dirname(HERE))
PLAYBOOK_BIN = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")
# ct200's plan flags (make plan): the double serves 8 slots and the 200k context; decode 0.05 s a token
CT200 = ["--context-length", "200000", "--max-running-requests", "8", "--tp-size", "8",
         "--mem-fraction-static", "0.953"]
GPU = {"decode_seconds_per_token": 0.05, "load_seconds": 0.0, "graph_seconds": 0.0}
PROMPT = "The quick brown fox jumps over the lazy dog. " * 200 + "\nWhat animal?"  # ~2,000 tokens


def levers(port, *args):
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg"), ANSIBLE_NOCOLOR="1")
    return subprocess.run([PLAYBOOK_BIN, "playbooks/levers.yml", "-l", "ct200", "-e", "ansible_connection=local",
                           "-e", "ansible_python_interpreter=%s" % sys.executable, "-e", "sglang_port=%d" % port,
                           *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=300)


class Load:
    """`clients` threads sending the prompt one after the other until stopped: the slots stay full, the rest queue."""

    def __init__(self, url, clients=12, tokens=40):
        self.url, self.tokens, self.stop = url, tokens, threading.Event()
        self.threads = [threading.Thread(target=self._client, daemon=True) for _ in range(clients)]

    def _client(self):
        payload = json.dumps({"text": PROMPT, "sampling_params": {"max_new_tokens": self.tokens,
                                                                  "ignore_eos": True}}).encode()
        while not self.stop.is_set():
            request = urllib.request.Request(self.url + "/generate", payload, {"content-type": "application/json"})
            with urllib.request.urlopen(request, timeout=60) as response:
                response.read()

    def __enter__(self):
        for thread in self.threads:
            thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        for thread in self.threads:
            thread.join(timeout=30)


def test_after_a_load_on_ct200_s_slots_it_names_the_concurrency_lever_and_an_accepted_alternative():
    with running_double(CT200 + ["--enable-metrics"], GPU) as (url, _log), Load(url):
        result = levers(int(url.rsplit(":", 1)[1]), "-e", "sglang_levers_window=6s", "-e", "sglang_levers_step_s=1")
    out = result.stdout
    assert result.returncode == 0, out + result.stderr
    assert "ct200: the lever: concurrency (every slot busy and requests queue while the pool has room)" in out, out
    assert "8 running (the limit) in " in out and "of 7 samples" in out, out
    assert "of the 200,000 target" in out
    # ct200's headroom affords 16 (tests/unit/test_metrics_levers.py plans it with the real planner)
    assert "ct200: instead: --max-running-requests 16 (sglang_max_running_requests: 16)" in out, out
    assert "levers.yml changes nothing" in out
    assert "changed=0" in out


def test_against_a_server_without_metrics_it_says_how_to_turn_them_on():
    with running_double(CT200, GPU) as (url, _log):
        result = levers(int(url.rsplit(":", 1)[1]), "-e", "sglang_levers_window=1s", "-e", "sglang_levers_step_s=1")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "ct200: serves no metrics" in result.stdout and "set sglang_metrics: true" in result.stdout, result.stdout


def test_a_window_that_is_no_duration_is_refused_by_name():
    result = levers(1, "-e", "sglang_levers_window=soon")
    assert result.returncode != 0
    assert "sglang_levers_window is soon" in result.stdout and "5m" in result.stdout, result.stdout
    assert "Traceback" not in result.stdout + result.stderr
