"""The one reader of SGLang's boot lines, for sglang_boot_facts (what the boot measured) and sglang_wait_ready (how
far it has come). Both views read the lines through the same expressions and the same rank prefix, so they
cannot disagree on a line again.

Line shapes (tests/fixtures/sglang_logs/sources.yml and tests/fixtures/progress/README.md cite them):
"[2025-10-16 09:06:10 TP5] ...", "[2026-01-30 20:54:50 PP1 TP0] ...", "[2025-12-26 23:01:32 DP1 TP1 EP1] ...",
"[2025-12-23 14:18:01] ..." (one GPU), "[TP0] ..." (0.5.23, no time), and any of them behind a worker prefix
"(Worker_TP0 pid=1700) " (a multiprocess launcher's). Numbers are read only when whole: a mangled
"avail mem=1.2.3 GB" is not read at all rather than read wrong or raising.
"""

from __future__ import annotations

import re

_WORKER = re.compile(r"^\((\w+) pid=\d+\)\s*")
_PREFIX = re.compile(r"^\[(?:\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d+)?)?\s*((?:[A-Z_]+\d+\s*)*)\]\s?")
_GIB = r"(\d+(?:\.\d+)?) ?GB"
_INT = r"(\d+)(?!\w|\.\d)"
_BEGIN = re.compile(r"Load weight begin\. avail mem=" + _GIB)
_END = re.compile(r"Load weight end\..*?avail mem=" + _GIB)
_AVAIL = re.compile(r"avail[ _]mem=" + _GIB)
# "KV Cache is allocated. #tokens: N" (0.5.9), "KV Cache is allocated. dtype: ..., #tokens: N" (0.5.23); "SWA KV
# Cache ..." is a sliding-window model's second pool. Anchored after the prefix: the word before KV is the pool's.
_KV = re.compile(r"^(?:(\w+) )?KV [Cc]ache (?:is )?allocated\..*?#tokens: " + _INT)
_SWA = re.compile(r"full_layer_tokens=" + _INT + r", swa_layer_tokens=" + _INT)
_POOL_END = re.compile(r"Memory pool end\. avail mem=" + _GIB)
# 0.5.9: "Capture cuda graph begin."; 0.5.23: "Capture target decode cuda graph begin.", "... CUDA graph end."
_GRAPH_BEGIN = re.compile(r"Capture [\w ]*?(?:cuda|CUDA) graph begin")
_GRAPH_END = re.compile(r"Capture [\w ]*?(?:cuda|CUDA) graph end")
_GRAPH_END_AVAIL = re.compile(r"Capture .*?graph end\..*?avail mem=" + _GIB)
_SUMMARY = re.compile(r"max_total_num_tokens=" + _INT + r".*?max_running_requests=" + _INT + r", context_len="
                      + _INT + r"(?:, available_gpu_mem=" + _GIB + r")?")
_CAP = re.compile(r"max_total_tokens=" + _INT + r" is larger than the profiled value " + _INT)
_MAMBA = re.compile(r"Mamba Cache is allocated")
_ERROR = re.compile(r"(RuntimeError|ValueError|OSError|torch\.OutOfMemoryError|CUDA out of memory)[:.].*")
# tqdm bars (weight_utils.py with BAR_FORMAT from utils/common.py; cuda_graph_runner.py)
_SHARDS = re.compile(r"Loading \w+ checkpoint shards:\s*" + _INT + r"% Completed \| " + _INT + "/" + _INT)
_GRAPH_BAR = re.compile(r"Capturing batches \([^)]*\):\s*" + _INT + r"%\|[^|]*\|\s*" + _INT + "/" + _INT)
# The journal excerpt sglang_wait_ready ends its failures with ("... Its last lines:\n<lines>", "... Last lines:\n
# <lines>"): the rescue and the nodes' check drop it from the message and show the journal's lines once themselves.
_EXCERPT = re.compile(r"(?s)\s*(Its last lines|Last lines)[^:\n]*:\n.*$")
STAGES = ("starting", "joining the process group", "loading weights", "loading the draft model",
          "allocating the KV cache", "capturing CUDA graphs", "warming up", "ready")


