#!/usr/bin/python
"""Ansible module: prove a running SGLang server's KV pool and a long prompt.

The Ansible shell (documentation, arguments, exit) over the proof in module_utils/sglang_proof_*.py."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: sglang_smoke_test
short_description: Prove that a running SGLang server holds its context in its KV pool and answers from all of it
description:
  - Reads the server's real KV pool (C(max_total_num_tokens)) and its context length (C(max_model_len) of
    C(/v1/models), the model config's C(context_len) in SGLang 0.5.x). Fails when the pool is under the
    context length (or under I(min_pool_tokens)) and when the context length is under I(context_target).
    SGLang starts "healthy" with a pool smaller than C(--context-length) and only rejects a long prompt when
    one arrives; this module makes that a deploy-time failure.
  - Builds a long prompt on the host itself (never shipped over SSH), by default filling at least 95% of the
    context target as the server counts tokens (calibrated with the server's C(/tokenize), or with the usage
    of short requests), sends it once, in one streamed C(/generate) of I(decode_tokens) tokens, checks the
    server-counted length and the answer, and measures time to first token, elapsed time, prefill throughput
    and, from the same request, decode at the full context - so a full proof prefills the full context once.
    A server without C(/generate) gets it through C(/v1/completions) instead, and decode is not measured.
  - The default question (C(needle)) states a random number once at the very start of the prompt and asks
    for it at the end, so a server that dropped or truncated early context fails the proof.
  - Refuses bad parameters and a prompt longer than the server accepts before sending anything; each request
    has one deadline (I(timeout)) from connecting to its last byte.
  - Changes nothing on the host or the server; C(changed) is always false and it runs in check mode. With
    I(progress_file), it writes its stage there while it runs and removes the file when it ends.
  - Every failure is a message naming the parameter or the number at fault, with the evidence gathered so
    far, never a traceback.
version_added: "1.0.0"
author: sglang-longctx maintainers (!UNKNOWN)
options:
  url:
    description: Base URL of the SGLang server, C(http://) or C(https://) with a host.
    type: str
    default: http://127.0.0.1:30000
  info_url:
    description:
      - Where to read the pool, the context length and the tokenizer (C(/server_info), C(/v1/models),
        C(/tokenize)) and wait for C(/health_generate), when the long request goes elsewhere - e.g. the prompt
        through a router in I(url) and the pool from the worker behind it (a router's own server information
        describes the router, not the worker). Default - I(url).
    type: str
  api_key:
    description: The server's C(--api-key), sent as a bearer token.
    type: str
  min_pool_tokens:
    description:
      - The least KV pool (tokens) the server must hold, a positive number.
      - Unset, the pool must hold the server's own context length. The pool must hold the context length
        in any case.
    type: int
  context_target:
    description:
      - The context (tokens) the deployment promises (the role's C(sglang_context_target)), a positive number.
      - When set, the server's context length must be at least this, and C(prompt_tokens=target) fills it.
    type: int
  prompt_tokens:
    description:
      - Size of the long prompt, in tokens as the server counts them.
      - C(target) (default) fills 98% of I(context_target) (of the server's context length when unset),
        kept under what the server accepts, and fails unless the server counted at least 95% of it.
      - C(full) asks for as close to min(context length, pool) as the server accepts.
      - A number asks for that many tokens; more than the server accepts is refused before sending.
      - What the server accepts is its context length less the larger of I(max_tokens) and I(decode_tokens) (the
        output the long request may take) and, with an EAGLE-family draft, the
        draft-token slots SGLang reserves per request (read from its server info), and under its
        C(max_req_input_len).
    type: str
    default: target
  question:
    description:
      - C(needle) states a random number once at the start of the prompt and asks for it at the end; the
        answer must contain that number (digit separators ignored). The number is new on every call and
        returned as RV(needle).
      - C(fox) asks which animal the repeated filler mentions (the first releases' check; the answer sits
        in every line, so it does not prove the start of the prompt was kept).
    type: str
    choices: [needle, fox]
    default: needle
  filler:
    description: Text repeated to build the prompt. With C(question=needle) it must hold no digit.
    type: str
    default: "The quick brown fox jumps over the lazy dog. "
  expect:
    description:
      - A regular expression the answer must match (searched, case-insensitive).
      - Default is the question's own answer, the needle number or C(\bdog\b).
    type: str
  max_tokens:
    description:
      - Tokens to generate for the answer (kept out of the prompt's room in the context).
      - The full proof's long prompt answers in its C(/generate) of I(decode_tokens) tokens; the answer checked is
        the text of its first I(max_tokens) tokens (so at most I(decode_tokens) of them). I(max_tokens) is all the
        answer takes for the check's short prompt, the concurrent prompts, and the long prompt on a server without
        C(/generate).
    type: int
    default: 32
  level:
    description:
      - C(full) (default) proves the pool, the context and the long prompt, then measures decode at that context.
      - C(check) costs the server well under a second - the pool and context length read back and compared
        with I(expect_pool_tokens) and I(expect_context_length) (the proven ones), and one short needle
        prompt (at most 64 tokens) answered. A check that finds any difference runs the full proof instead
        and says why (RV(escalated)).
    type: str
    choices: [full, check]
    default: full
  expect_pool_tokens:
    description: For C(level=check), the pool the proven state reported; another pool runs the full proof.
    type: int
  expect_context_length:
    description: For C(level=check), the context length the proven state reported; another runs the full proof.
    type: int
  decode_tokens:
    description:
      - For the full proof, tokens the long prompt's own request decodes (at least 8) - one streamed C(/generate)
        with C(ignore_eos), whose text is also the answer, so the full context is prefilled once (each prefill of
        a ~196k-token prompt takes minutes on a large model). Its streamed events give the time per output token at
        the full context and, with speculative decoding, the accept length from the request's own counters
        (C(meta_info.spec_verify_ct) against C(completion_tokens), SGLang 0.5.23
        managers/tokenizer_manager.py).
    type: int
    default: 16
  concurrent_requests:
    description:
      - For the full proof, after the long prompt, this many short needle prompts (a few hundred tokens each, each
        with its own number) sent at once - the role passes the planned C(--max-running-requests). Every one must
        be answered with its own number (or, with I(expect) given, match I(expect) as the long prompt's answer must),
        or the proof fails. The time to the last answer and the aggregate decode
        tokens/s are returned as RV(concurrency). At most 64 are sent; 0 (default) sends none. The check level
        never sends them.
    type: int
    default: 0
  timeout:
    description: Seconds any one request may take in all, from connecting to its last byte (one deadline).
    type: int
    default: 900
  wait_ready:
    description: Seconds to wait for C(/health_generate) to answer 200 before testing; 0 checks once.
    type: int
    default: 300
  model:
    description: Model name for the requests; default is the first one C(/v1/models) lists.
    type: str
  stream:
    description:
      - Stream the long request, which measures the time to first token (RV(ttft_s)) and the time per output token
        (RV(decode)'s C(tpot_ms)). Not streamed, the C(/generate) answers once and RV(decode) has its counts only.
    type: bool
    default: true
  validate_certs:
    description: Verify TLS certificates for an https URL.
    type: bool
    default: true
  progress_file:
    description:
      - A file to keep the current stage in while the module runs (replaced atomically at each stage, removed
        at the end), for a task started with C(async) and C(poll=0) and followed by library/async_progress.py,
        which prints it once per try. A JSON object - C(line) (e.g. C(proof - prefill started, 196,004 prompt
        tokens)) and C(since) (epoch seconds the stage began).
      - Its folder must exist (a file that cannot be written is skipped; the proof goes on). Unset, nothing is
        written. It never holds the prompt, the answer or the API key.
    type: path
notes:
  - Needs nothing on the host beyond what Ansible ships (it uses C(ansible.module_utils.urls)).
  - Supports check mode. It is read-only, it sends requests but changes no state.
  - Endpoints and messages as in SGLang 0.5.9 and 0.5.23 (C(/server_info), C(/get_server_info),
    C(/v1/models), C(/tokenize), C(/generate), C(/v1/completions)); 0.4.x servers without C(/tokenize) are sized
    with short completions.
"""

