"""The double launched across nodes, as real processes on localhost: the rendezvous, the pool sized from the
least-free rank of every node, node 1's dummy health server, the real failure wording (fixtures/multinode/, lines
from public threads) and the refusals."""

import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
FIXTURES = os.path.join(HERE, "fixtures", "multinode")
if HERE not in sys.path:
    sys.path.insert(0, HERE)

from run_double import free_port, model_dir  # noqa: E402

sys.path.insert(0, os.path.join(REPO, "library"))
import sglang_boot_facts  # noqa: E402

GIB = 1 << 30
CELL = (512 + 64) * 61 * 2  # Kimi K2.6's MLA cell per token on each GPU: (kv_lora_rank + rope) x layers x bf16
MM_RESERVE = 100 / 1024  # 0.5.23 keeps SGLANG_VLM_CACHE_SIZE_MB out of a multimodal checkpoint's KV budget
FAST = {"load_seconds": 0.05, "graph_seconds": 0.0}


def real_line(name):
    """A line from a public thread as a pattern: its numbers (times, counts, addresses, ports) free, the rest exact."""
    with open(os.path.join(FIXTURES, name), encoding="utf-8") as handle:
        line = next(text for text in handle.read().splitlines() if "Error" in text)
    return re.compile(re.sub(r"\d+", r"\\d+", re.escape(line)))


class Nodes:
    """Nodes of one server, each `python -m sglang.launch_server` with its own simulated GPU and log."""

    def __init__(self, root, tp=8, nnodes=2, timeout=3, fraction="0.95"):
        self.root, self.tp, self.nnodes, self.timeout, self.fraction = root, tp, nnodes, timeout, fraction
        self.model = model_dir(str(root))
        self.dist_port = free_port()
        self.procs, self.ports = {}, {}

    def start(self, rank, gpu=None, extra=()):
        gpu_path = self.root / ("gpu%d.json" % rank)
        gpu_path.write_text(json.dumps({**FAST, **(gpu or {})}))
        self.ports[rank] = free_port()
        argv = [sys.executable, "-m", "sglang.launch_server", "--model-path", self.model, "--port",
                str(self.ports[rank]), "--tp-size", str(self.tp), "--trust-remote-code", "--mem-fraction-static",
                self.fraction, "--nnodes", str(self.nnodes), "--node-rank", str(rank), "--dist-init-addr",
                "127.0.0.1:%s" % self.dist_port, "--dist-timeout", str(self.timeout), *extra]
        with open(self.root / ("node%d.log" % rank), "w", encoding="utf-8") as log:
            env = dict(os.environ, SGLANG_DOUBLE_GPU=str(gpu_path), PYTHONPATH=HERE)
            self.procs[rank] = subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT)
        return self.procs[rank]

    def log(self, rank):
        return (self.root / ("node%d.log" % rank)).read_text(encoding="utf-8")

    def url(self, rank, path):
        return "http://127.0.0.1:%d%s" % (self.ports[rank], path)

    def wait_healthy(self, rank, seconds=15):
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline and self.procs[rank].poll() is None:
            if status(self.url(rank, "/health")) == 200:
                return
            time.sleep(0.05)
        raise AssertionError("node %d not healthy:\n%s" % (rank, self.log(rank)))

    def stop(self):
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.kill()
            proc.wait(timeout=10)


def status(url, data=None):
    try:
        with urllib.request.urlopen(urllib.request.Request(url, data=data), timeout=2) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code
    except (urllib.error.URLError, OSError):
        return None


@pytest.fixture
def nodes(tmp_path):
    made = []

    def make(**kwargs):
        made.append(Nodes(tmp_path, **kwargs))
        return made[-1]

    yield make
    for group in made:
        group.stop()


def pool_lines(log):
    return {int(rank): int(tokens) for rank, tokens in
            re.findall(r" TP(\d+)\] KV Cache is allocated\. .*#tokens: (\d+),", log)}


# ---- two nodes boot ----------------------------------------------------------------------------------------

@pytest.fixture(scope="module", params=["0.5.23", "0.5.9"])
def pair(request, tmp_path_factory):
    """Node 1's GPUs have 10.334 GiB less free memory than node 0's: P and A are node 1's."""
    group = Nodes(tmp_path_factory.mktemp("pair"))
    group.version = request.param
    try:
        group.start(1, {"version": request.param, "pre_load_avail_gib": 75.0})  # node 1 first: it waits for 0
        group.start(0, {"version": request.param})
        group.wait_healthy(0)
        group.wait_healthy(1)
        yield group
    finally:
        group.stop()


