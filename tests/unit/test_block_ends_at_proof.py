"""The deploy's block ends at the proof (issue 37 items 2 and 3), read by Ansible itself: site.yml and
playbooks/rollback.yml loaded by ansible-core's own Playbook loader, every task of every block (block, rescue and
always: --list-tasks shows no rescue or always), each task's tags judged by Ansible's own evaluate_tags.
- every --tags/--skip-tags choice of one or two of the playbooks' tags that runs a drain runs the return to the
  routers too;
- the return and the report are outside the block the rescue covers (the report's failure is no proof failure);
- the deploy play pins its strategy (its nodes read each other's registers in step);
- an inventory without routers gets no warning from the routers' play."""

import itertools
import os
import subprocess
import sys

import pytest
from ansible import context
from ansible.inventory.manager import InventoryManager
from ansible.module_utils.common.collections import ImmutableDict
from ansible.parsing.dataloader import DataLoader
from ansible.playbook import Playbook
from ansible.playbook.block import Block
from ansible.plugins.loader import init_plugin_loader
from ansible.vars.manager import VariableManager

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DRAIN = "out of its router(s) and drain it"
BACK = "back into its router"
REPORT = "Write this run's report on the controller"
PROVE = "Prove the KV pool and a long prompt on the host"


init_plugin_loader()  # once a process: Ansible's collection loader, as ansible-playbook sets it up


def plays(playbook):
    context.CLIARGS = ImmutableDict(tags=[], skip_tags=[], check=False, diff=False)
    loader = DataLoader()
    loader.set_basedir(REPO)
    inventory = InventoryManager(loader=loader, sources=[os.path.join(REPO, "inventory")])
    manager = VariableManager(loader=loader, inventory=inventory)
    return Playbook.load(os.path.join(REPO, playbook), variable_manager=manager, loader=loader).get_plays()


def tasks(block, path=()):
    """(task, the blocks it sits in as (block, section: 'block', 'rescue' or 'always'), outermost first)."""
    for section in ("block", "rescue", "always"):
        for item in getattr(block, section):
            if isinstance(item, Block):
                yield from tasks(item, path + ((block, section),))
            else:
                yield item, path + ((block, section),)


def deploy_play(playbook):
    (play,) = [play for play in plays(playbook) if play.get_name().startswith(("Deploy SGLang", "Roll SGLang back"))]
    return play


def found(play, name):
    hits = [(task, path) for block in play.compile() for task, path in tasks(block)
            if name in (task.get_name() or "").split(" : ")[-1]]
    assert hits, "no task named %r in %s" % (name, play.get_name())
    return hits


def runs(task, only, skip):
    return task.evaluate_tags(only or ["all"], skip, {})


@pytest.mark.parametrize("playbook", ["site.yml", "playbooks/rollback.yml"])
def test_no_tag_choice_drains_without_the_return(playbook):
    play = deploy_play(playbook)
    drains = [task for task, _ in found(play, DRAIN)]
    backs = [task for task, _ in found(play, BACK)]
    every = sorted({tag for block in play.compile() for task, _ in tasks(block) for tag in task.tags} - {"always"})
    assert {"sglang_deploy", "sglang_prove"} <= set(every) or playbook.endswith("rollback.yml"), every
    choices = [list(pick) for size in (1, 2) for pick in itertools.combinations(every, size)]
    for only, skip in [(pick, []) for pick in choices] + [([], pick) for pick in choices] + [([], [])]:
        if any(runs(task, only, skip) for task in drains):
            assert all(runs(task, only, skip) for task in backs), (only, skip)


def rescued_block(path):
    """The innermost block with a rescue that this path is inside of, and the section it is in there."""
    return next(((block, section) for block, section in reversed(path) if block.rescue), (None, None))


def test_the_return_and_the_report_are_outside_the_block_the_rescue_covers():
    play = deploy_play("site.yml")
    ((_, prove_path),) = found(play, PROVE)
    ((_, back_path),) = found(play, BACK)
    ((_, report_path),) = found(play, REPORT)
    rescued, section = rescued_block(prove_path)
    assert rescued is not None and section == "block"
    # the return: in the always of that block (it runs failed or not); the report: outside it, after it
    assert rescued_block(back_path) == (rescued, "always")
    assert all(block is not rescued for block, _ in report_path)
    order = [task.get_name() for block in play.compile() for task, _ in tasks(block)]
    assert order.index(found(play, PROVE)[0][0].get_name()) < order.index(found(play, REPORT)[0][0].get_name())


@pytest.mark.parametrize("playbook", ["site.yml", "playbooks/rollback.yml"])
def test_the_deploy_play_pins_its_strategy(playbook):
    # as written in the play: an unset strategy reads as linear here and is ANSIBLE_STRATEGY's on an operator's shell
    assert deploy_play(playbook)._ds.get("strategy") == "linear"


def test_an_inventory_without_routers_runs_site_yml_without_a_warning():
    # every run without routers ended with "Could not match supplied host pattern, ignoring: sglang_routers"
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg"), ANSIBLE_NOCOLOR="1")
    playbook = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")
    result = subprocess.run([playbook, "site.yml", "--list-hosts"], cwd=REPO, env=env, capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "WARNING" not in result.stdout + result.stderr, result.stdout + result.stderr
    assert "Deploy the routers in front of the replicas" in result.stdout
