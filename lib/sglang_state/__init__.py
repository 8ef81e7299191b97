"""Decisions about the live SGLang state, as plain Python (tested without Ansible): which proof a run needs, what
a deploy restarts and notes, whether a short pool is corrected, and what the rescue does."""

from sglang_state.correction import correction, is_stale
from sglang_state.model_inputs import calibration_key, model_inputs
from sglang_state.proof_level import (
    PROOF_CHOICES,
    ProofLevelError,
    live_state,
    proof_level,
    proof_ran,
    proof_record,
    server_proof_level,
    serving_process,
)
from sglang_state.rescue import failure_reason, rescue_action, rescue_message, rescue_node, without_excerpt
from sglang_state.restarts import deploy_changes, peer_restart, server_boot

__all__ = ["PROOF_CHOICES", "ProofLevelError", "calibration_key", "correction", "deploy_changes", "failure_reason",
           "is_stale", "live_state", "model_inputs", "peer_restart", "proof_level", "proof_ran", "proof_record",
           "rescue_action", "rescue_message", "rescue_node", "server_boot", "server_proof_level",
           "serving_process", "without_excerpt"]
