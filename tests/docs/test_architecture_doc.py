"""docs/architecture.md names only paths that exist, and names every module, playbook, role and lib/ package, so
that it cannot go stale the way docs/layout.md did (four modules, seven filter files and three packages missing)."""

import glob
import os
import re

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DOC = os.path.join(REPO, "docs", "architecture.md")
# A code span that looks like a repository path: a folder with a slash, or a file with an extension.
PATH = re.compile(r"`([A-Za-z0-9_.][A-Za-z0-9_./-]*(?:/|\.(?:py|yml|md|cfg|j2)))`")


def _text():
    with open(DOC, encoding="utf-8") as handle:
        return handle.read()


def named_paths(text):
    return sorted({match.rstrip("/") for match in PATH.findall(text) if "/" in match or "." in match})


def test_the_pattern_finds_paths_and_only_paths():
    assert named_paths("`lib/sglang_state/` and `site.yml`, not `sglang_*` nor `{node: x}`") == [
        "lib/sglang_state", "site.yml"]


def test_every_path_it_names_exists():
    paths = named_paths(_text())
    assert len(paths) > 30
    missing = [path for path in paths if not os.path.exists(os.path.join(REPO, path))]
    assert not missing, "docs/architecture.md names paths that do not exist: %s" % missing


def test_it_names_every_module_playbook_role_and_package():
    text = _text()
    wanted = [os.path.relpath(path, REPO) for path in sorted(glob.glob(os.path.join(REPO, "library", "*.py")))
              + sorted(glob.glob(os.path.join(REPO, "playbooks", "*.yml")))]
    wanted += ["roles/%s" % name for name in sorted(os.listdir(os.path.join(REPO, "roles")))]
    wanted += ["lib/%s/" % name for name in sorted(os.listdir(os.path.join(REPO, "lib")))
               if os.path.isfile(os.path.join(REPO, "lib", name, "__init__.py"))]
    unnamed = [path for path in wanted if "`%s" % path not in text]
    assert not unnamed, "docs/architecture.md does not name: %s" % unnamed
