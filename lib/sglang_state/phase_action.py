"""What the role's phase actions share: their options checked before anything runs, and the executor Ansible gives
the transaction's plain Python.

Four actions, one per purpose, each documented by its library/ file: sglang_runtime_install (the runtime),
sglang_deploy (render, start, calibrate, verify, restore), sglang_proof (observe, decide, prove, record) and
sglang_rescue (look, rescue). An action is phased where the nodes of a server across nodes must move in lockstep:
each phase registers its result on every node before the next phase reads them all. Each action subclasses
PhaseAction with its table of what each phase reads and the function each phase runs.

This module runs on the controller, imported by action_plugins/ (it is the one part of lib/ that needs Ansible).
"""

from __future__ import annotations

import datetime
import hashlib
import json
import time
import traceback

from ansible.errors import AnsibleActionFail, AnsibleError
from ansible.plugins.action import ActionBase
from ansible.utils.display import Display

from sglang_state import transaction

display = Display()


def takes(required, optional="", common=(), run=True):
    """One phase's options, {name: required}. required: what the phase reads on some path without a default (the role
    always passes it); optional: what it reads with one; common: the keys of the common it is passed; run: it carries
    on the run it is given (the phases that begin a run read none)."""
    options = dict.fromkeys(optional.split() + list(common), False)
    if common:
        options["common"] = False
    if run:
        options["run"] = False
    options.update(dict.fromkeys(required.split(), True))
    return options


def valid_args(table):
    """An action's _VALID_ARGS (Ansible's own check of a task's options, before run()): every option some phase of
    its table takes, and `phase` where it has several."""
    names = set().union(*(set(options) for options in table.values()))
    return frozenset(names | ({"phase"} if len(table) > 1 else set()))


def label(name, table, phase):
    """How a message names the action: with its phase where it has several."""
    return "%s (phase %s)" % (name, phase) if len(table) > 1 else name


def refused(name, table, phase, own, common):
    """The sentence that refuses a phase's options, or None. name: the action; table: its {phase: takes()}; own: the
    task's arguments less phase; common: the dict it passes as common. An option the phase does not take is named,
    then a required one neither gives."""
    options = table[phase]
    where, whom = label(name, table, phase), "phase %s" % phase if len(table) > 1 else "it"
    # common's keys are checked only where common is taken: elsewhere `common` itself is the unknown option
    inside = [key for key in common if key not in own] if "common" in options else []
    unknown = ["'%s'" % key for key in sorted(own) if key not in options]
    unknown += ["'%s' (in common)" % key for key in sorted(inside) if key not in options]
    if unknown:
        return "%s: unknown option%s %s; %s takes: %s" % (
            where, "s" if len(unknown) > 1 else "", ", ".join(unknown), whom, ", ".join(sorted(options)))
    required = sorted(key for key, needed in options.items() if needed)
    missing = ["'%s'" % key for key in required if key not in own and key not in inside]
    if missing:
        return "%s: missing required option%s %s; %s requires: %s" % (
            where, "s" if len(missing) > 1 else "", ", ".join(missing), whom, ", ".join(required))
    return None


def failed(phase, run, msg, changed=False):
    """A failed phase's result: `run` as it stands, which the role's rescue reads."""
    return {"phase": phase, "failed": True, "changed": changed, "run": run, "msg": msg}


class Executor:
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


