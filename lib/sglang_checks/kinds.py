"""The kinds of value the checks know (lib/sglang_checks/values.py says which knob is which): plain and owned
paths, whole and real numbers, names matching a pattern, addresses, ports, secrets, lists of arguments. Each check
raises Refusal(problem, fix) for a bad value and returns nothing (or the value, normalised) for a good one."""

import ipaddress
import math
import re

# Characters a path may hold: the unit's settings (WorkingDirectory=, ReadWritePaths=, Environment=) give
# whitespace, quotes, backslashes and `%` (specifiers) a meaning, and ReadWritePaths= splits on spaces.
PATH_CHARS = re.compile(r"^/[A-Za-z0-9._+@,:=~/-]*$")
HOSTNAME_LABEL = re.compile(r"^(?!-)[A-Za-z0-9_-]{1,63}(?<!-)$")  # _ too: container and /etc/hosts names

# Where no path of the roles may point: pseudo file systems and the system's own folders (the roles create and
# chown what these paths name, as the service user's), and the world-writable /tmp and /var/tmp (another local
# user could plant a symlink there that the role's chown would follow; the units' PrivateTmp= hides them too).
FORBIDDEN_ROOTS = ("/proc", "/sys", "/dev", "/run", "/boot", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32",
                   "/etc", "/usr/bin", "/usr/sbin", "/usr/lib", "/usr/include", "/usr/share", "/tmp", "/var/tmp")
# Folders that must not be a path of the roles themselves (they would be chowned to the service user).
SYSTEM_DIRS = {"/", "/opt", "/srv", "/var", "/var/lib", "/var/cache", "/var/log", "/var/backups", "/var/spool",
               "/usr", "/usr/local", "/mnt", "/media", "/data", "/home", "/root"}
INT_MAX = 2**31 - 1


class Refusal(Exception):
    """One bad value: `problem` says what is wrong, `fix` what to write instead; `item`, when set, is the list
    item at fault (the sentence then shows it instead of the whole list)."""

    def __init__(self, problem, fix, item=None):
        super().__init__(problem)
        self.problem, self.fix, self.item = problem, fix, item


class Refusals(Exception):
    """Several bad items of one list, each a Refusal."""

    def __init__(self, refusals):
        super().__init__("; ".join(refusal.problem for refusal in refusals))
        self.refusals = refusals


def show(value, secret=False):
    """The value as the sentence shows it: a secret by its type and length only, anything else by its repr,
    cut at 80 characters (a newline shows as \\n)."""
    if secret:
        unit = "characters" if isinstance(value, str) else "items"
        size = " of %d %s" % (len(value), unit) if isinstance(value, str | list | dict) else ""
        return "a %s%s (hidden)" % (type(value).__name__, size)
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def text(value, what="a string"):
    if not isinstance(value, str):
        raise Refusal("is a %s, not %s" % (type(value).__name__, what), "give %s" % what)
    bad = [char for char in value if ord(char) < 32 or ord(char) == 127]
    if bad:
        raise Refusal("holds the control character %r (a newline would add a line to the file it reaches)"
                      % bad[0], "remove it")
    return value


def plain_path(value):
    """An absolute path whose characters mean nothing to systemd or a shell, without `..` or `//`."""
    text(value, "an absolute path")
    if not PATH_CHARS.match(value):
        raise Refusal("is not an absolute path of letters, digits and . _ + @ , : = ~ - /",
                      "give an absolute path such as /srv/models/name, without spaces, quotes, $, % or \\")
    parts = value.rstrip("/").split("/")[1:]
    if ".." in parts or "." in parts or "" in parts:
        raise Refusal("holds a '..', '.' or empty component", "give the path in its plain form")
    return "/" + "/".join(parts)


