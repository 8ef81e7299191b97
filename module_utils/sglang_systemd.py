"""What systemd says of units, read one way by every module that asks (`systemctl show`): the deploy's unit
(sglang_unit_state) and the driver's services (nvidia_driver_state).

Every call has a deadline and a size limit: a systemd that does not answer (a job stuck, D-Bus down, a hung
mount behind a unit) would otherwise hold the module, and the whole run, for ever, since Ansible's run_command has
no timeout; and an answer far larger than any `show` of a few properties is not read to the end. A unit name is
checked before it reaches systemctl's argv: NUL, control characters, '/' (a path, not a name) and glob characters
(systemctl show takes patterns) are refused with a sentence."""

from __future__ import annotations

import os
import re
import selectors
import signal
import subprocess
import time

# Seconds one systemctl call may take: `systemctl show` answers in milliseconds on a healthy host, and a start or
# stop that waits for its job has its own timeouts in systemd; 30 s is far beyond either and short of a stuck run.
SYSTEMCTL_TIMEOUT = 30
# Bytes one systemctl call may answer: a show of a few properties is under a KiB, a long ExecStart a few KiB.
OUTPUT_LIMIT = 1 << 20
# One boot's journal (every rank's lines, the progress bars' repaints) is far more than a `systemctl show`: a Kimi
# K2.6 TP8 boot logs a few MiB.
JOURNAL_LIMIT = 64 << 20
# A unit name as systemd spells one (systemd.unit(5): letters, digits, ':', '-', '_', '.', '\\', and '@' of a
# template instance), at most 255 characters, not an option.
UNIT_NAME = re.compile(r"^[A-Za-z0-9:_.\\@][A-Za-z0-9:_.\\@-]{0,254}$")


class SystemdError(Exception):
    """A systemctl call that did not answer in time or answered too much, in a sentence."""


def unit_name_problem(name):
    """Why name cannot be a unit's name, in words ('' when it can)."""
    if not isinstance(name, str) or not name:
        return "is empty" if name in ("", None) else "is a %s, not text" % type(name).__name__
    if any(ord(char) < 32 or ord(char) == 127 for char in name):
        return "holds a NUL, a line break or another control character"
    if "/" in name:
        return "holds a '/': it is a path, not a unit's name"
    if name.startswith("-"):
        return "begins with '-', which systemctl would read as an option"
    if len(name) > 255:
        return "is %d characters long; systemd's names have at most 255" % len(name)
    if not UNIT_NAME.match(name):
        return ("holds a character systemd's unit names do not (a space, '*', '?', '[', ';', '$', ...; systemctl "
                "would read '*?[' as a pattern)")
    return ""


def _kill(proc):
    """End the call and anything it started (its own session, so a child holding the pipes ends too)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    proc.wait()


def run_bounded(argv, timeout=SYSTEMCTL_TIMEOUT, limit=OUTPUT_LIMIT):
    """(rc, stdout, stderr) of argv as text; SystemdError when it runs past `timeout` seconds or writes more than
    `limit` bytes (then it is killed, with whatever it started)."""
    what = " ".join([os.path.basename(argv[0])] + list(argv[1:]))
    # The environment run_command gave it (its locale included), with no pager or colours: its output is parsed.
    env = dict(os.environ, SYSTEMD_PAGER="", SYSTEMD_COLORS="0")
    try:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                start_new_session=True, env=env)
    except OSError as error:
        raise SystemdError("%s could not be run: %s" % (what, error.strerror or error)) from None
    deadline = time.monotonic() + timeout
    out_fd, err_fd = proc.stdout.fileno(), proc.stderr.fileno()
    chunks = {out_fd: [], err_fd: []}
    total = 0
    with selectors.DefaultSelector() as selector:
        for stream in (proc.stdout, proc.stderr):
            selector.register(stream, selectors.EVENT_READ)
        try:
            while selector.get_map():
                left = deadline - time.monotonic()
                if left <= 0:
                    _kill(proc)
                    raise SystemdError("%s did not answer within %d s: systemd is busy or stuck (a job that does "
                                       "not end, D-Bus not answering). Check `systemctl list-jobs` on the host, "
                                       "then run again" % (what, timeout))
                for key, _events in selector.select(left):
                    chunk = os.read(key.fd, 1 << 16)
                    if not chunk:
                        selector.unregister(key.fileobj)
                        continue
                    chunks[key.fd].append(chunk)
                    total += len(chunk)
                    if total > limit:
                        _kill(proc)
                        raise SystemdError("%s answered more than %d bytes, far more than systemd says of a unit: "
                                           "not read further. Check that `systemctl` on the host is systemd's"
                                           % (what, limit))
            try:
                rc = proc.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:  # it closed its output but did not end
                _kill(proc)
                raise SystemdError("%s did not end within %d s: systemd is busy or stuck. Check `systemctl "
                                   "list-jobs` on the host, then run again" % (what, timeout)) from None
        finally:
            proc.stdout.close()
            proc.stderr.close()
    return rc, b"".join(chunks[out_fd]).decode("utf-8", "replace"), b"".join(chunks[err_fd]).decode("utf-8", "replace")


def run(module, args, timeout=SYSTEMCTL_TIMEOUT, limit=OUTPUT_LIMIT, program="systemctl"):
    """(rc, stdout, stderr) of `<program> <args>` (systemctl, or journalctl, found on the module's PATH); the module
    fails with a sentence when it does not answer in time or answers too much. Every module's systemctl and
    journalctl call is meant to go through here (module.run_command has no timeout)."""
    try:
        return run_bounded([module.get_bin_path(program, required=True)] + list(args), timeout, limit)
    except SystemdError as error:
        module.fail_json(msg=str(error))


def _unit_id(name):
    """The Id systemd prints for a name given without its type: a service's."""
    return name if "." in name else name + ".service"


def parse_show(out, units):
    """{unit as asked: {property: value}} from `systemctl show -p Id -p ... -- <units>` (a block of Key=value lines
    per unit, blocks apart by an empty line). A unit systemd does not know is answered too (ActiveState=inactive,
    empty values); one missing from the output is {}."""
    found = {}
    for block in out.strip().split("\n\n"):
        props = dict(line.partition("=")[::2] for line in block.splitlines() if "=" in line)
        if props.get("Id"):
            found[props["Id"]] = props
    return {unit: found.get(_unit_id(unit)) or found.get(unit) or {} for unit in units}


def show(module, units, properties, timeout=SYSTEMCTL_TIMEOUT):
    """parse_show of one `systemctl show` for these units and properties; the module fails with a sentence for a
    name that is not a unit's, a systemctl that does not answer within `timeout` seconds or answers more than
    OUTPUT_LIMIT bytes, and with systemctl's own words when it fails."""
    for unit in units:
        problem = unit_name_problem(unit)
        if problem:
            shown = repr(unit[:80]) + ("... (%d characters)" % len(unit) if len(unit) > 80 else "") \
                if isinstance(unit, str) else repr(unit)
            module.fail_json(msg="the unit %s is not a unit's name: it %s. Give a systemd unit's name, e.g. sglang "
                                 "or sglang.service" % (shown, problem))
    args = ["show", "-p", "Id"]
    for name in properties:
        args += ["-p", name]
    rc, out, err = run(module, args + ["--"] + list(units), timeout)
    if rc != 0:
        module.fail_json(msg="systemctl show %s failed: %s" % (" ".join(units), (err or out).strip()[:2000]))
    return parse_show(out, units)