def test_the_pool_follows_the_least_free_rank_of_every_node(pair):
    p, a = 75.0, 75.0 - 65.915  # node 1's, the MIN over both nodes before and after the weights
    reserve = MM_RESERVE if pair.version == "0.5.23" else 0.0
    expected = int((a - reserve - p * (1 - 0.95)) * GIB) // CELL
    node0_alone = int((85.334 - 65.915 - reserve - 85.334 * 0.05) * GIB) // CELL
    assert expected < node0_alone
    logs = [pair.log(0), pair.log(1)]
    assert pool_lines(logs[0]) == dict.fromkeys(range(0, 4), expected)  # node 0 runs TP0..TP3
    assert pool_lines(logs[1]) == dict.fromkeys(range(4, 8), expected)  # node 1 the global ranks TP4..TP7
    with urllib.request.urlopen(pair.url(0, "/server_info"), timeout=2) as response:
        assert json.load(response)["max_total_num_tokens"] == expected
    facts = [sglang_boot_facts.parse_boot_log(log) for log in logs]
    assert (facts[0]["pre_load_avail_gib"], facts[0]["post_load_avail_gib"]) == (85.33, 19.42)  # each its own GPU
    assert (facts[1]["pre_load_avail_gib"], facts[1]["post_load_avail_gib"]) == (75.0, round(a, 2))
    assert facts[0]["pool_tokens"] == facts[1]["pool_tokens"] == expected
    # the summary line is tp_rank 0's only (scheduler.py); node 0's ranks warn that the MIN is under 90 % of theirs
    assert "max_total_num_tokens=%d" % expected in logs[0] and "max_total_num_tokens" not in logs[1]
    assert logs[0].count("The memory capacity is unbalanced") == 4 and "unbalanced" not in logs[1]


def test_each_rank_logs_the_releases_rendezvous_lines(pair):
    for node, log in enumerate([pair.log(0), pair.log(1)]):
        for rank in range(4 * node, 4 * node + 4):
            if pair.version == "0.5.9":  # model_runner.py init_torch_distributed
                assert "TP%d] Init torch distributed begin." % rank in log
                assert re.search(r"TP%d\] Init torch distributed ends\. elapsed=\d+\.\d\d s, mem usage=0\.55 GB"
                                 % rank, log)
            else:  # distributed/bootstrap.py, then measure_pre_model_load_memory
                assert "TP%d] Init parallel begin." % rank in log
                assert re.search(r"TP%d\] Init parallel ends\. elapsed=\d+\.\d\d s\n" % rank, log)
                assert "TP%d] Memory baseline taken. mem usage=0.55 GB" % rank in log
    # tqdm bars: global rank 0 only; 0.5.10+ loads multi-threaded by default (model_loader/loader.py:482)
    bar = "Loading safetensors checkpoint shards" if pair.version == "0.5.9" else "Multi-thread loading shards"
    assert bar in pair.log(0)
    assert bar not in pair.log(1) and "Capturing batches" not in pair.log(1)


def test_node_1_serves_only_the_dummy_health_endpoints(pair):
    for path in ("/health", "/ping", "/health_generate"):
        assert status(pair.url(1, path)) == 200
    assert status(pair.url(1, "/generate"), data=b'{"text": "a dog", "sampling_params": {}}') == 404
    assert status(pair.url(1, "/server_info")) == 404
    assert status(pair.url(0, "/generate"), data=b'{"text": "a dog", "sampling_params": {}}') == 200
    assert re.search(r"\] Dummy health check server started in background thread at 127\.0\.0\.1:%d\n"
                     % pair.ports[1], pair.log(1))
    assert "Uvicorn running" not in pair.log(1) and "INFO:" not in pair.log(1)  # uvicorn at log_level warning


# ---- a node that never comes, a node that goes -------------------------------------------------------------

