"""The hostile-input suite for inventory values (issue 20): every value that reaches a file, a path, the unit, the
env file, SGLang's --config file, argv or a URL is refused by name before anything changes
(lib/sglang_checks/values.py), and the templates themselves keep what they are given inside its place: each
injection attempt is also rendered with the role's real templates, read back as systemd reads it, and, where
systemd-analyze exists, verified."""

import json
import math
import os
import subprocess
import sys

import pytest
import yaml
from ansible.module_utils import sglang_runtime_launcher
from hostile_render import (
    DEFAULTS,
    REPO,
    SYSTEMD_ANALYZE,
    directives,
    exec_start_argv,
    host_vars,
    read_env_file,
    render_all,
    verify,
)
from sglang_checks.values import refusals

HOST = "ct200"


def refused(**overrides):
    """The sentences for these overrides on top of the role's defaults (templated as the role sees them)."""
    variables = {key: value for key, value in host_vars(**overrides).items() if key.startswith("sglang_")}
    return refusals(HOST, variables)


def sentence_for(knob, found):
    mine = [line for line in found if line.startswith("%s: %s " % (HOST, knob))]
    assert mine, "no refusal for %s in %r" % (knob, found)
    return mine[0]


# --- the role's own settings and the repository's inventories are accepted ---

def test_the_defaults_pass():
    assert refused() == []


def test_the_repository_inventory_passes():
    variables = {}
    for path in ("inventory/group_vars/sglang_servers.yml", "inventory/group_vars/kimi_k26_dflash.yml",
                 "inventory/host_vars/ct200.yml"):
        with open(os.path.join(REPO, path), encoding="utf-8") as handle:
            variables.update(yaml.safe_load(handle) or {})
    assert refused(**{key: value for key, value in variables.items() if key.startswith("sglang_")}) == []


def test_a_model_that_is_no_preset_is_refused_before_the_runtime_build():
    """The planner refused '' only after the runtime was built (molecule/real_server's first run); null is the host's
    config.json alone, which the planner takes."""
    for value in ("", "kimi-k9"):
        line = sentence_for("sglang_model", refused(sglang_model=value))
        assert "not a preset" in line and "llama-3.1-8b" in line, line
    assert refused(sglang_model=None) == [] and refused(sglang_model="llama-3.1-8b") == []


# --- injection: a line break or a NUL in any value that reaches a file ---

INJECTIONS = [
    ("sglang_home", "/var/lib/sglang\nExecStartPre=/bin/touch /tmp/pwned"),
    ("sglang_venv", "/opt/sglang/venv\nExecStartPre=/bin/sh"),
    ("sglang_model_path", "/srv/models/x\nExecStartPre=/bin/sh"),
    ("sglang_served_model_name", "kimi\nExecStartPre=/bin/sh"),
    ("sglang_user", "sglang\nUser=root"),
    ("sglang_service_name", "sglang\nx"),
    ("sglang_host", "127.0.0.1\nExecStartPre=/bin/sh"),
    ("sglang_hf_token_file", "/var/lib/sglang/token\nx"),
    ("sglang_hf_endpoint", "https://hf.example\nx"),
    ("sglang_nccl_socket_ifname", "eth0\nLD_PRELOAD=/x.so"),
    ("sglang_model_hf_revision", "main\x00x"),
    ("sglang_api_key", "k1\nLD_PRELOAD=/x.so"),
    ("sglang_package", "sglang==0.5.23\n--index-url=http://evil"),
]


@pytest.mark.parametrize("knob, value", INJECTIONS, ids=[knob for knob, _ in INJECTIONS])
def test_a_line_break_or_nul_is_refused_by_name(knob, value):
    line = sentence_for(knob, refused(**{knob: value}))
    assert "control character" in line or "is not" in line or "whitespace" in line, line
    if knob == "sglang_api_key":
        assert "LD_PRELOAD" not in line and "hidden" in line  # a secret is shown by its length only


