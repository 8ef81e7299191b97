"""Ansible filter over the controller-side value checks in lib/sglang_checks/ (plain Python, tested without
Ansible).

  {{ variables | sglang_value_refusals(inventory_hostname) }}   [one sentence per bad value]
"""

import os
import sys

# Ansible loads filter plugins by path, not as a package: the checks live in lib/ and are put on the path here.
# (This file is not named sglang_checks.py: with filter_plugins/ on sys.path, as tests/conftest.py puts it, that
# name would hide the lib/sglang_checks package.)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.realpath(__file__)), os.pardir, "lib"))

from ansible.errors import AnsibleFilterError  # noqa: E402
from sglang_checks import values  # noqa: E402


def value_refusals(variables, host):
    """One sentence per bad value of `host`'s variables (a mapping, e.g. the role's knobs after defaults)."""
    try:
        return values.refusals(str(host), dict(variables))
    except Exception as error:  # a bug here must still end in one sentence, not a traceback
        raise AnsibleFilterError("%s: the value checks (lib/sglang_checks/values.py) failed: %s: %s"
                                 % (host, type(error).__name__, error)) from None


class FilterModule:
    def filters(self):
        return {"sglang_value_refusals": value_refusals}
