"""Contract: every flag and choice the repository can render exists in the SGLang release it renders it for.

1. The committed tables (lib/sglang_kvplan/releases/flags-*.json) equal a fresh extraction from the real
   wheel, fetched once from PyPI (`pip download --no-deps`) into .cache/sglang-wheels/.
2. Every release of the table accepts (a) every `--flag` in roles/sglang/templates/*.j2 and (b) the planner's
   rendered args, planned for that release, over every preset x KV dtype, speculative, data-parallel and node
   case, none of them deprecated there; the pinned release (`sglang_version` in roles/sglang/defaults/main.yml)
   accepts the plan of every inventory host and (c) every `sglang_extra_args` in inventory/ and
   molecule/shared/.
"""

import glob
import os
import re
import subprocess
import sys
import tempfile

import pytest
import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import extract_flags
from flagcheck import RELEASES, REPO, check_args, deprecations, load_table, release_of

WHEELS = os.path.join(REPO, ".cache", "sglang-wheels")
DEFAULTS = os.path.join(REPO, "roles", "sglang", "defaults", "main.yml")
COMMITTED = sorted(n[len("flags-"):-len(".json")] for n in os.listdir(RELEASES) if n.startswith("flags-"))
RULES_TABLE = os.path.join(RELEASES, "rules.json")


def pinned_version():
    with open(DEFAULTS, encoding="utf-8") as handle:
        return str(yaml.safe_load(handle)["sglang_version"])


def _by_release(names):
    return sorted(names, key=lambda v: tuple(int(n) for n in re.findall(r"\d+", v)))


def checked_releases():
    """The releases checked against their own wheels: all of them under `make releases` (SGLANG_RELEASES=all),
    else the pinned one and the table's two ends (`make test`: three wheels, downloaded once into .cache)."""
    every = _by_release(COMMITTED)
    if os.environ.get("SGLANG_RELEASES") == "all":
        return every
    return _by_release({release_of(pinned_version()), every[0], every[-1]} & set(every))


def wheel(version):
    """The real wheel of `version`, downloaded once (any platform's wheel carries the same Python source). pip writes
    into a folder of its own beside the cache and the wheel is then renamed into it, whole: the unit tests read
    the cache from another process meanwhile (a half-copied wheel once failed test_kvplan_architectures)."""
    found = sorted(glob.glob(os.path.join(WHEELS, "sglang-%s-*.whl" % version)))
    if not found:
        os.makedirs(WHEELS, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=os.path.dirname(WHEELS), prefix=".sglang-wheel-") as scratch:
            subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:",
                            "--python-version", "3.11", "--implementation", "cp", "--platform",
                            "manylinux_2_34_x86_64", "-d", scratch, "sglang==%s" % version], check=True, timeout=600)
            for name in os.listdir(scratch):
                os.replace(os.path.join(scratch, name), os.path.join(WHEELS, name))
        found = sorted(glob.glob(os.path.join(WHEELS, "sglang-%s-*.whl" % version)))
    assert found, "pip download did not leave a wheel of sglang %s in %s" % (version, WHEELS)
    return found[0]


@pytest.fixture(scope="module")
def pinned():
    version = release_of(pinned_version())
    assert version in COMMITTED, ("sglang_version %s (roles/sglang/defaults/main.yml) has no flag table; run "
                                  "python tests/contract/extract_flags.py <its wheel> %s"
                                  % (version, os.path.join(RELEASES, "flags-%s.json" % version)))
    return load_table(version)


@pytest.mark.parametrize("version", checked_releases())
def test_committed_table_equals_a_fresh_extraction_from_the_real_wheel(version):
    fresh = extract_flags.extract(wheel(version))
    committed = load_table(version)
    assert fresh["version"] == version
    assert extract_flags.dumps(committed) == extract_flags.dumps(fresh), (
        "lib/sglang_kvplan/releases/flags-%s.json drifted from the wheel: regenerate it with "
        "python tests/contract/extract_flags.py %s lib/sglang_kvplan/releases/flags-%s.json"
        % (version, wheel(version), version))


