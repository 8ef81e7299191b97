"""SGLang's multi-node launch, for the TEST DOUBLE (see sglang/__init__.py): `--nnodes N --node-rank R
--dist-init-addr host:port [--dist-timeout T]`, as real SGLang 0.5.9 / 0.5.23 run it.

Where each behaviour comes from (0.5.23 paths under sglang/srt; 0.5.9 where it differs):
- Refusals before anything starts: arg_groups/validation_hook.py check_server_args (0.5.9 server_args.py), called
  by entrypoints/engine.py _launch_subprocesses. SGLang itself accepts a node rank outside 0..N-1 and a multi-node
  launch without --dist-init-addr (every node would then rendezvous on its own 127.0.0.1:<nccl port> and wait out
  the timeout); the double refuses both at once, with its own wording, saying so. A malformed --dist-init-addr
  fails at the rendezvous with utils/network.py NetworkAddress.parse's error.
- Ranks: node R runs the world ranks [R*k, (R+1)*k), k = tp*pp/N (engine.py _calculate_rank_ranges, and world rank
  = tp_size*pp_rank + tp_rank in distributed/bootstrap.py _init_parallel_groups); its log lines carry those global
  numbers (node 1 of a TP8 pair logs TP4..TP7, fixtures/multinode/node1_peer_closed_2025-02.log).
- Rendezvous: torch.distributed.init_process_group(init_method="tcp://<dist-init-addr>") is a TCPStore whose
  master (world rank 0, on node 0) listens on that port while every other rank connects, retrying, within the
  timeout (--dist-timeout, else torch's NCCL default of 600 s: SGLang passes None). The double keeps one TCP
  connection per node for all its ranks. Wording (fixtures/multinode/): the master's "Timed out after T+1 seconds
  waiting for clients. j/W clients joined." (ranks, not nodes; TCPStore.cpp waitForWorkers), a client's "The client
  socket has timed out after Tms while trying to connect to (host, port)." (socket.cpp).
- MIN over ranks: get_available_gpu_memory(distributed=True) all-reduces MIN over the world's CPU group, before the
  weights (pre_model_load_memory) and after them (kv_cache_configurator.py _profile_available_bytes; 0.5.9
  model_runner.py profile_max_num_token). Node 0 gathers each node's minimum over the link and sends back the MIN.
- Afterwards the schedulers broadcast over gloo every loop (managers/scheduler.py recv_requests, busy unless
  --sleep-on-idle), so a node whose peer's process is gone fails at once: "[...pair.cc:534] Connection closed by
  peer [ip]:port" in "Scheduler hit an exception", then the launch process exits. Under systemd (KillMode
  control-group) a stop kills node 0's schedulers directly, so this is also how the other nodes see node 0 stop.
  Not imitated: 0.5.23's ShutdownReq broadcast when only node 0's main process gets SIGTERM.
"""

import json
import socket
import threading
import time

from sglang._double_boot import BootError, log

DEFAULT_TIMEOUT_S = 600  # torch default_pg_nccl_timeout: init_process_group(timeout=None) with the NCCL backend
GLOO_PAIR = "[../third_party/gloo/gloo/transport/tcp/pair.cc:534]"
GLOO_RECV = "[../third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:78]"


def parse_address(addr):
    """0.5.23 utils/network.py NetworkAddress.parse, with its errors; called where SGLang calls it, at the start of
    the rendezvous (bootstrap.py _resolve_dist_init_method). 0.5.9 hands "tcp://<addr>" to torch instead, whose
    errors differ; the double uses these for both."""
    if addr.startswith("["):
        close = addr.find("]")
        if close == -1:
            raise BootError("ValueError", "Missing closing bracket in IPv6 address: %r" % addr)
        host, rest = addr[1:close], addr[close + 1:]
        if not rest.startswith(":") or len(rest) < 2:
            raise BootError("ValueError", "Expected ':port' after closing bracket, got: %r" % rest)
        port = rest[1:]
    else:
        if ":" not in addr:
            raise BootError("ValueError", "Missing port in address (expected host:port): %r" % addr)
        host, port = addr.rsplit(":", 1)
        if not host:
            raise BootError("ValueError", "Empty host in address: %r" % addr)
        if ":" in host:
            raise BootError("ValueError", "Bare IPv6 address without brackets is ambiguous: %r. Use [%s]:%s instead."
                            % (addr, host, port))
    try:
        number = int(port)
    except ValueError:
        raise BootError("ValueError", "Invalid port number: %r" % port) from None
    if not 0 <= number <= 65535:
        raise BootError("ValueError", "Port out of range (0-65535): %d" % number)
    return host, number


