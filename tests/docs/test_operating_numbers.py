"""docs/operating.md quotes what the code prints for the inventory's ct200: `make plan`'s block, and the numbers of the
refusals of 250,000 and 400,000 tokens. The plan playbook runs here (it connects to nothing), so a change to the
planner or to ct200's inventory that moves a number fails this test until the page says it again."""

import json
import os
import re
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PAGE = os.path.join(REPO, "docs", "operating.md")
PLAYBOOK_BIN = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")


def _plan(**extra):
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg"), ANSIBLE_NOCOLOR="1")
    result = subprocess.run([PLAYBOOK_BIN, "playbooks/plan.yml", "-l", "ct200", "-e", json.dumps(extra)],
                            cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    return result.stdout


def _page():
    return re.sub(r"\s+", " ", open(PAGE, encoding="utf-8").read())


def test_the_plan_block_is_what_make_plan_prints_for_ct200():
    text = open(PAGE, encoding="utf-8").read()
    block = re.search(r"As it printed on [^:]*:\n\n```\n(.*?)\n```", text, re.S).group(1).splitlines()
    printed = _plan().splitlines()
    quoted = [line for line in block if not line.startswith("picture:")]
    assert len(quoted) >= 6
    assert [line for line in quoted if line not in printed] == []


@pytest.mark.parametrize("target, quote", [
    (250_000, r"250,000 does not fit on ct200 and is refused, once, with the numbers and the fixes "
              r"\(fp8 KV, at most ([\d,]+) tokens as configured"),
    (400_000, r"On ct200 with DFlash, 400,000 tokens need ([\d.]+) GiB against ([\d.]+)\."),
])
def test_the_refusals_numbers_are_what_the_planner_says(target, quote):
    message = _plan(sglang_context_target=target)
    assert "context_target %s does not fit" % format(target, ",") in message, message
    found = re.search(quote, _page())
    assert found, quote
    if target == 250_000:
        assert "lower sglang_context_target to at most %s, the most that fits as configured" % found.group(1) in message
    else:
        needs = re.search(r"it needs ([\d.]+) GiB of KV cache per GPU .*? but at most ([\d.]+) GiB per GPU", message)
        assert needs.groups() == found.groups(), message
