"""What the role's phase actions share: their options checked before anything runs, and the executor Ansible gives
the transaction's plain Python.

Four actions, one per purpose, each documented by its library/ file: sglang_runtime_install (the runtime),
sglang_deploy (render, start, calibrate, verify, restore), sglang_prove (observe, decide, prove, record) and
sglang_rescue (look, rescue, end). An action is phased where the nodes of a server across nodes must move in lockstep:
each phase registers its result on every node before the next phase reads them all. Each action subclasses
PhaseAction with its table of what each phase reads and the function each phase runs.

One check of a task's options: each phase's argument spec (Ansible's, as a module has), made from the action's
documentation (the type of each option and of its suboptions, one source) and the phase's table (which options it
takes, which it requires, and where a phase types an option deeper than the documentation can). Ansible's validator
refuses an unknown option, a missing one and a value it cannot convert; before it, a value of the wrong shape is
refused (a mapping or list where a scalar is wanted, a scalar where a mapping or list is), where Ansible would turn
'a=b' into a mapping, 'a,b' into a list, or a list into its text.

This module runs on the controller, imported by action_plugins/ (it is the one part of lib/ that needs Ansible).
"""

from __future__ import annotations

import datetime
import hashlib
import json
import os
import time
import traceback

from ansible import constants as C
from ansible.errors import AnsibleActionFail, AnsibleError
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible.module_utils.common.parameters import remove_values
from ansible.module_utils.errors import UnsupportedError
from ansible.parsing.plugin_docs import read_docstring
from ansible.plugins.action import ActionBase
from ansible.utils.display import Display

from sglang_state import run_record, transaction

display = Display()

# What an argument spec keeps of an option's documentation (suboptions become its options, as in a module's spec)
SPEC_KEYS = ("type", "elements", "choices")
CONTAINERS = {"dict": (dict, "a mapping"), "list": (list, "a list")}
SCALARS = {"str": "a string", "int": "an integer", "float": "a number", "bool": "a boolean"}
# How much of a failed module's stderr and stdout its message keeps (the end, where the error is)
OUTPUT_LIMIT = 2000


def takes(required, optional="", common=()):
    """One phase's options, {name: {required: bool, ...}}. required: what the phase reads on some path without a
    default (the role always passes it); optional: what it reads with one; common: the keys of the common it is
    passed. What an earlier phase found is no option: the action reads it from the run record."""
    options = {name: {"required": False} for name in optional.split() + list(common)}
    if common:
        options["common"] = {"required": False}
    options.update({name: {"required": True} for name in required.split()})
    return options


def typed(options, **specs):
    """A phase's options with some typed deeper than the documentation's one type per option."""
    return dict(options, **{name: dict(spec, required=options[name]["required"]) for name, spec in specs.items()})


def documented_options(action_file, name):
    """The options of an action's documentation, read as ansible-doc reads them: library/<name>.py beside
    action_plugins/ in the checkout, plugins/modules/<name>.py beside plugins/action/ in the collection."""
    here = os.path.dirname(os.path.realpath(action_file))
    for folder in ("library", "modules"):
        path = os.path.realpath(os.path.join(here, os.pardir, folder, name + ".py"))
        if os.path.isfile(path):
            documented = read_docstring(path)["doc"]  # None when its DOCUMENTATION does not parse
            if not isinstance(documented, dict) or not isinstance(documented.get("options"), dict):
                raise ValueError("the documentation of the action %s (%s) has no options that parse" % (name, path))
            return documented["options"]
    raise FileNotFoundError("the documentation of the action %s (library/%s.py) is not beside %s" % (name, name, here))


def argument_spec(documented):
    """One option's documentation as Ansible's argument spec: its type, elements and choices, its suboptions. A path
    is checked as a string: Ansible's path type expands ~ and $VARS, which here would be the controller's, and the
    path is the host's (the module that reads it expands it there, as before)."""
    spec = {key: "str" if key in ("type", "elements") and documented[key] == "path" else documented[key]
            for key in SPEC_KEYS if key in documented}
    if "suboptions" in documented:
        spec["options"] = {name: dict(argument_spec(option), required=bool(option.get("required")))
                           for name, option in documented["suboptions"].items()}
    return spec


