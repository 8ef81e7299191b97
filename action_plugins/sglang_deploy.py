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
        args = dict(self._task.args)
        # `common`: the settings every phase of this host shares (vars/main.yml's _sglang_deploy), under its own
        # arguments
        args = dict(args.pop("common", None) or {}, **args)
        phase = args.pop("phase", None)
        if phase not in _PHASES:
            return {"failed": True, "msg": "sglang_deploy: phase is %r, one of %s" % (phase, ", ".join(_PHASES))}
        host = task_vars.get("inventory_hostname")
        # Each phase carries on the run the one before it registered; render begins it.
        carried = args.pop("run", None) or {}
        run = transaction.new_run() if phase in _BEGIN else dict(transaction.new_run(), **carried)
        executor = _Executor(self, task_vars, host)
        try:
            if phase == "install":
                result = runtime_install.install(executor, args)
            elif phase == "render":
                result = transaction.render(executor, args, run)
            elif phase == "start":
                result = transaction.start(executor, args, run)
            elif phase == "calibrate":
                inputs = args.pop("plan_inputs")

                def replan(calibrations):
                    measured = dict(inputs["calibrations"] or {}, **calibrations)
                    return planhost.plan_host(host, task_vars["hostvars"], inputs["knobs"], inputs["measured"],
                                              inputs["gpus"], measured)

                result = transaction.calibrate(executor, dict(args, replan=replan), run)
            elif phase == "verify":
                result = transaction.verify(args, run)
            elif phase == "restore":
                result = transaction.restore(executor, args, run)
            elif phase == "observe":
                result = transaction_proof.observe(executor, args)
            elif phase == "decide":
                result = transaction_proof.decide(executor, args, run)
            elif phase == "prove":
                result = transaction_proof.prove(executor, args, run)
            elif phase == "record":
                result = transaction_proof.record(executor, args, run)
            elif phase == "look":
                result = transaction_rescue.look(executor, args, run)
            else:
                result = transaction_rescue.rescue(executor, args, run)
        except transaction.PhaseFailed as failure:
            result = {"phase": phase, "failed": True, "msg": str(failure),
                      "changed": bool(run.get("changed_this_run")), "run": run}
        except (KeyError, TypeError, ValueError, AttributeError) as error:
            # an argument the role passes in another shape: a sentence, not a traceback
            result = {"phase": phase, "failed": True, "changed": bool(run.get("changed_this_run")), "run": run,
                      "msg": "sglang_deploy (phase %s): an argument is missing or of the wrong kind: %s: %s"
                             % (phase, type(error).__name__, error)}
        finally:
            self._remove_tmp_path(self._connection._shell.tmpdir)
        if executor.diffs:
            result["diff"] = executor.diffs
        if executor.warnings:
            result["warnings"] = result.get("warnings", []) + executor.warnings
        return result
