"""Which proof runs: the parameters refused first, then the check level, or the full proof (also when a check
found a difference, which the result names as escalated)."""

from __future__ import annotations

from ansible.module_utils.sglang_proof_check_level import CheckDifference, check_proof
from ansible.module_utils.sglang_proof_full import full_proof
from ansible.module_utils.sglang_proof_http import Client
from ansible.module_utils.sglang_proof_params import validate
from ansible.module_utils.sglang_proof_progress import Progress


def run(params, result, progress=None):
    """The proof params['level'] asks for, its findings written into `result`; a failed one raises SmokeFailure."""
    progress = progress or Progress(None)
    asked = validate(params)
    result.update(level=params.get("level") or "full", escalated=None, decode=None, concurrency=None)
    if result["level"] == "check":
        client = Client(params["url"], params["api_key"], params["timeout"], params["validate_certs"])
        server = (Client(params["info_url"], params["api_key"], params["timeout"], params["validate_certs"])
                  if params.get("info_url") else client)
        try:
            return check_proof(params, result, progress, client, server)
        except CheckDifference as difference:
            kept = {k: result[k] for k in ("changed", "ok") if k in result}
            result.clear()
            result.update(kept, checks=[], level="full", escalated="the check found %s" % difference, decode=None,
                          concurrency=None)
    full_proof(params, result, progress, asked)
