"""Action: a role's input check on the controller, as the check phase makes it (library/sglang_check_inputs.py has
the documentation; the check itself is filter_plugins/sglang_check_phase.py check_host over lib/sglang_checks).

Why an action and not a `fail` task with the filter in its `when:` and again in its `msg:`: the task's vars templated
every knob through a vars lookup, then the filter templated each again from hostvars; here each knob is templated
once, in Python, and a knob that does not template is refused by name (the `when:` stopped with a conditional
error). Nothing the check reads is a variable of the task: -e beats task vars, so a private name the old task used
(_knobs) could replace what it checked; the action reads the role's defaults and the host's variables as the task
sees them, and every -e name with a leading _ is still refused (inputs.private_extra_var_refusals).
"""

from __future__ import annotations

import importlib.util
import os
import traceback

from ansible.errors import AnsibleError
from ansible.plugins.action import ActionBase
from ansible.utils.display import Display

display = Display()

HERE = os.path.dirname(os.path.realpath(__file__))
# The filter module: filter_plugins/ beside action_plugins/ in the checkout, plugins/filter/ beside plugins/action/
# in the collection (tests/collection/build.sh)
FILTER_PATHS = [os.path.join(HERE, os.pardir, folder, "sglang_check_phase.py")
                for folder in ("filter_plugins", "filter")]


def _check_phase():
    """filter_plugins/sglang_check_phase.py as a module of its own (its import puts lib/ on sys.path)."""
    path = next(path for path in FILTER_PATHS if os.path.exists(path))
    spec = importlib.util.spec_from_file_location("sglang_longctx_check_phase", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def option_refusals(args, roles):
    """Why the task's own options cannot be used (one sentence each), [] when they can. args: the task's options;
    roles: the names of the roles that have argument specs."""
    refusals = []
    for name in ("role", "group"):
        if not isinstance(args.get(name), str) or not args[name].strip():
            refusals.append("sglang_check_inputs: %s is %r, not a name: give the %s as a string%s." % (
                name, args.get(name), name, " (e.g. sglang)" if name == "role" else " (e.g. sglang_servers)"))
    if not refusals and args["role"] not in roles:
        refusals.append("sglang_check_inputs: role is %r, a role with no argument specs under roles/: give one of %s."
                        % (args["role"], ", ".join(sorted(roles))))
    return refusals


def knobs_of(names, task_vars, template):
    """({name: value} with the role's defaults applied, [names that do not template, with why]).

    names: the role's knobs (its argument specs' options); task_vars: what the task sees (the role's defaults, the
    inventory, the play, -e); template: one value templated as plain Python. A name the task does not see is None,
    as the old task's vars lookup had it."""
    knobs, broken = {}, []
    for name in names:
        if name not in task_vars:
            knobs[name] = None
            continue
        try:
            knobs[name] = template(task_vars[name])
        except AnsibleError as error:
            broken.append((name, str(error).splitlines()[0] if str(error) else type(error).__name__))
    return knobs, broken


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset(("role", "group"))

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        task_vars = task_vars or {}
        result["changed"] = False
        check_phase = _check_phase()
        roles = check_phase.inputs.roles_at(check_phase._ROLES)
        args = {"role": "sglang", "group": "sglang_servers", **self._task.args}
        refused = option_refusals(args, roles.specs)
        if refused:
            result.update(failed=True, msg=" ".join(refused))
            return result
        host = task_vars.get("inventory_hostname")
        try:
            knobs, broken = knobs_of(list(roles.specs[args["role"]]), task_vars,
                                     lambda value: check_phase.plain(self._templar.template(value)))
            if broken:
                result.update(failed=True, msg=" ".join("%s: %s does not template: %s" % (host, name, why)
                                                        for name, why in broken))
                return result
            seen = [name for name in task_vars if isinstance(name, str) and name.startswith("sglang_")]
            refusals = check_phase.check_host(host, task_vars["hostvars"], args["group"], knobs, seen,
                                              task_vars.get("groups", {}).get("all"))
        except (KeyError, TypeError, ValueError, AttributeError, RecursionError) as error:
            # a value of a shape the check does not read: a sentence, its traceback with -vvv, never a crash
            display.vvv("sglang_check_inputs: %s" % traceback.format_exc())
            result.update(failed=True, msg="%s: the %s role's inputs could not be checked: %s: %s (run with -vvv for "
                                           "where)" % (host, args["role"], type(error).__name__, error))
            return result
        if refusals:
            result.update(failed=True, msg=" ".join(refusals))
        else:
            result["msg"] = "%s: the %s role's inputs pass its check" % (host, args["role"])
        return result
