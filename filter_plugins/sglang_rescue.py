"""Ansible filters over lib/sglang_state/rescue.py (plain Python, tested without Ansible): roles/sglang/tasks/rescue.yml
performs what they decide.

  {{ ansible_failed_result | sglang_failure_reason(ansible_failed_task) }}   the failure in one sentence
  {{ health | sglang_rescue_node(backups, last_proven, run_backup, failure) }}  {failure, healthy, current_proven,
                                                                                 target}: this node's part
  {{ node | sglang_rescue_action(nodes_backups, rolling_back, rescue_from, rollback_on_failure) }}
      the same with its action: kept | none | left | restore | stop
  {{ decision | sglang_rescue_message(facts) }}   the run's last message: the failure, what was done, the journal
  {{ message | sglang_without_journal }}          a failed wait's message without its journal excerpt
"""

import os
import sys

# Ansible loads filter plugins by path, not as a package: the decisions live in lib/, put on the path here.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.realpath(__file__)), os.pardir, "lib"))

import sglang_state  # noqa: E402


def failure_reason(failed_result, failed_task=None):
    return sglang_state.failure_reason(dict(failed_result or {}), dict(failed_task or {}))


def rescue_node(health, backups, last_proven, run_backup, failure=""):
    return sglang_state.rescue_node(dict(health or {}), list(backups or []), last_proven, run_backup, failure)


def rescue_action(node, nodes_backups, rolling_back=False, rescue_from="", rollback_on_failure=False):
    return sglang_state.rescue_action(dict(node), dict(nodes_backups or {}), rolling_back, rescue_from,
                                      rollback_on_failure)


def rescue_message(decision, facts):
    return sglang_state.rescue_message(dict(decision), dict(facts or {}))


def without_journal(message):
    return sglang_state.without_excerpt(message)


class FilterModule:
    def filters(self):
        return {"sglang_failure_reason": failure_reason, "sglang_rescue_node": rescue_node,
                "sglang_rescue_action": rescue_action, "sglang_rescue_message": rescue_message,
                "sglang_without_journal": without_journal}
