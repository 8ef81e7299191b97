"""Action: one phase of the deploy transaction (lib/sglang_state/transaction.py) on this host.

The transaction is plain Python over an executor; this plugin is the executor Ansible gives it: modules run on the
host through _execute_module, the server's files are rendered on the controller by Ansible's template lookup and put
in place by one module call (sglang_service_files: its --check and --diff behave as the template action's), other
files are copied by Ansible's copy action, and progress lines go to the controller's display. Its documentation is
library/sglang_deploy.py (ansible-doc sglang_deploy).
"""

from __future__ import annotations

import datetime
import hashlib
import json
import os
import sys
import time
import traceback

from ansible.errors import AnsibleError
from ansible.plugins.action import ActionBase
from ansible.utils.display import Display

# As the filters do: the decisions live in lib/ beside this folder (plugins/lib in the collection).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.realpath(__file__)), os.pardir, "lib"))

from sglang_checks import planhost  # noqa: E402
from sglang_state import runtime_install, transaction, transaction_proof, transaction_rescue  # noqa: E402

display = Display()

_PHASES = ("install", "render", "start", "calibrate", "verify", "restore", "observe", "decide", "prove", "record",
           "look", "rescue")
# Phases that begin a run record; the others carry on the one they are given.
_BEGIN = ("render", "restore", "observe")

# The keys of the `common` the role passes (roles/sglang/vars/main.yml): _sglang_deploy to the deploy's phases,
# _sglang_restore to a restore. A phase that takes one takes all its keys, read or not: one dict serves phases that
# read different parts of it.
_DEPLOY_COMMON = ("host", "server", "rank0", "order", "multinode", "service", "files", "etc_dir", "etc_group", "store",
                  "state_manifest", "wait", "context_target")
_RESTORE_COMMON = ("runtimes", "store", "files", "unit_name", "service", "wait")


def _takes(required, optional="", common=(), run=True):
    """One phase's options, {name: required}. required: what the phase reads on some path without a default (the role
    always passes it); optional: what it reads with one; common: the keys of the common it is passed; run: it carries
    on the run it is given (the phases that begin a run, and install, read none)."""
    options = dict.fromkeys(optional.split() + list(common), False)
    if common:
        options["common"] = False
    if run:
        options["run"] = False
    options.update(dict.fromkeys(required.split(), True))
    return options


# What each phase reads (lib/sglang_state/transaction.py, transaction_proof.py, transaction_rescue.py,
# runtime_install.py), after `common` is merged under the task's own arguments. The one place an option is added:
# library/sglang_deploy.py documents exactly these, and tests/unit/test_sglang_deploy_options.py holds the role's
# every call to them.
PHASE_OPTIONS = {
    "install": _takes("dir legacy unit store_dir version package wheels_dir extras kernel_wheels kernel_sources "
                      "min_free_gib uv_version names cuda_home user home proven check", run=False),
    "render": _takes("files etc_dir etc_group store before_manifest", "plan_args", _DEPLOY_COMMON, run=False),
    "start": _takes("host multinode service files_changed store files state_manifest wait", "nodes record",
                    _DEPLOY_COMMON),
    # files, etc_dir, etc_group, store, state_manifest and wait: the corrective pass's render and restart
    "calibrate": _takes("host rank0 order multinode server service nodes spec plan context_target calibration_store "
                        "plan_inputs files etc_dir etc_group store state_manifest wait", "stored in_use",
                        _DEPLOY_COMMON),
    "verify": _takes("host rank0 order multinode server nodes context_target min_headroom_gib", "", _DEPLOY_COMMON),
    "restore": _takes("name unit_path runtimes store files service wait", "", _RESTORE_COMMON, run=False),
    "observe": _takes("record_path service", run=False),
    "decide": _takes("service context_target", "record versions runtime_changed asked reprove_after_days"),
    "prove": _takes("on_rank0 planned smoke progress_file limit", "concurrent_requests"),
    "record": _takes("planned live store files manifest record_path", "smoke"),
    "look": _takes("service url store files", "api_key"),
    "rescue": _takes("failure nodes host rank0 rollback_on_failure service restore", "failed_in api_key versions"),
}
# The parts of calibrate's plan_inputs the action's re-plan reads (read before the phase runs, so that a missing one
# is the task's mistake and not the phase's)
_PLAN_PARTS = ("knobs", "measured", "gpus", "calibrations")


