"""/metrics as the TEST DOUBLE serves it (with --enable-metrics): the series lib/sglang_metrics reads, under SGLang
0.5.23's names, kinds, labels and default buckets (srt/observability/metrics_collector.py; the names are held to the
wheel's by tests/integration/test_prometheus_names.py, the labels to a real server's recorded /metrics).

Scheduler gauges carry model_name, engine_type, tp_rank, pp_rank and moe_ep_rank (one rank: tp 0); the tokenizer's
counters and histograms model_name and engine_type, and those split by it is_streaming. The double's pool use is
what its admission reserves (input + clipped decode per running request: _double_scheduler.py), not a measured KV."""

import threading

ENGINE = "unified"  # DisaggregationMode.NULL's engine type
PROMPT_BUCKETS = (100, 300, 500, 700, 1000, 1500, 2000, 3000, 4000, 5000, 6000, 7000, 8000, 9000, 10000, 12500,
                  15000, 17500, 20000, 22500, 25000, 27500, 30000, 35000, 40000, 60000, 80000, 100000, 200000,
                  300000, 400000, 600000, 800000, 1000000, 1100000)
TTFT_BUCKETS = (0.1, 0.2, 0.4, 0.6, 0.8, 1, 2, 4, 6, 8, 10, 20, 40, 60, 80, 100, 200, 400)
TOKEN_LATENCY_BUCKETS = (0.002, 0.004, 0.006, 0.008, 0.010, 0.015, 0.020, 0.025, 0.030, 0.035, 0.040, 0.060,
                         0.080, 0.100, 0.200, 0.400, 0.600, 0.800, 1.000, 2.000, 4.000, 6.000, 8.000)


def _labels(pairs):
    return "{%s}" % ",".join('%s="%s"' % (k, str(v).replace("\\", "\\\\").replace('"', '\\"')) for k, v in pairs)


def _number(value):
    return repr(float(value))


class Histogram:
    def __init__(self, buckets):
        self.buckets, self.series = tuple(float(b) for b in buckets), {}

    def observe(self, key, value):
        counts, total = self.series.setdefault(key, ([0] * len(self.buckets), [0.0, 0]))
        for i, bound in enumerate(self.buckets):
            if value <= bound:
                counts[i] += 1
        total[0] += value
        total[1] += 1

    def lines(self, name, base):
        out = []
        for key, (counts, total) in sorted(self.series.items()):
            labels = base + list(key)
            out.append("%s_sum%s %s" % (name, _labels(sorted(labels)), _number(total[0])))
            for bound, count in zip(self.buckets, counts, strict=True):
                out.append("%s_bucket%s %s" % (name, _labels(sorted(labels + [("le", _number(bound))])),
                                               _number(count)))
            out.append("%s_bucket%s %s" % (name, _labels(sorted(labels + [("le", "+Inf")])), _number(total[1])))
            out.append("%s_count%s %s" % (name, _labels(sorted(labels)), _number(total[1])))
        return out


class Metrics:
    """What the double's requests add to /metrics: counted when a request finishes, as SGLang's tokenizer does."""

    def __init__(self, model_name):
        self.model_name = model_name
        self.lock = threading.Lock()
        self.prompt_tokens_total = self.generation_tokens_total = 0
        self.prompt_tokens = Histogram(PROMPT_BUCKETS)
        self.ttft = Histogram(TTFT_BUCKETS)
        self.tpot = Histogram(TOKEN_LATENCY_BUCKETS)

    def finished(self, prompt_tokens, output_tokens, ttft_s, decode_s, streaming):
        """One finished request: its tokens, time to first token and time per output token (SGLang observes the
        latter only when more than one token came out)."""
        streamed = (("is_streaming", "true" if streaming else "false"),)
        with self.lock:
            self.prompt_tokens_total += prompt_tokens
            self.generation_tokens_total += output_tokens
            self.prompt_tokens.observe((), prompt_tokens)
            self.ttft.observe(streamed, ttft_s)
            if output_tokens > 1:
                self.tpot.observe(streamed, decode_s / (output_tokens - 1))

    def text(self, running, queued, used_tokens, pool_tokens, context_len):
        tokenizer = [("engine_type", ENGINE), ("model_name", self.model_name)]
        scheduler = tokenizer + [("moe_ep_rank", 0), ("pp_rank", 0), ("tp_rank", 0)]
        out = []

        def family(name, kind, helptext, lines):
            out.extend(["# HELP %s %s" % (name, helptext), "# TYPE %s %s" % (name, kind)] + lines)

        with self.lock:
            # the two counters keep one series (the smoke tests read the first match), labelled as a
            # non-streaming request's
            for name, helptext, value in (
                    ("sglang:prompt_tokens_total", "Number of prefill tokens processed.", self.prompt_tokens_total),
                    ("sglang:generation_tokens_total", "Number of generation tokens processed.",
                     self.generation_tokens_total)):
                family(name, "counter", helptext, ["%s%s %s" % (name, _labels(
                    sorted(tokenizer + [("is_streaming", "false")])), _number(value))])
            family("sglang:prompt_tokens_histogram", "histogram", "Histogram of prompt token length.",
                   self.prompt_tokens.lines("sglang:prompt_tokens_histogram", tokenizer))
            family("sglang:time_to_first_token_seconds", "histogram", "Histogram of time to first token in seconds.",
                   self.ttft.lines("sglang:time_to_first_token_seconds", tokenizer))
            family("sglang:request_time_per_output_token_seconds", "histogram",
                   "Per-request TPOT in seconds: (finished_time - first_token_time) / (completion_tokens - 1).",
                   self.tpot.lines("sglang:request_time_per_output_token_seconds", tokenizer))
        for name, helptext, value in (
                ("sglang:num_running_reqs", "The number of running requests.", running),
                ("sglang:num_queue_reqs", "The number of requests in the waiting queue.", queued),
                ("sglang:token_usage", "The token usage.", used_tokens / float(max(pool_tokens, 1))),
                ("sglang:num_used_tokens", "The number of used tokens.", used_tokens),
                ("sglang:max_total_num_tokens", "Maximum total number of tokens in the KV cache pool.", pool_tokens),
                ("sglang:context_len", "Maximum context length.", context_len)):
            family(name, "gauge", helptext, ["%s%s %s" % (name, _labels(sorted(scheduler)), _number(value))])
        return ("\n".join(out) + "\n").encode()
