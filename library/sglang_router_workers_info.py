#!/usr/bin/python
"""Ansible module: list the workers of a running sglang-router, changing nothing."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: sglang_router_workers_info
short_description: List the workers of a running sglang-router through its admin API
description:
  - Reads C(GET /workers) of sglang-router 0.3.2 (the SGLang Model Gateway). C(sglang_router_workers) adds and
    removes a worker.
  - Changes nothing.
version_added: "1.2.0"
author: sglang-longctx maintainers (!UNKNOWN)
options:
  router_url:
    description: Base URL of the router, e.g. C(http://127.0.0.1:30000).
    type: str
    required: true
  admin_api_key:
    description:
      - The bearer token for the admin API - the router's control-plane admin key.
      - Without it (nor O(admin_api_key_file)), O(worker_api_key) is sent instead, as 0.3.2 checks its admin API
        against C(--api-key) when it has no control-plane key.
    type: str
  admin_api_key_file:
    description: A file on the host holding O(admin_api_key) (whitespace around it is dropped; empty means none).
    type: path
  worker_api_key:
    description: The router's C(--api-key), sent when no admin key is given.
    type: str
  worker_api_key_file:
    description: A file on the host holding O(worker_api_key).
    type: path
  request_timeout:
    description: Seconds one HTTP request to the router may take.
    type: float
    default: 10
notes:
  - Supports check mode.
  - The keys are never logged or returned.
"""

EXAMPLES = r"""
- name: List the router's workers
  sglang_router_workers_info:
    router_url: http://127.0.0.1:30000
    admin_api_key_file: /etc/sglang-router/admin-api-key
  register: router
"""

RETURN = r"""
workers:
  description: The router's workers as C(GET /workers) gives them - C(id), C(url), C(is_healthy), C(model_id) ...
  type: list
  elements: dict
  returned: always
urls:
  description: The C(url) of every entry of RV(workers), in the router's order.
  type: list
  elements: str
  returned: always
"""

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.sglang_errors import failures_as_sentences
from ansible.module_utils.sglang_http import without_credentials
from ansible.module_utils.sglang_router import ROUTER_EXCLUSIVE, ROUTER_OPTIONS, RouterError, connect


def main():
    module = AnsibleModule(argument_spec=dict(ROUTER_OPTIONS), supports_check_mode=True,
                           mutually_exclusive=ROUTER_EXCLUSIVE)
    with failures_as_sentences(module, "sglang_router_workers_info"):
        try:
            workers = connect(module.params, module.no_log_values.add)[0].workers()
        except RouterError as error:
            module.fail_json(msg=str(error))
        # a worker registered with credentials in its URL is listed so by the router: shown without them
        module.exit_json(**without_credentials({"changed": False, "workers": workers,
                                                "urls": [w.get("url") for w in workers]}))


if __name__ == "__main__":
    main()