def test_node_0_alone_times_out_as_torchs_store_master(nodes):
    group = nodes(timeout=1)
    start = time.monotonic()
    proc = group.start(0)
    assert proc.wait(timeout=15) == 1
    log = group.log(0)
    line = "torch.distributed.DistStoreError: Timed out after 2 seconds waiting for clients. 4/8 clients joined."
    assert line in log and real_line("store_master_timeout.log").search(line)
    assert "TP0] Scheduler hit an exception" in log and "Received sigquit from a child process" in log
    assert log.count("Init parallel begin.") == 4 and "Init parallel ends" not in log
    assert 2 <= time.monotonic() - start < 10  # the timeout plus one whole second (TCPStore waitForWorkers)


def test_node_1_that_cannot_reach_node_0_times_out_as_a_store_client(nodes):
    group = nodes(timeout=1)
    proc = group.start(1)
    assert proc.wait(timeout=15) == 1
    line = ("torch.distributed.DistNetworkError: The client socket has timed out after 1000ms while trying to "
            "connect to (127.0.0.1, %d)." % group.dist_port)
    log = group.log(1)
    assert line in log and real_line("store_client_timeout.log").search(line)
    assert "TP4] Scheduler hit an exception" in log


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
def test_node_1_exits_when_node_0_goes(nodes, sig):
    group = nodes()
    group.start(0)
    group.start(1)
    group.wait_healthy(0)
    group.wait_healthy(1)
    group.procs[0].send_signal(sig)
    assert group.procs[1].wait(timeout=10) == 1
    log = group.log(1)
    gone = re.search(r"RuntimeError: \[\.\./third_party/gloo/gloo/transport/tcp/pair\.cc:534\] Connection closed by "
                     r"peer \[127\.0\.0\.1\]:%d\n" % group.dist_port, log)
    assert gone and real_line("node1_peer_closed_2025-02.log").search(gone.group(0))
    assert "TP4] Scheduler hit an exception: Traceback" in log


def test_node_0_exits_when_node_1_goes(nodes):
    group = nodes()
    group.start(0)
    group.start(1)
    group.wait_healthy(0)
    group.wait_healthy(1)
    group.procs[1].kill()
    assert group.procs[0].wait(timeout=10) == 1
    assert re.search(r"TP0\] Scheduler hit an exception: Traceback \(most recent call last\):\nRuntimeError: "
                     r"\[\.\./third_party/gloo/gloo/transport/tcp/pair\.cc:534\] Connection closed by peer "
                     r"\[127\.0\.0\.1\]:\d+\n", group.log(0))


# ---- refused before anything starts --------------------------------------------------------------------------

@pytest.mark.parametrize("flags, error", [
    (["--nnodes", "2", "--node-rank", "2", "--dist-init-addr", "127.0.0.1:1"],
     "ValueError: SGLang double: --node-rank=2 with --nnodes=2; use a node rank in 0..1"),
    (["--nnodes", "2", "--node-rank", "-1", "--dist-init-addr", "127.0.0.1:1"],
     "ValueError: SGLang double: --node-rank=-1 with --nnodes=2; use a node rank in 0..1"),
    (["--nnodes", "3", "--node-rank", "0", "--dist-init-addr", "127.0.0.1:1"],
     "AssertionError: tp_size must be divisible by number of nodes"),  # check_server_args, both releases
    (["--nnodes", "2", "--node-rank", "1"],
     "ValueError: SGLang double: --nnodes=2 needs --dist-init-addr <node 0's address>:<port> on every node"),
])
def test_a_bad_launch_is_refused_before_any_rank_starts(tmp_path, flags, error):
    gpu = tmp_path / "gpu.json"
    gpu.write_text("{}")
    result = subprocess.run([sys.executable, "-m", "sglang.launch_server", "--model-path", model_dir(str(tmp_path)),
                             "--tp-size", "8", "--trust-remote-code", *flags], capture_output=True, text=True,
                            env=dict(os.environ, SGLANG_DOUBLE_GPU=str(gpu), PYTHONPATH=HERE), timeout=30)
    assert result.returncode == 1
    assert result.stderr.splitlines()[-1].startswith(error)
    assert "Init parallel begin" not in result.stdout and "Load weight" not in result.stdout


def test_a_malformed_dist_init_addr_fails_at_the_rendezvous_with_sglangs_parse_error(nodes, tmp_path):
    group = nodes()
    group.dist_port = "x"  # --dist-init-addr 127.0.0.1:x
    proc = group.start(0)
    assert proc.wait(timeout=15) == 1
    assert "ValueError: Invalid port number: 'x'" in group.log(0)  # utils/network.py NetworkAddress.parse
