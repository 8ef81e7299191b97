"""Action: the proof's phases on this host (lib/sglang_state/transaction_proof.py): observe (the last full proof's
record and the serving process), decide (full proof or check), prove (on rank 0; the full proof an async job
followed from here), record (the proven mark and the record).

Plain Python over the executor of lib/sglang_state/phase_action.py. Its documentation is library/sglang_prove.py
(ansible-doc sglang_prove).
"""

from __future__ import annotations

import os
import sys

# As the filters do: the decisions live in lib/ beside this folder (plugins/lib in the collection).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.realpath(__file__)), os.pardir, "lib"))

import yaml
from sglang_state import run_record, server_proof_level, transaction_proof
from sglang_state.phase_action import PhaseAction, documented_options, phase_specs, takes
from sglang_state.slurped import slurped

# SGLang's --config file is a few KiB; anything much larger is not the one the role rendered
CONFIG_LIMIT = 1 << 20

# What each phase reads (lib/sglang_state/transaction_proof.py): the one place an option is added;
# library/sglang_prove.py documents exactly these. What an earlier phase found is read from this run's record.
PHASE_OPTIONS = {
    "observe": takes("record_path service"),
    "decide": takes("service context_target", "versions runtime_changed asked reprove_after_days"),
    "prove": takes("on_rank0 batch smoke progress_file limit", "config_path"),
    "record": takes("batch rank0 store files manifest record_path"),
}


def restored_key(executor, config_path):
    """The API key the restored state serves with, from its config (a run that changed sglang_api_key put the old
    one back); '' when the config names none or is not there."""
    data = slurped(executor.module("ansible.builtin.slurp", {"src": config_path}, secret=True), CONFIG_LIMIT)
    try:
        config = yaml.safe_load(data or b"") or {}
    except (ValueError, yaml.YAMLError):
        return ""
    key = config.get("api-key") if isinstance(config, dict) else None
    return key if isinstance(key, str) else ""


class ActionModule(PhaseAction):
    NAME = "sglang_prove"
    PHASE_OPTIONS = PHASE_OPTIONS
    # each phase's argument spec: the options its table names, typed by library/sglang_prove.py;
    # PhaseAction.run checks a task's options against it (Ansible's validate_argument_spec) before anything runs
    SPECS = phase_specs(NAME, documented_options(__file__, NAME), PHASE_OPTIONS)
    STEPS = {phase: phase for phase in PHASE_OPTIONS}
    FRESH = ("observe",)  # the first look of a role's run begins its record

    def from_record(self, phase, args, records):
        deployed = (records.result("deploy") or {}).get("facts") or {}
        if phase == "decide":
            found = {"record": (records.result("observe") or {}).get("record") or {}}
            if isinstance(deployed.get("sglang_venv_versions"), dict):  # a restore's runtime, not this run's install
                found["versions"] = deployed["sglang_venv_versions"]
            return found
        if phase == "observe":
            return {}
        rescued = records.result("rescue")
        if rescued:  # the proof of what a rescue restored: its level and target, no concurrent prompts
            found = {"planned": rescued["proof"]["planned"], "rescued": rescued["proof"].get("smoke") or {}}
        else:  # the server's level: the full proof when any of its nodes needs it
            decided = records.peers(args["batch"], "decide", "the proof's decision")
            own = (records.result("decide") or {}).get("own") or {}
            found = {"planned": server_proof_level(own, [each.get("own") or {} for each in decided.values()])}
            plan = deployed.get("sglang_kv_plan_result") or {}
            found["concurrent_requests"] = plan.get("max_running_requests") or 0
        if phase == "record":
            found["smoke"] = (records.of(args["rank0"], "prove") or {}).get("smoke")
            found["live"] = (records.result("decide") or {}).get("live") or {}
            found["observed"] = (records.result("observe") or {}).get("record") or {}
            found["manifest"] = transaction_proof.proven_manifest(args["manifest"], deployed)
            found["deployed"] = deployed
        return found

    def run_phase(self, phase, executor, args, run):
        if phase == "observe":
            return transaction_proof.observe(executor, args)
        rescued = args.pop("rescued", None)
        if rescued is not None and args["on_rank0"]:  # held to the restored entry's own target and key
            key = restored_key(executor, args["config_path"]) if args.get("config_path") else ""
            args["smoke"] = dict(args["smoke"], **rescued, api_key=key)
        if phase == "record":
            # the proof's result beside what it decided: rank 0's (every node reports it), and the last full proof's
            # record (this one's, or the one observe read); and the run's facts, for what comes after the role
            deployed = args.pop("deployed")
            result = transaction_proof.record(executor, args, run)
            result.update(smoke=args.get("smoke") or {}, last_full=result.get("record") or args["observed"])
            # as the report reads them (run_record.run_facts: one derivation), the deploy's with this phase's result
            facts = run_record.run_facts({"results": {"deploy": {"facts": deployed}, "record": result}})
            return dict(result, facts={name: value for name, value in facts.items() if name.startswith("sglang_")})
        phases = {"decide": transaction_proof.decide, "prove": transaction_proof.prove}
        return phases[phase](executor, args, run)
