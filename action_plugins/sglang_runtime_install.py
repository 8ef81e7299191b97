"""Action: this run's runtime (lib/sglang_state/runtime_install.py): found complete by its package set, or built
beside the one serving (uv, or pip as the fallback; controller-side wheels copied for it), checked, marked complete;
then what nothing names is pruned.

Plain Python over the executor of lib/sglang_state/phase_action.py, which also reads controller-side wheels' sha256.
Its documentation is library/sglang_runtime_install.py (ansible-doc sglang_runtime_install).
"""

from __future__ import annotations

import os
import sys

# As the filters do: the decisions live in lib/ beside this folder (plugins/lib in the collection).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.realpath(__file__)), os.pardir, "lib"))

from sglang_state import runtime_install
from sglang_state.phase_action import PhaseAction, documented_options, phase_specs, takes

# What the install reads: the one place an option is added; library/sglang_runtime_install.py documents exactly these.
PHASE_OPTIONS = {
    "install": takes("dir legacy unit store_dir version package wheels_dir extras kernel_wheels kernel_sources "
                     "min_free_gib uv_version names cuda_home user home check"),
}


class ActionModule(PhaseAction):
    NAME = "sglang_runtime_install"
    PHASE_OPTIONS = PHASE_OPTIONS
    # each phase's argument spec: the options its table names, typed by library/sglang_runtime_install.py;
    # PhaseAction.run checks a task's options against it (Ansible's validate_argument_spec) before anything runs
    SPECS = phase_specs(NAME, documented_options(__file__, NAME), PHASE_OPTIONS)

    STEPS = {"install": "install"}

    def from_record(self, phase, args, records):
        # the serving state is the proven one (sglang_prove's observe, this run's first look at the host)
        return {"proven": bool((records.result("observe") or {}).get("proven"))}

    def run_phase(self, phase, executor, args, run):
        return runtime_install.install(executor, args)
