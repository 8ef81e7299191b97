"""The launcher a runtime's unit runs, <runtime>/bin/sglang-serve (library/sglang_runtime.py writes it at
state=complete, and at state=plan into a complete runtime that lacks it): its text, what differs from it on the host,
and writing it when something does."""

from __future__ import annotations

import os

from ansible.module_utils.sglang_files import NotPlainFile, read_plain, write_atomic
from ansible.module_utils.sglang_runtime_refusal import RuntimeError_

# The unit's ExecStart names this file, so `systemctl show sglang -p ExecStart` (and `ps`) say what runs and from
# which runtime; before it, a one-line `python -c` program stood in ExecStart. It is the runtime's, not the role's:
# a restored unit names its own runtime's launcher, so going back restores the launcher with the code.
LAUNCHER = os.path.join("bin", "sglang-serve")
LAUNCHER_MODE = 0o755
# Linux reads at most 127 bytes of a #! line before 5.1 (BINPRM_BUF_SIZE 128) and splits it at whitespace: a longer
# or spaced python path is started through /bin/sh instead (as pip's script launchers do).
SHEBANG_MAX = 127
# Why the body does what it does (SGLang's own code, read from the wheels):
# - SGLang logs its server_args at INFO once it starts, api_key in clear (0.5.9 entrypoints/engine.py:156 and :1031
#   `logger.info(f"{server_args=}")`; 0.5.23 entrypoints/engine.py:311 and :1185, whose _server_args_for_logging
#   redacts only the watermark's secrets), and the key has no environment variable (0.5.23
#   arg_groups/fields/serving.py: api_key is a plain field). systemd 252 (Debian 12) has no LogFilterPatterns=, so
#   the key would reach the journal.
# - The key itself is never an argument: the unit passes it in the --config file (root:<user> 0640).
LAUNCHER_BODY = r'''# sglang-serve: how the sglang systemd unit starts SGLang from this runtime (ExecStart names it).
# Written by the sglang role (library/sglang_runtime.py); it is the same in every runtime except the python above.
# It runs SGLang's own `python -m sglang.launch_server <the unit's arguments>` (runpy, as -m does), after a
# log-record factory that rewrites the value of every *api_key*, *password* and *secret* field in a log record's
# message to '<redacted>': SGLang logs its server_args line with the API key in clear (0.5.9 and 0.5.23
# entrypoints/engine.py), and systemd 252 cannot filter the journal. The line stays, without the key. It is logged
# by this process; the schedulers and the detokenizer (spawned, without this factory) never log it.
# The key is never an argument here: it is in the unit's --config file.
import logging
import re
import runpy
import sys

SECRET = re.compile(r"""(\w*(?:api_key|password|secret)\w*'?(?:: |=))('(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")""")
make_record = logging.getLogRecordFactory()


def redacting_record(*args, **kwargs):
    record = make_record(*args, **kwargs)
    if isinstance(record.msg, str):  # SGLang's line is an f-string: the whole text is the record's msg
        record.msg = SECRET.sub(r"\1'<redacted>'", record.msg)
    return record


logging.setLogRecordFactory(redacting_record)
# The import path `python -c` (this launcher's earlier form) and `python -m` start with: the working directory
# first, not this script's bin/ folder.
sys.path[0] = ""
runpy.run_module("sglang.launch_server", run_name="__main__", alter_sys=True)
'''


def launcher_text(runtime):
    """The launcher's text for a runtime folder: #! its own bin/python, then LAUNCHER_BODY."""
    python = os.path.join(os.path.normpath(runtime), "bin", "python")
    if len("#!" + python) <= SHEBANG_MAX and not any(c.isspace() for c in python):
        return "#!%s\n%s" % (python, LAUNCHER_BODY)
    if any(c in python for c in "\"\\$`'\n"):
        raise RuntimeError_("The runtime folder %r holds a quote, $, ` or \\: its launcher cannot name its python. "
                            "Give sglang_runtimes_dir a plain path." % runtime)
    # sh runs the second line (python's string literal) and execs python on this file; python reads the rest
    return "#!/bin/sh\n'''exec' \"%s\" \"$0\" \"$@\"\n' '''\n%s" % (python, LAUNCHER_BODY)


def launcher_owner():
    """The owner a written launcher has: root's when the module runs as root (as the role runs it)."""
    return (0, 0) if os.geteuid() == 0 else (os.geteuid(), os.getegid())


def launcher_differences(path, text, owner):
    """What differs between the file at path and the launcher it should be: a list of 'missing', 'not a file',
    'content', 'mode', 'owner' (empty when it is the launcher)."""
    try:
        status = os.lstat(path)
    except FileNotFoundError:
        return ["missing"]
    try:
        held = read_plain(path)
    except NotPlainFile:
        return ["not a file"]
    found = []
    if held != text.encode("utf-8"):
        found.append("content")
    if status.st_mode & 0o7777 != LAUNCHER_MODE:
        found.append("mode")
    if (status.st_uid, status.st_gid) != tuple(owner):
        found.append("owner")
    return found


def ensure_launcher(runtime, check_mode=False):
    """Write the runtime's launcher when it is missing or differs (content, mode 0755, root's): True when it did
    (or would, in check mode). A runtime without its bin/python is refused: it is not one to launch."""
    if not os.path.isfile(os.path.join(runtime, "bin", "python")):
        raise RuntimeError_("%s/bin/python is missing: no launcher is written into a runtime that cannot run" % runtime)
    path = os.path.join(runtime, LAUNCHER)
    text = launcher_text(runtime)
    if not launcher_differences(path, text, launcher_owner()):
        return False
    if not check_mode:
        if os.path.isdir(path) and not os.path.islink(path):
            raise RuntimeError_("%s is a folder: move it away; the unit runs a launcher of that name" % path)
        write_atomic(path, text, LAUNCHER_MODE)  # a root-run module's new file is root's (mkstemp)
    return True
