"""Every role-private value the sglang role reads is produced somewhere in the role (or by the playbook that
includes it): a register, a set_fact, a task's or block's vars, an include's vars, the role's vars or defaults.

The decisions in lib/sglang_state take their inputs as arguments, and the YAML gathers them (deploy.yml's
renders and boot reads, prove.yml's levels, rescue.yml's stores, plan.yml's GPU facts and calibrations). A task
file that stops producing a value one of those steps reads (a renamed register, a dropped set_fact key) would
otherwise pass every fast test: Jinja reads an undefined register of another host as {} through
map('default', {}). This test reads the YAML and fails on such a name.
"""

import functools
import os
import re
import shutil

import pytest
import yaml

ROOT = os.path.join(os.path.dirname(__file__), os.pardir, os.pardir)
ROLE = os.path.join(ROOT, "roles", "sglang")
# The role's public registers and facts (vars/main.yml's sglang_run_facts: sglang_boot, sglang_smoke, ...):
# their readers take `| default(...)` too, so a renamed one would be read as its default on every run (a re-run
# would prove in full instead of checking, and only the slowest scenario would notice).
# Keywords whose value names a variable the task produces.
LOOP_VAR = ("loop_control", "loop_var")


def _yaml_files(*folders):
    for folder in folders:
        for base, _dirs, files in os.walk(folder):
            for name in sorted(files):
                if name.endswith((".yml", ".yaml")):
                    yield os.path.join(base, name)


