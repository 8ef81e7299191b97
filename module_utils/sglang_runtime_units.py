"""Which runtimes a systemd unit names (library/sglang_runtime.py): the one its ExecStart runs (the runtime serving,
read by state=plan and state=versions), and every one that any word of its Exec lines, its working folder or its
environment could start (kept by state=prune). A runtime is spelled as the runtimes folder lists it, every path
compared after realpath."""

from __future__ import annotations

import os

from ansible.module_utils.sglang_runtime_launcher import LAUNCHER
from ansible.module_utils.sglang_runtime_markers import under
from ansible.module_utils.sglang_unit_exec import (
    environment,
    path_pieces,
    program_words,
    read_unit_file,
    settings,
    startable_paths,
    unit_text,
)


def unit_runtime(unit_path):
    """The runtime folder a unit's ExecStart runs (its program: '<runtime>/bin/sglang-serve', the launcher, or
    '<runtime>/bin/python' in a unit rendered before the launcher, which a store entry may still hold), or None
    (also for a unit that is not a small regular file: a FIFO is not waited on)."""
    try:
        return program_runtime(unit_launcher(unit_path, strict=True))
    except OSError:
        return None


def program_runtime(program):
    """The runtime folder of a unit's program, a `current`-style symbolic link to a runtime read as that runtime."""
    for tail in ("/" + LAUNCHER, "/bin/python"):
        if program and program.endswith(tail):
            return resolved_in_place(os.path.normpath(program[:-len(tail)]))
    return None


def resolved_in_place(folder):
    """A symbolic link to a folder beside it (runtimes/current -> 0.5.23-...) as that folder, spelled with the same
    parent (so that it compares equal to the runtimes folder's entries); any other path as it is."""
    if os.path.islink(folder):
        target = os.path.realpath(folder)
        if os.path.dirname(target) == os.path.realpath(os.path.dirname(folder)):
            return os.path.join(os.path.dirname(folder), os.path.basename(target))
    return folder


def unit_launcher(unit_path, strict=False):
    """The runtime's program the unit runs, or None: in the last ExecStart= systemd keeps that names one (a oneshot's
    later `ExecStart=/bin/true` names none), the first word that is a runtime's launcher or python, wherever it
    stands (after `env A=1`, a wrapper, `sh -c`, `${VAR}` from the unit's environment). strict: a unit that exists
    but cannot be read raises OSError instead of reading as None."""
    try:
        text = unit_text(unit_path)
    except OSError:
        if strict:
            raise
        return None
    if text is None:
        return None
    env = environment(settings(text), read_unit_file)[0]
    for words in reversed(program_words(text, env)):
        for word in words:
            for piece in path_pieces(word):
                if program_runtime(piece):
                    return piece
    return None


def runtime_folder(path, runtimes_dir, legacy=None):
    """The runtime a path lies in, spelled as the prune lists them (<runtimes_dir>/<name>, or legacy), or None.
    Compared after os.path.realpath, folder by folder from the top, so that a runtimes folder reached through a
    symbolic link, or `runtimes/current`, counts as what it points at, while a runtime's own bin/python (a link to
    the host's python) still counts as inside its runtime."""
    root = os.path.realpath(runtimes_dir).rstrip("/") + "/"
    real_legacy = os.path.realpath(legacy) if legacy else None
    parts = os.path.normpath(path).split("/")
    prefixes = ["/".join(parts[:count]) or "/" for count in range(2, len(parts) + 1)]
    for prefix in prefixes:
        real = os.path.realpath(prefix)
        if real.startswith(root):
            return os.path.join(os.path.normpath(runtimes_dir), real[len(root):].split("/", 1)[0])
    if real_legacy and any(under(os.path.realpath(prefix), real_legacy) for prefix in prefixes):
        return os.path.normpath(legacy)
    return None


def unit_runtimes(unit_path, runtimes_dir, legacy=None):
    """(runtimes, problems): every runtime folder (runtime_folder) a word of the unit's commands, its working
    folder or its environment names (module_utils/sglang_unit_exec.py reads them), and sentences naming what could not
    be read when the commands depend on it. OSError when the unit (or a drop-in) exists but cannot be read whole."""
    text = unit_text(unit_path)
    if text is None:
        return set(), []
    paths, problems = startable_paths(text, read_unit_file)
    folders = {runtime_folder(path, runtimes_dir, legacy) for path in paths}
    return folders - {None}, problems
