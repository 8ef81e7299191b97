"""Ansible filter over lib/sglang_report/clock.py: the day-1 clock's marks (plain Python, tested without Ansible).

  {{ _sglang_day1_clock | default({}) | sglang_clock_mark('driver', 'start') }}
  {{ _sglang_day1_clock | sglang_clock_mark('runtime', 'end', note='built') }}
  {{ _sglang_day1_clock | sglang_clock_download(hf_download_result) }}
"""

import os
import sys
import time

from ansible.errors import AnsibleFilterError

# Ansible loads filter plugins by path, not as a package: the clock lives in lib/, put on the path here.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.realpath(__file__)), os.pardir, "lib"))

from sglang_report.clock import ClockError, add_download, mark  # noqa: E402


def clock_mark(clock, phase, edge, note=None):
    """The controller's time now, as the phase's start or end."""
    try:
        return mark(clock, phase, edge, time.time(), note)
    except ClockError as error:
        raise AnsibleFilterError(str(error)) from None


class FilterModule:
    def filters(self):
        return {"sglang_clock_mark": clock_mark, "sglang_clock_download": add_download}
