#!/usr/bin/python
"""Ansible module: wait until SGLang answers /health_generate, failing fast if its unit dies."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: sglang_wait_ready
short_description: Wait for a starting SGLang service to answer /health_generate, or fail fast when it dies
description:
  - Polls C(/health_generate) (a real one-token generation) until it answers 200.
  - Between polls checks the unit; when it has failed or stopped, fails at once with the last journal lines
    instead of waiting out the timeout. Loading a large model takes minutes; the result says how long.
  - Changes nothing.
version_added: "1.0.0"
author: sglang-longctx maintainers
options:
  url:
    description: Base URL of the server.
    type: str
    default: http://127.0.0.1:30000
  unit:
    description: The systemd unit running it.
    type: str
    default: sglang
  timeout:
    description: Seconds to wait at most.
    type: int
    default: 1800
  api_key:
    description:
      - The server's C(--api-key), sent as a bearer token. SGLang 0.4-0.5 lets /health* through without it;
        sending it keeps the wait working on builds that do not.
    type: str
notes:
  - Supports check mode.
"""

EXAMPLES = r"""
- name: Wait for SGLang
  sglang_wait_ready:
    timeout: 1800
"""

RETURN = r"""
elapsed_s:
  description: Seconds it took to become ready.
  type: float
  returned: success
last_log_line:
  description: The unit's last journal line when it became ready (or failed).
  type: str
  returned: always
"""

import time
from urllib.error import HTTPError, URLError

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.urls import open_url


def main():
    module = AnsibleModule(argument_spec={
        "url": {"type": "str", "default": "http://127.0.0.1:30000"},
        "unit": {"type": "str", "default": "sglang"},
        "timeout": {"type": "int", "default": 1800},
        "api_key": {"type": "str", "no_log": True},
    }, supports_check_mode=True)
    params = module.params
    systemctl, journalctl = module.get_bin_path("systemctl", True), module.get_bin_path("journalctl", True)
    headers = {"Authorization": "Bearer " + params["api_key"]} if params["api_key"] else {}

    def journal_tail(lines):
        _, out, _ = module.run_command([journalctl, "--no-pager", "-o", "cat", "-n", str(lines), "-u", params["unit"]])
        return out.strip()

    def restarts():
        _, out, _ = module.run_command([systemctl, "show", "-p", "NRestarts", "--value", params["unit"]])
        return int(out.strip() or 0) if out.strip().isdigit() else 0

    start = time.monotonic()
    restarts_before = restarts()
    last = "no answer yet"
    while True:
        try:
            open_url(params["url"].rstrip("/") + "/health_generate", headers=headers, timeout=60).read()
            module.exit_json(changed=False, elapsed_s=round(time.monotonic() - start, 1),
                             last_log_line=journal_tail(1))
        except HTTPError as error:
            last = "HTTP %d" % error.code
        except (URLError, OSError) as error:
            last = str(getattr(error, "reason", error))
        _, state, _ = module.run_command([systemctl, "is-active", params["unit"]])
        state = state.strip()
        # Restart=on-failure makes a crashing server look "activating": a new restart counts as a death.
        if state in ("failed", "inactive") or restarts() > restarts_before:
            module.fail_json(msg="%s is %s: SGLang stopped while starting. Its last lines:\n%s"
                                 % (params["unit"], state if state != "activating" else "restarting after a crash",
                                    journal_tail(15)), last_log_line=journal_tail(1))
        if time.monotonic() - start > params["timeout"]:
            module.fail_json(msg="%s did not answer /health_generate within %d s (last: %s; unit %s). Last lines:\n%s"
                                 % (params["url"], params["timeout"], last, state, journal_tail(15)),
                             last_log_line=journal_tail(1))
        time.sleep(2)


if __name__ == "__main__":
    main()
