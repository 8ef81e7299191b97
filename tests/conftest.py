"""Put the repository's plain-Python code on the path, as Ansible does for its plugins."""

import os
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
for folder in ("lib", "library", "filter_plugins"):
    path = os.path.join(REPO, folder)
    if path not in sys.path:
        sys.path.insert(0, path)

# Property tests judge results, not speed: no per-example deadline (a loaded CI machine would make them flaky).
from hypothesis import settings  # noqa: E402

settings.register_profile("repo", deadline=None)
settings.load_profile("repo")
