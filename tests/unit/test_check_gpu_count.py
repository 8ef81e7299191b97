"""A plan that takes more GPUs than the host has is refused in the check phase when the inventory (or a fact
cache) already holds the host's count (nvidia_gpu.count), and otherwise says that preflight checks the count
(issue 27, probe day 2 #16: plan.yml accepted tp 16 and dp 4 x tp 4 on the 8-GPU ct200).

The plans come from the check phase's own filter over an inventory on disk: a ct200 copy, read through Ansible's
real hostvars, as playbooks/check.yml reads them."""

import os
import shutil

import pytest
import yaml
from ansible.inventory.manager import InventoryManager
from ansible.parsing.dataloader import DataLoader
from ansible.plugins.loader import filter_loader
from ansible.template import Templar, trust_as_template
from ansible.vars.hostvars import HostVars
from ansible.vars.manager import VariableManager
from sglang_checks import planspec

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# what nvidia_gpu_facts reads on ct200 (its RETURN sample), kept in the inventory or a fact cache
CT200_GPUS = {"source": "nvidia-smi", "count": 8, "memory_mib_min": 97887, "compute_capability": "12.0"}


def plans(folder, extra, gpus=CT200_GPUS, hosts=("ct200",)):
    """sglang_plan_hosts over ct200 copies with `extra` in each host's vars and `gpus` as their nvidia_gpu."""
    os.makedirs(os.path.join(folder, "host_vars"))
    shutil.copytree(os.path.join(REPO, "inventory", "group_vars"), os.path.join(folder, "group_vars"))
    for host in hosts:
        with open(os.path.join(REPO, "inventory", "host_vars", "ct200.yml"), encoding="utf-8") as handle:
            host_vars = yaml.safe_load(handle)
        host_vars.update(extra)
        if gpus is not None:
            host_vars["nvidia_gpu"] = gpus
        with open(os.path.join(folder, "host_vars", host + ".yml"), "w", encoding="utf-8") as handle:
            yaml.safe_dump(host_vars, handle)
    with open(os.path.join(folder, "hosts.yml"), "w", encoding="utf-8") as handle:
        # in ct200's model group, as inventory/hosts.yml has it (Kimi K2.6, TP8, its drafter)
        yaml.safe_dump({"sglang_servers": {"children": {"kimi_k26_dflash": {"hosts": {h: {} for h in hosts}}}}}, handle)
    loader = DataLoader()
    inventory = InventoryManager(loader=loader, sources=[os.path.join(folder, "hosts.yml")])
    hostvars = HostVars(inventory, VariableManager(loader=loader, inventory=inventory), loader)
    filter_loader.add_directory(os.path.join(REPO, "filter_plugins"))
    templar = Templar(loader=loader, variables={"hosts": list(hosts), "hostvars": hostvars})
    return templar.template(trust_as_template("{{ hosts | sglang_plan_hosts(hostvars) }}"))


@pytest.mark.parametrize("extra, needed, words", [
    ({"sglang_tp_size": 16}, 16, "sglang_tp_size 16 x sglang_pp_size 1 takes 16 GPU(s) on ct200"),
    ({"sglang_tp_size": 4, "sglang_dp_size": 4}, 16, "sglang_tp_size 4 x sglang_pp_size 1 x sglang_dp_size 4"),
    ({"sglang_tp_size": 8, "sglang_pp_size": 2, "sglang_speculative": {}}, 16, "sglang_pp_size 2"),
], ids=["tp16", "dp4 x tp4", "tp8 x pp2"])
def test_a_plan_taking_more_gpus_than_the_inventory_says_is_refused(tmp_path, extra, needed, words):
    planned = plans(str(tmp_path), extra)["ct200"]
    assert "error" in planned, planned
    assert words in planned["error"], planned["error"]
    assert "but it has 8 (nvidia_gpu.count)" in planned["error"]
    assert "Lower the parallelism to fit 8 GPU(s)" in planned["error"]


def test_the_fix_named_is_a_tp_that_fits():
    refusal = planspec.gpu_count_refusals("ct200", {"sglang_tp_size": 4, "sglang_dp_size": 4},
                                          [{"node": "ct200", "gpu_count": 8}])
    assert "(e.g. sglang_tp_size: 2)" in refusal[0]  # 2 x dp 4 = 8


def test_the_ct200_plan_on_its_8_gpus_passes_and_says_nothing_of_the_count(tmp_path):
    planned = plans(str(tmp_path), {})["ct200"]
    assert "plan" in planned, planned
    assert not any("GPU count" in a for a in planned["plan"]["assumptions"])


def test_dp_attention_keeps_dp_inside_the_tp_group(tmp_path):
    planned = plans(str(tmp_path), {"sglang_dp_size": 8, "sglang_enable_dp_attention": True})["ct200"]
    assert "error" not in planned or "nvidia_gpu.count" not in planned["error"], planned


def test_the_inventory_s_count_refuses_tp16_on_ct200_without_any_facts(tmp_path):
    """inventory/host_vars/ct200.yml says 8 GPUs (sglang_gpu_count): make plan, which connects to nothing, refuses
    a plan that takes 16."""
    planned = plans(str(tmp_path), {"sglang_tp_size": 16}, gpus=None)["ct200"]
    assert "takes 16 GPU(s) on ct200" in planned.get("error", ""), planned


def test_without_a_count_the_plan_says_preflight_checks_it(tmp_path):
    planned = plans(str(tmp_path), {"sglang_tp_size": 16, "sglang_gpu_count": None}, gpus=None)["ct200"]
    assert "plan" in planned, planned  # make plan cannot know: it says so, preflight refuses before any change
    assert any("GPU count not known (no nvidia_gpu facts yet)" in a and "takes 16 GPU(s)" in a and "preflight" in a
               for a in planned["plan"]["assumptions"]), planned["plan"]["assumptions"]


def test_a_count_that_is_not_a_number_is_named(tmp_path):
    planned = plans(str(tmp_path), {}, gpus=dict(CT200_GPUS, count="eight"))["ct200"]
    assert "nvidia_gpu.count of ct200 is 'eight'" in planned.get("error", ""), planned


def test_each_node_of_a_server_across_nodes_is_checked_for_its_share():
    knobs = {"sglang_tp_size": 16, "sglang_nodes": ["a", "b"]}
    assert planspec.gpu_count_refusals("a", knobs, [{"node": "a", "gpu_count": 8}, {"node": "b", "gpu_count": 8}]) \
        == []
    short = planspec.gpu_count_refusals("a", knobs, [{"node": "a", "gpu_count": 8}, {"node": "b", "gpu_count": 4}])
    assert len(short) == 1 and "takes 8 GPU(s) on b, but it has 4" in short[0], short
