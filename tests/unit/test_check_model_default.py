"""The role names no model (issue 46 item 6): a group that names its model by sglang_model_config gets that model's
launch flags and nothing else, not Kimi K2.6's parsers from a default preset; a group that names none is planned
once the role has read its checkpoint's config.json on the host.

Through the check phase's own filter (sglang_plan_hosts, lib/sglang_checks/planhost.py) over an inventory on disk,
read through Ansible's real hostvars, as playbooks/check.yml reads it: the production group_vars (sglang_servers,
ct200's kimi_k26_dflash) beside a child group per model, as inventory/hosts.yml describes one."""

import glob
import json
import os
import shutil

import yaml
from ansible.inventory.manager import InventoryManager
from ansible.parsing.dataloader import DataLoader
from ansible.plugins.loader import filter_loader
from ansible.template import Templar, trust_as_template
from ansible.vars.hostvars import HostVars
from ansible.vars.manager import VariableManager
from sglang_checks import planspec

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIXTURES = os.path.join(REPO, "tests", "fixtures", "model_configs")
# one H100 as nvidia_gpu_facts reads it (kept in the inventory or a fact cache)
H100 = {"source": "nvidia-smi", "count": 1, "memory_mib_min": 81559, "compute_capability": "9.0"}
KIMI_FLAGS = ("--trust-remote-code", "--tool-call-parser", "--reasoning-parser", "kimi_k2")


def published(name):
    with open(os.path.join(FIXTURES, name, "config.json"), encoding="utf-8") as handle:
        return json.load(handle)


def plans(folder, groups):
    """sglang_plan_hosts over ct200 (its own model group, as in production) and one host per entry of `groups`
    ({group: (its group_vars, its host_vars)}), each a child group of sglang_servers."""
    shutil.copytree(os.path.join(REPO, "inventory", "group_vars"), os.path.join(folder, "group_vars"))
    shutil.copytree(os.path.join(REPO, "inventory", "host_vars"), os.path.join(folder, "host_vars"))
    children = {"kimi_k26_dflash": {"hosts": {"ct200": {}}}}
    for group, (group_vars, host_vars) in groups.items():
        children[group] = {"hosts": {group + "-1": {}}}
        for kind, values, name in (("group_vars", group_vars, group), ("host_vars", host_vars, group + "-1")):
            with open(os.path.join(folder, kind, name + ".yml"), "w", encoding="utf-8") as handle:
                yaml.safe_dump(values, handle)
    with open(os.path.join(folder, "hosts.yml"), "w", encoding="utf-8") as handle:
        yaml.safe_dump({"sglang_servers": {"children": children}}, handle)
    loader = DataLoader()
    inventory = InventoryManager(loader=loader, sources=[os.path.join(folder, "hosts.yml")])
    hostvars = HostVars(inventory, VariableManager(loader=loader, inventory=inventory), loader)
    filter_loader.add_directory(os.path.join(REPO, "filter_plugins"))
    hosts = ["ct200"] + [group + "-1" for group in groups]
    templar = Templar(loader=loader, variables={"hosts": hosts, "hostvars": hostvars})
    return templar.template(trust_as_template("{{ hosts | sglang_plan_hosts(hostvars) }}"))


def qwen25_vl(**extra):
    # sglang_checkpoint_gib: the operator's figure for the checkpoint (8.3B parameters in bf16), as make plan needs
    return dict({"sglang_model_config": published("qwen2.5-vl-7b-instruct"), "sglang_tp_size": 1,
                 "sglang_context_target": 32768, "sglang_model_path": "/srv/models/qwen2.5-vl-7b",
                 "sglang_checkpoint_gib": 15.5}, **extra)


def test_a_group_naming_its_config_gets_no_kimi_flag(tmp_path):
    planned = plans(str(tmp_path), {"qwen25_vl": (qwen25_vl(), {"nvidia_gpu": H100})})
    assert "plan" in planned["qwen25_vl-1"], planned["qwen25_vl-1"]
    args = planned["qwen25_vl-1"]["plan"]["args"]
    assert not set(KIMI_FLAGS) & set(args), args
    assert planned["qwen25_vl-1"]["spec"]["model"] is None
    # ct200's group names its preset, and keeps the preset's flags as before
    kimi = planned["ct200"]["plan"]["args"]
    assert kimi[kimi.index("--tool-call-parser") + 1] == "kimi_k2" and "--trust-remote-code" in kimi, kimi


def test_a_group_naming_a_preset_gets_that_presets_flags_only(tmp_path):
    group = {"sglang_model": "gpt-oss-120b", "sglang_tp_size": 1, "sglang_context_target": 131072,
             "sglang_model_path": "/srv/models/gpt-oss-120b"}
    planned = plans(str(tmp_path), {"gpt_oss": (group, {"nvidia_gpu": dict(H100, memory_mib_min=143771)})})
    args = planned["gpt_oss-1"]["plan"]["args"]
    assert args[args.index("--tool-call-parser") + 1] == "gpt-oss", args
    assert args[args.index("--reasoning-parser") + 1] == "gpt-oss", args
    assert "kimi_k2" not in args and "--trust-remote-code" not in args, args


