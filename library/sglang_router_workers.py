#!/usr/bin/python
"""Ansible module: make one worker URL present in, or absent from, a running sglang-router."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: sglang_router_workers
short_description: Add or remove one worker of a running sglang-router through its admin API
description:
  - Talks to the admin API of sglang-router 0.3.2 (the SGLang Model Gateway) - C(GET /workers),
    C(POST /workers), C(GET /workers/{worker_id}), C(DELETE /workers/{worker_id}). The older C(/add_worker),
    C(/remove_worker) and C(/list_workers) routes do not exist in 0.3.2.
  - To list the router's workers without changing them, use C(sglang_router_workers_info).
  - O(state=present) registers O(worker_url) unless the router lists it already, then (O(wait)) waits until the
    router lists it as healthy. The router adds a worker in the background (C(202 Accepted)); an addition
    whose job fails (the worker never answered, for the router's C(--worker-startup-timeout-secs)) fails
    the task with the router's message.
  - O(state=absent) removes every entry of O(worker_url), then (O(wait)) waits until the router no longer lists
    it. From then on the router sends it no new request; requests already sent to it run to their end (seen
    with 0.3.2 - a request in flight when its worker was removed still got its answer). The module cannot see
    those; wait for the worker's own running requests to reach zero before stopping it.
  - URLs are compared without a trailing slash (the router itself does not, so C(http://h:1) and C(http://h:1/)
    would be two workers), and O(worker_url) is registered without one.
  - The router keeps its membership in memory; a restart of the router brings back the list on its command line.
version_added: "1.0.0"
author: sglang-longctx maintainers (!UNKNOWN)
options:
  router_url:
    description: Base URL of the router, e.g. C(http://127.0.0.1:30000).
    type: str
    required: true
  worker_url:
    description: The worker's base URL as the router reaches it, e.g. C(http://10.0.0.1:30000). Required.
    type: str
  state:
    description: C(present) registers the worker, C(absent) removes it.
    type: str
    choices: [present, absent]
    default: present
  admin_api_key:
    description:
      - The bearer token for the admin API - the router's control-plane admin key
        (C(--control-plane-api-keys ...:admin:KEY)).
      - When neither this nor O(admin_api_key_file) gives a key, O(worker_api_key) is sent instead - 0.3.2
        checks its admin API against C(--api-key) when it has no control-plane key - and with no key at all
        nothing is sent.
    type: str
  admin_api_key_file:
    description: A file on the host holding O(admin_api_key) (whitespace around it is dropped; empty means none).
    type: path
  worker_api_key:
    description:
      - The key the workers demand (SGLang's C(--api-key)); sent in the C(POST /workers) body so that the router
        authenticates to the new worker. Without it, a router started with C(--api-key) adds the worker
        without a key (0.3.2 warns C(Adding worker ... without API key)) and the worker refuses its requests.
    type: str
  worker_api_key_file:
    description: A file on the host holding O(worker_api_key) (whitespace around it is dropped; empty means none).
    type: path
  wait:
    description: Wait until the worker is healthy in the router (present) or no longer listed (absent).
    type: bool
    default: true
  timeout:
    description: Seconds O(wait) may take before the task fails.
    type: int
    default: 600
  request_timeout:
    description: Seconds one HTTP request to the router may take.
    type: float
    default: 10
notes:
  - Supports check mode - it reads the router's list and reports what it would change.
  - The keys are never logged or returned.
"""

EXAMPLES = r"""
- name: Take a replica out of the router before restarting it
  sglang_router_workers:
    router_url: http://127.0.0.1:30000
    worker_url: http://10.0.0.1:30000
    state: absent
    admin_api_key_file: /etc/sglang-router/admin-api-key
  delegate_to: router-1

- name: Put it back once it serves again, and wait until the router calls it healthy
  sglang_router_workers:
    router_url: http://127.0.0.1:30000
    worker_url: http://10.0.0.1:30000
    state: present
    admin_api_key_file: /etc/sglang-router/admin-api-key
    worker_api_key_file: /etc/sglang-router/api-key
    timeout: 900
  delegate_to: router-1
"""

RETURN = r"""
workers:
  description:
    - The router's workers after the task (in check mode - as they are), as C(GET /workers) gives them - C(id),
      C(url), C(is_healthy), C(model_id), C(worker_type), C(connection_mode), C(load), C(priority), C(cost),
      C(metadata) ...
  type: list
  elements: dict
  returned: always
urls:
  description: The C(url) of every entry of RV(workers), in the router's order.
  type: list
  elements: str
  returned: always
worker:
  description: The entry of O(worker_url) in RV(workers); null when it is not listed (absent).
  type: dict
  returned: always
worker_url:
  description: O(worker_url) without a trailing slash, as compared and registered.
  type: str
  returned: always
"""

import time
from urllib.parse import quote

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.sglang_errors import failures_as_sentences
from ansible.module_utils.sglang_http import without_credentials
from ansible.module_utils.sglang_router import (
    ROUTER_EXCLUSIVE,
    ROUTER_OPTIONS,
    RouterError,
    check_url,
    connect,
    entries_of,
    hide_url_credentials,
    normalize,
)