def phase_specs(name, documented, table):
    """{phase: its argument spec}: each option typed by the documentation (or the phase's own `typed`), required as
    the table says. An option the documentation lacks is this action's defect, said when it is imported."""
    specs = {}
    for phase, options in table.items():
        lacking = sorted(set(options) - set(documented))
        if lacking:
            raise ValueError("%s: phase %s takes %s, which library/%s.py does not document" % (
                name, phase, ", ".join(lacking), name))
        specs[phase] = {option: dict(argument_spec(documented[option]), **entry) for option, entry in options.items()}
    return specs


def _kind(value):
    if isinstance(value, bool):
        return "a boolean"
    for python, said in CONTAINERS.values():
        if isinstance(value, python):
            return said
    return "a string" if isinstance(value, str) else "a number" if isinstance(value, (int, float)) else "a value"


def misshapen(spec, params, context=()):
    """What in params has not the shape its spec wants, each said with the option's name: a mapping or list where a
    scalar is wanted, a scalar where a mapping or list is, the same inside suboptions and elements. None is left to
    Ansible's validator (not given, or a required one refused); raw takes anything."""
    wrong = []
    for name, option in spec.items():
        if params.get(name) is not None:
            wrong += _shape(option.get("type", "str"), option, params[name], name, context)
    return wrong


def _shape(wanted, option, value, name, context):
    where = "'%s'%s" % (name, " in '%s'" % " -> ".join(context) if context else "")
    if wanted == "raw":
        return []
    if wanted not in CONTAINERS:
        wrong = isinstance(value, (dict, list))
        return ["%s is %s, not %s" % (where, _kind(value), SCALARS.get(wanted, wanted))] if wrong else []
    python, said = CONTAINERS[wanted]
    if not isinstance(value, python):
        return ["%s is %s, not %s" % (where, _kind(value), said)]
    if wanted == "dict":
        return misshapen(option.get("options", {}), value, context + (name,))
    elements = option.get("elements")
    return [problem for index, item in enumerate(value) if elements and item is not None
            for problem in _shape(elements, option, item, "%s[%d]" % (name, index), context)]


def _as_given(given, typed):
    """The validator's typed values, only where the task gave one (Ansible fills a suboption not given with None), and
    None where the task gave None (Ansible's str type turns it into '')."""
    if given is None:
        return None
    if isinstance(given, dict) and isinstance(typed, dict):
        return {key: _as_given(value, typed.get(key, value)) for key, value in given.items()}
    if isinstance(given, list) and isinstance(typed, list) and len(given) == len(typed):
        return [_as_given(value, checked) for value, checked in zip(given, typed, strict=True)]
    return typed


def check(spec, own):
    """(the phase's arguments, typed, None) or (None, the problems, each naming its option). own: the task's
    arguments less phase; a `common` mapping, where the phase takes one, is merged under them, its keys checked as
    the phase's own (an unknown one named as in common)."""
    common = own.get("common") if "common" in spec and isinstance(own.get("common"), dict) else {}
    given = dict(common, **own)
    shared = {key: option for key, option in spec.items() if key in common and key not in own}
    problems = misshapen(spec, own) + misshapen(shared, common, ("common",))
    if problems:
        return None, problems
    result = ArgumentSpecValidator(spec).validate(given)
    unknown = []
    for item in sorted(result.unsupported_parameters, key=str):
        path = item if isinstance(item, tuple) else (item,)
        inside = path[:-1] or (("common",) if path[-1] not in own else ())
        unknown.append("'%s'%s" % (path[-1], " (in %s)" % " -> ".join(inside) if inside else ""))
    problems = ["unknown option%s %s" % ("s" if len(unknown) > 1 else "", ", ".join(unknown))] if unknown else []
    problems += [error.msg for error in result.errors if not isinstance(error, UnsupportedError)]
    if problems:
        return None, problems
    return _as_given(given, result.validated_parameters), None


