"""SGLang's HTTP API, as the TEST DOUBLE serves it (shapes from SGLang 0.4.6 "old" and 0.5.9+ "new")."""

import json
import math
import re
import threading
import time
import uuid
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from sglang import __version__
from sglang._double_metrics import Metrics
from sglang._double_scheduler import Admission
from sglang._double_tokenizer import pieces, tokenize

ANIMALS = ("dog", "fox", "cat", "cow", "horse", "mouse", "bird", "fish", "sheep", "wolf", "bear", "lion")


class BadRequest(Exception):
    """A request the TokenizerManager refuses (a ValueError from _validate_one_request) before the scheduler."""


class Aborted(BadRequest):
    """A request the Scheduler refuses (managers/utils.py validate_input_length): it finishes at once with
    FINISH_ABORT(message, 400, "BadRequestError") and one input token (managers/schedule_batch.py
    set_finish_with_abort: origin_input_ids = [0]; 0.5.9:1180-1190, 0.5.23:2221-2238)."""


def release_tuple(version):
    """(0, 5, 23) for "0.5.23+double", (0, 5, 10) for "0.5.10.post1": which release's HTTP rules apply."""
    found = re.match(r"(\d+)\.(\d+)\.(\d+)", str(version or ""))
    return tuple(int(part) for part in found.groups()) if found else (0, 5, 23)


def answer_text(prompt):
    """The double's "model", reading only the prompt: asked for a number (the final line says "number"), the
    number the text states ("... number is N"); otherwise the last animal named before the final line."""
    body, question = prompt.rsplit("\n", 1) if "\n" in prompt else (prompt, "")
    if "number" in question.lower():
        stated = re.search(r"\bnumber is (\d+)", body)
        return " %s." % stated.group(1) if stated else " Unknown."
    found = [m.group(0).lower() for m in re.finditer(r"\b(%s)s?\b" % "|".join(ANIMALS), body, re.IGNORECASE)]
    return " %s." % found[-1].capitalize() if found else " Unknown."


