"""For the tests' child processes only (tests/conftest.py puts this folder on PYTHONPATH): a module run as a plain
script, `python library/x.py args.json` as the tests run it, finds `ansible.module_utils.sglang_*` in the
repository's module_utils/, as Ansible finds it there through ansible.cfg's `module_utils`.

The finder is the last one asked: inside a module Ansible has packed (AnsiballZ), or an ansible-playbook run, the
normal import finds the packed copy first, so a missing `module_utils` setting still fails those tests."""

import importlib.util
import os
import sys

_FOLDER = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "module_utils")
_PACKAGE = "ansible.module_utils."


class _RepositoryModuleUtils:
    @staticmethod
    def find_spec(name, path=None, target=None):
        short = name[len(_PACKAGE):] if name.startswith(_PACKAGE) else ""
        if not short.startswith("sglang_") or "." in short:
            return None
        source = os.path.join(_FOLDER, short + ".py")
        return importlib.util.spec_from_file_location(name, source) if os.path.isfile(source) else None


sys.meta_path.append(_RepositoryModuleUtils())