def test_a_config_with_remote_code_still_gets_trust_remote_code(tmp_path):
    # the flag follows the config (auto_map), not a preset: nothing else comes with it
    config = dict(published("qwen2.5-vl-7b-instruct"), auto_map={"AutoConfig": "configuration_x.XConfig"})
    planned = plans(str(tmp_path), {"remote": (qwen25_vl(sglang_model_config=config), {"nvidia_gpu": H100})})
    args = planned["remote-1"]["plan"]["args"]
    assert "--trust-remote-code" in args and "--tool-call-parser" not in args and "--reasoning-parser" not in args


def test_a_group_naming_no_model_is_planned_on_the_host_not_as_kimi(tmp_path):
    group = {"sglang_tp_size": 1, "sglang_context_target": 32768, "sglang_model_path": "/srv/models/mine"}
    planned = plans(str(tmp_path), {"mine": (group, {"nvidia_gpu": H100})})
    assert "plan" not in planned["mine-1"] and "error" not in planned["mine-1"], planned["mine-1"]
    assert "neither sglang_model (a preset) nor sglang_model_config" in planned["mine-1"]["skipped"]
    assert "plan" in planned["ct200"]  # the others are planned as before


def test_a_config_without_a_size_is_planned_on_the_host_not_refused(tmp_path):
    # the role reads the checkpoint's size on the host; the check phase has nothing to size the weights with
    group = qwen25_vl(sglang_checkpoint_gib=None)
    planned = plans(str(tmp_path), {"qwen25_vl": (group, {"nvidia_gpu": H100})})
    assert "the checkpoint's size" in planned["qwen25_vl-1"].get("skipped", ""), planned["qwen25_vl-1"]
    # a calibration in the inventory sizes it: planned
    calibrated = dict(group, sglang_calibration={"pre_load_avail_gib": 78.5, "post_load_avail_gib": 62.3})
    assert "plan" in plans(str(tmp_path / "c"), {"qwen25_vl": (calibrated, {"nvidia_gpu": H100})})["qwen25_vl-1"]


def test_the_role_has_no_model_default():
    with open(os.path.join(REPO, "roles", "sglang", "defaults", "main.yml"), encoding="utf-8") as handle:
        assert yaml.safe_load(handle)["sglang_model"] is None
    with open(os.path.join(REPO, "roles", "sglang", "meta", "argument_specs.yml"), encoding="utf-8") as handle:
        options = yaml.safe_load(handle)["argument_specs"]["main"]["options"]
    assert "default" not in options["sglang_model"]


def test_model_unread_names_the_host_only_when_nothing_names_the_model():
    assert planspec.model_unread("h", {"sglang_model": None, "sglang_model_config": None}).startswith("h: planned")
    assert planspec.model_unread("h", {"sglang_model": "", "sglang_model_config": {}}) is not None
    assert planspec.model_unread("h", {"sglang_model": "qwen3-32b", "sglang_model_config": None}) is None
    assert planspec.model_unread("h", {"sglang_model": None, "sglang_model_config": {"x": 1},
                                       "sglang_checkpoint_gib": 15.5}) is None
    assert "size" in planspec.model_unread("h", {"sglang_model": None, "sglang_model_config": {"x": 1}})
    assert planspec.model_unread("h", {"sglang_model_config": {"x": 1}}, calibrated=True) is None


def test_the_config_read_on_the_host_is_the_model_the_role_plans_and_the_knob_stays_the_operators():
    knobs = {name: None for name in planspec.KNOBS}
    given = {"architectures": ["Qwen2ForCausalLM"], "num_hidden_layers": 2}
    knobs.update(sglang_model_config=given, sglang_tp_size=1, sglang_version="0.5.23", sglang_context_target=4096,
                 sglang_gpu_memory_mib=81_559, sglang_checkpoint_gib=1)
    read = {"architectures": ["Qwen3ForCausalLM"], "num_hidden_layers": 4}
    plain = planspec.spec("h", knobs, [planspec.node_inputs("h", knobs)], "h")[0]
    measured = planspec.spec("h", knobs, [planspec.node_inputs("h", knobs)], "h", {"model_config": read})[0]
    assert plain["model_config"] == given and measured["model_config"] == read
    assert knobs["sglang_model_config"] == given


def test_no_task_of_the_role_sets_or_registers_an_operators_setting():
    # the issue-47 defect: model.yml replaced sglang_model_config with set_fact (-e would then beat the host's read)
    with open(os.path.join(REPO, "roles", "sglang", "meta", "argument_specs.yml"), encoding="utf-8") as handle:
        knobs = set(yaml.safe_load(handle)["argument_specs"]["main"]["options"])
    written = set()
    for path in glob.glob(os.path.join(REPO, "roles", "sglang", "tasks", "*.yml")):
        with open(path, encoding="utf-8") as handle:
            stack = list(yaml.safe_load(handle) or [])
        while stack:
            task = stack.pop()
            stack += [t for key in ("block", "rescue", "always") for t in task.get(key) or []]
            written |= set(task.get("ansible.builtin.set_fact") or {}) | {task.get("register")}
    assert written & knobs == set()