def refusal(where, whom, spec, problems):
    """The sentence that refuses a phase's options: what is wrong, then what the phase takes and requires."""
    required = sorted(name for name, option in spec.items() if option.get("required"))
    return "%s: %s; %s takes: %s%s" % (where, "; ".join(problems), whom, ", ".join(sorted(spec)),
                                       "; requires: %s" % ", ".join(required) if required else "")


def _strings(value):
    if isinstance(value, dict):
        return {text for item in value.values() for text in _strings(item)}
    if isinstance(value, list):
        return {text for item in value for text in _strings(item)}
    return {value} if isinstance(value, str) and value else set()


def with_module_output(result, secret_args=None):
    """A failed module's result whose msg also says what the module wrote (a broken interpreter, a crash before its
    JSON: Ansible's msg then says only that the result could not be read): the last OUTPUT_LIMIT characters of its
    stderr and stdout, every string of a secret call's arguments replaced as no_log replaces it."""
    if not isinstance(result, dict) or not result.get("failed"):
        return result
    hidden = _strings(secret_args)
    said = []
    for key in ("module_stderr", "module_stdout"):
        text = result.get(key)
        if not isinstance(text, str) or not text.strip():
            continue
        text = text.strip()
        text = text if len(text) <= OUTPUT_LIMIT else "..." + text[-OUTPUT_LIMIT:]
        result[key] = text = remove_values(text, hidden)
        said.append("%s: %s" % (key, text))
    if said:
        rc = " (rc %s)" % result["rc"] if isinstance(result.get("rc"), int) else ""
        result["msg"] = "%s%s; %s" % (result.get("msg") or "the module failed", rc, "; ".join(said))
    return result