def refused(phase, own, common):
    """The sentence that refuses this phase's options, or None. own: the task's arguments less phase; common: the
    dict it passes as common. An option the phase does not take is named, then a required one neither gives."""
    takes = PHASE_OPTIONS[phase]
    # common's keys are checked only where common is taken: elsewhere `common` itself is the unknown option
    inside = [name for name in common if name not in own] if "common" in takes else []
    unknown = ["'%s'" % name for name in sorted(own) if name not in takes]
    unknown += ["'%s' (in common)" % name for name in sorted(inside) if name not in takes]
    if unknown:
        return "sglang_deploy (phase %s): unknown option%s %s; phase %s takes: %s" % (
            phase, "s" if len(unknown) > 1 else "", ", ".join(unknown), phase, ", ".join(sorted(takes)))
    required = sorted(name for name, needed in takes.items() if needed)
    missing = ["'%s'" % name for name in required if name not in own and name not in inside]
    if missing:
        return "sglang_deploy (phase %s): missing required option%s %s; phase %s requires: %s" % (
            phase, "s" if len(missing) > 1 else "", ", ".join(missing), phase, ", ".join(required))
    return None


def _plan_inputs(args):
    """calibrate's plan_inputs, the parts its re-plan reads."""
    inputs = args["plan_inputs"]
    return {part: inputs[part] for part in _PLAN_PARTS}


def _replanner(inputs, task_vars):
    """calibrate's re-plan: {node: measured calibration} -> the planner's {spec, plan} or {error}, for this host."""
    def replan(calibrations):
        measured = dict(inputs["calibrations"] or {}, **calibrations)
        return planhost.plan_host(task_vars.get("inventory_hostname"), task_vars["hostvars"], inputs["knobs"],
                                  inputs["measured"], inputs["gpus"], measured)
    return replan


def _failed(phase, run, msg, changed=False):
    """A failed phase's result: `run` as it stands, which the role's rescue reads."""
    return {"phase": phase, "failed": True, "changed": changed, "run": run, "msg": msg}


class _Executor:
    """The transaction's view of the host: module(), render_template(), copy(), say(), now(), to_json()."""

    def __init__(self, action, task_vars, host):
        self._action, self._task_vars, self._host = action, task_vars, host
        self.diffs, self.warnings = [], []
        self.check_mode = bool(action._task.check_mode)

    def module(self, name, args, secret=False, check_mode=None):
        """A module's result. secret: its arguments or answer may hold a key (the journal holds SGLang's
        server_args; a request carries the API key): run with no_log, so the host logs none of it either.
        check_mode=False: a read that runs in --check too."""
        task = self._action._task
        logged, checking = task.no_log, task.check_mode
        task.no_log = logged or secret
        if check_mode is not None:
            task.check_mode = check_mode
        try:
            result = self._action._execute_module(module_name=name, module_args=args, task_vars=self._task_vars)
        finally:
            task.no_log, task.check_mode = logged, checking
        self.warnings.extend(result.pop("warnings", None) or [])
        # a module's diff is what --diff shows (our modules never put a key in one: sglang_service_files leaves
        # out the files sent as secret_content)
        diff = result.pop("diff", None)
        if diff:
            self.diffs.extend(diff if isinstance(diff, list) else [diff])
        if secret:
            result.pop("invocation", None)
        return result

    def module_async(self, name, args, limit):
        """Start a module as an async job (Ansible's async_wrapper, as a task with async and poll 0 does): its
        {ansible_job_id, results_file}."""
        task = self._action._task
        saved = task.async_val
        task.async_val = int(limit)
        try:
            result = self._action._execute_module(module_name=name, module_args=args, task_vars=self._task_vars,
                                                  wrap_async=True)
        finally:
            task.async_val = saved
        self.warnings.extend(result.pop("warnings", None) or [])
        return result

    monotonic = staticmethod(time.monotonic)
    sleep = staticmethod(time.sleep)

    def _run_action(self, name, args, task_vars):
        task = self._action._task.copy()
        task.args = dict(args)
        action = self._action._shared_loader_obj.action_loader.get(
            name, task=task, connection=self._action._connection, play_context=self._action._play_context,
            loader=self._action._loader, templar=self._action._templar,
            shared_loader_obj=self._action._shared_loader_obj)
        return action.run(task_vars=task_vars)

    def render_template(self, src, overrides=None):
        """A role template rendered on the controller, as Ansible's template lookup renders it (the role's
        templates/ folder, ansible_managed); overrides: variables that take the place of the task's."""
        lookup = self._action._shared_loader_obj.lookup_loader.get(
            "ansible.builtin.template", loader=self._action._loader, templar=self._action._templar)
        return lookup.run([src], variables=dict(self._task_vars, **(overrides or {})))[0]

    def copy(self, args):
        result = self._run_action("ansible.legacy.copy", args, self._task_vars)
        result.pop("diff", None)
        return result

    def controller_sha256(self, src):
        """A controller-side file's sha256, found as the copy action finds it (the role's files/, then as given)."""
        digest = hashlib.sha256()
        try:
            with open(self._action._find_needle("files", src), "rb") as handle:
                for block in iter(lambda: handle.read(1 << 20), b""):
                    digest.update(block)
        except (AnsibleError, OSError) as error:
            raise transaction.PhaseFailed("the controller-side wheel %s cannot be read: %s" % (src, error)) from None
        return digest.hexdigest()

    def say(self, line):
        display.display("%s: %s" % (self._host, line))

    @staticmethod
    def now():
        return datetime.datetime.now(datetime.UTC).isoformat()

    @staticmethod
    def to_json(value):
        return json.dumps(value, indent=4, sort_keys=True) + "\n"


