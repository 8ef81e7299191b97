"""The REAL SGLang server's own output (tests/fixtures/sglang_real/server-<version>/, recorded by serve_real.py from
the release booted on a CPU under the role's launcher, `make real-server`) against what the project reads from it:
always run, nothing installed.

- The journal reader (module_utils/sglang_journal.py) reads the real boot: the pool the planner pinned, the context,
  the concurrency, every stage to "ready" with the shard bar; and the launcher kept the API key out of the log.
- The proof module (library/sglang_smoke_test.py, level full) passed every check it can make against the real server:
  its pool, context, prompt token count, the needle answered at the full context and by 4 prompts at once, and
  streamed decode.
- The double (tests/sglang_double) answers in the real shapes where the project reads them: the /server_info fields,
  /v1/models' max_model_len, /generate's meta_info keys, which endpoints need the key, the too-long refusal, and
  its /metrics series are real series.
- A real Prometheus scraped the LIVE real server through the rendered targets (scrape_real.py): every alert and
  every panel expression of lib/sglang_metrics/catalog.py returned series there, and every metric the catalog reads
  is in the live /metrics with the kind it is catalogued as.
"""

import copy
import json
import os
import re
import sys
import urllib.error
import urllib.request

import pytest
from ansible.module_utils.sglang_journal import boot_progress, parse_boot_log
from sglang_metrics import catalog

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
sys.path.insert(0, os.path.join(REPO, "tests", "sglang_double"))
sys.path.insert(0, HERE)

from run_double import running_double  # noqa: E402

# The committed recording, or with SGLANG_REAL_OUT=DIR the one make test's real-contract has just made
FIXTURES = os.environ.get("SGLANG_REAL_OUT") or os.path.join(REPO, "tests", "fixtures", "sglang_real")
RELEASES = ["0.5.23"]
KEY = "k3y-of-the-double"
# What the project reads from /server_info (module_utils/sglang_proof_server.py server_info, pool_from_info,
# reserved_tokens) and /v1/models (model_and_context), and from /generate's meta_info (generate_once)
SERVER_INFO_READ = ("max_total_num_tokens", "max_req_input_len", "context_length", "max_running_requests",
                    "version", "speculative_algorithm")
META_READ = ("prompt_tokens", "completion_tokens", "cached_tokens", "finish_reason")


def _recorded(version):
    folder = os.path.join(FIXTURES, "server-%s" % version)
    with open(os.path.join(folder, "answers.json"), encoding="utf-8") as handle:
        answers = json.load(handle)
    with open(os.path.join(folder, "boot.log"), encoding="utf-8") as handle:
        return answers, handle.read()


@pytest.mark.parametrize("version", RELEASES)
def test_the_journal_reader_reads_the_real_boot(version):
    recorded, log = _recorded(version)
    facts = parse_boot_log(log)
    assert facts["found"], facts
    assert (facts["pool_tokens"], facts["context_len"], facts["max_running_requests"]) == (
        recorded["pool"], recorded["context"], 4), facts
    assert facts["error"] is None, facts
    progress = boot_progress(log)
    assert progress["stage"] == "ready" and progress["kv_tokens"] == recorded["pool"], progress
    loading = boot_progress(log.split("Load weight end")[0])
    assert loading["stage"] == "loading weights" and loading["shard"] == [1, 1], loading  # the real shard bar
    assert "@KEY@" not in log and "'api_key': '<redacted>'" in log  # the role's launcher redacted it


@pytest.mark.parametrize("version", RELEASES)
def test_the_proof_passed_against_the_real_server(version):
    recorded, _log = _recorded(version)
    proof = recorded["proof"]
    assert not proof.get("failed"), proof.get("msg")
    checks = {check["name"]: check for check in proof["checks"]}
    assert {"ready", "context", "pool", "prompt_tokens", "answer"} <= set(checks), sorted(checks)
    assert all(check["ok"] for check in checks.values()), checks
    assert proof["pool_tokens"] == recorded["pool"] and proof["context_length"] == recorded["context"]
    assert proof["decode"] and proof["decode"]["tpot_ms"] > 0, proof["decode"]
    # the needle, asked at the full context (the model answers it: make_tiny.py) and by each prompt sent at once
    assert proof["question"] == "needle" and str(proof["needle"]) in proof["completion"], proof["completion"]
    assert proof["concurrency"]["answered"] == proof["concurrency"]["requests"] == 4, proof["concurrency"]


def _http(url, key=None, body=None):
    request = urllib.request.Request(url, data=json.dumps(body).encode() if body is not None else None,
                                     headers=dict({"Content-Type": "application/json"},
                                                  **({"Authorization": "Bearer " + key} if key else {})))
    try:
        with urllib.request.urlopen(request, timeout=60) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def _kind(value):
    return "number" if isinstance(value, (int, float)) and not isinstance(value, bool) else type(value).__name__


@pytest.fixture(scope="module")
def double_answers(tmp_path_factory):
    recorded, _log = _recorded(RELEASES[0])
    config = tmp_path_factory.mktemp("double") / "sglang.yaml"
    config.write_text("api-key: %s\n" % json.dumps(KEY))
    flags = ["--config", str(config), "--context-length", str(recorded["context"]), "--max-total-tokens",
             str(recorded["pool"]), "--max-running-requests", "4", "--enable-metrics"]
    with running_double(flags, preset="llama-3.1-8b") as (url, _log_path):
        return {
            "health": _http(url + "/health"),
            "server_info_no_key": _http(url + "/server_info"),
            "server_info": _http(url + "/server_info", KEY),
            "models": _http(url + "/v1/models", KEY),
            "generate": _http(url + "/generate", KEY, {"text": "the quick brown fox",
                                                       "sampling_params": {"max_new_tokens": 8, "temperature": 0}}),
            "too_long": _http(url + "/generate", KEY, {"text": "one two " * 2000,
                                                       "sampling_params": {"max_new_tokens": 1}}),
            "metrics": _http(url + "/metrics"),
        }


