"""The URLs and paths one host's task needs of another host (lib/sglang_checks/urls.py, plain Python).

  {{ sglang_router_host | sglang_router_endpoint(sglang_router_port, sglang_router_service_name) }}
      {url, service, unit, etc, api_key_file, admin_api_key_file} of a router host (the sglang_router role's
      own tasks and its membership entry point, for every router a replica is in)
  {{ ansible_host | default(inventory_hostname) | sglang_worker_url(sglang_port) }}
      a replica as its routers list it (the sglang role for itself, the sglang_router role for its boot list)
"""

import os
import sys

# Ansible loads filter plugins by path, not as a package: the derivations live in lib/, put on the path here.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.realpath(__file__)), os.pardir, "lib"))

from sglang_checks import urls


class FilterModule:
    def filters(self):
        return {
            "sglang_router_endpoint": urls.router_endpoint,
            "sglang_worker_url": urls.worker_url,
        }
