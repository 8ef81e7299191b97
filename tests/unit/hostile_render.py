"""Render the sglang role's real templates (unit, env file, --config file) outside Ansible, for the hostile-input
suite: jinja2 with Ansible's own core filters and tests and the template module's settings (trim_blocks), the
role's defaults and vars, and one host's overrides. Also reads the results back the way systemd does:
`systemd-analyze verify` for the unit where the binary exists, and an EnvironmentFile= reader that follows
systemd 252's src/basic/env-file.c (parse_env_file_internal) state by state."""

import os
import shutil
import subprocess

import jinja2
import yaml
from ansible.plugins.filter.core import FilterModule as CoreFilters
from ansible.plugins.filter.mathstuff import FilterModule as MathFilters
from ansible.plugins.test.core import TestModule as CoreTests

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ROLE = os.path.join(REPO, "roles", "sglang")
SYSTEMD_ANALYZE = shutil.which("systemd-analyze")

_env = jinja2.Environment(loader=jinja2.FileSystemLoader(os.path.join(ROLE, "templates")), trim_blocks=True,
                          undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
_env.filters.update(CoreFilters().filters())
_env.filters.update(MathFilters().filters())
_env.tests.update(CoreTests().tests())

with open(os.path.join(ROLE, "defaults", "main.yml"), encoding="utf-8") as _handle:
    DEFAULTS = yaml.safe_load(_handle)

# The plan's output as the role's templates read it (a ct200-like plan; its values are not under test here).
PLAN = {"flags_summary": "--context-length 200000 --max-total-tokens 200064",
        "args": ["--context-length", "200000", "--max-total-tokens", "200064", "--mem-fraction-static", "0.958"]}


def host_vars(**overrides):
    """The role's defaults, this host's overrides, and what vars/main.yml derives for the three files."""
    variables = dict(DEFAULTS, inventory_hostname="ct200", ansible_managed="Ansible managed",
                     ansible_facts={"systemd": {"version": 252}}, sglang_kv_plan_result=PLAN)
    variables.update(overrides)
    variables["sglang_server_name"] = overrides.get("sglang_server_name", "ct200")
    variables["sglang_hf_token_file"] = overrides.get("sglang_hf_token_file",
                                                      "%s/.cache/huggingface/token" % variables["sglang_home"])
    etc = "/etc/%s" % variables["sglang_service_name"]
    variables["_sglang_files"] = [
        {"dest": "/etc/systemd/system/%s.service" % variables["sglang_service_name"]},
        {"dest": "%s/%s.env" % (etc, variables["sglang_service_name"])},
        {"dest": "%s/%s.yaml" % (etc, variables["sglang_service_name"])}]
    variables["_sglang_config_path"] = variables["_sglang_files"][2]["dest"]
    # The runtime the unit runs (install.yml's plan): here the folder sglang_venv names, as a test gives it.
    variables["_sglang_runtime_path"] = overrides.get("_sglang_runtime_path", variables["sglang_venv"])
    return variables


def render(template, variables):
    return _env.get_template(template).render(variables)


def render_all(**overrides):
    """{'unit': text, 'env': text, 'config': text} for one host's overrides."""
    variables = host_vars(**overrides)
    return {"unit": render("sglang.service.j2", variables), "env": render("sglang.env.j2", variables),
            "config": render("sglang.yaml.j2", variables)}


def directives(unit_text):
    """[(section, key)] of every setting in a unit, continuation lines joined (as systemd reads them)."""
    found, section, continued = [], None, False
    for line in unit_text.split("\n"):
        if continued:
            continued = line.endswith("\\")
            continue
        stripped = line.strip()
        if not stripped or stripped[0] in "#;":
            continue
        if stripped.startswith("[") and stripped.endswith("]"):
            section = stripped[1:-1]
            continue
        found.append((section, stripped.split("=", 1)[0].strip() if "=" in stripped else stripped))
        continued = line.endswith("\\")
    return found


def verify(unit_text, folder, name="sglang.service"):
    """`systemd-analyze verify` of the unit written to `folder`: (returncode, output)."""
    path = os.path.join(folder, name)
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(unit_text)
    result = subprocess.run([SYSTEMD_ANALYZE, "verify", "--man=no", path], capture_output=True, text=True,
                            timeout=60, env=dict(os.environ, SYSTEMD_LOG_LEVEL="notice"))
    return result.returncode, result.stdout + result.stderr


def read_env_file(text):
    """The variables systemd reads from an EnvironmentFile=: src/basic/env-file.c parse_env_file_internal, state
    by state (PRE_KEY, KEY, PRE_VALUE, VALUE, VALUE_ESCAPE, SINGLE_QUOTE_VALUE, DOUBLE_QUOTE_VALUE,
    DOUBLE_QUOTE_VALUE_ESCAPE, COMMENT, COMMENT_ESCAPE as in 252: a comment's escaped line break goes on with the
    comment), then load_env_file_push (a later name replaces an earlier one)."""
    newline, whitespace, comments, need_escape = "\n\r", " \t\n\r", "#;", "\"\\`$"
    found = {}
    state, key, value = "PRE_KEY", [], []
    key_ws = value_ws = None

    def push(chop_value):
        name = "".join(key[:key_ws] if key_ws is not None else key)
        found[name] = "".join(value[:value_ws] if chop_value and value_ws is not None else value)

    for char in text:
        if state == "PRE_KEY":
            if char in comments:
                state = "COMMENT"
            elif char not in whitespace:
                state, key, key_ws = "KEY", [char], None
        elif state == "KEY":
            if char in newline:
                state, key = "PRE_KEY", []
            elif char == "=":
                state, value, value_ws = "PRE_VALUE", [], None
            else:
                if char not in whitespace:
                    key_ws = None
                elif key_ws is None:
                    key_ws = len(key)
                key.append(char)
        elif state == "PRE_VALUE":
            if char in newline:
                push(False)
                state, key, value = "PRE_KEY", [], []
            elif char == "'":
                state = "SINGLE_QUOTE_VALUE"
            elif char == '"':
                state = "DOUBLE_QUOTE_VALUE"
            elif char == "\\":
                state = "VALUE_ESCAPE"
            elif char not in whitespace:
                state = "VALUE"
                value.append(char)
        elif state == "VALUE":
            if char in newline:
                push(True)
                state, key, value = "PRE_KEY", [], []
            elif char == "\\":
                state, value_ws = "VALUE_ESCAPE", None
            else:
                if char not in whitespace:
                    value_ws = None
                elif value_ws is None:
                    value_ws = len(value)
                value.append(char)
        elif state == "VALUE_ESCAPE":
            state = "VALUE"
            if char not in newline:
                value.append(char)
        elif state == "SINGLE_QUOTE_VALUE":
            if char == "'":
                state = "PRE_VALUE"
            else:
                value.append(char)
        elif state == "DOUBLE_QUOTE_VALUE":
            if char == '"':
                state = "PRE_VALUE"
            elif char == "\\":
                state = "DOUBLE_QUOTE_VALUE_ESCAPE"
            else:
                value.append(char)
        elif state == "DOUBLE_QUOTE_VALUE_ESCAPE":
            state = "DOUBLE_QUOTE_VALUE"
            if char in need_escape:
                value.append(char)
            elif char != "\n":
                value.extend(["\\", char])
        elif state == "COMMENT":
            if char == "\\":
                state = "COMMENT_ESCAPE"
            elif char in newline:
                state = "PRE_KEY"
        elif state == "COMMENT_ESCAPE":
            state = "COMMENT"
    if state in ("PRE_VALUE", "VALUE", "VALUE_ESCAPE", "SINGLE_QUOTE_VALUE", "DOUBLE_QUOTE_VALUE",
                 "DOUBLE_QUOTE_VALUE_ESCAPE"):
        push(state == "VALUE")
    return found


_C_ESCAPES = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v", "\\": "\\", '"': '"',
              "'": "'", "s": " "}


def exec_start_argv(unit_text):
    """ExecStart='s argv as systemd reads it (systemd.service "Command lines": words split on whitespace, double
    quotes grouping, C-style escapes undone, %% a literal % and $$ a literal $), continuation lines joined."""
    logical, collecting = "", False
    for line in unit_text.split("\n"):
        if line.startswith("ExecStart="):
            logical, collecting = line[len("ExecStart="):], True
        elif collecting:
            logical += " " + line.strip()
        if collecting and not line.endswith("\\"):
            break
        if collecting:
            logical = logical[:-1]
    argv, word, quoted, index, started = [], "", False, 0, False
    while index < len(logical):
        char = logical[index]
        index += 1
        if char == "\\":
            escape = logical[index]
            index += 1
            if escape not in _C_ESCAPES:
                raise ValueError("escape \\%s not read here" % escape)
            word, started = word + _C_ESCAPES[escape], True
        elif char == '"':
            quoted, started = not quoted, True
        elif char in " \t" and not quoted:
            if started:
                argv.append(word)
            word, started = "", False
        else:
            word, started = word + char, True
    if started:
        argv.append(word)
    return [arg.replace("%%", "%").replace("$$", "$") for arg in argv]