class PhaseAction(ActionBase):
    """One action of the role: its phases' options checked by name, then the phase's function run over an Executor.

    A subclass sets NAME, PHASE_OPTIONS ({phase: takes(...)}, in the order the role runs them), _VALID_ARGS
    (valid_args(PHASE_OPTIONS): Ansible's own check of a task's options, in ActionBase.run) and run_phase(). A phase
    that takes `run` carries on the run record it is given; the others begin one, noting when (`began`). An action
    of one phase takes no `phase` option. Each phase refuses what it does not take itself, naming what it takes and
    keeping the run as it stands, before Ansible's check runs."""

    NAME = ""
    PHASE_OPTIONS = {}
    # what prepare() reads, said when an argument is of the wrong kind (a subclass whose prepare reads more says so)
    PREPARE_NOTE = ""
    # No temporary folder on the host for a phase: its modules run pipelined (through the connection's stdin), and
    # the copy action it drives for a wheel, a calibration or a proof record makes its own only when it copies.
    # Making and removing one cost two round trips a phase (tests/benchmarks/bench_rerun.py).
    TRANSFERS_FILES = False
    _requires_connection = True

    def prepare(self, phase, args, task_vars):
        """The phase's arguments as its function takes them (a subclass turns an input into what the phase reads);
        KeyError, TypeError or ValueError here is the task's mistake."""
        del phase, task_vars
        return args

    def run_phase(self, phase, executor, args, run):
        """The phase's own function's result (PhaseFailed when it fails)."""
        raise NotImplementedError

    def _phase_of(self, own):
        phases = list(self.PHASE_OPTIONS)
        if len(phases) == 1:
            return phases[0], None
        phase = own.pop("phase", None)
        if phase not in phases:
            return phase, "%s: phase is %r, one of %s" % (self.NAME, phase, ", ".join(phases))
        return phase, None

    def run(self, tmp=None, task_vars=None):
        """The phase's result, with its span on the controller's clock: {clock: {start, end}} in epoch seconds (the
        day-1 clock reads the runtime's, the boot's and the proof's from the results the role registers)."""
        began = time.time()
        result = self._run(tmp, task_vars or {}, began)
        result["clock"] = {"start": began, "end": time.time()}
        return result

    def _run(self, tmp, task_vars, began):
        own = dict(self._task.args)
        phase, wrong = self._phase_of(own)
        if wrong:
            return {"failed": True, "msg": wrong}
        run = transaction.new_run()
        try:
            # `common`: the settings every phase of this host shares (vars/main.yml's _sglang_deploy), under its own
            # arguments; each phase carries on the run the one before it registered (a beginning phase starts one)
            common = dict(own.get("common") or {})
            if "run" in self.PHASE_OPTIONS[phase]:
                run.update(own.get("run") or {})
            else:  # a phase that begins a run record notes when (render's: the boot's start on the day-1 clock)
                run["began"] = began
            sentence = refused(self.NAME, self.PHASE_OPTIONS, phase, own, common)
            args = {key: value for key, value in dict(common, **own).items() if key not in ("common", "run")}
            args = args if sentence else self.prepare(phase, args, task_vars)
        except (KeyError, TypeError, ValueError) as error:
            # common or run that is not a mapping, an input without one of its parts: the task's mistake, said
            return failed(phase, run, "%s: an argument is of the wrong kind (common and run are mappings%s): %s: %s"
                          % (self._where(phase), self.PREPARE_NOTE, type(error).__name__, error))
        if sentence:  # nothing ran: the host is as the phase before left it
            return failed(phase, run, sentence)
        try:
            # Ansible's own checks: _VALID_ARGS (what a phase takes passes it) and async, which no phase supports
            super().run(tmp, task_vars)
        except AnsibleActionFail as error:
            return failed(phase, run, "%s: %s" % (self._where(phase), error))
        executor = Executor(self, task_vars, host=task_vars.get("inventory_hostname"))
        try:
            result = self.run_phase(phase, executor, args, run)
        except transaction.PhaseFailed as failure:
            result = failed(phase, run, str(failure), changed=bool(run.get("changed_this_run")))
        except AnsibleError:
            raise  # the connection's or a template's own error, which Ansible reports (an unreachable host included)
        except Exception as error:  # noqa: BLE001 - the arguments passed: what is left is the phase's own defect
            result = failed(phase, run, "%s: a defect in this phase, not in the task's arguments: %s: %s; run with "
                                        "-vvv for the traceback" % (self._where(phase), type(error).__name__, error),
                            changed=bool(run.get("changed_this_run")))
            result["exception"] = traceback.format_exc()
        finally:
            self._remove_tmp_path(self._connection._shell.tmpdir)
        if executor.diffs:
            result["diff"] = executor.diffs
        if executor.warnings:
            result["warnings"] = result.get("warnings", []) + executor.warnings
        return result

    def _where(self, phase):
        return label(self.NAME, self.PHASE_OPTIONS, phase)
