"""The API key set for this scenario (molecule/shared/group_vars/all/simulated_ct200.yml: sglang_api_key) leaves
no trace in the Debian 12 instance's journal (systemd 252: no LogFilterPatterns=) or in any process's command
line, although the SGLang double logs its server_args line with api_key as SGLang 0.5.23 does
(entrypoints/engine.py): the unit's launcher rewrites the value (roles/sglang/templates/sglang.service.j2)."""

import os

import yaml

VARS = os.path.join(os.environ["MOLECULE_PROJECT_DIRECTORY"], "molecule", "shared", "group_vars", "all",
                    "simulated_ct200.yml")
with open(VARS, encoding="utf-8") as _handle:
    KEY = yaml.safe_load(_handle)["sglang_api_key"]


def test_the_key_is_set_and_served(host):
    assert len(KEY) >= 8
    assert KEY in host.file("/etc/sglang/sglang.yaml").content_string  # so that its absence below means something


def test_the_journal_holds_the_start_up_line_but_not_the_key(host):
    journal = host.run("journalctl --no-pager -o cat").stdout
    lines = [line for line in journal.splitlines() if "server_args=" in line]
    assert lines and all("'api_key': '<redacted>'" in line for line in lines), lines[:1]
    assert KEY not in journal


def test_no_process_argument_holds_the_key(host):
    cmdlines = host.run("for f in /proc/[0-9]*/cmdline; do tr '\\0' ' ' < $f; echo; done").stdout
    assert "bin/sglang-serve" in cmdlines  # SGLang is running (its runtime's launcher), and was read
    assert KEY not in cmdlines
