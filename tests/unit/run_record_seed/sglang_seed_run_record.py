"""A test double's action (never in action_plugins/): it writes this host's run record as an earlier phase of the
same ansible-playbook run would have left it, so a test can run a part of the role's tasks (rescue.yml's proof and
end) in a real ansible-playbook without the phases before them. ANSIBLE_ACTION_PLUGINS names this folder."""

import os
import sys

from ansible import constants as C
from ansible.plugins.action import ActionBase

sys.path.insert(0, os.path.join(os.path.dirname(os.path.realpath(__file__)), os.pardir, os.pardir, os.pardir, "lib"))

from sglang_state import run_record


class ActionModule(ActionBase):
    _requires_connection = False

    def run(self, tmp=None, task_vars=None):
        run_record.write(run_record.folder_of(C.DEFAULT_LOCAL_TMP), (task_vars or {})["inventory_hostname"],
                         self._task.args["record"])
        return {"changed": False}
