"""Action: the proof's phases on this host (lib/sglang_state/transaction_proof.py): observe (the last full proof's
record and the serving process), decide (full proof or check), prove (on rank 0; the full proof an async job
followed from here), record (the proven mark and the record).

Plain Python over the executor of lib/sglang_state/phase_action.py. Its documentation is library/sglang_proof.py
(ansible-doc sglang_proof).
"""

from __future__ import annotations

import os
import sys

# As the filters do: the decisions live in lib/ beside this folder (plugins/lib in the collection).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.realpath(__file__)), os.pardir, "lib"))

from sglang_state import transaction_proof  # noqa: E402
from sglang_state.phase_action import PhaseAction, documented_options, phase_specs, takes  # noqa: E402

# What each phase reads (lib/sglang_state/transaction_proof.py): the one place an option is added;
# library/sglang_proof.py documents exactly these.
PHASE_OPTIONS = {
    "observe": takes("record_path service", run=False),
    "decide": takes("service context_target", "record versions runtime_changed asked reprove_after_days"),
    "prove": takes("on_rank0 planned smoke progress_file limit", "concurrent_requests"),
    "record": takes("planned live store files manifest record_path", "smoke"),
}


class ActionModule(PhaseAction):
    NAME = "sglang_proof"
    PHASE_OPTIONS = PHASE_OPTIONS
    # each phase's argument spec: the options its table names, typed by library/sglang_proof.py;
    # PhaseAction.run checks a task's options against it (Ansible's validate_argument_spec) before anything runs
    SPECS = phase_specs(NAME, documented_options(__file__, NAME), PHASE_OPTIONS)

    def run_phase(self, phase, executor, args, run):
        if phase == "observe":
            return transaction_proof.observe(executor, args)
        phases = {"decide": transaction_proof.decide, "prove": transaction_proof.prove,
                  "record": transaction_proof.record}
        return phases[phase](executor, args, run)