def failed(phase, run, msg, changed=False):
    """A failed phase's result: `run` as it stands, which the rescue reads from the run record."""
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
        return with_module_output(result, args if secret else None)

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
        return with_module_output(result)

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
        return with_module_output(result)

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
    """One action of the role: its phase's options checked against the phase's argument spec, then the phase's
    function run over an Executor, between a read and a write of this host's run record (run_record.py).

    A subclass sets NAME, PHASE_OPTIONS ({phase: takes(...)}, in the order the role runs them), SPECS
    (phase_specs(NAME, documented_options(__file__, NAME), PHASE_OPTIONS)), STEPS ({phase: the name, or names, its
    result is kept under in the record}), BEGINS (the phases that begin a run: the others carry on the record's),
    FRESH (the phase that begins a new record: the first look of a role's run, which keeps only the download's
    entry), DROPS ({phase: the steps its result makes stale}) and run_phase(); from_record() reads what an earlier
    phase found, here or on the server's other nodes. An action of one phase takes no `phase` option. A phase
    refuses an unknown option, a missing one and a value of the wrong type, naming each, what it takes and
    requires, and keeping the run as it stands, before anything runs. No _VALID_ARGS: the spec is the one check."""

    NAME = ""
    PHASE_OPTIONS = {}
    SPECS = {}
    STEPS = {}
    BEGINS = ()
    FRESH = ()
    DROPS = {}
    # No temporary folder on the host for a phase: its modules run pipelined (through the connection's stdin), and
    # the copy action it drives for a wheel, a calibration or a proof record makes its own only when it copies.
    # Making and removing one cost two round trips a phase (tests/benchmarks/bench_rerun.py).
    TRANSFERS_FILES = False
    _requires_connection = True

    def from_record(self, phase, args, records):
        """What the phase reads of the run record, as arguments ({} by default). records: a Records of this run."""
        del phase, args, records
        return {}

    def prepare(self, phase, args, task_vars):
        """The phase's arguments as its function takes them (a subclass turns an input into what the phase reads;
        the spec has checked every part it reads)."""
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
        """The phase's result, with its span on the controller's clock: {clock: {start, end}} in epoch seconds, kept
        in this host's run record (the report's day-1 clock reads the runtime's, the boot's and the proof's there)."""
        began = time.time()
        task_vars = task_vars or {}
        records = Records(run_record.folder_of(C.DEFAULT_LOCAL_TMP), task_vars.get("inventory_hostname"))
        try:
            own = records.own()
        except run_record.RecordError as error:
            return {"failed": True, "msg": "%s: %s" % (self.NAME, error), "clock": {"start": began, "end": began}}
        own_args = dict(self._task.args)
        phase, wrong = self._phase_of(own_args)
        if wrong:  # refused by name, nothing kept
            return {"failed": True, "msg": wrong, "clock": {"start": began, "end": time.time()}}
        if phase in self.FRESH:
            own = run_record.fresh(own)  # a new record; the download begun before it is kept
        elif phase in self.BEGINS:
            own = run_record.begin(own, began)
        records.mine = own
        result = self._run(tmp, task_vars, records, phase, own_args)
        result["clock"] = {"start": began, "end": time.time()}
        if phase in self.STEPS:
            try:
                records.keep(self.STEPS[phase], result, drop=self.DROPS.get(phase, ()))
            except (OSError, run_record.RecordError) as error:
                result.update(failed=True, msg="%s%s: this run's record could not be written: %s" % (
                    (result.get("msg") + "; ") if result.get("failed") else "", self.NAME, error))
        return result

    def _run(self, tmp, task_vars, records, phase, own):
        # the run as the record keeps it: what this run did to the host so far (a beginning phase's is new)
        kept = records.mine.get("run")
        run = dict(transaction.new_run(), **(kept if isinstance(kept, dict) else {}))
        spec = self.SPECS[phase]
        # `common`: the settings every phase of this host shares (vars/main.yml's _sglang_deploy), under its own
        # arguments
        args, problems = check(spec, own)
        if problems:  # nothing ran: the host is as the phase before left it
            whom = "phase %s" % phase if len(self.PHASE_OPTIONS) > 1 else "it"
            return failed(phase, run, refusal(self._where(phase), whom, spec, problems))
        args = {key: value for key, value in args.items() if key != "common"}
        try:
            args.update(self.from_record(phase, args, records))
        except (ValueError, run_record.RecordError) as error:  # a peer that did not run the step before: named
            return failed(phase, run, "%s: %s" % (self._where(phase), error))
        try:
            # Ansible's own check: async, which no phase supports (no _VALID_ARGS: the spec checked the options)
            super().run(tmp, task_vars)
        except AnsibleActionFail as error:
            return failed(phase, run, "%s: %s" % (self._where(phase), error))
        executor = Executor(self, task_vars, host=task_vars.get("inventory_hostname"))
        try:
            result = self.run_phase(phase, executor, self.prepare(phase, args, task_vars), run)
        except transaction.PhaseFailed as failure:
            result = failed(phase, run, str(failure), changed=bool(run.get("changed_this_run")))
        except AnsibleError:
            raise  # the connection's or a template's own error, which Ansible reports (an unreachable host included)
        except Exception as error:  # the arguments passed: what is left is the phase's own defect
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
        return "%s (phase %s)" % (self.NAME, phase) if len(self.PHASE_OPTIONS) > 1 else self.NAME


class Records:
    """This run's records as a phase reads them: its own host's (`mine`, read once before the phase) and its peers'.
    The folder is Ansible's local temporary folder of this ansible-playbook run (made when it starts, removed when
    it ends, shared by its forks)."""

    def __init__(self, folder, host):
        self.folder, self.host, self.mine = folder, host, {}

    def own(self):
        return run_record.read(self.folder, self.host)

    def result(self, step):
        """This host's result of an earlier step this run, or None."""
        return run_record.result(self.mine, step)

    def of(self, node, step):
        """Another node's result of a step this run, or None."""
        return run_record.result(run_record.read(self.folder, node), step)

    def peers(self, nodes, step, said):
        """{node: its result of `step`} for the server's nodes in this batch, each required (named when missing)."""
        return run_record.peers(self.folder, nodes, step, said)

    def keep(self, steps, result, drop=()):
        """This host's record with the phase's result (and its run) kept under each of its steps' names, written for
        its peers and later phases."""
        record = self.mine
        for step in (steps,) if isinstance(steps, str) else steps:
            record = run_record.with_result(record, step, result, run=result.get("run"))
        record["results"] = {name: kept for name, kept in record["results"].items() if name not in drop}
        self.mine = record
        run_record.write(self.folder, self.host, record)