def split_prefix(line):
    """(rank, message): the rank is what follows the time in the bracket ("TP3", "PP1 TP0", "" for one GPU), else
    the worker prefix's tensor-parallel rank; the message is the line without either prefix."""
    rank = ""
    worker = _WORKER.match(line)
    if worker:
        line = line[worker.end():]
        tp = re.search(r"TP\d+", worker.group(1))
        rank = tp.group(0) if tp else worker.group(1)
    bracket = _PREFIX.match(line)
    if bracket:
        line = line[bracket.end():]
        rank = " ".join(bracket.group(1).split()) or rank
    return rank, line


def lines(text):
    """The journal's lines; tqdm rewrites its bar with a carriage return, which starts a new reading."""
    return [line for line in re.split(r"[\r\n]+", text) if line]


def _last(pattern, line):
    """The last match in a line: several bar readings may be glued together, the last one is the newest."""
    found = list(pattern.finditer(line))
    return found[-1] if found else None


def _min(values):
    return min(values) if values else None


class _Calibration:
    """What parse_boot_log collects, line by line."""

    def __init__(self):
        self.loads = {}  # rank -> [[begin, end], ...] in order: the target's first, then the draft's
        self.kv, self.full_tokens, self.pool_end, self.graph_end, self.cap, self.errors = [], [], [], [], [], []
        self.summary, self.hybrid = None, None

    def read(self, line):
        rank, message = split_prefix(line)
        begin, end = _BEGIN.search(message), _END.search(message)
        if begin:
            self.loads.setdefault(rank, []).append([float(begin.group(1)), None])
        elif end:
            pairs = self.loads.setdefault(rank, [])
            if not pairs or pairs[-1][1] is not None:
                pairs.append([None, None])  # an end whose begin rotated away
            pairs[-1][1] = float(end.group(1))
        for pattern, bucket in ((_POOL_END, self.pool_end), (_GRAPH_END_AVAIL, self.graph_end)):
            match = pattern.search(message)
            if match:
                bucket.append(float(match.group(1)))
        match = _KV.search(message)
        if match:
            if match.group(1) == "SWA":
                self.hybrid = "swa"
            else:
                self.kv.append(int(match.group(2)))
        match = _SWA.search(message)
        # 0.5.23 logs the post-capture sizing of every model this way (model_runner_components/kv_pool_runtime.py,
        # "Post-capture KV sizing: full_layer_tokens=N, swa_layer_tokens=0" when SGLANG_ENABLE_POST_CAPTURE_KV_SIZING
        # is on): only a sliding-window pool (swa_layer_tokens > 0) makes the model hybrid.
        if match and int(match.group(2)) > 0:
            self.full_tokens.append(int(match.group(1)))
            self.hybrid = "swa"
        if _MAMBA.search(message):
            self.hybrid = "mamba"
        self.summary = _SUMMARY.search(message) or self.summary
        match = _CAP.search(message)
        if match:
            self.cap.append(int(match.group(2)))
        match = _ERROR.search(message)
        if match:
            self.errors.append(match.group(0))

    def facts(self):
        summary = self.summary
        target = [pairs[0] for pairs in self.loads.values()]
        drafts = [pairs[1] for pairs in self.loads.values() if len(pairs) > 1]
        after_graph = _min(self.graph_end)
        if after_graph is None and summary and summary.group(4):
            after_graph = float(summary.group(4))
        return {
            "found": bool(self.loads or self.kv or self.full_tokens or self.pool_end or self.graph_end or summary
                          or self.cap or self.errors or self.hybrid),
            "pre_load_avail_gib": _min([p[0] for p in target if p[0] is not None]),
            "post_load_avail_gib": _min([p[1] for p in target if p[1] is not None]),
            "draft": {
                "pre_load_avail_gib": _min([p[0] for p in drafts if p[0] is not None]),
                "post_load_avail_gib": _min([p[1] for p in drafts if p[1] is not None]),
                "ranks": sum(1 for p in drafts if p[1] is not None),
            } if drafts else None,
            "pool_tokens": int(summary.group(1)) if summary else (_min(self.full_tokens) or _min(self.kv)),
            "profiled_tokens": _min(self.cap),
            "cap_exceeds_profile": bool(self.cap),
            "max_running_requests": int(summary.group(2)) if summary else None,
            "context_len": int(summary.group(3)) if summary else None,
            "pool_end_avail_gib": _min(self.pool_end),
            "after_graph_avail_gib": after_graph,
            "hybrid": self.hybrid,
            "ranks": sum(1 for p in target if p[1] is not None),
            "error": self.errors[-1] if self.errors else None,
        }