def wait_until(deadline, predicate):
    """Call predicate() until it returns a true value or the deadline passes; return its last value."""
    pause = 0.2
    while True:
        result = predicate()
        if result or time.monotonic() >= deadline:
            return result
        time.sleep(min(pause, max(0.0, deadline - time.monotonic())))
        pause = min(pause * 2, 2.0)


def ensure_present(router, url, worker_key, wait, timeout, check_mode):
    """(changed, workers, entry)."""
    workers = router.workers()
    found = entries_of(workers, url)
    changed = not found
    worker_id = found[0].get("id") if found else None
    if changed:
        if check_mode:
            return True, workers, None
        body = {"url": url}
        if worker_key:
            body["api_key"] = worker_key
        status, answer = router.call("POST", "/workers", body)
        if status not in (200, 201, 202):
            raise RouterError("POST %s/workers for %s answered HTTP %d: %s" % (router.url, url, status, answer))
        worker_id = answer.get("worker_id") if isinstance(answer, dict) else None
    if not wait:
        workers = router.workers()
        return changed, workers, (entries_of(workers, url) or [None])[0]
    state = {}

    def healthy():
        state["workers"] = router.workers()
        entry = (entries_of(state["workers"], url) or [None])[0]
        state["entry"] = entry
        if entry is None and worker_id:
            job = router.job(worker_id).get("job_status") or {}
            state["job"] = job
            if job.get("status") == "failed":
                raise RouterError("the router could not add %s: %s" % (url, job.get("message")))
        return entry is not None and entry.get("is_healthy") is True

    if not wait_until(time.monotonic() + timeout, healthy):
        entry, job = state.get("entry"), state.get("job") or {}
        where = ("listed but unhealthy" if entry else "not listed yet (its job: %s)" % (job.get("status") or "unknown"))
        raise RouterError("%s is %s in the router after %d s%s. The router keeps trying for its "
                          "--worker-startup-timeout-secs; check that the worker answers its health check at %s"
                          % (url, where, timeout, " (registered by this task)" if changed else "", url))
    return changed, state["workers"], state["entry"]


def ensure_absent(router, url, wait, timeout, check_mode):
    """(changed, workers, None)."""
    workers = router.workers()
    found = entries_of(workers, url)
    if not found:
        return False, workers, None
    if check_mode:
        return True, workers, None
    for entry in found:
        status, answer = router.call("DELETE", "/workers/" + quote(str(entry.get("id", "")), safe=""))
        # 404: gone meanwhile (a health check or another caller removed it), which is what was asked.
        if status not in (200, 202, 204, 404):
            raise RouterError("DELETE %s/workers/%s (%s) answered HTTP %d: %s"
                              % (router.url, entry.get("id"), url, status, answer))
    if not wait:
        return True, router.workers(), None
    state = {}

    def gone():
        state["workers"] = router.workers()
        return not entries_of(state["workers"], url)

    if not wait_until(time.monotonic() + timeout, gone):
        raise RouterError("the router still lists %s %d s after its removal was accepted" % (url, timeout))
    return True, state["workers"], None


def run(params, check_mode, secret=None):
    """The module's result for its parameters; RouterError on any failure. secret(value) is told every key read
    from a file, and every password given in a URL, so that Ansible masks it wherever it would appear in the output
    (as no_log does for the options)."""
    hide_url_credentials(params, secret)
    state = params["state"]
    if not params["worker_url"]:
        raise RouterError("state=%s needs worker_url (the worker's base URL, e.g. http://10.0.0.1:30000)" % state)
    url = normalize(params["worker_url"])
    check_url("worker_url", url, ("http", "https", "grpc"))
    if params["timeout"] < 0:
        raise RouterError("timeout must be >= 0 (got %s)" % params["timeout"])
    router, worker_key = connect(params, secret)
    if state == "present":
        changed, workers, entry = ensure_present(router, url, worker_key, params["wait"], params["timeout"],
                                                 check_mode)
    else:
        changed, workers, entry = ensure_absent(router, url, params["wait"], params["timeout"], check_mode)
    # URLs are compared with their credentials (the router lists a worker as it was registered) and shown without.
    return without_credentials({"changed": changed, "workers": workers, "urls": [w.get("url") for w in workers],
                                "worker": entry, "worker_url": url})


def main():
    module = AnsibleModule(argument_spec=dict(
        ROUTER_OPTIONS,
        worker_url={"type": "str"},
        state={"type": "str", "choices": ["present", "absent"], "default": "present"},
        wait={"type": "bool", "default": True},
        timeout={"type": "int", "default": 600},
    ), supports_check_mode=True, mutually_exclusive=ROUTER_EXCLUSIVE)
    with failures_as_sentences(module, "sglang_router_workers"):
        try:
            result = run(module.params, module.check_mode, module.no_log_values.add)
        except RouterError as error:
            module.fail_json(msg=str(error))
        module.exit_json(**result)


if __name__ == "__main__":
    main()