def test_env_values_and_names_with_a_line_break_are_refused():
    line = sentence_for("sglang_environment", refused(sglang_environment={"A": "1\nLD_PRELOAD=/x.so"}))
    assert "gives A a value with a line break" in line
    for name in ("A\nB", "1A", "A-B", "A B", ""):
        assert "variable name" in sentence_for("sglang_environment", refused(sglang_environment={name: "1"}))
    for name, owner in (("HOME", "sglang_home"), ("NCCL_SOCKET_IFNAME", "sglang_nccl_socket_ifname")):
        assert owner in sentence_for("sglang_environment", refused(sglang_environment={name: "x"}))
    assert "a list" in sentence_for("sglang_environment", refused(sglang_environment={"A": ["x"]}))
    assert "not a mapping" in sentence_for("sglang_environment", refused(sglang_environment="A=1"))


def test_extra_args_with_a_line_break_are_refused():
    line = sentence_for("sglang_extra_args", refused(sglang_extra_args=["--chat-template", "x\nExecStartPre=/bin/sh"]))
    assert "control character" in line
    assert "not a list" in sentence_for("sglang_extra_args", refused(sglang_extra_args="--enable-metrics"))
    assert "not a string" in sentence_for("sglang_extra_args", refused(sglang_extra_args=[{"a": 1}]))


# What the templates do with an injection if it ever got past the checks: ExecStart's arguments and the env file's
# values keep a line break inside the one argument or value (quoting); the other settings cannot quote, which is
# why the checks refuse these values before anything renders.
def _baseline():
    return directives(render_all()["unit"])


@pytest.mark.parametrize("extra", [["--chat-template", "x\nExecStartPre=/bin/sh -c 'touch /tmp/pwned'"],
                                   ["--chat-template", 'a "b" \\" $HOME ${PATH} %h %n \\x ; & |'],
                                   ["--json-model-override-args", '{"rope_scaling": {"type": "yarn"}}']])
def test_execstart_keeps_each_extra_argument_one_argument(extra, tmp_path):
    files = render_all(sglang_extra_args=extra, sglang_venv=_venv(tmp_path))
    assert directives(files["unit"]) == _baseline()
    argv = exec_start_argv(files["unit"])
    assert argv[argv.index("--config") + 2:][:len(extra)] == extra
    _verified(files["unit"], tmp_path)


@pytest.mark.parametrize("value", ["1\nLD_PRELOAD=/x.so", 'a"b', "a\\b", "$HOME", "${PATH}", "`id`", "x # y", " lead",
                                   "trail ", "'single'", "%h", "a=b", ""])
def test_the_env_file_holds_each_value_as_given_and_nothing_else(value):
    env = {"SGLANG_DOUBLE_GPU": "/etc/sglang-double/gpu.json", "HOSTILE": value}
    files = render_all(sglang_environment=env, sglang_nccl_socket_ifname="eth0")
    assert read_env_file(files["env"]) == dict(env, NCCL_SOCKET_IFNAME="eth0")


def test_a_plain_env_value_is_written_unquoted():
    env = render_all(sglang_environment={"SGLANG_DOUBLE_GPU": "/etc/sglang-double/gpu.json"},
                     sglang_nccl_socket_ifname="eth0")["env"]
    assert "SGLANG_DOUBLE_GPU=/etc/sglang-double/gpu.json\n" in env and "NCCL_SOCKET_IFNAME=eth0\n" in env


@pytest.mark.parametrize("knob, value", [("sglang_home", "/var/lib/sglang\nExecStartPre=/bin/sh"),
                                         ("sglang_served_model_name", "kimi\nExecStartPre=/bin/sh"),
                                         ("sglang_user", "sglang\nExecStartPre=/bin/sh")])
def test_settings_outside_execstart_cannot_quote_so_the_checks_must_refuse(knob, value, tmp_path):
    files = render_all(**{knob: value, "sglang_venv": _venv(tmp_path)})
    assert "ExecStartPre" in [key for _, key in directives(files["unit"])]  # what would happen without the check
    if SYSTEMD_ANALYZE:
        assert verify(files["unit"], str(tmp_path))[0] == 0  # and systemd-analyze would not notice
    assert sentence_for(knob, refused(**{knob: value}))


@pytest.mark.parametrize("key", ["sk-'quoted\"-$HOME-%h-\\-key", "k\u00e9y", "abc"])
def test_the_config_file_holds_the_key_as_one_yaml_string(key):
    files = render_all(sglang_api_key=key)
    assert yaml.safe_load(files["config"]) == {"api-key": key}
    assert key not in files["unit"] and key not in files["env"]
    assert refused(sglang_api_key=key) == []


