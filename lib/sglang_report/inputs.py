"""What the report accepts, checked before anything is read or written (issue 36, probe 5 N-S5-10, N-S5-12, N-S5-13).

The role sends well-formed arguments; these checks are for everyone else who calls the action or the CLI (the
collection's users, a playbook of their own): each refusal is a sentence naming the argument, what it is (its type,
or for text that is no secret its value) and the fix, instead of a Python error text. The report writes only under
its root: the host and the stamp are single file names (no '/', not '..', not too long for the file system), the
root's parent must exist (the report creates the root, never the folders above it, as the check phase requires of
sglang_report_dir), and a folder on the way that is a link or not a folder is refused, not followed. Files are read
without blocking on a FIFO or device, and written by rename, so that no special file or link at their path is
opened for writing.
"""

import json
import os
import stat
import tempfile
from collections.abc import Mapping

# The longest file name Linux file systems take (NAME_MAX, in bytes).
NAME_MAX = 255
# report.json and the picture are a few hundred KiB at most; anything larger at their place is not one of ours.
READ_LIMIT = 16 << 20
# The facts the report reads and the shape each must have (None is always accepted: "not recorded").
MAPPING_FACTS = ("sglang_kv_spec", "sglang_kv_plan_result", "sglang_boot", "sglang_smoke", "sglang_ready",
                 "sglang_proof_level", "sglang_proof_record", "calibration_stored", "calibration_in_use",
                 "sglang_day1_clock")
LIST_OF_MAPPINGS_FACTS = ("sglang_measured_boots",)
SCALAR_FACTS = ("sglang_starts", "sglang_corrective_restarts", "sglang_restarted_this_run", "calibration_key")
ROLE_SENDS = "roles/sglang/tasks/report.yml sends it"


class ReportInputError(ValueError):
    """An argument or a folder the report refuses, in a sentence."""