class Server:
    def __init__(self, args, gpu, state, log):
        self.args, self.gpu, self.state, self.log = args, gpu, state, log
        self.ready = False
        self.model_name = args.served_model_name or args.model_path
        self.new_api = gpu.get("api", "new") != "old"
        # at most --max-running-requests decode at once, each only when the pool has room (_double_scheduler.py)
        self.admission = Admission(state.get("max_running_requests"), state["max_total_num_tokens"])
        # /metrics (0.5.23 observability/metrics_collector.py; _double_metrics.py): counted per finished request;
        # /health_generate passes log_metrics=False and is not counted
        self.metrics_state = Metrics(self.model_name)

    # -- the scheduler's view -------------------------------------------------------------------
    def server_info(self):
        server_args = {k: v for k, v in vars(self.args).items() if k != "api_key"}
        server_args["mem_fraction_static"] = self.state["mem_fraction_static"]
        server_args["context_length"] = self.args.context_length
        internal = {"last_gen_throughput": 0.0, **server_args}
        if self.new_api:
            internal["memory_usage"] = {
                "weight": round(self.state["weight_gb"], 2), "kvcache": round(self.state["kv_gb"], 2),
                "token_capacity": self.state["max_total_num_tokens"], "graph": self.state["graph_gb"]}
        return {**server_args, "max_total_num_tokens": self.state["max_total_num_tokens"],
                "max_req_input_len": self.state["max_req_input_len"], "internal_states": [internal],
                # SGLang's own __version__ (0.5.23 http_server.py:888): the double's package names itself a double,
                # whichever release's behaviour it impersonates (state["version"])
                "version": __version__}

    def loads(self):
        """/v1/loads?include=core (0.5.23 entrypoints/v1_loads.py; the fields of managers/load_snapshot.py
        LoadSnapshot's core): one DP rank."""
        total = self.state["max_total_num_tokens"]
        return {"timestamp": datetime.now(UTC).isoformat(), "version": self.state["version"],
                "accelerator": None, "num_accelerators": self.args.tp_size * self.args.pp_size,
                "loads": [{"timestamp": time.time(), "dp_rank": 0, "num_running_reqs": self.admission.running,
                           "num_waiting_reqs": self.admission.waiting(), "num_waiting_uncached_tokens": 0,
                           "num_used_tokens": 0,
                           "num_total_tokens": total, "num_active_tokens": total, "num_prealloc_ready_tokens": 0,
                           "max_total_num_tokens": total, "max_running_requests": self.args.max_running_requests or 0,
                           "token_usage": 0.0, "gen_throughput": 0.0, "cache_hit_rate": 0.0, "utilization": 0.0,
                           "total_prefill_uncached_tokens": 0, "total_prefill_busy_us": 0}]}

    def generate(self, prompt, max_new_tokens, ignore_eos=False, log_metrics=True, decode=None):
        """(prompt tokens, output pieces, finish reason, decode seconds per token). Validated first, then admitted
        (a slot and room in the pool, else it waits), prefilled and decoded while admitted; `decode(n, out, finish,
        step)` paces a streamed answer inside the admission (default: sleep the decode)."""
        n, out, finish, step = self._generate(prompt, max_new_tokens, ignore_eos)
        tokens = self.admission.tokens_for(n, max_new_tokens)
        arrived = time.monotonic()
        self.admission.admit(tokens)
        if self.gpu.get("fault") == "wrong_when_batched" and self.admission.running > 1:
            out = pieces(" Unknown.")[:max_new_tokens]  # a batching fault to inject: a neighbour garbles the answer
        try:
            time.sleep(n / float(self.gpu["prefill_tokens_per_s"]))
            first = time.monotonic()  # the prefill's forward pass makes the first token
            if decode is None:
                time.sleep(len(out) * step)
            else:
                decode(n, out, finish, step)
        finally:
            self.admission.release(tokens)
        if log_metrics:
            self.metrics_state.finished(n, len(out), first - arrived, time.monotonic() - first, decode is not None)
        return n, out, finish, step

    def decode_step(self, prompt_tokens):
        """Seconds per output token: decode_seconds_per_token, plus decode_seconds_per_1k_context for each 1,000
        tokens of context (attention reads the whole KV of the request at every step: slower near the target)."""
        return float(self.gpu["decode_seconds_per_token"]) + \
            float(self.gpu.get("decode_seconds_per_1k_context") or 0.0) * prompt_tokens / 1000.0

    def spec_meta(self, completion_tokens):
        """/generate's per-request speculative counters, as 0.5.23 managers/tokenizer_manager.py
        _calculate_spec_decoding_metrics adds them when a draft runs: spec_verify_ct (verify passes; each
        accepts some drafts plus one bonus token), spec_accept_length = completion_tokens / spec_verify_ct.
        The double's drafts are accepted at the simulated spec_accept_length (default 3.0)."""
        if not getattr(self.args, "speculative_algorithm", None) or completion_tokens <= 0:
            return {}
        accept = max(1.0, float(self.gpu.get("spec_accept_length") or 3.0))
        verify_ct = max(1, int(math.ceil(completion_tokens / accept)))
        proposed = verify_ct * (max(2, int(getattr(self.args, "speculative_num_draft_tokens", None) or 2)) - 1)
        correct = completion_tokens - verify_ct
        return {"spec_accept_rate": correct / float(proposed), "spec_accept_length": completion_tokens / verify_ct,
                "spec_num_correct_drafts": correct, "spec_num_proposed_drafts": proposed, "spec_verify_ct": verify_ct}

    def metrics(self):
        """Prometheus text of 0.5.23's /metrics (with --enable-metrics), the series _double_metrics.py keeps."""
        admission = self.admission
        with admission._cond:  # one consistent reading of the scheduler
            running, queued, used = admission.running, len(admission.queue), admission.reserved
        return self.metrics_state.text(running, queued, used, self.state["max_total_num_tokens"],
                                       self.state["context_len"])

    def _generate(self, prompt, max_new_tokens, ignore_eos=False):
        """Validate as TokenizerManager and Scheduler do, and answer (generate() spends the simulated time)."""
        ids = prompt if isinstance(prompt, list) else tokenize(prompt)
        n, ctx = len(ids), self.state["context_len"]
        # TokenizerManager._validate_one_request (0.5.9 managers/tokenizer_manager.py:755-803, 0.5.23:1325-1378):
        # the input counts EAGLE's reserved output slots; input + max_new_tokens may equal the context from 0.5.11
        # on (`>`), not before (0.5.9 and 0.5.10 refuse it with `>=`).
        counted = n + int(self.state.get("num_reserved_tokens") or 0)
        if counted >= ctx:
            raise BadRequest("The input (%d tokens) is longer than the model's context length (%d tokens)."
                             % (counted, ctx))
        at_limit_refused = release_tuple(self.state.get("version")) < (0, 5, 11)
        if max_new_tokens is not None and (max_new_tokens + counted > ctx or
                                           (at_limit_refused and max_new_tokens + counted == ctx)):
            raise BadRequest(
                "Requested token count exceeds the model's maximum context length of %d tokens. You requested a "
                "total of %d tokens: %d tokens from the input messages and %d tokens for the completion. Please "
                "reduce the number of tokens in the input messages or the completion to fit within the limit."
                % (ctx, counted + max_new_tokens, counted, max_new_tokens))
        # Scheduler (managers/utils.py validate_input_length, 0.5.23:259-289): the raw input, no reserve
        limit = self.state["max_req_input_len"]
        if n >= limit:
            raise Aborted("Input length (%d tokens) exceeds the maximum allowed length (%d tokens). Use a shorter "
                          "input or enable --allow-auto-truncate." % (n, limit))
        text = "" if isinstance(prompt, list) else prompt
        if self.gpu.get("visible_tokens"):  # a server that silently drops early context (a fault to inject)
            text = "".join(pieces(text)[-int(self.gpu["visible_tokens"]):])
        out = pieces(answer_text(text))[:max_new_tokens]
        if ignore_eos:  # sampling_params.ignore_eos: SGLang decodes up to max_new_tokens past the end of the answer
            out += [" and"] * (max_new_tokens - len(out))
        step = self.decode_step(n)
        finish = "stop" if len(out) < max_new_tokens else "length"
        return n, out, finish, step


