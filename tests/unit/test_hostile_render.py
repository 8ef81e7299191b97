"""hostile_render.py renders the role's templates outside Ansible, for speed; here Ansible's template module renders
the same three files from the same values, and they must match byte for byte, hostile values included."""

import json
import os
import subprocess
import sys

import pytest
from hostile_render import PLAN, REPO, render_all

CASES = [{}, {"sglang_environment": {"A": "x y $Z %h `q` \"w\"\\", "B": "plain"}, "sglang_api_key": "k'\"$%\\y",
              "sglang_extra_args": ["--chat-template", 'a "b" $HOME %h \\x', "--log-requests"],
              "sglang_served_model_name": "org/model:v1", "sglang_nccl_socket_ifname": "^lo,docker",
              "_sglang_checkpoints": {"sglang_model_path": {"files_sha256": "ab" * 32},
                                      "sglang_speculative.draft_model_path": {"files_sha256": "cd" * 32}}}]


@pytest.mark.parametrize("overrides", CASES, ids=["defaults", "hostile"])
def test_ansible_renders_what_the_suite_renders(overrides, tmp_path):
    extra = dict(overrides, out_dir=str(tmp_path), sglang_kv_plan_result=PLAN, sglang_server_name="ct200",
                 _sglang_runtime_plan={"path": "/opt/sglang/venv"})  # install.yml's plan, as hostile_render has it
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg"), ANSIBLE_NOCOLOR="1")
    result = subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-playbook"),
                             "tests/unit/hostile_render_localhost.yml", "-e", json.dumps(extra)], cwd=REPO, env=env,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    ours = render_all(**overrides)
    for name, key in (("sglang.service.j2", "unit"), ("sglang.env.j2", "env"), ("sglang.yaml.j2", "config")):
        theirs = (tmp_path / name).read_text().replace("# localhost: ", "# ct200: ")  # the unit's first comment
        assert theirs == ours[key], name


def test_the_env_file_names_the_checkpoints_files_so_another_checkpoint_restarts_sglang():
    """A new checkpoint at the same path (new weights or tokenizer under the same config.json) changes the env file,
    which the deploy compares: SGLang restarts and the proof runs in full, instead of a check of the old process."""
    files = {"sglang_model_path": {"files_sha256": "ab" * 32}}
    env = render_all(_sglang_checkpoints=files)["env"]
    assert "# sglang_model_path: files %s\n" % ("ab" * 32) in env
    other = render_all(_sglang_checkpoints={"sglang_model_path": {"files_sha256": "ef" * 32}})["env"]
    assert other != env and other.replace("ef" * 32, "ab" * 32) == env
    assert "files" not in render_all()["env"]  # before the model is read (nothing to name yet)