def _strings(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _strings(key)
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def _produced_by(task, scoped=True):
    """The names a task (or block, or play) defines: register and set_fact keys, and with scoped its vars and
    loop_var too (those live only in the task; a register or a fact outranks the role's vars/main.yml)."""
    names = set()
    if not isinstance(task, dict):
        return names
    if isinstance(task.get("register"), str):
        names.add(task["register"])
    for key in (("vars",) if scoped else ()) + ("ansible.builtin.set_fact", "set_fact"):
        if isinstance(task.get(key), dict):
            names |= set(task[key])
    if scoped and isinstance(task.get(LOOP_VAR[0]), dict) and task[LOOP_VAR[0]].get(LOOP_VAR[1]):
        names.add(task[LOOP_VAR[0]][LOOP_VAR[1]])
    for key in ("block", "rescue", "always", "tasks", "pre_tasks", "post_tasks", "handlers"):
        for inner in task.get(key) or []:
            names |= _produced_by(inner, scoped)
    return names


@functools.lru_cache(maxsize=4)
def produced(role=ROLE):
    names = set()
    for path in _yaml_files(os.path.join(role, "tasks"), os.path.join(role, "handlers"),
                            os.path.join(ROOT, "playbooks")):
        for item in yaml.safe_load(open(path, encoding="utf-8")) or []:
            names |= _produced_by(item)
    for path in (os.path.join(role, "vars", "main.yml"), os.path.join(role, "defaults", "main.yml")):
        names |= set(yaml.safe_load(open(path, encoding="utf-8")) or {})
    names |= set(yaml.safe_load(open(os.path.join(ROOT, "site.yml"), encoding="utf-8"))[0].get("vars") or {})
    return names


def run_facts(role=ROLE):
    with open(os.path.join(role, "vars", "main.yml"), encoding="utf-8") as handle:
        return set(yaml.safe_load(handle).get("sglang_run_facts") or [])


@functools.lru_cache(maxsize=4)
def reads(role=ROLE):
    """{name: [file, ...]} for every _sglang_* name and every public run fact the role's tasks, handlers, vars and
    templates mention."""
    public = run_facts(role)
    names = re.compile(r"\b_sglang_\w+" + "".join(r"|\b%s\b" % re.escape(n) for n in sorted(public)))
    found = {}
    sources = list(_yaml_files(os.path.join(role, "tasks"), os.path.join(role, "handlers"),
                               os.path.join(role, "vars")))
    for path in sources:
        for text in _strings(yaml.safe_load(open(path, encoding="utf-8"))):
            for name in names.findall(text):
                found.setdefault(name, set()).add(os.path.relpath(path, role))
    for path in sorted(os.listdir(os.path.join(role, "templates"))):
        with open(os.path.join(role, "templates", path), encoding="utf-8") as handle:
            for name in names.findall(handle.read()):
                found.setdefault(name, set()).add("templates/" + path)
    return found


def missing(role=ROLE):
    made = produced(role)
    return {name: sorted(files) for name, files in reads(role).items() if name not in made}


def test_every_public_run_fact_is_produced_and_read():
    """sglang_run_facts lists the role's public registers and facts (the check phase refuses them as inputs): each is
    produced by a task and read somewhere, so the test above covers a rename of any of them."""
    made, read = produced(), reads()
    assert sorted(run_facts() - made) == [], "listed in sglang_run_facts, produced nowhere"
    assert sorted(run_facts() - set(read)) == [], "listed in sglang_run_facts, read nowhere"


def test_every_private_value_the_role_reads_is_produced_in_the_role():
    assert not missing(), "read but produced nowhere (renamed or dropped?): %s" % missing()


@pytest.mark.parametrize("name", ["_sglang_calibration_in_use", "_sglang_calibration_key", "_sglang_proof_recorded",
                                  "_sglang_rescue_look", "_sglang_checkpoints"])
def test_the_values_gathered_from_peers_or_passed_to_decisions_are_read_and_produced(name):
    # The inputs the deploy, proof and plan decisions take from the YAML: each is produced and read, so the
    # check above covers a rename of any of them.
    assert name in produced() and name in reads()


@pytest.mark.parametrize(("path", "old", "new"), [
    ("tasks/model.yml", "    _sglang_calibration_key:", "    _sglang_cal_key:"),
    ("tasks/prove.yml", "register: _sglang_proof_recorded", "register: _sglang_proof_result"),
    ("tasks/rescue.yml", "register: _sglang_rescue_end", "register: _sglang_rescue_ended")])
def test_a_renamed_register_or_fact_is_caught(tmp_path, path, old, new):
    # The review's mutation: rename what a task file produces, leave its readers. On a copy of the role.
    role = tmp_path / "sglang"
    shutil.copytree(ROLE, role)
    text = (role / path).read_text(encoding="utf-8")
    assert old in text
    (role / path).write_text(text.replace(old, new), encoding="utf-8")
    assert old.split()[-1].rstrip(":") in missing(str(role))


def test_no_phase_is_handed_what_an_earlier_one_found():
    """The phase actions read what an earlier phase found from this run's record (lib/sglang_state/run_record.py):
    no task passes a `run`, and none reads a peer's result through hostvars."""
    for path in _yaml_files(os.path.join(ROLE, "tasks"), os.path.join(ROLE, "vars")):
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
        tasks = yaml.safe_load(text) or []
        for task in tasks if isinstance(tasks, list) else []:
            for action in ("sglang_deploy", "sglang_prove", "sglang_rescue", "sglang_runtime_install"):
                assert "run" not in (task.get(action) or {}), (path, task.get("name"))
        assert "sglang_peers_results" not in text and "hostvars[_sglang_rank0]._" not in text, path


def test_no_python_names_a_role_private_value():
    """The decisions and the modules take explicit arguments: none reads or returns a role's private variable by its
    name (a rename in the YAML would leave them reading nothing)."""
    found = []
    for folder in ("lib", "action_plugins", "library", "filter_plugins", "module_utils", "callback_plugins"):
        for root, _dirs, files in os.walk(os.path.join(ROOT, folder)):
            for name in files:
                if name.endswith(".py"):
                    with open(os.path.join(root, name), encoding="utf-8") as handle:
                        for number, line in enumerate(handle, 1):
                            code = line.split("#", 1)[0]
                            if re.search(r"[\"']_sglang_[a-z]", code):
                                found.append("%s:%d: %s" % (os.path.join(folder, name), number, line.strip()))
    assert not found, "\n".join(found)


def test_no_task_registers_or_sets_a_name_the_roles_vars_derive():
    """A register named like a vars/main.yml value replaces it for the rest of the play (backups.yml's register of
    the store's listing once replaced the store's settings, and a rollback's restore lost its folder)."""
    with open(os.path.join(ROLE, "vars", "main.yml"), encoding="utf-8") as handle:
        derived = set(yaml.safe_load(handle))
    clashes = {}
    for path in _yaml_files(os.path.join(ROLE, "tasks"), os.path.join(ROOT, "playbooks")):
        for item in yaml.safe_load(open(path, encoding="utf-8")) or []:
            for name in _produced_by(item, scoped=False) & derived:
                clashes.setdefault(name, []).append(os.path.relpath(path, ROOT))
    assert not clashes, clashes