def test_the_tables_know_what_differs_between_releases():
    old, new = load_table("0.5.9"), load_table("0.5.23")
    dtype = {t["version"]: next(f for f in t["flags"] if "--kv-cache-dtype" in f["names"]) for t in (old, new)}
    assert "fp16" not in dtype["0.5.9"]["choices"] and "fp16" not in dtype["0.5.23"]["choices"]
    assert "fp4_e2m1" in dtype["0.5.9"]["choices"] and {"mxfp8", "nvfp4"} <= set(dtype["0.5.23"]["choices"])
    assert "DFLASH" in new["runtime_choices"]["speculative_algorithm"]["values"]
    assert check_args(old, ["--speculative-algorithm", "DFLASH"])  # 0.5.9 has no DFLASH


# ---- (a) the role's templates -------------------------------------------------------------------------

FLAG = re.compile(r"(?<![\w-])(--[a-z][a-z0-9]*(?:-[a-z0-9]+)*)")


def template_flags():
    """Every --flag literal in roles/sglang/templates/*.j2 (a YAML config template: its keys)."""
    found = {}
    for path in sorted(glob.glob(os.path.join(REPO, "roles", "sglang", "templates", "*.j2"))):
        name = os.path.basename(path)
        with open(path, encoding="utf-8") as handle:
            for number, line in enumerate(handle, 1):
                if re.search(r"\.ya?ml\.j2$", name):  # SGLang's --config file: key -> "--<key>"
                    match = re.match(r"^([A-Za-z0-9][\w-]*):", line)
                    flags = ["--" + match.group(1)] if match else []
                else:
                    flags = FLAG.findall(line.split("{#")[0])
                for flag in flags:
                    found.setdefault(flag, "%s:%d" % (name, number))
    return found


@pytest.mark.parametrize("version", COMMITTED)
def test_every_flag_in_the_templates_is_known_to_every_supported_release(version):
    """The role renders the same template whatever sglang_version says: each of its flags must be in every release
    of the table (what differs per release is rendered by the planner, checked in (b))."""
    flags = template_flags()
    assert "--model-path" in flags  # the unit's command line is there
    problems = ["%s (%s)" % (p, where) for flag, where in flags.items() for p in check_args(load_table(version), [flag])
                if "expects" not in p]  # values are Jinja; (b) and (c) check rendered values
    assert not problems, problems


# ---- (b) the planner ------------------------------------------------------------------------------------

def _planner():
    lib = os.path.join(REPO, "lib")
    if lib not in sys.path:
        sys.path.insert(0, lib)
    import sglang_kvplan
    from sglang_kvplan import spec as kvspec

    return sglang_kvplan, kvspec


# A DFLASH drafter's config.json as the public Kimi-K2.6-DFlash checkpoint has it (Qwen3 architecture).
DRAFT_CONFIG = {"architectures": ["DFlashDraftModel"], "model_type": "qwen3", "num_hidden_layers": 5,
                "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128, "hidden_size": 4096,
                "max_position_embeddings": 262144, "torch_dtype": "bfloat16"}
SPECULATIVE_CASES = [
    {"algorithm": "DFLASH", "draft_model_path": "/srv/models/kimi-k2.6-dflash", "draft_model_config": DRAFT_CONFIG,
     "num_draft_tokens": 16},
    {"algorithm": "EAGLE", "draft_model_path": "/srv/models/eagle", "draft_model_config": DRAFT_CONFIG,
     "num_steps": 3, "eagle_topk": 1, "num_draft_tokens": 4},
]


def planner_cases(version):
    sglang_kvplan, kvspec = _planner()
    keys = kvspec.KEYS
    base = {"tp_size": 8, "pre_load_avail_gib": 130.0, "post_load_avail_gib": 60.0, "context_target": 8192}
    if "version" in keys:
        base["version"] = version
    speculative_keys = [k for k in keys if k.startswith("speculative") and k != "speculative_draft_layers"]
    for preset in sorted(sglang_kvplan.load_presets()):
        for dtype in kvspec.KV_DTYPES:
            yield "%s/%s" % (preset, dtype), dict(base, model=preset, kv_cache_dtype=dtype)
        for key in speculative_keys:
            for case in SPECULATIVE_CASES:
                yield "%s/%s=%s" % (preset, key, case["algorithm"]), dict(base, model=preset, **{key: case})
        for name, case in DP_CASES.items():
            yield "%s/%s" % (preset, name), dict(base, model=preset, **case)
        if "nnodes" in keys:
            for name, case in NODE_CASES.items():
                yield "%s/%s" % (preset, name), dict(base, model=preset, **case)


