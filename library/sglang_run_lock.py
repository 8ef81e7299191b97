#!/usr/bin/python
"""One run at a time changes a host: a lease record that spans a whole ansible-playbook run.

Why a lease and not an flock: Ansible runs each task as its own process on the host, so no process lives as long as
the run and an flock would be released after every task. The record (<dir>/.run-lock.json) is the lock; a short
flock (<dir>/.run-lock) only makes each read-decide-write of it atomic, and the record is replaced by a rename, so a
kill leaves the old record or the new one, never half of one.

Why these staleness rules: a run that was killed cannot release its record, so another run must be able to take it
over, yet a live run must never lose it. The boot id is not a rule by itself: the driver role reboots the host in
the middle of the holder's run, and that run must keep its lock. The record is stale when
  - it was not renewed for `lease` seconds (the holder renews it at each phase; the lease is longer than any single
    step), timed on the host's uptime clock, which no one sets: a wall clock jump forward takes no live run's lock
    (module_utils/sglang_run_lease.py stale_reason has the rule for a renewal on an earlier boot), or
  - the caller names its run id in take_over: the action plugin does that only when the holder ran on the same
    controller and its ansible-playbook process is gone (or its pid now belongs to another process).
The folder must be one only root (the user the run runs as) can change, or the lock is refused by name: another
user could otherwise write a record that refuses every run, or remove a live run's.
"""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: sglang_run_lock
short_description: Take, renew or release the host's run lock (one ansible-playbook run at a time changes the host)
description:
  - A lease record in C(dir) naming the run that holds it (run id, play, controller host, pid, user, start time,
    the host's boot id and uptime at the renewal). Taking it again with the same run id renews it, across the
    driver's reboot too.
  - A second run waits up to C(wait) seconds, then fails with a sentence naming the holder.
  - A record not renewed for C(lease) seconds (timed on the host's uptime clock, so a wall clock jump takes no live
    run's lock), or the run named by C(take_over), is stale and is taken over; the new record names the run it
    replaced (C(took_over)), whose release then fails, naming the run that took it. A renewal time that is not a
    finite number, or one far in the future, is stale too, never held for good.
  - A record it did not write (not JSON, no run id, over 4 MiB) is refused by name, never taken as no lock.
  - Never reports changed, the lock's own record is not a change of the host's state (a re-run stays changed=0).
  - The action plugin of the same name fills C(run_id) and C(holder) from the controller; call it, not this
    module, from a play. It answers a renewal within 1/20 of the lease after this run's last one, and a release
    after this run's own release, from what the module told it earlier in the run, without a trip to the host (the
    record still names this run for at least 19/20 of the lease); the first take and the first release always reach
    the host.
options:
  state:
    description:
      - C(acquired) takes or renews the lock; C(released) gives this run's lock back.
      - A release leaves another run's lock as it is and succeeds (this run holds nothing to give back), unless that
        run took this one's lock over as stale, then it fails, naming it (both may have changed the host).
    type: str
    choices: [acquired, released]
    default: acquired
  dir:
    description:
      - The folder of the lock's files (the backup store's folder, created mode 0700 when missing).
      - An absolute path in its plain form, owned by the user the module runs as, not writable by group or others,
        not a symbolic link, and in folders only root or that user can change; otherwise refused by name.
    type: path
    required: true
  run_id:
    description: This ansible-playbook run's id (controller host, its pid and the start time of that process).
    type: str
    required: true
  holder:
    description: What a refusal says about this run (play, controller, pid, user, started).
    type: dict
    default: {}
  wait:
    description: Seconds to wait for another run's lock before failing.
    type: int
    default: 600
  lease:
    description: Seconds after its last renewal when another run's record is stale (at least 60).
    type: int
    default: 21600
  take_over:
    description: The run id of a holder known to be gone; taken over at once while the record is still that run's.
    type: str
    default: ""
author: sglang-longctx maintainers (!UNKNOWN)
"""

EXAMPLES = r"""
- name: Take the host's run lock (the action plugin fills run_id and holder)
  sglang_run_lock:
    dir: /var/backups/sglang
    wait: 600

- name: Give it back
  sglang_run_lock:
    dir: /var/backups/sglang
    state: released
"""

RETURN = r"""
holder:
  description: The record now in place (this run's after acquired, another run's after a release that left it, null
    after a release), or the other run's when refused.
  returned: always
  type: dict
taken_over:
  description: The stale record this run replaced, or null.
  returned: success
  type: dict
taken_over_reason:
  description: Why the record this run replaced was stale, or null.
  returned: success
  type: str
waited:
  description: Seconds this run waited for the lock.
  returned: success
  type: float
remembered:
  description:
    - True when the action answered on the controller, without a trip to the host - a renewal within 1/20 of the
      lease after this run's own (same folder, wait and lease), or a release after this run's own release.
  returned: when answered on the controller
  type: bool
"""

import os
import time

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.sglang_errors import failures_as_sentences
from ansible.module_utils.sglang_run_lease import MIN_LEASE, LeaseError, LeaseHeld, acquire, release


def run(module):
    """The acquire or release asked for; every refusal a sentence."""
    params = module.params
    if not params["run_id"].strip():
        module.fail_json(changed=False,
                         msg="sglang_run_lock: run_id is empty: the action plugin sets it from the controller.")
    if params["wait"] < 0:
        module.fail_json(changed=False, msg="sglang_run_lock: wait is %s, not a number of seconds (0 or more): "
                         "set sglang_run_lock_wait to 0 or more." % params["wait"])
    if params["lease"] < MIN_LEASE:  # a lease of 0 would let the next run take a live run's lock at once
        module.fail_json(changed=False, msg="sglang_run_lock: lease is %s s, less than the %d s a run lock's lease "
                         "must be (longer than any phase of a run): set sglang_run_lock_lease to %d or more."
                         % (params["lease"], MIN_LEASE, MIN_LEASE))
    started = time.monotonic()
    try:
        if params["state"] == "released":
            record = release(params["dir"], params["run_id"], check=module.check_mode)
            module.exit_json(changed=False, holder=record, taken_over=None, taken_over_reason=None, waited=0.0)
        record, stale, why = acquire(params["dir"], params["run_id"], params["holder"], params["wait"],
                                     params["lease"], params["take_over"], check=module.check_mode)
        module.exit_json(changed=False, holder=record, taken_over=stale, taken_over_reason=why,
                         waited=round(time.monotonic() - started, 1))
    except LeaseHeld as busy:
        module.fail_json(changed=False, msg=str(busy), holder=busy.record, busy=True)
    except LeaseError as error:
        module.fail_json(changed=False, msg=str(error))
    except (OSError, ValueError) as error:
        module.fail_json(changed=False,
                         msg="sglang_run_lock: the lock in %s cannot be used: %s" % (params["dir"], error))


def main():
    module = AnsibleModule(argument_spec={
        "state": {"type": "str", "choices": ["acquired", "released"], "default": "acquired"},
        "dir": {"type": "path", "required": True},
        "run_id": {"type": "str", "required": True},
        "holder": {"type": "dict", "default": {}},
        "wait": {"type": "int", "default": 600},
        "lease": {"type": "int", "default": 21600},
        "take_over": {"type": "str", "default": ""},
    }, supports_check_mode=True)
    with failures_as_sentences(module, "sglang_run_lock"):
        run(module)


if __name__ == "__main__":
    os.umask(0o077)  # the record names a user and a controller: readable by root only
    main()
