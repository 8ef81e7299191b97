"""Every module, filter and callback of the repository renders in ansible-doc with the repository's ansible.cfg:
no filter listed UNDOCUMENTED, every documented option a parameter the plugin takes, nothing printed as a warning."""

import glob
import inspect
import json
import os
import re
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.dirname(sys.executable)
sys.path.insert(0, os.path.join(REPO, "filter_plugins"))


def _filter_functions():
    """Every filter of every plugin file in filter_plugins/, by name."""
    import importlib
    functions = {}
    for path in sorted(glob.glob(os.path.join(REPO, "filter_plugins", "*.py"))):
        functions.update(importlib.import_module(os.path.basename(path)[:-3]).FilterModule().filters())
    return functions



MODULES = sorted(os.path.basename(p)[:-3] for p in glob.glob(os.path.join(REPO, "library", "*.py")))
FILTERS = sorted(_filter_functions())
CALLBACKS = sorted(os.path.basename(p)[:-3] for p in glob.glob(os.path.join(REPO, "callback_plugins", "*.py")))


# ansible-core 2.21's listing warns about its own internal collection (ansible._protomatter has no MANIFEST.json),
# with any configuration or none: that one warning is Ansible's, not the repository's (make core-next).
ANSIBLES_OWN = re.compile(r"^\[WARNING\]: Collection at '[^']*/ansible/_internal/ansible_collections/ansible/"
                          r"_protomatter' does not have a MANIFEST\.json file, nor has it galaxy\.yml: "
                          r"cannot detect version\.\n", re.M)


def ansible_doc(*args):
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg"), ANSIBLE_NOCOLOR="1")
    proc = subprocess.run([os.path.join(BIN, "ansible-doc"), *args], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=120)
    stderr = ANSIBLES_OWN.sub("", proc.stderr)
    assert proc.returncode == 0 and "WARNING" not in stderr and "ERROR" not in stderr, proc.stderr
    return proc.stdout


def test_no_filter_is_undocumented():
    listing = ansible_doc("-t", "filter", "-l")
    ours = [line for line in listing.splitlines() if "sglang" in line]
    assert sorted(line.split()[0].rsplit(".", 1)[-1] for line in ours) == FILTERS
    assert not [line for line in ours if "UNDOCUMENTED" in line]


@pytest.mark.parametrize("kind, names", [("filter", FILTERS), ("module", MODULES), ("callback", CALLBACKS)])
def test_every_plugin_renders(kind, names):
    docs = json.loads(ansible_doc("-t", kind, "--json", *names))
    assert sorted(name.rsplit(".", 1)[-1] for name in docs) == names
    for name, doc in docs.items():
        assert doc["doc"]["short_description"] and doc["doc"]["description"], name
        if kind != "callback":
            assert doc["examples"], name


def test_filter_options_are_the_functions_parameters():
    docs = {name.rsplit(".", 1)[-1]: doc for name, doc in
            json.loads(ansible_doc("-t", "filter", "--json", *FILTERS)).items()}
    for name, function in _filter_functions().items():
        documented = docs[name]["doc"]["options"]
        # sglang_kv's filters wrap the planner's function; the others are the functions themselves
        target = function.__closure__[0].cell_contents if function.__closure__ else function
        taken = list(inspect.signature(target).parameters)
        # The value piped into the filter is _input; the rest are its arguments, by the function's own names.
        assert "_input" in documented and set(documented) - {"_input"} == set(taken[1:]), (name, taken)
