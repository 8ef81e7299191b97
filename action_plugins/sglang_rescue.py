"""Action: the rescue's phases on this host (lib/sglang_state/transaction_rescue.py): look (the journal, the
server's health, the backup store), then rescue (the decision of lib/sglang_state/rescue.py for the whole server:
the restore or the stop; without a restore it fails with the run's message), and after a restore and its proof, end
(the proof recorded, the run's message; always failed).

Plain Python over the executor of lib/sglang_state/phase_action.py. Its documentation is library/sglang_rescue.py
(ansible-doc sglang_rescue).
"""

from __future__ import annotations

import os
import sys

# As the filters do: the decisions live in lib/ beside this folder (plugins/lib in the collection).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.realpath(__file__)), os.pardir, "lib"))

from sglang_state import transaction_rescue  # noqa: E402
from sglang_state.phase_action import PhaseAction, documented_options, phase_specs, takes  # noqa: E402

# What each phase reads (lib/sglang_state/transaction_rescue.py): the one place an option is added;
# library/sglang_rescue.py documents exactly these.
PHASE_OPTIONS = {
    "look": takes("service url store files", "api_key"),
    "rescue": takes("failure nodes host rank0 rollback_on_failure service restore", "failed_in api_key versions"),
    "end": takes("said rank0 store files", "proved api_key"),
}


class ActionModule(PhaseAction):
    NAME = "sglang_rescue"
    PHASE_OPTIONS = PHASE_OPTIONS
    # each phase's argument spec: the options its table names, typed by library/sglang_rescue.py;
    # PhaseAction.run checks a task's options against it (Ansible's validate_argument_spec) before anything runs
    SPECS = phase_specs(NAME, documented_options(__file__, NAME), PHASE_OPTIONS)

    def run_phase(self, phase, executor, args, run):
        phases = {"look": transaction_rescue.look, "rescue": transaction_rescue.rescue, "end": transaction_rescue.end}
        return phases[phase](executor, args, run)
