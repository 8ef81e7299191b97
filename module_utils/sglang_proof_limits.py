"""How long a prompt the server takes and the proof asks for: the slots a speculative draft reserves, the room the
answer keeps, the target of 'target', 'full' or a number, and the refusal of one the server would refuse."""

from __future__ import annotations

import math

from ansible.module_utils.sglang_proof_failures import SmokeFailure, fmt

TARGET_FILL = 0.98  # aim at 98% of the target, under what the server accepts
TARGET_MIN = 0.95  # under 95% of the target counted by the server fails the proof


def reserved_tokens(info):
    """The output slots SGLang adds to every input before its length checks: EAGLE (EAGLE3, NEXTN, FROZEN_KV_MTP)
    keeps its draft tokens there, max(eagle_topk x num_steps, num_draft_tokens) (0.5.9
    managers/tokenizer_manager.py:250-261; 0.5.23 managers/utils.py:484-500 compute_num_reserved_tokens, with
    runtime_context.py:1982-2000 max_speculative_num_draft_tokens); every other algorithm reserves none. Read
    from the server info, whose server_args are the resolved ones (auto-chosen steps, topk, draft tokens)."""
    if not isinstance(info, dict):
        return 0
    algorithm = str(info.get("speculative_algorithm") or "").upper()
    if algorithm not in ("EAGLE", "EAGLE3", "NEXTN", "FROZEN_KV_MTP"):
        return 0

    def number(key):
        value = info.get(key)
        return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0
    return max(number("speculative_eagle_topk") * number("speculative_num_steps"),
               number("speculative_num_draft_tokens"), number("max_speculative_num_draft_tokens"))


def accepted_tokens(pool, max_req_input_len, context_length, max_tokens, reserved=0):
    """The longest prompt SGLang takes: TokenizerManager wants input + reserved < context length and
    max_tokens + input + reserved <= context length (< before 0.5.11: the stricter one is kept), the Scheduler
    input < max_req_input_len (which already holds min(context, pool) - 6)."""
    limits = [pool - 6, context_length - max_tokens - reserved - 1]
    if max_req_input_len:
        limits.append(max_req_input_len - 1)
    return min(limits)


def answer_room(params):
    """(tokens kept out of the prompt's room for the output, the parameter that sets them): the needle request asks
    /generate for decode_tokens tokens, its fallback /v1/completions for max_tokens; the prompt fits either."""
    decode_tokens = params.get("decode_tokens") or 0
    if decode_tokens > params["max_tokens"]:
        return decode_tokens, "decode_tokens=%d" % decode_tokens
    return params["max_tokens"], "max_tokens=%d" % params["max_tokens"]


def prompt_target(asked, accepted, params, context_length, max_req_input_len, reserved=0):
    """The prompt size to build; a number the server would refuse is refused here, before sending."""
    room = answer_room(params)[1]
    if asked == "full":
        return int(accepted - math.ceil(accepted * 0.005))
    if asked == "target":
        fill_to = params.get("context_target") or context_length
        aim = min(int(fill_to * TARGET_FILL), int(accepted - math.ceil(accepted * 0.005)))
        if aim < fill_to * TARGET_MIN:
            raise SmokeFailure(
                "prompt_tokens=target needs at least %s tokens (95%% of %s) but the server accepts %s (context "
                "length %s less %s%s, max_req_input_len %s): lower %s or raise the context."
                % (fmt(int(math.ceil(fill_to * TARGET_MIN))), fmt(fill_to), fmt(accepted), fmt(context_length),
                   room, " and %d the speculative draft reserves" % reserved if reserved else "",
                   fmt(max_req_input_len) if max_req_input_len else "unknown", room.split("=")[0]))
        return aim
    if asked > accepted:
        raise SmokeFailure(too_long("prompt_tokens=%d asks for %s tokens" % (asked, fmt(asked)), accepted,
                                    context_length, max_req_input_len, room, reserved))
    return asked


def too_long(what, accepted, context_length, max_req_input_len, room, reserved=0):
    """`room`: answer_room's words, e.g. "max_tokens=32"."""
    return ("%s, more than the %s this server accepts (context length %s tokens less %s for the "
            "answer%s; max_req_input_len %s), so SGLang would refuse it with HTTP 400. Not sent: lower "
            "prompt_tokens, or use 'target' or 'full'." % (
                what, fmt(accepted), fmt(context_length), room,
                " and %d the speculative draft reserves" % reserved if reserved else "",
                fmt(max_req_input_len) if max_req_input_len else "unknown"))