def parse_boot_log(text):
    """SGLang's boot lines -> the calibration; MIN over ranks, as SGLang's all-reduce takes them."""
    calibration = _Calibration()
    for line in lines(text):
        calibration.read(line)
    return calibration.facts()


def _progress_step(state, begins, line):
    rank, message = split_prefix(line)
    for avail in _AVAIL.finditer(line):
        state["avail_mem_gib"] = float(avail.group(1))
    shards, graphs, kv = _last(_SHARDS, line), _last(_GRAPH_BAR, line), _KV.search(message)
    stage = state["stage"]
    if ("Init parallel begin" in message or "Init torch distributed begin" in message) and stage == "starting":
        # The rendezvous (0.5.23 distributed/bootstrap.py; 0.5.9 model_runner.py): across nodes, a boot that stays
        # here is waiting for a node that has not joined (until --dist-timeout).
        state["stage"] = "joining the process group"
    elif "Load weight begin" in message:
        begins[rank] = begins.get(rank, 0) + 1
        # A second begin on a rank is the speculative draft model's (its worker loads after the target).
        state["stage"] = "loading the draft model" if begins[rank] > 1 else "loading weights"
        state["shard"] = None if begins[rank] > 1 else state["shard"]
    elif shards and stage in STAGES[:4]:
        state["stage"] = "loading weights" if stage in STAGES[:2] else stage
        state["percent"] = int(shards.group(1))
        state["shard"] = [int(shards.group(2)), int(shards.group(3))]
    elif "Load weight end" in message and stage in ("loading weights", "loading the draft model"):
        state["stage"] = "allocating the KV cache"
    elif kv and kv.group(1) != "SWA":
        state["kv_tokens"] = min(int(kv.group(2)), state["kv_tokens"] or int(kv.group(2)))
        state["stage"] = "allocating the KV cache"
    elif _GRAPH_BEGIN.search(message):
        state["stage"], state["graphs"] = "capturing CUDA graphs", None
    elif graphs and stage == "capturing CUDA graphs":
        state["graphs"] = [int(graphs.group(2)), int(graphs.group(3))]
    elif _GRAPH_END.search(message) or "max_total_num_tokens=" in message:
        if stage != "loading the draft model":
            state["stage"] = "warming up"
    elif "fired up and ready to roll" in message:
        state["stage"] = "ready"


def boot_progress(text):
    """The stage SGLang's boot has reached, from its log (one invocation's, oldest line first)."""
    state = {"stage": "starting", "shard": None, "percent": None, "graphs": None, "avail_mem_gib": None,
             "kv_tokens": None}
    begins = {}  # rank -> how many 'Load weight begin' it logged
    for line in lines(text):
        _progress_step(state, begins, line)
    return state


def without_excerpt(message):
    """The message of a failed wait without the journal lines it ends with (the caller shows them once)."""
    return _EXCERPT.sub("", str(message)).strip()
