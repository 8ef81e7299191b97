"""Action: the deploy transaction's phases on this host (lib/sglang_state/transaction.py): render, start, calibrate,
verify, and restore (a store entry put back, for the rollback and the rescue).

The transaction is plain Python over an executor (lib/sglang_state/phase_action.py): modules run on the host, the
server's files are rendered on the controller by Ansible's template lookup and put in place by one module call
(sglang_service_files: its --check and --diff behave as the template action's). Its documentation is
library/sglang_deploy.py (ansible-doc sglang_deploy).
"""

from __future__ import annotations

import os
import sys

# As the filters do: the decisions live in lib/ beside this folder (plugins/lib in the collection).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.realpath(__file__)), os.pardir, "lib"))

from sglang_checks import planhost
from sglang_state import transaction
from sglang_state.phase_action import PhaseAction, documented_options, phase_specs, takes, typed

# The keys of the `common` the role passes (roles/sglang/vars/main.yml): _sglang_deploy to the deploy's phases,
# _sglang_restore to a restore. A phase that takes one takes all its keys, read or not: one dict serves phases that
# read different parts of it.
DEPLOY_COMMON = ("host", "server", "rank0", "order", "multinode", "batch", "service", "files", "etc_dir", "etc_group",
                 "store", "state_manifest", "wait", "context_target")
RESTORE_COMMON = ("runtimes", "store", "files", "unit_name", "service", "wait")

# The service's files as the phases that render them read them (the documentation's `files` is a list of anything:
# restore takes their paths)
RENDERED = {"files": {"type": "list", "elements": "dict", "options": {
    "src": {"type": "str", "required": True}, "dest": {"type": "str", "required": True},
    "mode": {"type": "str", "required": True}, "group": {"type": "str"}, "secret": {"type": "bool"}}}}
PATHS = {"files": {"type": "list", "elements": "str"}}

# What each phase reads (lib/sglang_state/transaction.py), after `common` is merged under the task's own arguments.
# The one place an option is added: library/sglang_deploy.py documents and types exactly these, and
# tests/unit/test_phase_actions.py holds the role's every call to them.
PHASE_OPTIONS = {
    "render": typed(takes("files etc_dir etc_group store before_manifest", "plan_args", DEPLOY_COMMON), **RENDERED),
    "start": typed(takes("host multinode batch service store files state_manifest wait", "", DEPLOY_COMMON),
                   **RENDERED),
    # files, etc_dir, etc_group, store, state_manifest and wait: the corrective pass's render and restart
    "calibrate": typed(takes("host rank0 order multinode batch server service spec plan context_target "
                             "calibration_store plan_inputs files etc_dir etc_group store state_manifest wait",
                             "stored in_use", DEPLOY_COMMON), **RENDERED),
    "verify": takes("host rank0 order multinode batch server context_target min_headroom_gib", "", DEPLOY_COMMON),
    "restore": typed(takes("name unit_path runtimes store files service wait", "", RESTORE_COMMON), **PATHS),
}
# What each phase reads of the run record (run_record.py), beside the run: its own render's result (start), the
# first look's record of the last full proof (start), and the server's nodes' results of the phase before, by its
# name (a node that finished a phase first must not overwrite what a peer is about to read of the one before).
PHASE_BEFORE = {"start": "render", "calibrate": "start", "verify": "calibrate"}


def replanner(plan_inputs, task_vars):
    """calibrate's re-plan: {node: measured calibration} -> the planner's {spec, plan} or {error}, for this host."""
    inputs = dict(plan_inputs)  # its parts required by the documentation's suboptions

    def replan(calibrations):
        measured = dict(inputs["calibrations"] or {}, **calibrations)
        return planhost.plan_host(task_vars.get("inventory_hostname"), task_vars["hostvars"], inputs["knobs"],
                                  inputs["measured"], inputs["gpus"], measured)
    return replan


class ActionModule(PhaseAction):
    NAME = "sglang_deploy"
    PHASE_OPTIONS = PHASE_OPTIONS
    # each phase's result under its name, and as the deploy's latest (the rescue and the report read that)
    STEPS = {phase: (phase, "deploy") for phase in PHASE_OPTIONS}
    BEGINS = ("render", "restore")
    # each phase's argument spec: the options its table names, typed by library/sglang_deploy.py;
    # PhaseAction.run checks a task's options against it (Ansible's validate_argument_spec) before anything runs
    SPECS = phase_specs(NAME, documented_options(__file__, NAME), PHASE_OPTIONS)

    def from_record(self, phase, args, records):
        if phase not in PHASE_BEFORE:
            return {}
        before = PHASE_BEFORE[phase]
        found = {"nodes": records.peers(args["batch"], before, "the deploy's %s phase" % before)}
        if phase == "start":
            found["files_changed"] = bool((records.result("render") or {}).get("files_changed"))
            found["record"] = (records.result("observe") or {}).get("record") or {}
        return found

    def prepare(self, phase, args, task_vars):
        if phase != "calibrate":
            return args
        # the action's: the phase takes the re-plan made of them
        plan_inputs = args.pop("plan_inputs")
        return dict(args, replan=replanner(plan_inputs, task_vars))

    def run_phase(self, phase, executor, args, run):
        if phase == "verify":
            return transaction.verify(args, run)
        phases = {"render": transaction.render, "start": transaction.start, "calibrate": transaction.calibrate,
                  "restore": transaction.restore}
        return phases[phase](executor, args, run)
