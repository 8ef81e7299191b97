"""site.yml's look play gathers only some fact subsets (gather_subset): every fact the deploy's roles read must be
among them, or a task would read an undefined fact on a real host (the deploy play gathers none of its own)."""

import glob
import os
import re

import yaml
from ansible.module_utils.facts import default_collectors

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# The roles site.yml's look and deploy plays run (the routers' play gathers its own, the default subsets)
ROLES = ("preflight", "nvidia_driver", "cuda", "sglang")
# Facts a task of the roles sets itself (ansible.builtin.package_facts in nvidia_driver/tasks/version.yml)
SET_BY_A_TASK = {"packages"}
READ = re.compile(r"ansible_facts(?:\[['\"](\w+)['\"]\]|\.(\w+))|\bansible_(local|distribution\w*|kernel\w*)\b")


def facts_read(paths):
    names = set()
    for path in paths:
        with open(path, encoding="utf-8") as handle:
            for match in READ.finditer(handle.read()):
                names.add(next(group for group in match.groups() if group))
    return names - SET_BY_A_TASK


def gathered(subsets):
    """The fact names the collectors of these subsets return (their names and fact ids); '!x' entries add none."""
    names = set()
    for collector in default_collectors.collectors:
        if collector.name in subsets:
            names |= {collector.name} | set(collector._fact_ids)
    return names


def site_subsets():
    with open(os.path.join(REPO, "site.yml"), encoding="utf-8") as handle:
        plays = yaml.safe_load(handle)
    look = next(play for play in plays if play.get("roles") and play["roles"][0]["role"] == "preflight")
    return set(look["gather_subset"])


def test_every_fact_the_roles_read_is_gathered_by_site_yml():
    paths = [path for role in ROLES for path in glob.glob(os.path.join(REPO, "roles", role, "**", "*"),
                                                          recursive=True)
             if path.endswith((".yml", ".j2")) and os.path.isfile(path)]
    read = facts_read(paths)
    assert {"distribution", "kernel", "date_time", "interfaces", "systemd", "local"} <= read, read
    assert read - gathered(site_subsets()) == set()


def test_a_fact_read_but_not_gathered_is_caught(tmp_path):
    task = tmp_path / "task.yml"
    task.write_text("- ansible.builtin.debug: {msg: \"{{ ansible_facts['service_mgr'] }} {{ ansible_facts.dns }}\"}")
    assert facts_read([str(task)]) - gathered(site_subsets()) == {"service_mgr", "dns"}
