"""Stands in for ansible-test's pip bootstrap script (get-pip.py from ci-files.testing.ansible.com, which this
network cannot reach): the Python's own ensurepip, then pip installs what ansible-test asked for (pip==24.2)
from the package index. tests/sanity/run.sh puts it where ansible-test looks for its cached copy."""

import subprocess
import sys

# get-pip.py's own switches, which pip install does not know.
GET_PIP_ONLY = {"--no-setuptools", "--no-wheel"}

subprocess.check_call([sys.executable, "-m", "ensurepip", "--default-pip"], stdout=subprocess.DEVNULL)
subprocess.check_call([sys.executable, "-m", "pip", "install", "--quiet"]
                      + [arg for arg in sys.argv[1:] if arg not in GET_PIP_ONLY])
