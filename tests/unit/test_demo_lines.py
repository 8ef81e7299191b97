"""`make demo` prints the run's whole summary (the proof level and why, the decode line) and, when the run fails,
the message that stopped it, alone and last (molecule/harness/demo_lines.py over ansible-playbook's real output)."""

import json
import os
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "molecule", "harness"))

import demo_lines  # noqa: E402

PLAYBOOK_BIN = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")


def _default_output(stop_msg):
    """ansible-playbook's default callback output, as molecule's converge prints it (not the repository's)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
    env.update(ANSIBLE_STDOUT_CALLBACK="default", ANSIBLE_NOCOLOR="1")
    result = subprocess.run([PLAYBOOK_BIN, os.path.join(REPO, "tests", "unit", "demo_lines_localhost.yml"),
                             "-e", json.dumps({"stop_msg": stop_msg})],
                            env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 2, result.stdout + result.stderr
    return result.stdout + result.stderr


@pytest.fixture(scope="module")
def output():
    return _default_output("ct200-sim: context_target 250,000 does not fit: it needs 16.96 GiB\n"
                           "Fixes: set sglang_kv_cache_dtype: fp8_e4m3")


def test_the_summary_is_every_line_the_role_wrote(output):
    assert demo_lines.summary(output) == [
        'plan: target 200,000 -> pool 200,064 tokens "pinned"',
        "proof: full (this run changed the unit); last full proof never",
        "decode: 16 tokens at 196004 tokens of context, 0.3 ms per token"]


def test_the_refusal_is_the_failure_that_stopped_the_run_with_its_lines(output):
    assert demo_lines.refusal(output) == ["ct200-sim: context_target 250,000 does not fit: it needs 16.96 GiB",
                                          "Fixes: set sglang_kv_cache_dtype: fp8_e4m3"]


def test_molecules_frame_and_colours_are_read_through(output):
    framed = "\n".join("  │ \x1b[0;31m%s\x1b[0m" % line for line in output.splitlines())
    assert demo_lines.refusal(framed)[0].startswith("ct200-sim: context_target 250,000 does not fit")
    assert demo_lines.summary(framed)[1].startswith("proof: full")


def test_a_run_without_a_summary_or_a_failure_gives_nothing():
    assert demo_lines.summary("PLAY RECAP\nct200-sim : ok=3 failed=0\n") == []
    assert demo_lines.refusal("PLAY RECAP\nct200-sim : ok=3 failed=0\n") == []