# --- secrets: refused unless a string, never shown ---

@pytest.mark.parametrize("knob", ["sglang_api_key", "sglang_hf_token", "sglang_router_admin_api_key"])
@pytest.mark.parametrize("value", [["s3cr3t-1", "s3cr3t-2"], {"k": "s3cr3t"}, 12345678, "s3cr3t with space",
                                   "s3cr3t\tkey", "s3cr3t\n"])
def test_a_secret_that_is_not_one_word_is_refused_without_showing_it(knob, value):
    line = sentence_for(knob, refused(**{knob: value}))
    assert "(hidden)" in line
    assert "s3cr3t" not in line and "12345678" not in line


# --- paths: absolute, plain, not a system folder, not hidden from the service ---

PATH_KNOBS = ["sglang_home", "sglang_venv", "sglang_model_path", "sglang_backup_dir", "sglang_router_home",
              "sglang_router_venv"]
BAD_PATHS = ["relative/path", "/srv/../etc/x", "/srv/./x", "/srv//x", "/", "/etc", "/etc/sglang", "/usr/lib/x",
             "/proc/self", "/tmp/x", "/var/tmp/x", "/home", "/var/lib", "/opt", "/srv/my models", "/srv/%h",
             "/srv/$HOME", '/srv/a"b', "/srv/a\\b", "", 42, None, ["/srv/x"]]


@pytest.mark.parametrize("knob", PATH_KNOBS)
@pytest.mark.parametrize("value", BAD_PATHS, ids=[repr(value) for value in BAD_PATHS])
def test_a_bad_path_is_refused_with_the_fix(knob, value):
    line = sentence_for(knob, refused(**{knob: value}))
    assert repr(value)[:40] in line and ("give" in line or "use" in line), line


@pytest.mark.parametrize("value", ["/srv/models/x", "/opt/sglang/venv", "/var/lib/sglang", "/data/models/k2",
                                   "/mnt/nvme0/models/kimi-k2.6", "/srv/m@v1+x,y:z=1~"])
def test_a_plain_path_passes(value):
    assert refused(sglang_model_path=value) == []


def test_the_draft_model_path_is_checked_as_a_path():
    line = sentence_for("sglang_speculative", refused(sglang_speculative={"algorithm": "EAGLE3",
                                                                         "draft_model_path": "/srv/x\nExecStartPre=x"}))
    assert "draft_model_path" in line and "control character" in line
    assert "/etc" in sentence_for("sglang_speculative", refused(sglang_speculative={"draft_model_path": "/etc/x"}))
    assert "num_draft_tokens" in sentence_for("sglang_speculative", refused(sglang_speculative={
        "num_draft_tokens": math.inf}))
    assert "not a mapping" in sentence_for("sglang_speculative", refused(sglang_speculative=["EAGLE"]))


@pytest.mark.parametrize("path, ok", [("/var/lib/sglang/.cache/huggingface/token", True),
                                      ("/var/lib/sglang/token", True), ("/etc/sglang/hf-token", True),
                                      ("/srv/secrets/hf/token", True), ("/etc/hf-token", False),
                                      ("/etc/other/hf-token", False), ("/token", False), ("/tmp/token", False),
                                      ("relative/token", False), ("/srv/x/../token", False)])
def test_the_hub_token_file_goes_where_the_role_may_create_its_folder(path, ok):
    found = refused(sglang_hf_token_file=path)
    assert (found == []) == ok, found


def test_the_report_dir_is_the_operators(tmp_path):
    assert refused(sglang_report_dir="") == []
    assert refused(sglang_report_dir=str(tmp_path / "new")) == []  # created by the report, in a folder there
    assert refused(sglang_report_dir=str(tmp_path)) == []
    for value in ("reports", "../reports", "/etc/reports", "/usr/share/r", "/var/lib/r", "/"):
        assert sentence_for("sglang_report_dir", refused(sglang_report_dir=value))
    if os.getuid() == 0:  # a folder someone else owns
        other = tmp_path / "theirs"
        other.mkdir()
        os.chown(other, 65534, 65534)
        line = sentence_for("sglang_report_dir", refused(sglang_report_dir=str(other / "r")))
        assert "does not own" in line


