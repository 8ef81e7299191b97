"""Issue 47: a library/ module is its Ansible shell over module_utils/, so none holds more than CODE_LIMIT lines of
code outside its documentation. Counted: every line that is not blank, not only a comment, and not inside the
module's docstring nor its DOCUMENTATION, EXAMPLES or RETURN string (functions' docstrings count as code: they
travel with it). Lines inside other strings (a script a module writes) count too."""

import ast
import io
import os
import tokenize

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LIBRARY = os.path.join(REPO, "library")
CODE_LIMIT = 600
DOC_NAMES = ("DOCUMENTATION", "EXAMPLES", "RETURN")


def documentation_lines(tree):
    """The line numbers of the module's docstring and of its DOCUMENTATION, EXAMPLES and RETURN assignments."""
    lines = set()
    for index, node in enumerate(tree.body):
        docstring = index == 0 and isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) \
            and isinstance(node.value.value, str)
        named = isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id in DOC_NAMES
                                                     for t in node.targets)
        if docstring or named:
            lines.update(range(node.lineno, node.end_lineno + 1))
    return lines


def code_lines(source):
    """How many lines of source are code: not blank, not only a comment, not documentation (documentation_lines)."""
    skipped = documentation_lines(ast.parse(source))
    code = set()
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type in (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT,
                          tokenize.ENDMARKER, tokenize.ENCODING):
            continue
        code.update(line for line in range(token.start[0], token.end[0] + 1) if line not in skipped)
    lines = source.splitlines()
    return len({line for line in code if lines[line - 1].strip()})


def test_the_count_leaves_out_documentation_comments_and_blank_lines():
    source = ('#!/usr/bin/python\n"""The module."""\n\nDOCUMENTATION = r"""\n---\nmodule: x\n"""\n'
              'EXAMPLES = ""\nRETURN = """\na: b\n"""\n\n# why\nimport os  # the path\n\n\ndef main():\n'
              '    """Counted: a function\'s docstring travels with its code."""\n    return """a\n\nb"""\n')
    assert code_lines(source) == 5  # import, def, its docstring, return """a, b"""


def test_a_module_over_the_limit_is_found():
    assert code_lines("x = 1\n" * (CODE_LIMIT + 1)) > CODE_LIMIT


@pytest.mark.parametrize("name", sorted(n for n in os.listdir(LIBRARY) if n.endswith(".py")))
def test_no_library_module_holds_more_than_the_limit_of_code(name):
    with open(os.path.join(LIBRARY, name), encoding="utf-8") as handle:
        count = code_lines(handle.read())
    assert count <= CODE_LIMIT, ("library/%s holds %d lines of code outside its documentation (at most %d): move "
                                 "jobs into module_utils/, one a file (issue 47)" % (name, count, CODE_LIMIT))