class Handler(BaseHTTPRequestHandler):
    server_version = "uvicorn"
    sys_version = ""
    protocol_version = "HTTP/1.1"

    @property
    def app(self):
        return self.server.app

    def log_message(self, fmt, *args):  # uvicorn's access log: 'INFO:     127.0.0.1:54321 - "GET / HTTP/1.1" 200'
        self.app.log("INFO:     %s:%d - %s" % (self.client_address[0], self.client_address[1], fmt % args))

    def _send(self, status, payload=None, content_type="application/json"):
        body = b"" if payload is None else (payload if isinstance(payload, bytes) else json.dumps(payload).encode())
        self.send_response(status)
        self.send_header("content-type", content_type)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _openai_error(self, message, status=400):
        # serving_base.py create_error_response (0.5.9:210-226, 0.5.23:205-221): ErrorResponse, "BadRequestError"
        self._send(status, {"object": "error", "message": message, "type": "BadRequestError", "param": None,
                            "code": status})

    def _authorized(self):
        """SGLang's api_key rule for the double's endpoints: every path needs the key except the probes and
        Prometheus' scrape, matched by prefix (0.5.11 to 0.5.23 srt/utils/auth.py decide_request_auth: /health,
        /metrics, and from 0.5.22 /ready; 0.5.23 auth.py:102-106)."""
        key = self.app.args.api_key
        if not key or self.path.startswith(("/health", "/metrics", "/ready")):
            return True
        if self.headers.get("Authorization") == "Bearer " + key:
            return True
        self._send(401, {"error": "Unauthorized"})
        return False

    def _json_body(self):
        length = int(self.headers.get("content-length") or 0)
        return json.loads(self.rfile.read(length) or b"{}")

    def do_GET(self):  # the name http.server calls
        if not self._authorized():
            return
        app, path = self.app, self.path.split("?")[0]
        if path in ("/health", "/health_generate"):
            if not app.ready:
                return self._send(503)
            if path == "/health_generate":
                app.generate([0], 1, log_metrics=False)
            return self._send(200)
        if path == "/get_server_info" or (path == "/server_info" and app.new_api):
            return self._send(200, app.server_info())
        if path == "/get_model_info" or (path == "/model_info" and app.new_api):
            return self._send(200, {"model_path": app.args.model_path, "tokenizer_path": app.args.model_path,
                                    "is_generation": True})
        if path == "/v1/loads" and app.new_api:
            return self._send(200, app.loads())
        if path == "/metrics" and getattr(app.args, "enable_metrics", False):
            return self._send(200, app.metrics(), "text/plain; version=0.0.4; charset=utf-8")
        if path == "/v1/models":
            return self._send(200, {"object": "list", "data": [{
                "id": app.model_name, "object": "model", "created": int(time.time()), "owned_by": "sglang",
                "root": app.args.model_path, "max_model_len": app.state["context_len"]}]})
        if path == "/flush_cache":
            return self._send(200, b"Cache flushed.\nPlease check backend logs for more details. (When there are "
                                   b"running or waiting requests, the operation will not be performed.)", "text/plain")
        self._send(404, {"detail": "Not Found"})

    def do_POST(self):
        if not self._authorized():
            return
        app, path = self.app, self.path.split("?")[0]
        try:
            body = self._json_body()
        except ValueError:
            return self._send(400, {"detail": "There was an error parsing the body"})
        if path in ("/tokenize", "/v1/tokenize") and app.new_api:
            ids = tokenize(body.get("prompt", ""), body.get("add_special_tokens", True))
            return self._send(200, {"tokens": ids, "count": len(ids), "max_model_len": app.state["context_len"]})
        if path == "/v1/completions":
            return self._completions(body)
        if path == "/generate":
            return self._generate(body)
        if path == "/flush_cache":
            return self.do_GET()
        self._send(404, {"detail": "Not Found"})

    def _start_stream(self):
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("connection", "close")
        self.end_headers()

    def _event(self, payload):
        self.wfile.write(b"data: " + json.dumps(payload).encode() + b"\n\n")
        self.wfile.flush()

    def _end_stream(self):
        self.wfile.write(b"data: [DONE]\n\n")
        self.close_connection = True

    def _generate(self, body):
        """/generate: one JSON object, or with stream=true "data: {...}" events whose text and meta_info are
        cumulative (0.5.23 entrypoints/http_server.py generate_request), then "data: [DONE]"."""
        app, params = self.app, body.get("sampling_params") or {}
        stream = bool(body.get("stream"))
        rid = uuid.uuid4().hex

        def event(n, out, finish, count, done):
            meta = {"id": rid, "finish_reason": {"type": finish} if done else None, "prompt_tokens": n,
                    "completion_tokens": count, "cached_tokens": 0}
            if done:
                meta.update(app.spec_meta(count))
            text = "".join(out[:count])
            return {"text": text, "output_ids": tokenize(text, False), "meta_info": meta}

        def paced(n, out, finish, step):  # streamed while the request is admitted: one event per decode step
            self._start_stream()
            for count in range(1, len(out) + 1):
                time.sleep(step)
                self._event(event(n, out, finish, count, count == len(out)))
            self._end_stream()
        try:
            n, out, finish, step = app.generate(body.get("input_ids") or body.get("text", ""),
                                                params.get("max_new_tokens", 128), bool(params.get("ignore_eos")),
                                                decode=paced if stream else None)
        except Aborted as error:
            if not stream:  # the tokenizer raises the abort as a ValueError (0.5.23 tokenizer_manager.py:1916-1918)
                return self._send(400, {"error": {"message": str(error)}})
            # streamed, the abort is the request's one output: finish_reason abort, then [DONE]
            # (0.5.9 tokenizer_manager.py:1153-1163, 0.5.23 :1891-1922; http_server.py generate_request)
            self._start_stream()
            self._event({"text": "", "output_ids": [], "meta_info": {
                "id": uuid.uuid4().hex, "finish_reason": {"type": "abort", "message": str(error), "status_code": 400,
                                                          "err_type": "BadRequestError"},
                "prompt_tokens": 1, "completion_tokens": 0, "cached_tokens": 0}})
            return self._end_stream()
        except BadRequest as error:
            if not stream:  # http_server.py _create_error_response (0.5.9:683, 0.5.23:2246-2250)
                return self._send(400, {"error": {"message": str(error)}})
            # streamed: HTTP 200 and one error event (0.5.9 http_server.py:662-667 {"message"}; 0.5.13+ adds
            # type/code/retryable, 0.5.23:957-975)
            error_body = {"message": str(error)}
            if release_tuple(app.state.get("version")) >= (0, 5, 13):
                error_body.update(type="invalid_request_error", code=400, retryable=False)
            self._start_stream()
            self._event({"error": error_body})
            return self._end_stream()
        if not stream:
            return self._send(200, event(n, out, finish, len(out), True))

    def _completions(self, body):
        app = self.app
        prompt = body.get("prompt", "")
        if isinstance(prompt, list) and prompt and isinstance(prompt[0], str):
            prompt = prompt[0]
        stream = bool(body.get("stream"))
        include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
        rid, created = "cmpl-" + uuid.uuid4().hex, int(time.time())
        head = {"id": rid, "object": "text_completion", "created": created, "model": body.get("model", app.model_name)}
        since_0510 = release_tuple(app.state.get("version")) >= (0, 5, 10)
        try:
            n, out, finish, _ = app.generate(prompt, int(body.get("max_tokens", 16)))
        except Aborted as error:
            if not stream:  # non-streamed: the abort is a ValueError, HTTP 400 (serving_completions.py:518-519)
                return self._openai_error(str(error))
            self._start_stream()  # the abort is the stream's first chunk: HTTP 200 is already on its way
            if since_0510:
                # 0.5.10+ serving_completions.py (0.5.23:356-371): an abort with a status code becomes an error
                # event, its type the status's name (create_streaming_error_response(message, code.name, code.value))
                self._event({"error": {"object": "error", "message": str(error), "type": "BAD_REQUEST",
                                       "param": None, "code": 400}})
            else:
                # 0.5.9 serving_completions.py:204-300 passes the abort through as an empty chunk
                self._event({**head, "choices": [{"index": 0, "text": "", "logprobs": None, "finish_reason": "abort",
                                                  "matched_stop": None}], "usage": None})
            if include_usage:  # the loop ended normally: the usage chunk follows (0.5.23:478-494)
                self._event({**head, "choices": [], "usage": {"prompt_tokens": 1, "total_tokens": 1,
                                                              "completion_tokens": 0}})
            return self._end_stream()
        except BadRequest as error:
            if stream and not since_0510:
                # 0.5.9 starts the stream before validating (serving_completions.py:171-182): the tokenizer's
                # ValueError arrives as an error event (:362-364, serving_base.py:228-242)
                self._start_stream()
                self._event({"error": {"object": "error", "message": str(error), "type": "BadRequestError",
                                       "param": None, "code": 400}})
                return self._end_stream()
            # 0.5.10+ kick-starts the generator before HTTP 200 (0.5.23 serving_completions.py:208-212): HTTP 400
            return self._openai_error(str(error))
        usage = {"prompt_tokens": n, "total_tokens": n + len(out), "completion_tokens": len(out),
                 "prompt_tokens_details": None, "reasoning_tokens": 0}
        if not stream:
            return self._send(200, {**head, "choices": [{"index": 0, "text": "".join(out), "logprobs": None,
                                                         "finish_reason": finish, "matched_stop": None}],
                                    "usage": usage})
        self._start_stream()
        for i, piece in enumerate(out):
            self._event({**head, "choices": [{"index": 0, "text": piece, "logprobs": None,
                                              "finish_reason": finish if i == len(out) - 1 else None,
                                              "matched_stop": None}], "usage": None})
        if include_usage:
            self._event({**head, "choices": [], "usage": usage})
        self._end_stream()


