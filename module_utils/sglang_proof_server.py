"""What the proof reads from the server before it sends a prompt: readiness (/health_generate), the KV pool and
the server info, the model served and its context length."""

from __future__ import annotations

import re
import time

from ansible.module_utils.sglang_http import read_bounded
from ansible.module_utils.sglang_proof_failures import HTTPFailure, Retryable, SmokeFailure
from ansible.module_utils.sglang_proof_limits import reserved_tokens


def wait_ready(client, seconds):
    """Poll /health_generate (a real one-token generation) until it answers 200."""
    deadline = time.monotonic() + seconds
    last = None
    while True:
        try:
            client.request("GET", "/health_generate", seconds=min(client.timeout, 60),
                           consume=lambda r: read_bounded(r, what="/health_generate"))
            return
        except HTTPFailure as error:
            last = "HTTP %d %s" % (error.status, error.server_message)
        except Retryable as error:
            last = str(error)
            if seconds <= 0 and last.startswith("Nothing is answering"):
                raise
        if time.monotonic() >= deadline:
            raise SmokeFailure("The server at %s was not ready within %d s: /health_generate last gave %s. It may "
                               "still be loading weights (journalctl -u sglang shows progress): raise wait_ready."
                               % (client.url, seconds, last))
        time.sleep(min(2.0, max(0.1, deadline - time.monotonic())))


VERSION = re.compile(r"[0-9][0-9A-Za-z.+_-]{0,39}")


def server_version(info):
    """The release the server names (SGLang's /server_info carries its __version__), shown in the report: a peer's
    answer, so only a short version-shaped string is taken."""
    version = info.get("version") if isinstance(info, dict) else None
    return version if isinstance(version, str) and VERSION.fullmatch(version) else None


def server_info(client):
    """/server_info (0.5.9+), else /get_server_info (older): (pool, max_req_input_len, info)."""
    try:
        info = client.json("GET", "/server_info")
    except HTTPFailure as error:
        if error.status != 404:
            raise
        info = client.json("GET", "/get_server_info")
    return pool_from_info(info), info.get("max_req_input_len"), info


def pool_from_info(info):
    if not isinstance(info, dict):
        raise SmokeFailure("The server info is not a JSON object: %r" % (info,))
    if isinstance(info.get("max_total_num_tokens"), int):
        return info["max_total_num_tokens"]
    states = info.get("internal_states")
    state = states[0] if isinstance(states, list) and states else {}
    usage = state.get("memory_usage") if isinstance(state, dict) else None
    capacity = usage.get("token_capacity") if isinstance(usage, dict) else None
    if isinstance(capacity, int):
        return capacity
    raise SmokeFailure("The server info has neither max_total_num_tokens nor "
                       "internal_states[0].memory_usage.token_capacity; is this an SGLang server?")


def served_model(client, info):
    """(model name, context length).

    The context length is /v1/models' max_model_len: TokenizerManager's model_config.context_len in 0.5.9
    and 0.5.23, the number it refuses longer inputs by. The server info's context_length is the
    --context-length argument (null when the model config's length applies), the fallback.
    """
    try:
        data = client.json("GET", "/v1/models").get("data") or []
    except HTTPFailure as error:
        if error.status != 404:
            raise
        data = []
    if data:
        return data[0].get("id"), data[0].get("max_model_len") or info.get("context_length")
    name = info.get("served_model_name") or info.get("model_path")
    if not name:
        raise SmokeFailure("/v1/models lists no model and the server info names none; is the server still starting?")
    return name, info.get("context_length")


def ready_server(params, result, progress, server, stage):
    """Wait for /health_generate, then read the server's pool and context into the result (both levels)."""
    progress.stage("%s: waiting for /health_generate" % stage)
    wait_ready(server, params["wait_ready"])
    result["checks"].append({"name": "ready", "ok": True, "detail": "/health_generate answered 200"})
    pool, max_req_input_len, info = server_info(server)
    model, context_length = served_model(server, info)
    result.update(pool_tokens=pool, max_req_input_len=max_req_input_len, context_length=context_length,
                  min_pool_tokens=max(context_length or 0, params.get("min_pool_tokens") or 0) or None,
                  server_version=server_version(info))
    return pool, max_req_input_len, model, context_length, reserved_tokens(info)