def test_a_report_dir_in_a_missing_folder_is_refused_before_anything_is_created(tmp_path):
    # probe day 2: sglang_report_dir=/nonexistent/x was accepted, and the plan's picture made /nonexistent/x/plan
    # as root; a mistyped path must not become a tree of new folders
    for value in ("/nonexistent/x", str(tmp_path / "missing" / "reports")):
        line = sentence_for("sglang_report_dir", refused(sglang_report_dir=value))
        parent = os.path.dirname(value)
        assert "is in %s, which does not exist" % parent in line and "create %s first" % parent in line, line
    assert not os.path.exists("/nonexistent") and not (tmp_path / "missing").exists()


def test_a_report_dir_that_is_a_file_or_in_a_file_is_refused(tmp_path):
    (tmp_path / "f").write_text("x")
    for value in (tmp_path / "f", tmp_path / "f" / "r"):
        assert "which is not a folder" in sentence_for("sglang_report_dir", refused(sglang_report_dir=str(value)))


@pytest.mark.skipif(os.getuid() == 0, reason="root writes to any folder")
def test_a_report_dir_in_a_folder_the_operator_cannot_write_is_refused(tmp_path):
    shut = tmp_path / "shut"
    shut.mkdir(mode=0o500)
    try:
        line = sentence_for("sglang_report_dir", refused(sglang_report_dir=str(shut / "r")))
        assert "cannot write to" in line, line
    finally:
        shut.chmod(0o700)


@pytest.mark.parametrize("value", ["../../../x", "a/b", ".hidden", "x y", "", "ct200\n", "-x", "a" * 65])
def test_the_server_name_is_a_name(value):
    line = sentence_for("sglang_server_name", refused(sglang_server_name=value))
    assert "no / or .." in line or "control character" in line


@pytest.mark.parametrize("knob, value", [("sglang_service_name", "sglang@x"), ("sglang_service_name", "../x"),
                                         ("sglang_service_name", "x.service y"), ("sglang_user", "root"),
                                         ("sglang_user", "Sglang"), ("sglang_user", "a b"),
                                         ("sglang_served_model_name", "a b"), ("sglang_served_model_name", "a%n"),
                                         ("sglang_served_model_name", '"x"'),
                                         ("sglang_model_hf_repo", "org/../x"), ("sglang_model_hf_repo", "a/b/c"),
                                         ("sglang_model_hf_revision", "main branch"),
                                         ("sglang_hf_endpoint", "file:///etc/passwd"),
                                         ("sglang_hf_endpoint", "https://x y"),
                                         ("sglang_nccl_socket_ifname", "eth0 eth1"),
                                         ("sglang_router_service_name", "r@1"), ("sglang_router_user", "root")])
def test_names_and_urls_are_refused_with_an_example(knob, value):
    assert "such as" in sentence_for(knob, refused(**{knob: value})) or value == "root"


# --- hosts and ports ---

@pytest.mark.parametrize("value", ["127.0.0.1", "0.0.0.0", "::", "::1", "fe80::1", "10.0.0.1", "gpu1.example.net",
                                   "ct200", "ct200_sim"])
def test_an_address_or_host_name_passes(value):
    assert refused(sglang_host=value, sglang_api_key="k-1") == []


@pytest.mark.parametrize("value", ["", "a b", "x;rm -rf /", "-oProxyCommand=x", "http://x", "[::1]", "a..b",
                                   "-x.example", "1.2.3.4:80", 10, None])
def test_a_bad_host_is_refused(value):
    assert "address" in sentence_for("sglang_host", refused(sglang_host=value))


@pytest.mark.parametrize("knob", ["sglang_port", "sglang_dist_init_port", "sglang_router_port",
                                  "sglang_router_prometheus_port"])
@pytest.mark.parametrize("value", [0, 65536, -1, "99999", "abc", math.inf, math.nan, 1e30, True, 8080.5, None])
def test_a_bad_port_is_refused(knob, value):
    assert "1 to 65535" in sentence_for(knob, refused(**{knob: value}))


# --- integer knobs: inf, nan, huge, booleans, text ---