def kind(value):
    """What a value is, in words, without its content (facts may hold anything)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, Mapping):
        return "a mapping of %d keys" % len(value)
    if isinstance(value, str):
        return "a string of %d characters" % len(value)
    if isinstance(value, (list, tuple)):
        return "a list of %d items" % len(value)
    if isinstance(value, (int, float)):
        return "a number"
    return "a %s" % type(value).__name__


def _has_control(text):
    return any(ord(char) < 32 or ord(char) == 127 for char in text)


def file_name_problem(name, suffix=""):
    """Why name (followed by suffix, e.g. '.png') cannot be one file name in a folder, in words ('' when it can)."""
    if not isinstance(name, str):
        return "is %s, not a string" % kind(name)
    if not name:
        return "is empty"
    if name in (".", ".."):
        return "is %r, which names a folder itself, not a file in it" % name
    if "/" in name:
        return "holds a '/', which would make it a path (a report outside its folder), not a name"
    if _has_control(name):
        return "holds a NUL, a line break or another control character"
    size = len((name + suffix).encode("utf-8", "surrogateescape"))
    if size > NAME_MAX:
        return ("is %d bytes long%s, more than the %d a file name may have"
                % (size, " with %r after it" % suffix if suffix else "", NAME_MAX))
    return ""


def check_name(argument, name, fix, suffix=""):
    problem = file_name_problem(name, suffix)
    if problem:
        shown = repr(name[:80]) + ("..." if len(name) > 80 else "") if isinstance(name, str) and name else ""
        raise ReportInputError("%s%s %s: %s" % (argument, " " + shown if shown else "", problem, fix))


def check_path_text(argument, value, fix):
    if not isinstance(value, str) or not value:
        raise ReportInputError("%s is %s, not a path: %s" % (argument, "empty" if value == "" else kind(value), fix))
    if _has_control(value):
        raise ReportInputError("%s holds a NUL, a line break or another control character: %s" % (argument, fix))


def check_facts(facts):
    """The facts: a mapping whose known keys have the shape the report reads."""
    if not isinstance(facts, Mapping):
        raise ReportInputError("facts is %s, not a mapping: give the run's facts as a mapping of fact names to values "
                               "(%s)" % (kind(facts), ROLE_SENDS))
    for name in MAPPING_FACTS:
        if facts.get(name) is not None and not isinstance(facts[name], Mapping):
            raise ReportInputError("facts.%s is %s, not a mapping: give the module's or the fact's result as it was "
                                   "registered, {} or null (%s)" % (name, kind(facts[name]), ROLE_SENDS))
    for name in LIST_OF_MAPPINGS_FACTS:
        value = facts.get(name)
        if value is not None and (not isinstance(value, (list, tuple))
                                  or not all(isinstance(item, Mapping) for item in value)):
            raise ReportInputError("facts.%s is %s, not a list of mappings: give a list of {mem_fraction_static, "
                                   "pool_tokens} or null (%s)" % (name, kind(value), ROLE_SENDS))
    for name in SCALAR_FACTS:
        value = facts.get(name)
        if value is not None and not isinstance(value, (str, int, float, bool)):
            raise ReportInputError("facts.%s is %s, not a number, string or boolean: give it as the run set it (%s)"
                                   % (name, kind(value), ROLE_SENDS))


def _boolean(argument, value):
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "yes", "on", "1", "false", "no", "off", "0"):
        return value.strip().lower() in ("true", "yes", "on", "1")
    raise ReportInputError("%s is %s, not a boolean: give true or false" % (argument, kind(value)))


# The action's arguments (library/sglang_run_report.py documents them) and the check of each.
ARGUMENTS = ("root", "host", "facts", "planned", "inventory_calibration", "calibration_fact", "restored", "unit_path",
             "calibration_path")


def check_args(args):
    """The action's arguments, checked in the order a reader looks for them; returns them with the defaults set.
    ReportInputError names the first argument that is wrong."""
    unknown = sorted(str(name) for name in args if name not in ARGUMENTS)
    if unknown:
        raise ReportInputError("unknown argument%s %s: the arguments are %s" % (
            "s" if len(unknown) > 1 else "", ", ".join(unknown), ", ".join(ARGUMENTS)))
    for name in ("root", "host", "facts"):
        if name not in args:
            raise ReportInputError("%s is missing: it is required (%s)" % (name, ROLE_SENDS))
    check_path_text("root", args["root"], "give the reports' folder on the controller, e.g. the repository's reports/")
    check_name("host", args["host"], "give the inventory host's name (or the server's); it names the report's folder")
    check_facts(args["facts"])
    checked = dict(args, planned=_boolean("planned", args.get("planned", False)))
    for name in ("inventory_calibration", "restored"):
        if args.get(name) is not None and not isinstance(args[name], Mapping):
            raise ReportInputError("%s is %s, not a mapping: give a mapping or null (%s)"
                                   % (name, kind(args[name]), ROLE_SENDS))
    if args.get("calibration_fact") is not None and not isinstance(args["calibration_fact"], str):
        raise ReportInputError("calibration_fact is %s, not a string: give the local fact's name, e.g. sglang_kv "
                               "(sglang_calibration_fact)" % kind(args["calibration_fact"]))
    if isinstance(args.get("restored"), Mapping):  # a rollback: both files on the host are read
        for name in ("unit_path", "calibration_path"):
            check_path_text(name, args.get(name), "a rollback's report reads it on the host; give its path (%s)"
                            % ROLE_SENDS)
    return checked


def report_root(root, create=True):
    """The reports' folder (absolute), created when it is missing and its parent exists (never the folders above
    it); with create=False only checked."""
    check_path_text("root", root, "give the reports' folder on the controller")
    path = os.path.abspath(root)
    if os.path.lexists(path):
        if not os.path.isdir(path):
            raise ReportInputError("root %s is not a folder: give the reports' folder (sglang_report_dir)" % path)
        return path
    parent = os.path.dirname(path)
    if not os.path.isdir(parent):
        raise ReportInputError("root %s is in %s, which does not exist: the report creates its folder, not the "
                               "folders above it. Create %s first, or fix the path (sglang_report_dir)"
                               % (path, parent, parent))
    if not create:
        return path
    try:
        os.mkdir(path)
    except FileExistsError:  # made meanwhile (two hosts' reports at once): used as it is, if it is a folder
        if not os.path.isdir(path):
            raise ReportInputError("root %s is not a folder: give the reports' folder" % path) from None
    return path


def folder_in(parent, name):
    """parent/name as a folder of the report's own, created when missing: a link or a file there is refused."""
    path = os.path.join(parent, name)
    try:
        os.mkdir(path)
    except FileExistsError:
        if os.path.islink(path) or not os.path.isdir(path):
            raise ReportInputError("%s is %s, not a folder: the report writes only in folders of its own under its "
                                   "root; remove it or give another root"
                                   % (path, "a link" if os.path.islink(path) else "a file")) from None
    return path


def read_regular(path, limit=READ_LIMIT):
    """The bytes of the regular file at path (not through a link), or None when it is missing, not a regular file
    (a FIFO is never waited on: it is opened without blocking and refused) or over limit."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > limit:
            return None
        chunks, total = [], 0
        while True:
            chunk = os.read(fd, min(1 << 16, limit + 1 - total))
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)
            total += len(chunk)
            if total > limit:
                return None
    except OSError:
        return None
    finally:
        os.close(fd)


def read_json(path):
    """The JSON value of the regular file at path, or None when it cannot be read as one (nested too deeply too)."""
    data = read_regular(path)
    if data is None:
        return None
    try:
        return json.loads(data.decode("utf-8"))
    except (ValueError, RecursionError):
        return None


def _umask():
    """This process's umask, read without changing it (os.umask sets one to read it, which other threads would
    see): Linux's /proc/self/status, else the usual 022."""
    try:
        with open("/proc/self/status", encoding="ascii") as handle:
            for line in handle:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    return 0o022


def write_file(path, data):
    """data (bytes) at path, through a new file renamed over it: whatever is at path (a FIFO, a link) is replaced,
    never opened."""
    fd, temporary = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".%s." % os.path.basename(path))
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.chmod(temporary, 0o666 & ~_umask())  # as open() would have made it (mkstemp makes 0600)
        os.replace(temporary, path)
    except BaseException:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise
