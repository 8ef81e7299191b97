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

from sglang_state import transaction, transaction_rescue
from sglang_state.phase_action import PhaseAction, documented_options, phase_specs, takes

# What each phase reads (lib/sglang_state/transaction_rescue.py): the one place an option is added;
# library/sglang_rescue.py documents exactly these. What an earlier phase found is read from this run's record.
PHASE_OPTIONS = {
    "look": takes("failure service url store files", "api_key"),
    "rescue": takes("failure batch host rank0 rollback_on_failure service restore", "api_key versions"),
    "end": takes("rank0 store files", "api_key"),
}


def failed_in(deployed):
    """'proof' when the failure came after a verified deploy (the deploy's last phase was verify, and passed)."""
    deployed = deployed or {}
    return "proof" if deployed.get("phase") == "verify" and not deployed.get("failed") else ""


class ActionModule(PhaseAction):
    NAME = "sglang_rescue"
    PHASE_OPTIONS = PHASE_OPTIONS
    # each phase's argument spec: the options its table names, typed by library/sglang_rescue.py;
    # PhaseAction.run checks a task's options against it (Ansible's validate_argument_spec) before anything runs
    SPECS = phase_specs(NAME, documented_options(__file__, NAME), PHASE_OPTIONS)
    STEPS = {phase: phase for phase in PHASE_OPTIONS}
    # the proof before the rescue is not the restored state's: `end` reads only the proof run after the restore
    DROPS = {"rescue": ("prove",)}

    def from_record(self, phase, args, records):
        if phase == "rescue":
            return {"nodes": records.peers(args["batch"], "look", "the look of the rescue"),
                    "failed_in": failed_in(records.result("deploy"))}
        if phase == "end":
            return {"said": (records.result("rescue") or {}).get("said") or {},
                    "proved": records.of(args["rank0"], "prove")}
        return {}

    def run_phase(self, phase, executor, args, run):
        if phase == "look" and not run.get("changed_this_run"):
            # nothing changed on the host this run: there is nothing to undo, the failure is the run's message
            raise transaction.PhaseFailed(args["failure"])
        phases = {"look": transaction_rescue.look, "rescue": transaction_rescue.rescue, "end": transaction_rescue.end}
        return phases[phase](executor, args, run)

    def _where(self, phase):
        return "%s (phase %s)" % (self.NAME, phase) if len(self.PHASE_OPTIONS) > 1 else self.NAME
