"""make collection: the tarball another team installs holds the checkout's files, and runs from a fresh folder.

tests/collection/build.sh lays the files out and makes two rewrites (module_utils imports, the roles' filter names);
these tests check that nothing else differs, that no role still names a shipped filter by its short name, and that
`ansible-galaxy collection install <tarball>` into an empty folder, with no Galaxy server reachable, gives a
collection whose module, filter, role and callbacks work by their collection names with nothing of the checkout
configured, and whose playbooks (sglang.longctx.site, .check, .plan, .rollback) run from another project.
"""

import ast
import filecmp
import os
import re
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.dirname(sys.executable)
CONSUMER = os.path.join(REPO, "tests", "collection", "consumer.yml")
# The checkout's folders and where the collection keeps them.
LAYOUT = {"roles": "roles", "library": "plugins/modules", "module_utils": "plugins/module_utils",
          "filter_plugins": "plugins/filter", "callback_plugins": "plugins/callback",
          "action_plugins": "plugins/action", "lib": "lib"}
COLLECTION_IMPORT = "from ansible_collections.sglang.longctx.plugins.module_utils."
CHECKOUT_IMPORT = "from ansible.module_utils."


def _clean_env(**extra):
    """The environment of someone who installed the collection: none of the checkout's Ansible settings."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_") and k != "PYTHONPATH"}
    env.update(PATH=BIN + os.pathsep + env.get("PATH", ""), ANSIBLE_NOCOLOR="1", **extra)
    return env


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """The built tarball installed into an empty folder; an unreachable Galaxy server proves no network is asked."""
    work = tmp_path_factory.mktemp("collection")
    build = subprocess.run([os.path.join(REPO, "tests", "collection", "build.sh"), str(work / "build")],
                           capture_output=True, text=True, timeout=300)
    assert build.returncode == 0, build.stdout + build.stderr
    tarball = build.stdout.strip().splitlines()[-1]
    assert os.path.basename(tarball) == "sglang-longctx-1.0.0.tar.gz"
    collections = work / "collections"
    install = subprocess.run(
        [os.path.join(BIN, "ansible-galaxy"), "collection", "install", tarball, "-p", str(collections)],
        env=_clean_env(ANSIBLE_GALAXY_SERVER="http://127.0.0.1:9/unreachable",
                       ANSIBLE_COLLECTIONS_PATH=str(collections)),
        capture_output=True, text=True, timeout=300)
    assert install.returncode == 0, install.stdout + install.stderr
    assert "sglang.longctx:1.0.0 was installed successfully" in install.stdout
    config = work / "ansible.cfg"
    config.write_text("[defaults]\ncollections_path = %s\nstdout_callback = sglang.longctx.sglang_once\n"
                      "callbacks_enabled = sglang.longctx.sglang_progress\n" % collections)
    return {"root": collections / "ansible_collections" / "sglang" / "longctx", "config": str(config), "work": work}


def _play(installed, *args):
    return subprocess.run([os.path.join(BIN, "ansible-playbook"), CONSUMER, *args],
                          cwd=installed["work"], env=_clean_env(ANSIBLE_CONFIG=installed["config"]),
                          capture_output=True, text=True, timeout=300)


def _tracked(folder):
    """The files of a checkout folder that git tracks (what build.sh ships), relative to it; a tracked file deleted
    from the working tree is not shipped and not listed."""
    listed = subprocess.run(["git", "-C", REPO, "ls-files", "-z", "--cached", "--", folder], capture_output=True,
                            check=True, timeout=60).stdout.decode().split("\0")
    return [os.path.relpath(path, folder) for path in listed if path and os.path.lexists(os.path.join(REPO, path))]


def _files(folder):
    for base, dirs, names in os.walk(folder):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        for name in names:
            if not name.endswith(".pyc"):
                yield os.path.relpath(os.path.join(base, name), folder)


def _shipped_filters(root):
    """Every filter name the collection's filter plugins define (FilterModule.filters' keys, read from the source)."""
    names = set()
    for name in os.listdir(root / "plugins" / "filter"):
        if name.endswith(".py"):
            tree = ast.parse((root / "plugins" / "filter" / name).read_text())
            for node in ast.walk(tree):
                if isinstance(node, ast.FunctionDef) and node.name == "filters":
                    for ret in ast.walk(node):
                        if isinstance(ret, ast.Return) and isinstance(ret.value, ast.Dict):
                            names.update(k.value for k in ret.value.keys)
    return names


def test_the_collection_holds_every_tracked_file_of_the_checkout_and_differs_only_by_the_two_rewrites(installed):
    root, checked = installed["root"], 0
    for folder, target in LAYOUT.items():
        tracked = _tracked(folder)
        # and nothing else: no untracked file of the working tree (build.sh ships git ls-files)
        extra = sorted(set(_files(root / target)) - set(tracked))
        assert extra == [], "%s/ in the collection holds files the checkout does not track: %s" % (target, extra)
        for rel in tracked:
            if folder == "library" and not rel.endswith(".py"):
                continue
            ours, theirs = os.path.join(REPO, folder, rel), root / target / rel
            assert theirs.is_file(), "%s/%s is missing from the collection (%s/%s)" % (folder, rel, target, rel)
            checked += 1
            if filecmp.cmp(ours, theirs, shallow=False):
                continue
            mine, built = open(ours).read().splitlines(), theirs.read_text().splitlines()
            assert len(mine) == len(built), "%s/%s: lines added or removed" % (folder, rel)
            for before, after in zip(mine, built, strict=True):
                if before == after:
                    continue
                undone = after.replace(COLLECTION_IMPORT, CHECKOUT_IMPORT) if folder in ("library", "module_utils") \
                    else re.sub(r"\|(\s*)sglang\.longctx\.", r"|\1", after)
                assert undone == before, "%s/%s: %r became %r" % (folder, rel, before, after)
    assert checked > 100
    assert (root / "plugins" / "lib").resolve() == (root / "lib").resolve()


def test_no_role_names_a_shipped_filter_by_its_short_name(installed):
    root = installed["root"]
    filters = _shipped_filters(root)
    assert {"sglang_kv_plan", "sglang_check_host", "sglang_gpus_per_node"} <= filters
    short = re.compile(r"\|\s*(%s)\b" % "|".join(sorted(filters, key=len, reverse=True)))
    found = [(rel, m.group(1)) for rel in _files(root / "roles")
             for m in short.finditer((root / "roles" / rel).read_text())]
    assert found == []


def test_an_installed_collections_module_filter_role_and_callbacks_run_by_their_collection_names(installed):
    result = _play(installed)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "consumer: tp 8 x pp 2 takes 16 GPUs" in result.stdout
    assert "consumer: the boot failed" in result.stdout
    assert re.search(r"consumer: \d+ GPU\(s\), read from ", result.stdout), result.stdout
    assert "included: sglang.longctx.sglang for localhost" in result.stdout
    assert "sglang.longctx.sglang : Check this host's inputs as the check phase does" in result.stdout


def test_the_installed_role_refuses_a_misspelled_knob_once_with_its_name(installed):
    result = _play(installed, "-e", "sglang_context_targt=250000")
    assert result.returncode != 0
    assert "unknown variable sglang_context_targt" in result.stdout, result.stdout + result.stderr
    assert "Did you mean sglang_context_target?" in result.stdout
    # sglang.longctx.sglang_once prints the refusal on its fatal line only (the default callback prints it three times)
    assert result.stdout.count("unknown variable sglang_context_targt") == 1, result.stdout


def test_the_playbooks_and_the_docs_ship_differing_only_by_the_filter_names_and_site_ymls_import(installed):
    root = installed["root"]
    shipped = {"site.yml": os.path.join(REPO, "site.yml")}
    shipped.update({name: os.path.join(REPO, "playbooks", name) for name in _tracked("playbooks")})
    assert sorted(_files(root / "playbooks")) == sorted(shipped)
    for name, ours in shipped.items():
        mine, built = open(ours).read().splitlines(), (root / "playbooks" / name).read_text().splitlines()
        assert len(mine) == len(built), name
        for before, after in zip(mine, built, strict=True):
            undone = re.sub(r"\|(\s*)sglang\.longctx\.", r"|\1", after)
            if name == "site.yml":
                undone = undone.replace("import_playbook: check.yml", "import_playbook: playbooks/check.yml")
            assert undone == before, "%s: %r became %r" % (name, before, after)
    # the messages point to docs/variables.md: the operator's docs come with the collection, the generator does not
    assert sorted(_files(root / "docs")) == sorted(n for n in _tracked("docs") if not n.endswith(".py"))


def _collection_playbook(installed, name, *args):
    """`ansible-playbook sglang.longctx.<name>` from another project, with an inventory of one server that holds a
    misspelled knob."""
    inventory = installed["work"] / "hosts.yml"
    inventory.write_text("all:\n  children:\n    sglang_servers:\n      hosts:\n        gpu1:\n"
                         "          ansible_connection: local\n          sglang_context_targt: 250000\n")
    return subprocess.run([os.path.join(BIN, "ansible-playbook"), "-i", str(inventory), "sglang.longctx." + name,
                           *args], cwd=installed["work"], env=_clean_env(ANSIBLE_CONFIG=installed["config"]),
                          capture_output=True, text=True, timeout=300)


def test_the_collections_check_phase_refuses_a_misspelled_knob_before_anything_connects(installed):
    result = _collection_playbook(installed, "check")
    assert result.returncode != 0
    assert "gpu1: unknown variable sglang_context_targt" in result.stdout, result.stdout + result.stderr
    assert "Did you mean sglang_context_target?" in result.stdout


@pytest.mark.parametrize("name", ["site", "rollback", "plan"])
def test_the_collections_playbooks_resolve_their_roles_modules_and_filters(installed, name):
    result = _collection_playbook(installed, name, "--list-tasks")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Check the inputs of every host" in result.stdout  # check.yml, imported from the collection's folder
    if name == "site":
        assert "sglang.longctx.sglang : " in result.stdout and "sglang.longctx.sglang_router : " in result.stdout
