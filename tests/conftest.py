"""Put the repository's plain-Python code on the path, as Ansible does for its plugins."""

import os
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
for folder in ("lib", "library", "filter_plugins"):
    path = os.path.join(REPO, folder)
    if path not in sys.path:
        sys.path.insert(0, path)