INT_KNOBS = ["sglang_context_target", "sglang_tp_size", "sglang_pp_size", "sglang_dp_size", "sglang_page_size",
             "sglang_dist_timeout", "sglang_ready_timeout", "sglang_backup_keep", "sglang_start_limit_burst",
             "sglang_smoke_timeout", "sglang_router_request_timeout_s", "sglang_router_health_failure_threshold"]


@pytest.mark.parametrize("knob", INT_KNOBS)
@pytest.mark.parametrize("value", [math.inf, -math.inf, math.nan, 10**400, 1e30, "1e6", True, 0.5, "abc", [1]],
                         ids=["inf", "-inf", "nan", "10**400", "1e30", "1e6-text", "true", "0.5", "abc", "list"])
def test_an_integer_knob_refuses_non_integers_and_huge_values(knob, value):
    assert "whole number" in sentence_for(knob, refused(**{knob: value}))


@pytest.mark.parametrize("value", [200000, "200000", 200000.0])
def test_an_integer_knob_accepts_integers_written_any_plain_way(value):
    assert refused(sglang_context_target=value) == []


@pytest.mark.parametrize("knob, value", [("sglang_gpu_memory_mib", 1e30), ("sglang_gpu_memory_mib", math.inf),
                                         ("sglang_min_headroom_gib", -1), ("sglang_uncalibrated_margin", 2),
                                         ("sglang_checkpoint_gib", "lots"), ("sglang_preload_overhead_gib", math.nan)])
def test_a_number_knob_refuses_nonsense(knob, value):
    assert "finite number" in sentence_for(knob, refused(**{knob: value}))


def test_optional_numbers_may_be_empty():
    assert refused(sglang_max_running_requests=None, sglang_gpu_memory_mib=None, sglang_smoke_min_pool_tokens=None,
                   sglang_smoke_prompt_tokens="full") == []


# --- through Ansible: the role's task file, one sentence per value, no traceback, no secret ---

def test_the_role_s_input_check_refuses_each_bad_value_once_through_ansible():
    extra = {"sglang_extra_args": ["--hos", "0.0.0.0"], "sglang_api_key": ["k1-secret", "k2-secret"],
             "sglang_environment": {"A": "1\nLD_PRELOAD=/x.so"}, "sglang_server_name": "../../../x",
             "sglang_hf_token_file": "/etc/hf-token"}
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg"), ANSIBLE_NOCOLOR="1")
    result = subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-playbook"),
                             "tests/unit/hostile_values_localhost.yml", "-e", json.dumps(extra)], cwd=REPO, env=env,
                            capture_output=True, text=True, timeout=300)
    out = result.stdout + result.stderr
    assert result.returncode == 2, out
    message = json.loads(out.split("FAILED! => ", 1)[1].splitlines()[0])["msg"]
    for knob in extra:
        assert message.count("localhost: %s " % knob) == 1, message
    assert "Traceback" not in out and "k1-secret" not in out and "k2-secret" not in out
    assert "(SGLang 0.5.23's parser reads it as --host), which the role sets from sglang_host" in message


def test_the_role_checks_values_before_anything_else():
    with open(os.path.join(REPO, "roles", "sglang", "tasks", "main.yml"), encoding="utf-8") as handle:
        tasks = yaml.safe_load(handle)
    assert tasks[0]["ansible.builtin.import_tasks"] == "inputs.yml"


# --- the Hub token's folders: only those the role owns are created or chowned ---

def _token_tasks():
    with open(os.path.join(REPO, "roles", "sglang", "tasks", "download_prepare.yml"), encoding="utf-8") as handle:
        return [task for task in yaml.safe_load(handle) if "token" in task["name"].lower()]