def owned_path(value):
    """A path the roles create, chown to the service user or let the service read: not a system folder, not
    under one, not under /tmp. (/home and /root are not refused, but the units' ProtectHome= hides them from the
    service: it would fail to start, and the role's wait reports systemd's error.)"""
    path = plain_path(value)
    under = [root for root in FORBIDDEN_ROOTS if path == root or path.startswith(root + "/")]
    if under:
        raise Refusal("is under %s, a folder the roles must not create or chown (or that the service cannot see)"
                      % under[0], "use a folder of its own, e.g. under /srv, /opt or /var/lib")
    if path in SYSTEM_DIRS:
        raise Refusal("is a system folder that the roles would chown to the service user",
                      "use a folder of its own below it, e.g. %s/sglang" % path.rstrip("/"))
    return path


def integer(value, low, high=INT_MAX, none_ok=False):
    """A whole number in [low, high]: an int, a string of digits, or a float with no fraction. A bool, inf,
    nan or a number past `high` is refused (Python would turn inf into a traceback, 1e30 into nonsense)."""
    if value is None and none_ok:
        return value
    if isinstance(value, bool):
        raise Refusal("is a boolean, not a number", "give a whole number from %d to %d" % (low, high))
    number = value
    if isinstance(value, str) and re.match(r"^\s*-?\d+\s*$", value):
        number = int(value)
    if isinstance(number, float):
        if not math.isfinite(number) or number != int(number):
            raise Refusal("is not a whole number", "give a whole number from %d to %d" % (low, high))
        number = int(number)
    if not isinstance(number, int):
        raise Refusal("is not a whole number", "give a whole number from %d to %d" % (low, high))
    if not low <= number <= high:
        raise Refusal("is out of range", "give a whole number from %d to %d" % (low, high))
    return number


def real(value, low, high, none_ok=False):
    """A finite number in [low, high] (an int, a float or a numeric string)."""
    if value is None and none_ok:
        return value
    try:
        number = float(value) if not isinstance(value, bool) else None
    except (TypeError, ValueError):
        number = None
    if number is None or not math.isfinite(number) or not low <= number <= high:
        raise Refusal("is not a finite number from %g to %g" % (low, high), "give a number from %g to %g" % (low, high))
    return number


def pattern(regex, what, example):
    def check(value):
        if not regex.match(text(value, what)):
            raise Refusal("is not %s" % what, "give %s such as %s" % (what, example))
    return check


def host_address(value, empty_ok=False):
    """An IPv4 or IPv6 address, or a DNS name (RFC 1123 labels)."""
    if value == "" and empty_ok:
        return
    text(value, "an address or a host name")
    try:
        ipaddress.ip_address(value)
        return
    except ValueError:
        pass
    labels = value.rstrip(".").split(".")
    if len(value) > 253 or not all(HOSTNAME_LABEL.match(label) for label in labels):
        raise Refusal("is neither an IP address nor a host name",
                      "give an address (127.0.0.1, 0.0.0.0, ::1, ::) or a host name such as gpu1.example.net")


def secret(value, empty_ok=True):
    """A key or token: a string of printable characters without spaces (it is sent in an HTTP header and
    written to a file as one line). A list or a mapping would be rendered as its Python text."""
    if value in ("", None) and empty_ok:
        return
    if not isinstance(value, str):
        raise Refusal("is not a string", "give the key as one quoted string (from the vault)")
    if not value or any(ord(char) <= 32 or ord(char) == 127 for char in value):
        raise Refusal("holds whitespace or a control character", "give the key as one word of printable characters")


def port(value):
    integer(value, 1, 65535)


def string_list(value):
    if isinstance(value, str) or not isinstance(value, list | tuple):
        raise Refusal("is not a list", "give a list, e.g. [--enable-metrics]")
    for item in value:
        if isinstance(item, bool) or not isinstance(item, str | int | float):
            raise Refusal("holds %s, which is not a string or a number" % show(item), "give one argument per item")
        if isinstance(item, str):
            text(item)


def optional(check):
    return lambda value: None if value in ("", None) else check(value)