def check_launch(args, release, rules=None):
    """What SGLang refuses before it spawns anything, then the double's own two checks (see the module's doc)."""
    if rules is not None:
        check_speculative_launch(args, rules)
    nnodes, node_rank = args.nnodes, args.node_rank
    if nnodes < 1:
        raise BootError("ValueError", "SGLang double: --nnodes=%d; use the number of nodes the server spans (>= 1)"
                        % nnodes)
    if (args.tp_size * args.pp_size) % nnodes:
        raise BootError("AssertionError", "tp_size must be divisible by number of nodes")
    if release == "0.5.9" and args.dp_size > 1 and nnodes != 1 and not args.enable_dp_attention:
        raise BootError("AssertionError", "multi-node data parallel is not supported unless dp attention!")
    if release != "0.5.9" and args.dp_size > 1 and nnodes != 1:
        raise BootError("AssertionError", "multi-node data-parallel replicas are not supported; use attention DP "
                        "(--attn-dp-size) across nodes")
    if not 0 <= node_rank < nnodes:
        raise BootError("ValueError", "SGLang double: --node-rank=%d with --nnodes=%d; use a node rank in 0..%d (real "
                        "SGLang does not check: that node would take ranks another node holds)"
                        % (node_rank, nnodes, nnodes - 1))
    if nnodes > 1 and not args.dist_init_addr:
        raise BootError("ValueError", "SGLang double: --nnodes=%d needs --dist-init-addr <node 0's address>:<port> on "
                        "every node (real SGLang does not check: each node would wait for the others on its own "
                        "127.0.0.1 until the timeout)" % nnodes)


def _dp_attention_on(args, how):
    """'flag': --enable-dp-attention as given (0.5.9-0.5.21); 'attn_dp_size': attention DP wider than 1 (0.5.22+
    runtime_context.py attn_dp_enabled_of)."""
    if how == "flag":
        return bool(args.enable_dp_attention)
    return (args.attn_dp_size or 1) > 1


# kind of rules.json launch_refusals -> the launch it refuses (extract_rules.py LAUNCH_REFUSALS, read from the
# wheels: DFLASH with pp > 1, DFLASH with DP attention (0.5.11-0.5.22) or without --enable-dp-lm-head (0.5.23),
# STANDALONE and NGRAM with DP attention; UNO's own terms).
_SPECULATIVE_REFUSALS = {
    "dflash_pp": lambda a, alg, dp: alg == "DFLASH" and a.pp_size != 1,
    "dflash_dp_attention": lambda a, alg, dp: alg == "DFLASH" and dp,
    "dflash_dp_attention_needs_dp_lm_head": lambda a, alg, dp: (alg == "DFLASH" and dp
                                                                and not getattr(a, "enable_dp_lm_head", False)),
    "dspark_pp": lambda a, alg, dp: alg == "DSPARK" and a.pp_size != 1,
    "dspark_dp_attention_needs_dp_lm_head": lambda a, alg, dp: (alg == "DSPARK" and dp
                                                                and not getattr(a, "enable_dp_lm_head", False)),
    "standalone_dp_attention": lambda a, alg, dp: alg == "STANDALONE" and dp,
    "ngram_dp_attention": lambda a, alg, dp: alg == "NGRAM" and dp,
    "uno_draft_path": lambda a, alg, dp: alg == "UNO" and a.speculative_draft_model_path is not None,
    "uno_lora_path": lambda a, alg, dp: alg == "UNO" and getattr(a, "uno_lora_path", None) is None,
    "uno_tp_pp": lambda a, alg, dp: alg == "UNO" and (a.tp_size, a.pp_size) != (1, 1),
}


def check_speculative_launch(args, rules):
    """The release's speculative x parallel refusals at argument resolution, in its words (ValueError)."""
    algorithm = (args.speculative_algorithm or "").upper()
    if not algorithm:
        return
    for kind, refused in _SPECULATIVE_REFUSALS.items():
        entry = rules["launch_refusals"].get(kind)
        if entry is None:
            continue
        on = _dp_attention_on(args, entry["dp_attention_on"]) if "dp_attention_on" in entry else False
        if refused(args, algorithm, on):
            raise BootError("ValueError", entry["message"])


def init_parallel(run):
    """The release's lines around the rendezvous on every local rank; returns P, the MIN over every node's ranks.
    0.5.9 model_runner.py init_torch_distributed: "Init torch distributed begin." ... "ends. elapsed=, mem usage=".
    0.5.23 distributed/bootstrap.py: "Init parallel begin." ... "Init parallel ends. elapsed=", then
    measure_pre_model_load_memory's "Memory baseline taken. mem usage=". Both warn on a rank when the least-free
    rank has under 90 % of its free memory (_check_tp_memory_balance): after a MIN over nodes, that can be every
    rank of a node."""
    old = run.rel == "0.5.9"
    for rank in run.ranks:
        log("Init torch distributed begin." if old else "Init parallel begin.", rank)
    tic = time.perf_counter()
    run.cluster.rendezvous()
    if not old:
        for rank in run.ranks:
            log("Init parallel ends. elapsed=%.2f s" % (time.perf_counter() - tic), rank)
    pre = run.min_avail()
    for i, rank in enumerate(run.ranks):
        local = run.avail[i]
        if run.args.tp_size > 1 and pre < local * 0.9:
            log("The memory capacity is unbalanced. Some GPUs may be occupied by other processes. %s=%r, "
                "local_gpu_memory=%r, local_gpu_memory * 0.9=%r"
                % ("min_per_gpu_memory" if old else "pre_model_load_memory", pre, local, local * 0.9), rank)
    for rank in run.ranks:
        log("Init torch distributed ends. elapsed=%.2f s, mem usage=%.2f GB" % (time.perf_counter() - tic, 0.55)
            if old else "Memory baseline taken. mem usage=%.2f GB" % 0.55, rank)
    return pre


class _Link:
    """One node's connection: JSON lines; recv() gives None when the peer's process is gone."""

    def __init__(self, sock):
        self.sock, self.buf = sock, b""
        host, port = sock.getpeername()[:2]
        self.peer = "[%s]:%d" % (host, port)

    def send(self, **message):
        try:
            self.sock.sendall(json.dumps(message).encode() + b"\n")
        except OSError:
            pass  # the peer is gone; the next recv says so

    def recv(self, timeout):
        deadline = None if timeout is None else time.monotonic() + timeout
        while b"\n" not in self.buf:
            self.sock.settimeout(None if deadline is None else max(deadline - time.monotonic(), 0.001))
            try:
                chunk = self.sock.recv(65536)
            except TimeoutError:
                raise
            except OSError:  # reset by the peer: gone as well
                return None
            if not chunk:
                return None
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)

    def close(self):
        self.sock.close()


class Cluster:
    """This node's part of a server that spans `--nnodes` nodes."""

    def __init__(self, args):
        self.nnodes, self.node_rank, self.addr = args.nnodes, args.node_rank, args.dist_init_addr
        self.timeout = DEFAULT_TIMEOUT_S if args.dist_timeout is None else args.dist_timeout
        self.world = args.tp_size * args.pp_size
        self.per_node = self.world // self.nnodes
        self.ranks = list(range(self.node_rank * self.per_node, (self.node_rank + 1) * self.per_node))
        self.peers = {}  # node 0: node rank -> _Link
        self.link = None  # node >= 1: _Link to node 0

    # -- init_process_group's rendezvous --------------------------------------------------------------------------
    def rendezvous(self):
        self.host, self.port = parse_address(self.addr)
        if self.timeout <= 0:  # distributed/parallel_state.py init_distributed_environment
            raise BootError("AssertionError", "timeout must be positive")
        if self.node_rank == 0:
            self._listen()
        else:
            self._join()

    def _listen(self):
        server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            server.bind(("", self.port))  # the TCPStore master listens on every interface
            server.listen(64)
        except OSError:
            server.close()
            raise BootError("torch.distributed.DistNetworkError",
                            "The server socket has failed to listen on any local network address. port: %d, "
                            "useIpv6: 0, code: -98, name: EADDRINUSE, message: address already in use" % self.port
                            ) from None
        start = time.monotonic()
        try:
            while len(self.peers) < self.nnodes - 1:
                elapsed = int(time.monotonic() - start)
                if elapsed > self.timeout:  # TCPStore.cpp waitForWorkers: whole seconds elapsed > timeout
                    raise BootError("torch.distributed.DistStoreError",
                                    "Timed out after %d seconds waiting for clients. %d/%d clients joined."
                                    % (elapsed, self.per_node * (1 + len(self.peers)), self.world))
                server.settimeout(0.05)
                try:
                    sock, _ = server.accept()
                except TimeoutError:
                    continue
                try:
                    link = _Link(sock)
                    hello = link.recv(timeout=1.0) or {}
                except OSError:  # gone at once, or said nothing within a second: not a node
                    sock.close()
                    continue
                node = hello.get("node")
                if isinstance(node, int) and 0 < node < self.nnodes and node not in self.peers:
                    self.peers[node] = link
                else:
                    link.close()
        finally:
            server.close()
        for link in self.peers.values():
            link.send(go=True)

    def _join(self):
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                sock = socket.create_connection((self.host, self.port), timeout=max(0.05, min(1.0, deadline
                                                                                           - time.monotonic())))
                break
            except OSError:
                if time.monotonic() >= deadline:
                    raise BootError("torch.distributed.DistNetworkError",
                                    "The client socket has timed out after %dms while trying to connect to (%s, %d)."
                                    % (self.timeout * 1000, self.host, self.port)) from None
                time.sleep(0.1)
        self.link = _Link(sock)
        self.link.send(node=self.node_rank)
        try:
            go = self.link.recv(timeout=self.timeout)
        except TimeoutError:
            raise BootError("torch.distributed.DistStoreError", "Socket Timeout") from None
        if go is None:  # the master went away while this node waited for the others
            raise BootError("torch.distributed.DistNetworkError", "Failed to recv, got 0 bytes. Connection was likely "
                            "closed. Did the remote server shutdown or crash?")

    # -- collectives and liveness over gloo --------------------------------------------------------------------------
    def _recv(self, link):
        try:
            message = link.recv(timeout=self.timeout)
        except TimeoutError:
            raise BootError("RuntimeError", "%s Timed out waiting %dms for recv operation to complete"
                            % (GLOO_RECV, self.timeout * 1000)) from None
        if message is None:
            raise BootError("RuntimeError", "%s Connection closed by peer %s" % (GLOO_PAIR, link.peer))
        return message

    def all_min(self, value):
        """all_reduce(MIN) of one number over the nodes (each already took its own ranks' minimum)."""
        if self.node_rank == 0:
            values = [value] + [self._recv(link)["min"] for _, link in sorted(self.peers.items())]
            for link in self.peers.values():
                link.send(min=min(values))
            return min(values)
        self.link.send(min=value)
        return self._recv(self.link)["min"]

    def wait_while_peers_live(self, on_lost):
        """Serving: call on_lost(BootError) as soon as a peer's process is gone (node 0 watches every node, the
        others watch node 0). Returns at once; the watch runs in daemon threads."""
        for link in (self.peers.values() if self.node_rank == 0 else [self.link]):
            def watch(link=link):
                while True:
                    try:
                        message = link.recv(timeout=None)
                    except TimeoutError:
                        continue
                    if message is None:
                        on_lost(BootError("RuntimeError", "%s Connection closed by peer %s" % (GLOO_PAIR, link.peer)))
                        return

            threading.Thread(target=watch, daemon=True).start()
