#!/usr/bin/python
"""Documentation of the sglang_run_report action (action_plugins/sglang_run_report.py): it runs on the controller;
this file is what ansible-doc reads."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: sglang_run_report
short_description: Write this run's report on the controller and return its summary
description:
  - Writes C(<root>/<host>/<UTC timestamp>/report.json) and C(report.html) on the controller (lib/sglang_report) from
    the facts this run's actions kept in its record on the controller (the deploy's boot, plan and calibration,
    the proof's result and level) and O(facts), and returns the run's summary lines from the same report.
  - After a rollback (O(restored)), reads the restored unit and the host's stored calibrations on the host, so that
    the report heads with the state that serves, not the inventory's plan.
  - An action plugin; nothing on the host changes.
  - Every argument is checked first (lib/sglang_report/inputs.py); a wrong one fails the task with a sentence naming
    it, what it is and the fix. It writes only under O(root) - O(host) must be one file name (no C(/), not C(..)),
    and a link or a file where one of its folders goes is refused. O(root) is created when missing, its parent never
    (as the check phase requires of C(sglang_report_dir)).
  - A file read on the host that is not a regular file (a FIFO, a device) or is over 1 MiB is not read, with a
    warning; the report then shows the restored state without it.
version_added: "1.2.0"
author: sglang-longctx maintainers (!UNKNOWN)
options:
  root:
    description: The reports' folder on the controller (sglang_report_dir, else the repository's reports/).
    type: path
    required: true
  host:
    description: The name the report is filed under (the host, or the server's name) - one file name.
    type: str
    required: true
  facts:
    description: What the run measured and decided besides its record (the role gives the calibration's key and the
      boots measured on the host); a fact given here wins over the record's (the plan, the boot, the proof, the
      restarts, the calibrations).
    type: dict
    required: true
  planned:
    description: Whether this run planned (a rollback does not).
    type: bool
    default: false
  inventory_calibration:
    description: The inventory's calibration (sglang_calibration), to say where the one in use came from.
    type: dict
  calibration_fact:
    description: The local fact a measured calibration is stored under (sglang_calibration_fact).
    type: str
  restored:
    description: A rollback's restored entry (its manifest), or null.
    type: dict
  unit_path:
    description: The live unit on the host (read after a rollback).
    type: path
  calibration_path:
    description: The stored calibrations on the host (read after a rollback).
    type: path
"""

EXAMPLES = r"""
- name: Write this run's report on the controller
  sglang_run_report:
    root: /srv/reports
    host: ct200
    facts: "{{ report_facts }}"
  register: report

- name: Summarise the run
  ansible.builtin.debug:
    msg: "{{ report.summary }}"
"""

RETURN = r"""
report:
  description: The report's HTML file on the controller (report.json beside it).
  returned: success
  type: str
summary:
  description: The run's summary, one line each (lib/sglang_report/summary.py).
  returned: success
  type: list
  elements: str
"""
