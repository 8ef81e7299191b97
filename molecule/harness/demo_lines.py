"""What `make demo` shows from molecule's log (Ansible's default output, molecule's own lines around it).

  python3 demo_lines.py summary < LOG   every line of the run's summary (the sglang role's "Summarise the run"
                                        task): the plan, the calibration, the starts, the proof level and why, and
                                        what the proof measured (smoke and decode), as the role wrote them
  python3 demo_lines.py refusal < LOG   the message of the failure that stopped the run, its lines as written
                                        (a failure Ansible ignored is not the one that stopped it)

Plain Python over the log's text: tests/unit/test_demo_lines.py feeds it ansible-playbook's real output.
"""

import json
import re
import sys

ANSI = re.compile(r"\x1b\[[0-9;]*m")
# molecule may frame a line of Ansible's output with a box-drawing bar
FRAME = re.compile(r"^ *│ ?")
FATAL = re.compile(r"^fatal: \[[^\]]+\]: FAILED! => (\{.*\})\s*$")


def _lines(text):
    return [FRAME.sub("", ANSI.sub("", line)) for line in text.splitlines()]


def _as_lines(msg):
    if isinstance(msg, list):
        return [str(item) for item in msg]
    return str(msg).splitlines()


def summary(text):
    """The msg lines of the last "Summarise the run" task's result, [] when the run printed none."""
    lines, found = _lines(text), []
    for index, line in enumerate(lines):
        if not re.match(r"^TASK \[[^\]]*Summarise the run\]", line):
            continue
        body = []
        for item in lines[index + 1:]:
            if item.startswith(("TASK [", "PLAY ", "RUNNING HANDLER")):
                break
            body.append(item)
        start = next((i for i, item in enumerate(body) if re.match(r"^ok: \[[^\]]+\] => \{$", item)), None)
        if start is None:
            continue
        end = next((i for i in range(start + 1, len(body)) if body[i] == "}"), None)
        if end is None:
            continue
        try:
            found = _as_lines(json.loads("\n".join(["{"] + body[start + 1:end] + ["}"]))["msg"])
        except (ValueError, KeyError):
            continue
    return found


def refusal(text):
    """The msg of the last failure Ansible did not ignore, as lines ([] when there is none): in a failed run the
    host stops at that failure, so it is the one a rescue could not recover from."""
    lines, found = _lines(text), []
    for index, line in enumerate(lines):
        match = FATAL.match(line)
        if not match:
            continue
        if any(item.startswith("...ignoring") for item in lines[index + 1:index + 3]):
            continue
        try:
            result = json.loads(match.group(1))
        except ValueError:
            continue
        found = _as_lines(result.get("msg", "")) if isinstance(result, dict) else []
    return found


if __name__ == "__main__":
    what = {"summary": summary, "refusal": refusal}[sys.argv[1]]
    print("\n".join(what(sys.stdin.read())))
