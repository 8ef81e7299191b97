"""The double held to the REAL SGLang resolver (issue 34 item 3): every case the real releases answered
(tests/fixtures/sglang_real/resolver-<version>.json, recorded by `make real-resolver` and asked again by `make
test`'s real-contract) is put to the double's own parser, launch checks and boot, on a simulated GPU of the case's
kind. The double must accept what the release accepted and refuse what it refused, and resolve the values the role
and the planner read as the release did: context, page, draft tokens, chunked prefill, running requests.

Found by this test and fixed in the double: the chunked prefill it took as 8,192 everywhere (the release's memory
tiers and its division by the attention-DP width), and NGRAM's default of 12 draft tokens."""

import contextlib
import glob
import io
import json
import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
if HERE not in sys.path:
    sys.path.insert(0, HERE)
sys.path.insert(1, os.path.join(REPO, "tests", "contract", "real"))

import cases  # noqa: E402
from sglang import _double_gpu as sim  # noqa: E402
from sglang import launch_server  # noqa: E402
from sglang._double_args import load_table  # noqa: E402
from sglang._double_boot import BootError  # noqa: E402

# The recorded answers, or with SGLANG_REAL_OUT=DIR the ones make test's real-contract has just asked for
ANSWERS = os.environ.get("SGLANG_REAL_OUT") or os.path.join(REPO, "tests", "fixtures", "sglang_real")
FIXTURES = sorted(glob.glob(os.path.join(ANSWERS, "resolver-*.json")))
COMPARED = ("context_length", "page_size", "speculative_num_draft_tokens", "chunked_prefill_size",
            "max_running_requests")


def test_both_releases_answered():
    assert len(FIXTURES) >= 2, "no real answers in %s" % ANSWERS


def _recorded():
    for path in FIXTURES:
        with open(path, encoding="utf-8") as handle:
            fixture = json.load(handle)
        for case in fixture["cases"]:
            yield pytest.param(fixture["version"], case, id="%s-%s" % (fixture["version"], case["id"]))


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """The cases' model folders (config.json only, as the real run had them) and a --config file."""
    root = tmp_path_factory.mktemp("models")
    for name, config in cases.MODELS.items():
        (root / name).mkdir()
        (root / name / "config.json").write_text(json.dumps(config))
    (root / "sglang.yaml").write_text('api-key: "%s"\n' % cases.API_KEY)
    return str(root)


def _double(version, case, root):
    """The double's verdict: {accepted, error} and, when accepted, the COMPARED values it resolved."""
    argv = [a.replace(cases.MODEL_ROOT + "/@CONFIG@", root + "/sglang.yaml").replace(cases.MODEL_ROOT, root)
            for a in case["argv"]]
    capability, mib = cases.GPU_KNOBS[case["gpu"]]
    checkpoint = (cases.sglang_kvplan.load_presets().get(case["model"]) or {}).get("checkpoint_gib") or 10.0
    gpu = dict(sim.DEFAULTS, version=version, gpu_memory_mib=mib, compute_cap=capability, load_seconds=0.0,
               graph_seconds=0.0, pre_load_avail_gib=mib / 1024 - 1.5)  # the planner's estimate of P
    table = load_table(version)
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            args = launch_server.prepare_server_args(argv, table)
            launch_server.check_launch(args, sim.release(gpu), sim.release_rules(gpu))
            gpu["weights_gib_per_gpu"] = checkpoint / (args.tp_size * args.pp_size)
            state = launch_server.boot(args, gpu, table)
    except (BootError, SystemExit, AssertionError, ValueError) as error:
        return {"accepted": False, "error": "%s: %s" % (type(error).__name__, error)}
    return {"accepted": True, "context_length": state["context_len"], "page_size": args.page_size,
            "speculative_num_draft_tokens": args.speculative_num_draft_tokens,
            "chunked_prefill_size": args.chunked_prefill_size, "max_running_requests": args.max_running_requests}


@pytest.mark.parametrize("version, case", list(_recorded()))
def test_the_double_resolves_as_the_real_release(version, case, models):
    real, double = case["real"], _double(version, case, models)
    assert double["accepted"] == real["accepted"], (double.get("error"), real.get("refusal"))
    if not real["accepted"]:
        return
    resolved = real["resolved"]
    for field in COMPARED:
        want = resolved[field]
        if field == "speculative_num_draft_tokens" and not resolved["speculative_algorithm"]:
            continue  # no draft: the value means nothing
        if field == "page_size":
            want = want or 1
        assert double[field] == want, "%s: the double resolves %r, SGLang %s resolved %r" % (
            field, double[field], version, want)
