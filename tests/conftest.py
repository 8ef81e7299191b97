"""Put the repository's plain-Python code on the path, as Ansible does for its plugins."""

import os
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
for folder in ("lib", "library", "filter_plugins"):
    path = os.path.join(REPO, folder)
    if path not in sys.path:
        sys.path.insert(0, path)

# module_utils/ is where Ansible finds the modules' shared code (ansible.cfg `module_utils`): modules import it as
# ansible.module_utils.sglang_*, which the tests resolve the same way by adding the folder to that package's path.
import ansible.module_utils  # noqa: E402

if os.path.join(REPO, "module_utils") not in ansible.module_utils.__path__:
    ansible.module_utils.__path__.append(os.path.join(REPO, "module_utils"))
# ... and the modules the tests run as child processes (python library/x.py args.json) find it too.
_CHILD_PATH = os.path.join(REPO, "tests", "module_utils_path")
if _CHILD_PATH not in os.environ.get("PYTHONPATH", "").split(os.pathsep):
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (_CHILD_PATH, os.environ.get("PYTHONPATH")) if p)

# Property tests judge results, not speed: no per-example deadline (a loaded CI machine would make them flaky).
from hypothesis import settings  # noqa: E402

settings.register_profile("repo", deadline=None)
settings.load_profile("repo")


@pytest.fixture(autouse=True)
def _own_run_records(tmp_path_factory, monkeypatch):
    """Each test's run records in a folder of its own: the phase actions keep them in Ansible's local temporary
    folder of the run (lib/sglang_state/run_record.py), which in a test process is one folder for every test."""
    from ansible import constants

    monkeypatch.setattr(constants, "DEFAULT_LOCAL_TMP", str(tmp_path_factory.mktemp("ansible-local")))