# Data parallelism: attention DP over the 8 GPUs (0.5.22+ spell it --attn-dp-size), and two replicas of tp 4.
DP_CASES = {"dp attention": {"dp_size": 8, "enable_dp_attention": True},
            "dp replicas": {"tp_size": 4, "dp_size": 2}}


# A server across nodes: tp 8 over 2 or 4 nodes, a rank other than 0, rank 0's address by IP, name and IPv6.
NODE_CASES = {
    "2 nodes": {"nnodes": 2, "node_rank": 1, "dist_init_host": "10.0.0.1", "dist_init_port": 20000,
                "dist_timeout": 300},
    "4 nodes": {"nnodes": 4, "node_rank": 3, "dist_init_host": "ct400-a", "dist_init_port": 20000},
    "2 nodes v6": {"nnodes": 2, "node_rank": 0, "dist_init_host": "fd00::1", "dist_init_port": 5000,
                   "dist_timeout": 60},
}


@pytest.mark.parametrize("version", COMMITTED)
def test_every_planner_rendering_is_accepted_by_the_release_it_was_planned_for(version):
    sglang_kvplan, kvspec = _planner()
    table = load_table(version)
    problems, rendered, flags_seen = [], 0, set()
    for name, spec in planner_cases(version):
        try:
            args = sglang_kvplan.plan(spec)["args"]
        except sglang_kvplan.KVPlanError:
            continue  # refused before anything is rendered: nothing reaches SGLang
        rendered += 1
        flags_seen.update(a for a in args if str(a).startswith("--"))
        problems += ["%s: %s" % (name, p) for p in check_args(table, args)]
        problems += ["%s: %s" % (name, p) for p in deprecations(table, args)]  # a deprecated spelling has a new one
    assert rendered >= len(sglang_kvplan.load_presets()), "the matrix rendered almost nothing: check its spec"
    assert {"--context-length", "--mem-fraction-static"} <= flags_seen
    speculative_keys = [k for k in kvspec.KEYS if k.startswith("speculative")
                        and k != "speculative_draft_layers"]
    assert flags_seen & {"--attn-dp-size", "--enable-dp-attention"}, "no case rendered DP attention: see DP_CASES"
    if "nnodes" in kvspec.KEYS:
        assert {"--nnodes", "--node-rank", "--dist-init-addr", "--dist-timeout"} <= flags_seen, (
            "the planner has nnodes but no case rendered the multi-node flags: update NODE_CASES in this file")
    if speculative_keys:
        assert "--speculative-algorithm" in flags_seen, (
            "the planner has %s but no case rendered --speculative-algorithm: update SPECULATIVE_CASES in this "
            "file to the planner's speculative spec" % speculative_keys)
    assert not problems, "\n".join(problems)