EXAMPLES = r"""
- name: Prove the 200k target with a needle prompt that fills it
  sglang_smoke_test:
    context_target: 200000
  register: smoke

- name: Fill the whole context, through an API key, with the fox question
  sglang_smoke_test:
    url: http://127.0.0.1:30000
    api_key: "{{ sglang_api_key }}"
    context_target: "{{ sglang_context_target }}"
    prompt_tokens: full
    question: fox
    timeout: 1800
"""

RETURN = r"""
ok:
  description: Whether every check passed (the module fails otherwise).
  type: bool
  returned: always
pool_tokens:
  description: The server's KV pool, C(max_total_num_tokens).
  type: int
  returned: when the server answered
  sample: 218485
context_length:
  description: The server's context length (C(max_model_len) of C(/v1/models), else C(context_length) of the
    server info).
  type: int
  returned: when the server answered
  sample: 200000
max_req_input_len:
  description: The longest input the scheduler accepts, min(context, pool) - 6.
  type: int
  returned: when the server answered
server_version:
  description: The SGLang release the server says it runs (C(version) of its server info, SGLang's own
    C(__version__)); null when it gives none or one that is not a version.
  type: str
  returned: when the server answered
  sample: 0.5.23
context_target:
  description: The I(context_target) checked, or null.
  type: int
  returned: always
min_pool_tokens:
  description: The pool the server had to hold (I(min_pool_tokens), else the context length).
  type: int
  returned: when the server answered
prompt_target:
  description: The prompt size asked for, in tokens.
  type: int
  returned: when the long request ran
prompt_tokens:
  description: The long prompt's length as the server counted it (usage.prompt_tokens).
  type: int
  returned: when the long request ran
  sample: 196003
completion_tokens:
  description: Tokens generated (the full proof's long prompt, through C(/generate) - I(decode_tokens)).
  type: int
  returned: when the long request ran
completion:
  description:
    - The answer text. The full proof's, from its C(/generate) with C(ignore_eos), goes on past the answer's end up to
      I(decode_tokens) tokens (the answer is searched in it).
  type: str
  returned: when the long request ran
  sample: " 4821937."
question:
  description: The question asked, C(needle) or C(fox).
  type: str
  returned: always
needle:
  description: The random number stated at the start of the prompt (C(question=needle)), else null.
  type: int
  returned: always
  sample: 4821937
expect:
  description: The regular expression the answer had to match.
  type: str
  returned: always
elapsed_s:
  description: Seconds the long request took, end to end.
  type: float
  returned: when the long request ran
ttft_s:
  description: Seconds to the first generated text (streaming), null when I(stream) is false.
  type: float
  returned: when the long request ran
prefill_tokens_per_s:
  description: Prompt tokens divided by the time to first token (streaming) or by the elapsed time.
  type: float
  returned: when the long request ran
calibration_calls:
  description: Requests it took to size the prompt (tokenize or short completions).
  type: int
  returned: when the long request ran
level:
  description: The proof that ran, C(full) or C(check) (C(full) also when a check escalated).
  type: str
  returned: always
escalated:
  description: Why a check ran the full proof instead (the difference it found), else null.
  type: str
  returned: always
decode:
  description:
    - The full proof's decode at the full context, measured on the long prompt's own streamed C(/generate) (one
      prefill of the context) - C(tokens) decoded, C(tpot_ms) (ms per output token after the first streamed
      event), C(seconds) (from the first streamed event to the last), C(prompt_tokens), C(cached_tokens) (of the
      prompt, by the radix cache) and, when a draft runs, C(spec_verify_ct) and C(accept_length)
      (completion_tokens / spec_verify_ct) with the server's own C(spec_accept_length) and C(spec_accept_rate).
    - Null for a check or a failed proof; C(tpot_ms) and C(seconds) null with a C(note) when I(stream) is false;
      only a C(note) when the server serves no C(/generate).
  type: dict
  returned: always
  sample: {"tokens": 16, "tpot_ms": 41.3, "seconds": 0.62, "spec_verify_ct": 6, "accept_length": 2.67}
concurrency:
  description:
    - The full proof's concurrent short prompts (I(concurrent_requests)) - C(requests) sent at once, C(answered)
      with their own needle, C(seconds) to the last answer, C(completion_tokens) in all, C(decode_tokens_per_s)
      (those tokens over those seconds), C(prompt_tokens) of each (the largest). Null for a check or when none
      were asked.
  type: dict
  returned: always
  sample: {"requests": 8, "answered": 8, "seconds": 1.9, "completion_tokens": 40, "decode_tokens_per_s": 21.1}
checks:
  description: Each check (ready, context, pool, prompt_tokens, answer, concurrency), with whether it passed and what
    it saw.
  type: list
  elements: dict
  returned: always
  sample: [{"name": "pool", "ok": true, "detail": "pool 218,485 tokens >= 200,000 (the context length)"}]
"""