class ActionModule(ActionBase):
    # No temporary folder on the host for the phase: its modules run pipelined (through the connection's stdin), and
    # the copy action it drives for a wheel, a calibration or a proof record makes its own only when it copies.
    # Making and removing one cost two round trips a phase (tests/benchmarks/bench_rerun.py).
    TRANSFERS_FILES = False
    _requires_connection = True

    def run(self, tmp=None, task_vars=None):
        task_vars = task_vars or {}
        super().run(tmp, task_vars)
        own = dict(self._task.args)
        phase = own.pop("phase", None)
        if phase not in _PHASES:
            return {"failed": True, "msg": "sglang_deploy: phase is %r, one of %s" % (phase, ", ".join(_PHASES))}
        run = transaction.new_run()
        try:
            # `common`: the settings every phase of this host shares (vars/main.yml's _sglang_deploy), under its own
            # arguments; each phase carries on the run the one before it registered (render begins one)
            common = dict(own.get("common") or {})
            if phase not in _BEGIN:
                run.update(own.get("run") or {})
            sentence = refused(phase, own, common)
            inputs = _plan_inputs(dict(common, **own)) if phase == "calibrate" and not sentence else None
        except (KeyError, TypeError, ValueError) as error:
            # common or run that is not a mapping, plan_inputs without one of its parts: the task's mistake, said
            return _failed(phase, run, "sglang_deploy (phase %s): an argument is of the wrong kind (common and run "
                                       "are mappings; plan_inputs holds %s): %s: %s"
                           % (phase, ", ".join(_PLAN_PARTS), type(error).__name__, error))
        if sentence:  # nothing ran: the host is as the phase before left it
            return _failed(phase, run, sentence)
        args = {name: value for name, value in dict(common, **own).items() if name not in ("common", "run")}
        executor = _Executor(self, task_vars, host=task_vars.get("inventory_hostname"))
        try:
            result = self._phase(phase, executor, args, run, inputs, task_vars)
        except transaction.PhaseFailed as failure:
            result = _failed(phase, run, str(failure), changed=bool(run.get("changed_this_run")))
        except AnsibleError:
            raise  # the connection's or a template's own error, which Ansible reports (an unreachable host included)
        except Exception as error:  # noqa: BLE001 - the arguments passed: what is left is the phase's own defect
            result = _failed(phase, run, "sglang_deploy (phase %s): a defect in this phase, not in the task's "
                                         "arguments: %s: %s; run with -vvv for the traceback"
                             % (phase, type(error).__name__, error), changed=bool(run.get("changed_this_run")))
            result["exception"] = traceback.format_exc()
        finally:
            self._remove_tmp_path(self._connection._shell.tmpdir)
        if executor.diffs:
            result["diff"] = executor.diffs
        if executor.warnings:
            result["warnings"] = result.get("warnings", []) + executor.warnings
        return result

    @staticmethod
    def _phase(phase, executor, args, run, inputs, task_vars):
        """The phase's own function's result (PhaseFailed when it fails)."""
        if phase == "install":
            return runtime_install.install(executor, args)
        if phase == "calibrate":
            del args["plan_inputs"]  # the action's: the phase takes the re-plan it makes of them
            return transaction.calibrate(executor, dict(args, replan=_replanner(inputs, task_vars)), run)
        if phase == "verify":
            return transaction.verify(args, run)
        if phase == "observe":
            return transaction_proof.observe(executor, args)
        phases = {"render": transaction.render, "start": transaction.start, "restore": transaction.restore,
                  "decide": transaction_proof.decide, "prove": transaction_proof.prove,
                  "record": transaction_proof.record, "look": transaction_rescue.look,
                  "rescue": transaction_rescue.rescue}
        return phases[phase](executor, args, run)
