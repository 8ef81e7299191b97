"""The repository's own inventory layout for the benchmarks' hosts: a simulated host, or N copies of ct200, is put
in every group that holds ct200 in inventory/hosts.yml (today sglang_servers > kimi_k26_dflash, whose group_vars
carry the model, its drafter and TP 8). A hand-written inventory drifted: bench_rerun kept its host in
sglang_servers alone after TP 8 moved to the model's group, and the run failed (issue 47 item 6)."""

import os

import yaml
from outcome import BenchmarkFailed

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HOSTS_FILE = os.path.join(REPO, "inventory", "hosts.yml")
MODEL_HOST = "ct200"


def group_paths(inventory, host):
    """Every chain of groups, top to bottom, whose last group lists `host` (a YAML inventory's hosts/children)."""
    found = []

    def walk(name, group, chain):
        group = group or {}
        if host in (group.get("hosts") or {}):
            found.append(chain + [name])
        for child, body in (group.get("children") or {}).items():
            walk(child, body, chain + [name])

    for name, group in (inventory or {}).items():
        walk(name, group, [])
    return found


def place(paths, hosts):
    """A YAML inventory holding `hosts` (name -> variables) in the last group of each chain of `paths`."""
    tree = {}
    for chain in paths:
        level = tree
        for depth, name in enumerate(chain):
            group = level.setdefault(name, {})
            if depth == len(chain) - 1:
                group.setdefault("hosts", {}).update(hosts)
            else:
                level = group.setdefault("children", {})
    return tree


def inventory_like(host, hosts, hosts_file=None):
    """`hosts` placed where `host` sits in `hosts_file` (inventory/hosts.yml); BenchmarkFailed naming the file when it
    holds no `host`."""
    hosts_file = hosts_file or HOSTS_FILE
    with open(hosts_file, encoding="utf-8") as handle:
        paths = group_paths(yaml.safe_load(handle), host)
    if not paths:
        raise BenchmarkFailed("%s holds no host %s: the benchmarks put their hosts in that host's groups; name "
                              "the host they copy in tests/benchmarks/layout.py (MODEL_HOST)" % (hosts_file, host))
    return place(paths, hosts)


def write_inventory(folder, hosts, group_vars):
    """hosts.yml in `folder` with `hosts` placed as ct200 is, and group_vars/ holding a link to each of the
    `group_vars` folders' entries (later folders add entries; a name both hold is the first's). Returns its path."""
    target = os.path.join(folder, "group_vars")
    os.makedirs(target)
    for source in group_vars:
        for name in sorted(os.listdir(source)):
            if not os.path.lexists(os.path.join(target, name)):
                os.symlink(os.path.realpath(os.path.join(source, name)), os.path.join(target, name))
    path = os.path.join(folder, "hosts.yml")
    with open(path, "w", encoding="utf-8") as handle:
        yaml.safe_dump(inventory_like(MODEL_HOST, hosts), handle)
    return path


def _yaml_vars(path):
    """The variables of one group_vars/host_vars entry: a YAML file, or a folder of them (Ansible's two forms)."""
    files = [path + ext for ext in (".yml", ".yaml") if os.path.isfile(path + ext)]
    if os.path.isdir(path):
        files += [os.path.join(path, n) for n in sorted(os.listdir(path)) if n.endswith((".yml", ".yaml"))]
    merged = {}
    for name in files:
        with open(name, encoding="utf-8") as handle:
            merged.update(yaml.safe_load(handle) or {})
    return merged


def host_vars(host, inventory_dir=None):
    """`host`'s variables as the inventory gives them: group_vars/all, then each of its groups' group_vars from the
    top down (a child group's above its parent's, as Ansible ranks them), then host_vars/<host>. Values are
    replaced whole (Ansible's default hash_behaviour); no Jinja is rendered."""
    inventory_dir = inventory_dir or os.path.dirname(HOSTS_FILE)
    with open(os.path.join(inventory_dir, "hosts.yml"), encoding="utf-8") as handle:
        paths = group_paths(yaml.safe_load(handle), host)
    if not paths:
        raise BenchmarkFailed("%s/hosts.yml holds no host %s" % (inventory_dir, host))
    merged = _yaml_vars(os.path.join(inventory_dir, "group_vars", "all"))
    for chain in paths:
        for group in chain:
            merged.update(_yaml_vars(os.path.join(inventory_dir, "group_vars", group)))
    merged.update(_yaml_vars(os.path.join(inventory_dir, "host_vars", host)))
    return merged