import traceback

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.sglang_proof_failures import SmokeFailure
from ansible.module_utils.sglang_proof_progress import Progress
from ansible.module_utils.sglang_proof_prompt import FOX_FILLER
from ansible.module_utils.sglang_proof_run import run


def main():
    module = AnsibleModule(
        argument_spec={
            "url": {"type": "str", "default": "http://127.0.0.1:30000"},
            "info_url": {"type": "str"},
            "api_key": {"type": "str", "no_log": True},
            # no_log False: "tokens" here are counts, not credentials (ansible-test's no-log-needed guesses by name)
            "min_pool_tokens": {"type": "int", "no_log": False},
            "context_target": {"type": "int"},
            "prompt_tokens": {"type": "str", "default": "target", "no_log": False},
            "question": {"type": "str", "default": "needle", "choices": ["needle", "fox"]},
            "filler": {"type": "str", "default": FOX_FILLER},
            "expect": {"type": "str"},
            "max_tokens": {"type": "int", "default": 32, "no_log": False},
            "level": {"type": "str", "default": "full", "choices": ["full", "check"]},
            "expect_pool_tokens": {"type": "int", "no_log": False},
            "expect_context_length": {"type": "int"},
            "decode_tokens": {"type": "int", "default": 16, "no_log": False},
            "concurrent_requests": {"type": "int", "default": 0},
            "timeout": {"type": "int", "default": 900},
            "wait_ready": {"type": "int", "default": 300},
            "model": {"type": "str"},
            "stream": {"type": "bool", "default": True},
            "validate_certs": {"type": "bool", "default": True},
            "progress_file": {"type": "path"},
        },
        supports_check_mode=True,
    )
    result = {"changed": False, "ok": False, "checks": [], "question": module.params["question"], "needle": None,
              "context_target": module.params["context_target"], "level": module.params["level"], "escalated": None,
              "decode": None, "concurrency": None}
    progress = Progress(module.params["progress_file"])
    try:
        run(module.params, result, progress)
    except SmokeFailure as error:
        progress.end()
        module.fail_json(msg=str(error), **result)
    except (KeyError, IndexError, TypeError, AttributeError, ValueError) as error:
        # The parameters were validated before any request, so these come from reading a server's answer of a
        # shape SGLang does not send (a list where it sends an object, a field missing, a string for a number).
        progress.end()
        module.fail_json(msg="Smoke test stopped: an answer from %s is not shaped as SGLang's answers are (%s: %s; "
                             "after the checks %s). Fix: point url at an SGLang server of a supported release "
                             "(curl %s/server_info); if its answers look right, this is a defect of the module "
                             "(-vvv shows where)."
                             % (module.params["url"], type(error).__name__, error,
                                [check.get("name") for check in result["checks"] if isinstance(check, dict)] or
                                "(none yet)", module.params["url"]),
                         exception=traceback.format_exc(), **result)
    except Exception as error:  # report, never a traceback, but keep it for -vvv
        progress.end()
        module.fail_json(msg="Smoke test stopped on an unexpected %s: %s" % (type(error).__name__, error),
                         exception=traceback.format_exc(), **result)
    progress.end()
    result["ok"] = True
    module.exit_json(**result)


if __name__ == "__main__":
    main()
