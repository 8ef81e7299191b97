#!/usr/bin/python
"""Ansible module: what an installed runtime sees (torch's CUDA build and GPUs, the custom kernels' imports)."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: sglang_runtime_check
short_description: Check a runtime's torch sees every GPU with a CUDA build of the release, and the kernels import
description:
  - Runs the runtime's own python once (bounded by O(timeout)); each check is caught and reported, so a failing
    import names itself instead of a traceback.
  - Fails with one sentence and its fix when torch does not import, is built for another CUDA major than the SGLang
    release expects, sees fewer GPUs than the plan takes on this host, or a kernel does not import.
  - Changes nothing.
version_added: "1.1.0"
author: sglang-longctx maintainers (!UNKNOWN)
options:
  path:
    description: The runtime's folder (its C(bin/python) is run).
    type: path
    required: true
  gpus:
    description: GPUs SGLang takes on this host (tp x pp x dp over the server's nodes).
    type: int
    required: true
  torch_cuda:
    description: The CUDA version the release's torch is built for (its major must match).
    type: str
    required: true
  torch:
    description: The release's torch version, for the message.
    type: str
    default: ""
  release:
    description: The SGLang release, for the message.
    type: str
    default: ""
  nodes:
    description: The server's nodes, for the message.
    type: int
    default: 1
  imports:
    description: Python modules the custom kernels must provide.
    type: list
    elements: str
    default: []
  timeout:
    description: Seconds the runtime's python may take.
    type: int
    default: 300
notes:
  - Supports check mode (it only reads).
"""

EXAMPLES = r"""
- name: Check the runtime sees the GPUs and the kernels import
  sglang_runtime_check:
    path: /opt/sglang/runtimes/0.5.23-0123456789ab
    gpus: 8
    torch_cuda: "12.9"
    imports: [sgl_kernel]
"""

RETURN = r"""
torch:
  description: torch's version in the runtime.
  returned: success
  type: str
cuda:
  description: The CUDA version torch is built for.
  returned: success
  type: str
gpus:
  description: GPUs torch sees.
  returned: success
  type: int
imports:
  description: Each kernel module and C(ok) or its error.
  returned: always
  type: dict
"""

import json
import os
import subprocess

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.sglang_errors import failures_as_sentences

# Run by the runtime's own python; each check is caught, so one failing import names itself.
SCRIPT = r"""
import importlib, json, sys
out = {"imports": {}}
try:
    import torch
    out.update(torch=torch.__version__, cuda=torch.version.cuda, gpus=torch.cuda.device_count())
except Exception as error:
    out["torch_error"] = "%s: %s" % (type(error).__name__, error)
for name in sys.argv[1:]:
    try:
        importlib.import_module(name)
        out["imports"][name] = "ok"
    except Exception as error:
        out["imports"][name] = "%s: %s" % (type(error).__name__, error)
print(json.dumps(out))
"""


def problem(seen, p):
    """The sentence for what the runtime sees, or None when it sees what the release and the plan need."""
    path = p["path"]
    if "torch_error" in seen:
        return "torch does not import in %s: %s." % (path, seen["torch_error"])
    if str(seen.get("cuda")).split(".", maxsplit=1)[0] != str(p["torch_cuda"]).split(".", maxsplit=1)[0]:
        return ("torch %s is built for CUDA %s, but SGLang %s expects a CUDA %s build (torch %s): something else in "
                "the runtime pinned torch (pin torch in sglang_kernel_wheels: a new package set builds a new runtime)."
                % (seen.get("torch"), seen.get("cuda"), p["release"], p["torch_cuda"], p["torch"]))
    if int(seen.get("gpus") or 0) < p["gpus"]:
        return ("torch sees %s GPU(s) but tp x pp needs %d on this host%s: the driver is not loaded (reboot after a "
                "driver install?), or CUDA_VISIBLE_DEVICES hides them."
                % (seen.get("gpus"), p["gpus"], " (over %d nodes)" % p["nodes"] if p["nodes"] > 1 else ""))
    failed = ["%s: %s" % (name, error) for name, error in (seen.get("imports") or {}).items() if error != "ok"]
    if failed:
        return ("Kernel import(s) failed: %s. A kernel built for another torch or CUDA; rebuild it against this "
                "runtime's torch." % "; ".join(failed))
    return None


def main():
    module = AnsibleModule(argument_spec={
        "path": {"type": "path", "required": True}, "gpus": {"type": "int", "required": True},
        "torch_cuda": {"type": "str", "required": True}, "torch": {"type": "str", "default": ""},
        "release": {"type": "str", "default": ""}, "nodes": {"type": "int", "default": 1},
        "imports": {"type": "list", "elements": "str", "default": []}, "timeout": {"type": "int", "default": 300}},
        supports_check_mode=True)
    with failures_as_sentences(module, "sglang_runtime_check"):
        p = module.params
        python = os.path.join(p["path"], "bin", "python")
        try:
            proc = subprocess.run([python, "-c", SCRIPT] + p["imports"], capture_output=True, text=True,
                                  errors="replace", timeout=p["timeout"], stdin=subprocess.DEVNULL, check=False)
        except subprocess.TimeoutExpired:
            module.fail_json(msg="%s did not answer within %d s (a hung interpreter or file system)"
                             % (python, p["timeout"]))
        except OSError as error:
            module.fail_json(msg="%s cannot run: %s" % (python, error.strerror))
        try:
            seen = json.loads(proc.stdout.strip().splitlines()[-1])
        except (ValueError, IndexError):
            module.fail_json(msg="%s printed no answer (rc %d): %s" % (python, proc.returncode, proc.stderr[-2000:]))
        sentence = problem(seen, p)
        if sentence:
            module.fail_json(msg=sentence, imports=seen.get("imports") or {})
        module.exit_json(changed=False, torch=seen.get("torch"), cuda=seen.get("cuda"), gpus=seen.get("gpus"),
                         imports=seen.get("imports") or {})


if __name__ == "__main__":
    main()