def serve(args, gpu, state, log):
    app = Server(args, gpu, state, log)
    httpd = ThreadingHTTPServer((args.host, args.port), Handler)
    httpd.daemon_threads = True
    httpd.app = app
    log("Uvicorn running on http://%s:%d (Press CTRL+C to quit)" % (args.host, args.port))

    def warm_up():
        # SGLang's own warm-up request, as its scheduler logs it (managers/scheduler_metrics_mixin.py, 0.5.9)
        log("Prefill batch, #new-seq: 1, #new-token: 1, #cached-token: 0, token usage: 0.00, #running-req: 0, "
            "#queue-req: 0, input throughput (token/s): 0.00, cuda graph: False", 0)
        app.generate([0], 1)
        app.ready = True
        log("The server is fired up and ready to roll!")

    threading.Thread(target=warm_up, daemon=True).start()
    try:
        httpd.serve_forever()
    except KeyboardInterrupt:
        pass


class DummyHealthHandler(BaseHTTPRequestHandler):
    """What a node of rank >= 1 serves (0.5.23 utils/common.py launch_dummy_health_check_server, 0.5.9 the same):
    a FastAPI app with GET /ping, /health and /health_generate answering 200 with an empty body, FastAPI's 404/405
    for anything else (no /generate, no /server_info), under uvicorn at log_level "warning": no access log."""

    server_version = "uvicorn"
    sys_version = ""
    protocol_version = "HTTP/1.1"
    ROUTES = ("/ping", "/health", "/health_generate")

    def log_message(self, fmt, *args):
        pass

    def _send(self, status, payload=None):
        body = b"" if payload is None else json.dumps(payload).encode()
        self.send_response(status)
        if payload is not None:
            self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):  # the name http.server calls
        if self.path.split("?")[0] in self.ROUTES:
            return self._send(200)
        self._send(404, {"detail": "Not Found"})

    def do_POST(self):
        self.rfile.read(int(self.headers.get("content-length") or 0))
        if self.path.split("?")[0] in self.ROUTES:
            return self._send(405, {"detail": "Method Not Allowed"})
        self._send(404, {"detail": "Not Found"})


def serve_dummy_health(args, log):
    """Start the dummy health server in a daemon thread and log it as SGLang does (0.5.23 brackets an IPv6 host,
    utils/network.py NetworkAddress.to_host_port_str)."""
    httpd = ThreadingHTTPServer((args.host, args.port), DummyHealthHandler)
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, daemon=True, name="health-check-server").start()
    host = "[%s]" % args.host if ":" in args.host else args.host
    log("Dummy health check server started in background thread at %s:%d" % (host, args.port))
    return httpd
