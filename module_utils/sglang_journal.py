"""The one reader of SGLang's boot lines, for sglang_boot_facts (what the boot measured) and sglang_wait_ready (how
far it has come). Both views read the lines through the same expressions and the same rank prefix, so they
cannot disagree on a line again.

Line shapes (tests/fixtures/sglang_logs/sources.yml and tests/fixtures/progress/README.md cite them):
"[2025-10-16 09:06:10 TP5] ...", "[2026-01-30 20:54:50 PP1 TP0] ...", "[2025-12-26 23:01:32 DP1 TP1 EP1] ...",
"[2025-12-23 14:18:01] ..." (one GPU), "[TP0] ..." (0.5.23, no time), and any of them behind a worker prefix
"(Worker_TP0 pid=1700) " (a multiprocess launcher's). Numbers are read only when whole: a mangled
"avail mem=1.2.3 GB" is not read at all rather than read wrong or raising.

A real journal line does not always start with SGLang's prefix: a tqdm bar's carriage return or another print can
stand before "[... TP1] Load weight end" on one line (issue 34), so lines() cuts a line at every prefix it holds.
"""

from __future__ import annotations

import datetime
import json
import re

_WORKER = re.compile(r"^\((\w+) pid=\d+\)\s*")
_PREFIX = re.compile(r"^\[(?:\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d+)?)?\s*((?:[A-Z_]+\d+\s*)*)\]\s?")
# Where a prefix starts inside a line: a time or at least one rank in the bracket, so a tqdm bar's
# "[00:10<00:00, 2.1it/s]" is not taken for one; a worker prefix in front belongs to the same cut.
_CUT = re.compile(r"(?:\(\w+ pid=\d+\)\s*)?\[(?:\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:\s+[A-Z_]+\d+)*"
                  r"|[A-Z_]+\d+(?:\s+[A-Z_]+\d+)*)\]")
_STAMP = re.compile(r"^(?:\(\w+ pid=\d+\)\s*)?\[(\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d)")
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
# SGLang's own durations: "Load weight end. elapsed=312.40 s" (0.5.9 model_runner.py:1041-1042, 0.5.15
# :1585-1586, 0.5.23 :1373-1374); "Capture cuda graph end. Time elapsed: 12.34 s." (0.5.9 model_runner.py:2161),
# "Capture decode CUDA graph end. elapsed=12.34 s" (0.5.15 model_runner.py:2858-2859, 0.5.23
# model_runner_components/cuda_graph_setup.py:696-697).
_SECONDS = r"(\d+(?:\.\d+)?) s\b"
_LOAD_ELAPSED = re.compile(r"Load weight end\. elapsed=" + _SECONDS)
_GRAPH_ELAPSED = re.compile(r"Capture [\w ]*?(?:cuda|CUDA) graph end\.(?: Time elapsed: | .*?elapsed=)" + _SECONDS)
_READY = "The server is fired up and ready to roll"
_GRAPH_END_AVAIL = re.compile(r"Capture .*?graph end\..*?avail mem=" + _GIB)
_SUMMARY = re.compile(r"max_total_num_tokens=" + _INT + r".*?max_running_requests=" + _INT + r", context_len="
                      + _INT + r"(?:, available_gpu_mem=" + _GIB + r")?")
_CAP = re.compile(r"max_total_tokens=" + _INT + r" is larger than the profiled value " + _INT)
_MAMBA = re.compile(r"Mamba Cache is allocated")
_ERROR = re.compile(r"(RuntimeError|ValueError|OSError|torch\.OutOfMemoryError|CUDA out of memory)[:.].*")
# tqdm bars (weight_utils.py with BAR_FORMAT from utils/common.py; cuda_graph_runner.py)
# "Loading safetensors checkpoint shards" (single-threaded), "Multi-thread loading shards" (0.5.23's default,
# model_loader/weight_utils.py:1369-1375; 0.5.15 :1067, :1127), "Multi-thread loading pt checkpoint shards" (:1440)
_SHARDS = re.compile(r"(?:Loading \w+ checkpoint shards|Multi-thread loading (?:\w+ checkpoint )?shards):\s*"
                     + _INT + r"% Completed \| " + _INT + "/" + _INT)
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
    """The journal's lines; tqdm rewrites its bar with a carriage return, which starts a new reading, and a line
    holding an SGLang prefix after other text is cut there (the text before it is a line of its own)."""
    found = []
    for line in re.split(r"[\r\n]+", text):
        starts = [match.start() for match in _CUT.finditer(line) if match.start() > 0]
        for begin, end in zip([0] + starts, starts + [len(line)], strict=True):
            if line[begin:end].strip():
                found.append(line[begin:end])
    return found


def stamp(line):
    """The seconds SGLang's bracket time stands for (no zone: good for differences within one boot), else None."""
    match = _STAMP.search(line)
    if not match:
        return None
    try:
        when = datetime.datetime.strptime(match.group(1).replace("T", " "), "%Y-%m-%d %H:%M:%S")
    except ValueError:  # a mangled time ("2026-13-45") is no time, not a crash
        return None
    return (when - datetime.datetime(1970, 1, 1)).total_seconds()


def _last(pattern, line):
    """The last match in a line: several bar readings may be glued together, the last one is the newest."""
    found = list(pattern.finditer(line))
    return found[-1] if found else None