@pytest.mark.parametrize("version", RELEASES)
def test_the_double_answers_in_the_real_shapes_where_the_project_reads(version, double_answers):
    real = _recorded(version)[0]["answers"]
    for name in ("health", "server_info_no_key", "server_info", "models", "generate", "too_long", "metrics"):
        assert double_answers[name][0] == real[name]["status"], (name, double_answers[name], real[name]["status"])
    info, real_info = json.loads(double_answers["server_info"][1]), real["server_info"]["body"]
    for field in SERVER_INFO_READ:
        assert field in info and field in real_info, field
        assert _kind(info[field]) == _kind(real_info[field]), (field, info[field], real_info[field])
    for field in ("max_total_num_tokens", "max_req_input_len", "context_length", "max_running_requests"):
        assert info[field] == real_info[field], (field, info[field], real_info[field])
    model, real_model = json.loads(double_answers["models"][1])["data"][0], real["models"]["body"]["data"][0]
    assert model["max_model_len"] == real_model["max_model_len"]
    meta, real_meta = json.loads(double_answers["generate"][1])["meta_info"], real["generate"]["body"]["meta_info"]
    for field in META_READ:
        assert field in meta and field in real_meta, field
        assert _kind(meta[field]) == _kind(real_meta[field]), (field, meta[field], real_meta[field])
    # a {type, ...} mapping in both (the proof reads type "abort"); which type depends on the text, not the shape
    assert {"stop", "length"} >= {meta["finish_reason"]["type"], real_meta["finish_reason"]["type"]}
    too_long, real_too_long = json.loads(double_answers["too_long"][1]), real["too_long"]["body"]
    shape = re.compile(r"The input \(\d+ tokens\) is longer than the model's context length \(\d+ tokens\)\.")
    assert shape.fullmatch(too_long["error"]["message"]) and shape.fullmatch(real_too_long["error"]["message"])
    series = set(re.findall(r"^(sglang:\w+)", real["metrics"]["body"], re.M))
    # and the live /metrics' families after the scrape's traffic (per-token latency is observed only for answers of
    # two tokens or more, which the recorded /metrics, taken before the proof, has not seen yet)
    for line in _recorded(version)[0]["prometheus"]["live_types"]:
        name, kind = line.split()[2:4]
        series |= {name + end for end in ("_bucket", "_count", "_sum")} if kind == "histogram" else {name}
    double_series = set(re.findall(r"^(sglang:\w+)", double_answers["metrics"][1], re.M))
    assert double_series and double_series <= series, sorted(double_series - series)



def _scrape_problems(scraped):
    """What the live scrape's recording lacks against the catalog: an expression recorded from another catalog, or
    one that returned no series from target `real` (SGLangServedUnderTarget: from `real-under-plan` only)."""
    problems = []
    if {name: a["expr"] for name, a in scraped["alerts"].items()} != {a["alert"]: a["expr"] for a in catalog.ALERTS}:
        problems.append("alerts recorded from another catalog: scrape the real server again (serve_real.py)")
    if sorted(scraped["panels"]) != sorted({t["expr"] for p in catalog.PANELS for t in p["targets"]}):
        problems.append("panels recorded from another catalog: scrape the real server again (serve_real.py)")
    for name, answer in dict(scraped["alerts"], **scraped["panels"]).items():
        if name == "SGLangServedUnderTarget":  # fired for the plan above what the server serves, not the one it serves
            from_where = answer["servers"] == ["real-under-plan"]
        else:
            from_where = "real" in answer["servers"]
        if answer["series"] < 1 or not from_where:
            problems.append("%s: %d series from %s" % (name, answer["series"], answer["servers"]))
    return problems


@pytest.mark.parametrize("version", RELEASES)
def test_every_alert_and_panel_returned_series_from_the_live_real_server(version):
    scraped = _recorded(version)[0]["prometheus"]
    assert scraped["version"].startswith("prometheus, version "), scraped["version"]
    assert _scrape_problems(scraped) == []


def test_a_scrape_without_series_or_from_another_catalog_is_named():
    scraped = copy.deepcopy(_recorded(RELEASES[0])[0]["prometheus"])
    scraped["panels"]["sglang:num_queue_reqs"]["series"] = 0
    scraped["alerts"]["SGLangServedUnderTarget"]["servers"] = ["real", "real-under-plan"]  # fired on a served plan
    fired = scraped["alerts"]["SGLangServedUnderTarget"]["series"]
    assert _scrape_problems(scraped) == ["SGLangServedUnderTarget: %d series from ['real', 'real-under-plan']" % fired,
                                         "sglang:num_queue_reqs: 0 series from ['real', 'real-under-plan']"]
    scraped["alerts"]["SGLangServerDown"]["expr"] = "up == 0"
    assert _scrape_problems(scraped)[0].startswith("alerts recorded from another catalog")


@pytest.mark.parametrize("version", RELEASES)
def test_the_catalogued_metrics_are_in_the_live_real_metrics(version):
    live = dict(line.split()[2:4] for line in _recorded(version)[0]["prometheus"]["live_types"])
    assert {name: live.get(name) for name in catalog.SGLANG_METRICS} == catalog.SGLANG_METRICS


def test_serve_real_fails_before_the_boot_without_prometheus(monkeypatch):
    import scrape_real

    monkeypatch.setattr(scrape_real, "PROMETHEUS", "prometheus-not-installed-here")
    with pytest.raises(SystemExit, match="install_prometheus.sh"):
        scrape_real.require()
