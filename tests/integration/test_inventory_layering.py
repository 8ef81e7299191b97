"""The repository's inventory layers so that a host inherits a model's values only by joining that model's group
(issue 35 item 3): a host of another model, in a child group of sglang_servers beside ct200's, gets no drafter, no
Kimi weights path and no Kimi TP from ct200's values. Read with Ansible's own inventory and variable managers, as
every playbook reads it."""

import os
import shutil

import yaml
from ansible.inventory.manager import InventoryManager
from ansible.parsing.dataloader import DataLoader
from ansible.vars.manager import VariableManager

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# What names a model: a host that did not choose the model must not get any of these from a group it shares with
# another model's hosts.
MODEL_KEYS = ("sglang_model", "sglang_model_config", "sglang_model_path", "sglang_model_hf_repo", "sglang_speculative",
              "sglang_tp_size", "sglang_context_target")


def with_qwen_host(folder):
    """The repository's inventory, plus gpu-07 serving Qwen3-32B in a child group of its own, as README's 'A new
    host' says; returns {host: its variables as Ansible resolves them}."""
    root = os.path.join(folder, "inventory")
    shutil.copytree(os.path.join(REPO, "inventory"), root)
    path = os.path.join(root, "hosts.yml")
    with open(path, encoding="utf-8") as handle:
        hosts = yaml.safe_load(handle)
    qwen = {"hosts": {"gpu-07": {"ansible_host": "192.0.2.7"}}}
    hosts["sglang_servers"].setdefault("children", {})["qwen3_32b"] = qwen
    with open(path, "w", encoding="utf-8") as handle:
        yaml.safe_dump(hosts, handle)
    with open(os.path.join(root, "group_vars", "qwen3_32b.yml"), "w", encoding="utf-8") as handle:
        yaml.safe_dump({"sglang_model": "qwen3-32b", "sglang_tp_size": 4, "sglang_context_target": 40960}, handle)
    loader = DataLoader()
    inventory = InventoryManager(loader=loader, sources=[path])
    manager = VariableManager(loader=loader, inventory=inventory)
    return {host: manager.get_vars(host=inventory.get_host(host)) for host in ("ct200", "gpu-07")}


def test_a_host_of_another_model_inherits_no_drafter_and_no_kimi_values(tmp_path):
    variables = with_qwen_host(str(tmp_path))
    qwen = variables["gpu-07"]
    assert "sglang_servers" in qwen["group_names"]
    assert "sglang_speculative" not in qwen, qwen.get("sglang_speculative")
    assert "sglang_model_path" not in qwen, qwen.get("sglang_model_path")
    assert (qwen["sglang_model"], qwen["sglang_tp_size"], qwen["sglang_context_target"]) == ("qwen3-32b", 4, 40960)
    # what every server shares still reaches it
    assert qwen["sglang_metrics"] is True
    assert qwen["sglang_min_headroom_gib"] == 4.0


def test_ct200_keeps_its_model_and_drafter(tmp_path):
    ct200 = with_qwen_host(str(tmp_path))["ct200"]
    assert ct200["sglang_model"] == "kimi-k2.6"
    assert ct200["sglang_model_path"] == "/srv/models/kimi-k2.6"
    assert ct200["sglang_tp_size"] == 8 and ct200["sglang_context_target"] == 200000
    assert ct200["sglang_speculative"] == {"algorithm": "DFLASH", "draft_model": "kimi-k2.6-dflash",
                                           "draft_model_path": "/srv/models/kimi-k2.6-dflash", "num_draft_tokens": 16}
    assert ct200["sglang_calibration"]["pre_load_avail_gib"] == 85.334


def test_the_shared_group_names_no_model():
    """group_vars/sglang_servers.yml reaches every server: a model's value there would reach hosts of other models."""
    with open(os.path.join(REPO, "inventory", "group_vars", "sglang_servers.yml"), encoding="utf-8") as handle:
        shared = yaml.safe_load(handle)
    assert not [key for key in MODEL_KEYS if key in shared]


def test_every_molecule_host_in_the_kimi_group_keeps_its_values():
    """The scenarios that simulate ct200 link the production group files (molecule/shared/group_vars): each of
    their servers joins the model's group, so it still serves Kimi K2.6 with its drafter."""
    links = [os.path.join(REPO, "molecule", where, "group_vars", "kimi_k26_dflash.yml")
             for where in ("shared", "scaleout")]
    for link in links:
        assert os.path.realpath(link) == os.path.join(REPO, "inventory", "group_vars", "kimi_k26_dflash.yml")
    for scenario in ("default", "rollback", "undersized", "scaleout"):
        with open(os.path.join(REPO, "molecule", scenario, "molecule.yml"), encoding="utf-8") as handle:
            platforms = yaml.safe_load(handle)["platforms"]
        servers = [p for p in platforms if "sglang_servers" in p.get("groups", [])]
        assert servers and all("kimi_k26_dflash" in p["groups"] for p in servers), scenario
    with open(os.path.join(REPO, "molecule", "harness", "demo-inventory", "hosts.yml"), encoding="utf-8") as handle:
        demo = yaml.safe_load(handle)
    assert "ct200-sim" in demo["sglang_servers"]["children"]["kimi_k26_dflash"]["hosts"]
