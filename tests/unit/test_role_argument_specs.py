"""Each role's defaults/main.yml agrees with its meta/argument_specs.yml (keys and values)."""

import glob
import os

import pytest
import yaml

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ROLES = sorted(os.path.dirname(path) for path in glob.glob(os.path.join(REPO, "roles", "*", "defaults")))


def _load(path):
    with open(path, encoding="utf-8") as handle:
        return yaml.safe_load(handle) or {}


@pytest.mark.parametrize("role", ROLES, ids=os.path.basename)
def test_defaults_match_argument_specs(role):
    defaults = _load(os.path.join(role, "defaults", "main.yml"))
    specs = _load(os.path.join(role, "meta", "argument_specs.yml"))["argument_specs"]
    options = specs["main"]["options"]
    assert sorted(defaults) == sorted(options), "keys differ between defaults/main.yml and argument_specs main"
    for name, option in options.items():
        assert option.get("default") == defaults[name], name
        assert option.get("description"), name
        assert name.startswith(os.path.basename(role) + "_"), "variables are role-prefixed: " + name
