"""Every role task file a playbook includes is an entry point with a contract: an argument_specs entry that
Ansible validates before the file's first task (a missing argument is refused by name, nothing runs); every other
task file is an internal step that refuses a direct include the same way."""

import glob
import json
import os
import subprocess
import sys

import yaml

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# roles/sglang/tasks/router_workers.yml becomes the sglang_router role's `membership` entry point (branch router).
MOVING = {("sglang", "router_workers")}


def _includes(items):
    for item in items or []:
        if not isinstance(item, dict):
            continue
        for key in ("ansible.builtin.include_role", "ansible.builtin.import_role", "include_role", "import_role"):
            if isinstance(item.get(key), dict) and item[key].get("tasks_from"):
                yield item[key]["name"], os.path.splitext(item[key]["tasks_from"])[0]
        for key in ("block", "rescue", "always", "tasks", "pre_tasks", "post_tasks"):
            yield from _includes(item.get(key))


def playbook_includes():
    found = set()
    for path in [os.path.join(REPO, "site.yml")] + sorted(glob.glob(os.path.join(REPO, "playbooks", "*.yml"))):
        with open(path, encoding="utf-8") as handle:
            found |= set(_includes(yaml.safe_load(handle)))
    return found


def test_every_included_task_file_has_an_argument_specs_entry():
    includes = playbook_includes()
    assert ("sglang", "restore") in includes and ("sglang", "inspect") in includes
    missing = []
    for role, entry in sorted(includes - MOVING):
        with open(os.path.join(REPO, "roles", role, "meta", "argument_specs.yml"), encoding="utf-8") as handle:
            if entry not in yaml.safe_load(handle)["argument_specs"]:
                missing.append("%s: %s" % (role, entry))
    assert not missing, "playbooks include task files without an argument_specs entry: %s" % missing


def include_alone(tmp_path, tasks_from):
    """ansible-playbook over a play that includes one task file of the sglang role with no variables: (rc, output)."""
    play = tmp_path / ("%s.yml" % tasks_from)
    play.write_text(json.dumps([{"hosts": "localhost", "connection": "local", "gather_facts": False, "tasks": [
        {"ansible.builtin.include_role": {"name": "sglang", "tasks_from": tasks_from}}]}]))
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg"), ANSIBLE_NOCOLOR="1")
    result = subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), str(play)],
                            cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    return result.returncode, result.stdout + result.stderr


def test_a_restore_without_its_entry_is_refused_before_anything_runs(tmp_path):
    rc, out = include_alone(tmp_path, "restore")
    assert rc != 0, out
    assert "_sglang_restore_name" in out and "required" in out, out
    assert "Check the entry's runtime" not in out  # restore.yml's first task never ran


def test_every_task_file_of_the_role_is_an_entry_point_or_refuses_direct_use():
    with open(os.path.join(REPO, "roles", "sglang", "meta", "argument_specs.yml"), encoding="utf-8") as handle:
        specs = yaml.safe_load(handle)["argument_specs"]
    files = {os.path.splitext(os.path.basename(p))[0] for p in glob.glob(os.path.join(REPO, "roles", "sglang",
                                                                                       "tasks", "*.yml"))}
    assert files <= set(specs), "task files with no argument_specs entry: %s" % sorted(files - set(specs))
    internal = {name for name, spec in specs.items() if "_sglang_internal" in (spec.get("options") or {})}
    assert {"install", "deploy", "prove", "rescue"} <= internal
    assert not internal & {entry for role, entry in playbook_includes() if role == "sglang"}


def test_an_internal_step_included_directly_is_refused_before_anything_runs(tmp_path):
    rc, out = include_alone(tmp_path, "install")
    assert rc != 0, out
    assert "_sglang_internal" in out and "required" in out, out
    assert "Find or build the runtime" not in out  # install.yml's task never ran


def _task_file_includes(items, found):
    for item in items or []:
        if not isinstance(item, dict):
            continue
        for key in ("ansible.builtin.import_tasks", "ansible.builtin.include_tasks", "import_tasks", "include_tasks"):
            if isinstance(item.get(key), str):
                found.append(os.path.splitext(item[key])[0])
        for key in ("block", "rescue", "always"):
            _task_file_includes(item.get(key), found)
    return found


def test_inside_the_role_each_task_file_is_included_from_one_place():
    # playbooks may include an entry point too (inspect, smoke): an entry point is shared, an internal step is not
    found = []
    for path in sorted(glob.glob(os.path.join(REPO, "roles", "sglang", "tasks", "*.yml"))):
        with open(path, encoding="utf-8") as handle:
            _task_file_includes(yaml.safe_load(handle), found)
    twice = sorted({name for name in found if found.count(name) > 1})
    assert not twice, "task files included from more than one place in the role: %s" % twice
    assert "deploy" in found and "prove" in found  # the walk sees nested blocks