def test_the_plan_of_every_inventory_host_is_accepted_by_the_pinned_release(pinned):
    playbook = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg"), ANSIBLE_NOCOLOR="1")
    result = subprocess.run([playbook, "playbooks/plan.yml", "-e", "ansible_host=192.0.2.1"], cwd=REPO, env=env,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    lines = re.findall(r'^flags: (.*)$', result.stdout, re.M)  # make plan's plain lines
    assert lines, result.stdout
    problems = [p for line in lines for p in check_args(pinned, line.split())]
    assert not problems, problems


# ---- (c) sglang_extra_args ----------------------------------------------------------------------------

def extra_args():
    found = []
    for root in ("inventory", os.path.join("molecule", "shared")):
        for path in sorted(glob.glob(os.path.join(REPO, root, "**", "*.yml"), recursive=True)):
            with open(path, encoding="utf-8") as handle:
                data = yaml.safe_load(handle)
            if isinstance(data, dict) and isinstance(data.get("sglang_extra_args"), list):
                args = [str(a) for a in data["sglang_extra_args"] if "{{" not in str(a)]
                found.append((os.path.relpath(path, REPO), [p for a in args for p in a.split()]))
    return found


def test_every_extra_arg_in_the_inventories_is_accepted_by_the_pinned_release(pinned):
    found = extra_args()
    assert found, "no sglang_extra_args found in inventory/ or molecule/shared/"
    problems = ["%s: %s" % (path, p) for path, args in found for p in check_args(pinned, args)]
    assert not problems, problems


# ---- the checker fails when it should -----------------------------------------------------------------

@pytest.mark.parametrize("version", ["0.5.9", "0.5.23"])
@pytest.mark.parametrize("argv, expected", [
    (["--kv-cache-dtype", "fp16"], "'fp16' is not a choice of SGLang"),
    (["--kv-cache-dtype=float16"], "'float16' is not a choice of SGLang"),
    (["--no-such-flag", "1"], "--no-such-flag: not a flag of SGLang"),
    (["--mem-fraction", "0.9"], "--mem-fraction: not a flag"),  # argparse would take the prefix; we do not
    (["--tp-size", "eight"], "invalid int value 'eight'"),
    (["--context-length"], "expects 1 value(s)"),
    (["--trust-remote-code=yes"], "takes no value"),
    (["8192"], "a value without a flag"),
])
def test_check_args_reports_what_the_release_refuses(version, argv, expected):
    problems = check_args(load_table(version), argv)
    assert any(expected in p for p in problems), problems


def test_check_args_per_release_choices():
    old, new = load_table("0.5.9"), load_table("0.5.23")
    assert check_args(old, ["--kv-cache-dtype", "fp4_e2m1"]) == []
    assert check_args(new, ["--kv-cache-dtype", "fp4_e2m1"])
    assert check_args(new, ["--kv-cache-dtype", "nvfp4", "--speculative-algorithm", "dflash"]) == []
    assert any("not known to SGLang 0.5.23" in p for p in check_args(new, ["--speculative-algorithm", "DDTREE"]))
    # human_readable_int takes "200k"; a BooleanOptionalAction flag also answers to --no-<flag>
    assert check_args(new, ["--max-total-tokens", "200k", "--tp-size", "8", "--no-enable-tf32-matmul"]) == []
    assert check_args(old, ["--no-enable-tf32-matmul"])
    assert deprecations(new, ["--enable-dp-attention"]) == ["--enable-dp-attention (deprecated_store_true)"]


def test_a_good_command_line_passes_both_releases():
    argv = ["--model-path", "/srv/models/kimi-k2.6", "--trust-remote-code", "--tp-size", "8", "--host", "0.0.0.0",
            "--port", "30000", "--context-length", "200000", "--mem-fraction-static", "0.926",
            "--max-running-requests", "8", "--kv-cache-dtype", "auto", "--page-size", "1",
            "--max-total-tokens", "200000", "--tool-call-parser", "kimi_k2", "--reasoning-parser", "kimi_k2",
            "--speculative-algorithm", "EAGLE", "--speculative-draft-model-path", "/srv/models/draft",
            "--speculative-num-steps", "3", "--speculative-eagle-topk", "1", "--speculative-num-draft-tokens", "4"]
    for version in ("0.5.9", "0.5.23"):
        assert check_args(load_table(version), argv) == [], version


def test_the_three_flags_whose_choices_the_0_5_23_parser_checks():
    """--cuda-graph-backend-decode/-prefill take Backend.ALL (model_executor/cuda_graph_config.py), and
    --kv-canary-real-data the lower-case names of RealKvHashMode (server_args.py): the real parser refuses others."""
    new = load_table("0.5.23")
    for flag in ("--cuda-graph-backend-decode", "--cuda-graph-backend-prefill"):
        assert check_args(new, [flag, "breakable"]) == []
        assert any("'piecewise' is not a choice" in p for p in check_args(new, [flag, "piecewise"]))
    assert check_args(new, ["--kv-canary-real-data", "partial"]) == []
    assert any("'some' is not a choice" in p for p in check_args(new, ["--kv-canary-real-data", "some"]))
