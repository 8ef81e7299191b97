"""Decisions about the live SGLang state, as plain Python (tested without Ansible): which proof a run needs."""

from sglang_state.proof_level import PROOF_CHOICES, ProofLevelError, proof_level, proof_record

__all__ = ["PROOF_CHOICES", "ProofLevelError", "proof_level", "proof_record"]