def test_a_token_file_in_an_existing_folder_leaves_that_folder_as_it_is(tmp_path):
    system = tmp_path / "etc"  # stands for /etc: it exists, and is not the role's
    system.mkdir(mode=0o755)
    system.chmod(0o755)
    home = tmp_path / "home"
    home.mkdir()
    play = tmp_path / "play.yml"
    play.write_text(yaml.safe_dump([{"name": "The token tasks of download_prepare.yml", "hosts": "localhost",
                                     "connection": "local", "gather_facts": False, "tasks": _token_tasks()}]))
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_ROLES_PATH=os.path.join(REPO, "roles"))
    user = "root" if os.getuid() == 0 else os.environ.get("USER", "nobody")
    for token_file in (system / "sglang" / "hf-token", home / ".cache" / "huggingface" / "token"):
        result = subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), str(play), "-e",
                                 json.dumps({"sglang_hf_token": "hf_not_a_real_token", "sglang_user": user,
                                             "sglang_home": str(home), "sglang_hf_token_file": str(token_file),
                                             "_sglang_etc": "/etc/sglang-not-this"})],
                                cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
        assert result.returncode == 0, result.stdout + result.stderr
        assert token_file.read_text() == "hf_not_a_real_token\n" and (token_file.stat().st_mode & 0o777) == 0o600
        assert (token_file.parent.stat().st_mode & 0o777) == 0o700
    assert (system.stat().st_mode & 0o777) == 0o755  # the old tasks made the grandparent 0700, the user's
    assert ((home / ".cache").stat().st_mode & 0o777) == 0o700


# --- systemd-analyze verify on what the templates render from the accepted hostile values ---

def _venv(tmp_path):
    """A runtime systemd-analyze can verify a unit against: its python and its launcher (the unit's program)."""
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True, exist_ok=True)
    if not (venv / "bin" / "python").exists():
        os.symlink(sys.executable, venv / "bin" / "python")
    sglang_runtime_launcher.ensure_launcher(str(venv))
    return str(venv)


def _verified(unit, tmp_path):
    if SYSTEMD_ANALYZE:
        code, output = verify(unit, str(tmp_path))
        assert code == 0 and output.strip() == "", output  # it warns with rc 0 about unknown keys and bad values


@pytest.mark.parametrize("overrides", [
    {}, {"sglang_served_model_name": "org/model:v1@x+y"}, {"sglang_host": "::", "sglang_api_key": "k'\"$%\\y"},
    {"sglang_environment": {"A": "x y $Z %h `q` \"w\""}},
    {"sglang_extra_args": ["--log-requests", "--chat-template", "{{ messages }} %s $1"]},
    {"sglang_model_path": "/srv/m@v1+x,y:z=1~"}])
def test_accepted_hostile_looking_values_render_a_unit_systemd_verifies(overrides, tmp_path):
    assert refused(**overrides) == []
    files = render_all(sglang_venv=_venv(tmp_path), **overrides)
    assert directives(files["unit"]) == _baseline()
    argv = exec_start_argv(files["unit"])
    assert argv[argv.index("--model-path") + 1] == overrides.get("sglang_model_path", DEFAULTS["sglang_model_path"])
    _verified(files["unit"], tmp_path)


# --- structured knobs: the calibration, hand-measured boots, the batch size, nested strings ---

@pytest.mark.parametrize("knob, value, words", [
    ("sglang_calibration", {"pre_load_avail_gib": math.inf, "post_load_avail_gib": 19.4}, "finite number"),
    ("sglang_calibration", {"pre_load_avail_gib": "85.3 GiB", "post_load_avail_gib": 19.4}, "finite number"),
    ("sglang_calibration", [85.3, 19.4], "not a mapping"),
    ("sglang_measured_boots", [{"mem_fraction_static": 0.85}], "not {mem_fraction_static, pool_tokens"),
    ("sglang_measured_boots", [{"mem_fraction_static": 1e30, "pool_tokens": 1}], "finite number"),
    ("sglang_measured_boots", [{"mem_fraction_static": 0.85, "pool_tokens": math.inf}], "whole number"),
    ("sglang_measured_boots", {"f": 0.85}, "not a list"),
    ("sglang_serial", "abc", "whole number"), ("sglang_serial", [1, "x%"], "whole number"),
    ("sglang_nodes", "ct400-a", "not a list"), ("sglang_nodes", ["ct400-a\nx"], "control character"),
    ("sglang_kernel_wheels", [{"src": "/w/k.whl\n--index-url http://evil"}], "control character"),
])
def test_structured_knobs_are_checked_inside(knob, value, words):
    assert words in sentence_for(knob, refused(**{knob: value}))


