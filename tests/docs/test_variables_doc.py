"""docs/variables.md is what docs/gen_variables.py makes of every roles/*/meta/argument_specs.yml, and says it right."""

import glob
import importlib.util
import os
import textwrap

import pytest
import yaml

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GENERATOR = os.path.join(REPO, "docs", "gen_variables.py")
VARIABLES_MD = os.path.join(REPO, "docs", "variables.md")


def _generator():
    spec = importlib.util.spec_from_file_location("gen_variables", GENERATOR)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _committed():
    with open(VARIABLES_MD, encoding="utf-8") as handle:
        return handle.read()


def test_variables_md_is_current():
    """Stale after a spec changed: run `.venv/bin/python docs/gen_variables.py` and commit docs/variables.md."""
    assert _committed() == _generator().render(), (
        "docs/variables.md is not what docs/gen_variables.py produces from roles/*/meta/argument_specs.yml: "
        "run .venv/bin/python docs/gen_variables.py"
    )


def _spec_options():
    options = {}
    for path in sorted(glob.glob(os.path.join(REPO, "roles", "*", "meta", "argument_specs.yml"))):
        with open(path, encoding="utf-8") as handle:
            specs = yaml.safe_load(handle)["argument_specs"]
        for entry in specs.values():
            options.update(entry.get("options") or {})
    return options


def test_every_spec_option_has_one_row_with_its_type():
    """Read from the specs here, apart from the generator: a name or type it dropped would show."""
    lines = _committed().splitlines()
    wrong = []
    for name, option in _spec_options().items():
        if name == "_sglang_internal":  # an internal step's refusal of a direct include, not a knob
            assert "- internal steps, refused as `tasks_from`: " in _committed()
            continue
        rows = [line for line in lines if line.startswith("| `%s` |" % name)]
        if len(rows) != 1 or rows[0].split(" | ")[1].split(" of ")[0] != option.get("type", "str"):
            wrong.append(name)
    assert not wrong, "rows missing, doubled or of another type in docs/variables.md: %s" % wrong


def _role(tmp_path, role, text):
    meta = tmp_path / "roles" / role / "meta"
    meta.mkdir(parents=True)
    (meta / "argument_specs.yml").write_text(textwrap.dedent(text), encoding="utf-8")


def test_rendering_of_a_small_spec(tmp_path):
    """Markup, pipes, HTML-looking text, quoting and choices, against rows written out by hand."""
    _role(
        tmp_path,
        "demo",
        """\
        argument_specs:
          main:
            short_description: A demo role.
            options:
              demo_expr:
                type: str
                default: "{{ a | default(1) }}"
                description: [Written to C(/etc/<name>.conf);, "a | b is I(not) a cell."]
              demo_branch:
                type: str
                default: "580"
                choices: [open, "580"]
                description: A string that YAML would read as a number.
              demo_unset:
                type: list
                elements: dict
                description: No default.
        """,
    )
    text = _generator().render(str(tmp_path))
    assert "- entry point `main`: A demo role." in text
    assert (
        '| `demo_expr` | str | `"{{ a \\| default(1) }}"` | Written to `/etc/<name>.conf`; a \\| b is *not* a cell. |'
        in text
    )
    assert (
        '| `demo_branch` | str | `"580"` | A string that YAML would read as a number. Choices: `open`, `"580"`. |'
        in text
    )
    assert "| `demo_unset` | list of dict |  | No default. |" in text


def test_an_option_that_differs_between_entry_points_is_refused(tmp_path):
    _role(
        tmp_path,
        "demo",
        """\
        argument_specs:
          main: {options: {demo_x: {type: int, default: 1, description: One.}}}
          plan: {options: {demo_x: {type: int, default: 2, description: One.}}}
        """,
    )
    with pytest.raises(SystemExit, match="demo_x differs between entry points"):
        _generator().render(str(tmp_path))


def test_options_shared_by_entry_points_are_listed_once_under_both(tmp_path):
    _role(
        tmp_path,
        "demo",
        """\
        argument_specs:
          plan:
            options: &shared {demo_a: {type: int, default: 1, description: Both.}}
          main:
            options: {<<: *shared, demo_b: {type: bool, default: false, description: Main only.}}
        """,
    )
    text = _generator().render(str(tmp_path))
    assert text.count("| `demo_a` |") == 1
    assert text.index("Taken by `main`, `plan`:") < text.index("| `demo_a` |") < text.index("Taken by `main`:")
    assert text.index("Taken by `main`:") < text.index("| `demo_b` | bool | `false` | Main only. |")