def _min(values):
    return min(values) if values else None


class _Times:
    """How long the boot's phases took, per rank: SGLang's own figure where its line has one (elapsed=), else the
    difference of the bracket times of the phase's first and last line. The slowest rank is the boot's time (the
    ranks wait for each other at the next collective)."""

    def __init__(self):
        self.load = {}  # rank -> [seconds, source line] of the target's load (the first pair: a draft's is apart)
        self.load_stamps = {}  # rank -> [begin stamp, end stamp] of the target's load
        self.graph = {}  # rank -> [seconds summed over captures, source line]
        self.graph_stamps = {}  # rank -> [first begin stamp, last end stamp]

    def read(self, rank, message, line, pairs):
        when = stamp(line)
        if "Load weight begin" in message and pairs == 1 and when is not None:
            self.load_stamps.setdefault(rank, [when, None])
        elif "Load weight end" in message and pairs == 1:
            elapsed = _LOAD_ELAPSED.search(message)
            if elapsed and rank not in self.load:
                self.load[rank] = [float(elapsed.group(1)), line.strip()]
            if when is not None and self.load_stamps.get(rank, [None, 1])[1] is None:
                self.load_stamps[rank][1] = when
                self.load_stamps[rank].append(line.strip())
        if _GRAPH_BEGIN.search(message) and when is not None:
            self.graph_stamps.setdefault(rank, [when, None])
        elif _GRAPH_END.search(message):
            elapsed = _GRAPH_ELAPSED.search(message)
            if elapsed:
                total = self.graph.setdefault(rank, [0.0, ""])
                total[0], total[1] = total[0] + float(elapsed.group(1)), line.strip()
            if when is not None and rank in self.graph_stamps:
                self.graph_stamps[rank][1:] = [when, line.strip()]

    @staticmethod
    def _slowest(figures, stamps, what, lines_read):
        """(seconds, source) of the slowest rank: its own figures first, else its bracket times."""
        if figures:
            rank = max(figures, key=lambda name: figures[name][0])
            return round(figures[rank][0], 2), "%s: %s" % (what, figures[rank][1][:200])
        spans = {rank: entry for rank, entry in stamps.items() if entry[1] is not None}
        if spans:
            rank = max(spans, key=lambda name: spans[name][1] - spans[name][0])
            return (round(spans[rank][1] - spans[rank][0], 2),
                    "%s from the bracket times, to: %s" % (what, spans[rank][2][:200]))
        return None, "no %s line in this start's journal" % lines_read

    def facts(self):
        load, load_source = self._slowest(self.load, self.load_stamps, "the slowest rank's target load",
                                          "'Load weight begin'/'Load weight end' with a time or elapsed=")
        graph, graph_source = self._slowest(self.graph, self.graph_stamps, "the slowest rank's CUDA-graph captures",
                                            "'Capture ... graph end' with elapsed= (or a timed begin/end pair)")
        # ready_s needs the journal entries' own times and the unit's start: sglang_boot_facts sets it
        # (ready_seconds); the log text alone cannot say it.
        return {"weight_load_s": load, "graph_capture_s": graph, "ready_s": None,
                "times_source": {"weight_load_s": load_source, "graph_capture_s": graph_source,
                                 "ready_s": "the log text alone has no unit start"}}


class _Calibration:
    """What parse_boot_log collects, line by line."""

    def __init__(self):
        self.loads = {}  # rank -> [[begin, end], ...] in order: the target's first, then the draft's
        self.kv, self.full_tokens, self.pool_end, self.graph_end, self.cap, self.errors = [], [], [], [], [], []
        self.summary, self.hybrid = None, None
        self.times = _Times()

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
        self.times.read(rank, message, line, len(self.loads.get(rank, ())))
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
            **self.times.facts(),
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


def journal_entries(text):
    """`journalctl -o json` output -> [(monotonic microseconds or None, message)]; journald stores a message that
    is not UTF-8 as a list of bytes, and a line that is not JSON (a truncated read) is skipped, not fatal."""
    entries = []
    for raw in text.splitlines():
        try:
            entry = json.loads(raw)
        except ValueError:
            continue
        if not isinstance(entry, dict):
            continue
        message = entry.get("MESSAGE")
        if isinstance(message, list):
            message = bytes(b for b in message if isinstance(b, int) and 0 <= b < 256).decode("utf-8", "replace")
        if not isinstance(message, str):
            continue
        mono = str(entry.get("__MONOTONIC_TIMESTAMP", ""))
        entries.append((int(mono) if mono.isdigit() else None, message))
    return entries


def ready_seconds(entries, start_monotonic_us):
    """(seconds from the unit's start to SGLang's "ready to roll" line, source) on the host's monotonic clock
    (systemd's ExecMainStartTimestampMonotonic and journald's __MONOTONIC_TIMESTAMP: one boot, no zone, no
    clock step); (None, why) when the journal or systemd does not say."""
    start = int(start_monotonic_us) if str(start_monotonic_us or "").isdigit() else 0
    if start <= 0:
        return None, "systemd gave no ExecMainStartTimestampMonotonic for the unit"
    for mono, message in entries:
        if _READY in message and mono is not None and mono >= start:
            return round((mono - start) / 1e6, 2), "unit start to: %s" % message.strip()[:200]
    return None, "no '%s' line in this start's journal" % _READY