def test_structured_knobs_accept_what_the_inventory_gives():
    assert refused(sglang_calibration={"pre_load_avail_gib": 85.334, "post_load_avail_gib": 19.419},
                   sglang_measured_boots=[{"mem_fraction_static": 0.85, "pool_tokens": 101134}],
                   sglang_serial="50%", sglang_nodes=["ct400-a", "ct400-b"],
                   sglang_model_config={"chat_template": "{% for m in messages %}\n{{ m }}{% endfor %}"}) == []


def test_facts_a_run_sets_under_sglang_names_are_not_knobs():
    # hostvars carry the plan, the boot and the proof once a run set them; their text is not a setting.
    assert refused(sglang_kv_plan_result={"explanation": "line one\nline two"}, sglang_smoke={"answer": "x\ny"}) == []


# --- extra arguments: no option the role or the plan owns, in any spelling argparse accepts ---

OWNED = [("--host", "sglang_host"), ("--hos", "sglang_host"), ("--host=0.0.0.0", "sglang_host"),
         ("--api-key", "sglang_api_key"), ("--api-ke=sk-x", "sglang_api_key"), ("--tp-size", "sglang_tp_size"),
         ("--tp", "sglang_tp_size"), ("--tensor-parallel-size", "sglang_tp_size"), ("--port", "sglang_port"),
         ("--model", "sglang_model_path"), ("--served-model", "sglang_served_model_name"),
         ("--max-total-tokens", "the plan"), ("--max-total", "the plan"), ("--mem-fraction-static", "the plan"),
         ("--context-length", "sglang_context_target"), ("--kv-cache-dtype", "sglang_kv_cache_dtype"),
         ("--speculative-draft-model", "sglang_speculative.draft_model_path"), ("--nnodes", "sglang_nodes"),
         ("--nccl-init-addr", "sglang_dist_init_host"), ("--config", "its --config file"),
         ("--admin-api-key=x", "every local user reads argv"), ("--dp-size", "sglang_dp_size")]
# DFLASH's block size is its draft tokens (0.5.23 arg_groups/speculative_hook.py:368-387): from 0.5.11 only
OWNED_FROM_0_5_11 = [("--speculative-dflash-block-size", "sglang_speculative.num_draft_tokens"),
                     ("--speculative-dflash-block", "sglang_speculative.num_draft_tokens")]


@pytest.mark.parametrize("version, arg, owner", [(version, arg, owner) for version in ("0.5.9", "0.5.23")
                                                 for arg, owner in OWNED] +
                         [("0.5.11", arg, owner) for arg, owner in OWNED_FROM_0_5_11] +
                         [("0.5.23", arg, owner) for arg, owner in OWNED_FROM_0_5_11])
def test_an_extra_argument_that_reaches_an_owned_option_names_its_owner(version, arg, owner):
    line = sentence_for("sglang_extra_args", refused(sglang_version=version, sglang_extra_args=[arg, "1"]))
    assert owner in line and "remove it from sglang_extra_args" in line, line
    assert "sk-x" not in line and "=x'" not in line  # a key given with = is not shown


@pytest.mark.parametrize("args, words", [(["--cont"], "ambiguous"), (["--"], "takes nothing"),
                                         (["--host 0.0.0.0"], "in one item"), (["--hel"], "print its help")])
def test_extra_arguments_argparse_would_refuse_or_misread_are_refused(args, words):
    assert words in sentence_for("sglang_extra_args", refused(sglang_extra_args=args))


@pytest.mark.parametrize("args", [["--enable-cache-report"], ["--trust-remote-code"], ["--log-requests"],
                                  ["--chunked-prefill-size", "8192"], ["--tool-call-parser", "kimi_k2"]])
def test_extra_arguments_the_role_does_not_own_pass(args):
    assert refused(sglang_extra_args=args) == []


@pytest.mark.parametrize("arg, owner", [("--hos", "sglang_router_host"), ("--port=1", "sglang_router_port"),
                                        ("--worker-urls", "sglang_router_workers"), ("--api", "sglang_api_key"),
                                        ("--control-plane-api-keys=a:b:admin:k", "sglang_router_admin_api_key"),
                                        ("--policy", "sglang_router_policy")])
def test_a_router_extra_argument_that_reaches_an_owned_option_names_its_owner(arg, owner):
    line = sentence_for("sglang_router_extra_args", refused(sglang_router_extra_args=[arg]))
    assert owner in line and ":k'" not in line, line
