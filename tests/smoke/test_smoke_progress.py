"""The proof's progress: the module's stages in its progress file, library/async_progress.py's one try, and
roles/sglang/tasks/smoke.yml's own tasks through ansible-playbook against the double with a paced prefill."""

import json
import os
import subprocess
import sys
import time

import pytest
import yaml
from conftest import CT200, MODULE, REPO

BIN = os.path.dirname(sys.executable)
FOLLOW = os.path.join(REPO, "library", "async_progress.py")
# ct200's plan: the pool pinned at 200,064 tokens.
PINNED = CT200 + ["--mem-fraction-static", "0.958", "--max-total-tokens", "200064"]
SLOW_PREFILL = {"prefill_tokens_per_s": 10000}  # 20,000 tokens: 2 s of prefill, as the real one takes minutes


def start_module(tmp_path, name, path, **args):
    args_file = tmp_path / (name + ".json")
    args_file.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": args}))
    return subprocess.Popen([sys.executable, path, str(args_file)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


def finish(proc):
    out, err = proc.communicate(timeout=120)
    assert "Traceback" not in out + err, out + err
    return proc.returncode, json.loads(out)


class Stages:
    """Records what the module reports, as Progress's stage(line, since) and end()."""

    def __init__(self):
        self.seen, self.ended = [], False

    def stage(self, line, since=None):
        self.seen.append((line, since))

    def end(self):
        self.ended = True


def test_the_stages_of_a_proof_in_order(double):
    from ansible.module_utils.sglang_proof_prompt import FOX_FILLER
    from ansible.module_utils.sglang_proof_run import run

    stages, result = Stages(), {"checks": []}
    with double(PINNED, gpu=SLOW_PREFILL) as (url, _):
        run({"url": url, "api_key": None, "timeout": 60, "validate_certs": True, "wait_ready": 30,
             "min_pool_tokens": None, "context_target": 200000, "prompt_tokens": "20000", "model": None,
             "stream": True, "filler": FOX_FILLER, "max_tokens": 32, "question": "needle",
             "expect": None, "decode_tokens": 8}, result, stages)
    lines = [line for line, _ in stages.seen]
    assert lines[:3] == ["proof: waiting for /health_generate", "proof: sizing the prompt to 20,000 tokens (pool "
                         "200,064)", "proof: prefill started, %s prompt tokens" % format(result["prompt_tokens"], ",")]
    assert len(lines) == 5 and lines[3].startswith("proof: first token after 2.")
    assert lines[4] == "proof: decoding 8 tokens at %s tokens of context" % format(result["prompt_tokens"], ",")
    assert lines[3].endswith(" prompt tokens/s), answering")
    assert stages.seen[3][1] == stages.seen[2][1]  # the clock of the request, not of the stage
    assert all(c["ok"] for c in result["checks"])


def test_the_progress_file_while_the_module_runs_and_after(double, tmp_path):
    progress = tmp_path / "progress.json"
    seen = []
    with double(PINNED, gpu=SLOW_PREFILL) as (url, _):
        proc = start_module(tmp_path, "smoke", MODULE, url=url, context_target=200000, prompt_tokens="20000",
                            progress_file=str(progress))
        while proc.poll() is None:
            try:
                seen.append(json.loads(progress.read_text()))
            except FileNotFoundError:
                pass  # not yet, or gone; never half-written (a new file renamed into place)
            time.sleep(0.05)
        rc, result = finish(proc)
        _, plain = finish(start_module(tmp_path, "plain", MODULE, url=url, context_target=200000,
                                       prompt_tokens="20000"))
    assert rc == 0 and result["ok"], result
    prefill = [stage for stage in seen if stage["line"].startswith("proof: prefill started, ")]
    assert len(prefill) > 10 and isinstance(prefill[0]["since"], float)  # 2 s of prefill, read every 0.05 s
    assert not progress.exists()
    assert not [name for name in os.listdir(tmp_path) if name.startswith(".sglang-smoke-")]  # no temporary left
    # The evidence is the same with and without the file (the needle and the timings differ by nature).
    assert set(result) == set(plain) and result["changed"] is False
    assert [c["name"] for c in result["checks"]] == [c["name"] for c in plain["checks"]]
    assert result["prompt_tokens"] == plain["prompt_tokens"] and result["pool_tokens"] == plain["pool_tokens"]
    assert "progress_file" not in json.dumps({k: v for k, v in result.items() if k != "invocation"})


def test_a_failed_proof_removes_the_progress_file_too(double, tmp_path):
    progress = tmp_path / "progress.json"
    with double(PINNED) as (url, _):
        rc, result = finish(start_module(tmp_path, "smoke", MODULE, url=url, context_target=200000,
                                         min_pool_tokens=300000, progress_file=str(progress)))
    assert rc != 0 and "under the 300,000 required" in result["msg"]
    assert not progress.exists()


# --- async_progress: one try, from the results file async_wrapper keeps and the module's progress file ---

def follow(tmp_path, results, progress):
    return finish(start_module(tmp_path, "follow", FOLLOW, results_file=str(results), progress_file=str(progress)))


@pytest.fixture
def job(tmp_path):
    """A running job's results file, as ansible/modules/async_wrapper.py writes it first."""
    results = tmp_path / "j1.1"
    results.write_text(json.dumps({"started": True, "finished": False, "ansible_job_id": "j1.1"}))
    os.utime(results, (time.time() - 30, time.time() - 30))
    return results


def test_a_running_job_reports_its_stage_and_the_time_since_it_began(job, tmp_path):
    progress = tmp_path / "p.json"
    progress.write_text(json.dumps({"line": "proof: prefill started, 196,004 prompt tokens",
                                    "since": time.time() - 72}))
    rc, out = follow(tmp_path, job, progress)
    assert rc == 0 and out == {"changed": False, "finished": False,
                               "progress": "proof: prefill started, 196,004 prompt tokens, 1m12s",
                               "invocation": out["invocation"]}


def test_before_the_first_stage_and_with_a_killed_runs_file_it_is_starting(job, tmp_path):
    progress = tmp_path / "p.json"
    rc, out = follow(tmp_path, job, progress)
    assert rc == 0 and out["progress"].startswith("starting, 3") and out["progress"].endswith("s")
    progress.write_text(json.dumps({"line": "proof: first token after 40.1 s", "since": time.time() - 3600}))
    os.utime(progress, (time.time() - 3600, time.time() - 3600))  # older than the job: a killed run's
    rc, out = follow(tmp_path, job, progress)
    assert rc == 0 and out["progress"].startswith("starting, ")


@pytest.mark.parametrize("result", [
    {"failed": True, "msg": "The KV pool holds 101,134 tokens", "ansible_job_id": "j1.1"},
    {"changed": False, "ok": True, "pool_tokens": 200064},
    {"msg": "Timeout exceeded", "failed": True, "child_pid": 42},
])
def test_an_ended_job_ends_the_loop_however_it_ended(job, tmp_path, result):
    job.write_text(json.dumps(result))
    rc, out = follow(tmp_path, job, tmp_path / "p.json")
    assert rc == 0 and out["finished"] is True and "progress" not in out


def test_a_missing_results_file_is_named(tmp_path):
    rc, out = follow(tmp_path, tmp_path / "nope", tmp_path / "p.json")
    assert rc != 0 and "results_file=%s cannot be read" % (tmp_path / "nope") in out["msg"]
    assert "async and poll: 0" in out["msg"]


# --- prove.yml's proof task through ansible-playbook, with the repository's ansible.cfg and the sglang_prove action

def prove_task():
    """The task of roles/sglang/tasks/prove.yml that runs the proof (the transaction's prove phase), as written; its
    decide before and record after are tested in tests/unit/test_transaction_proof.py."""
    with open(os.path.join(REPO, "roles", "sglang", "tasks", "prove.yml"), encoding="utf-8") as handle:
        tasks = yaml.safe_load(handle)
    return next(task for task in tasks if task.get("sglang_prove", {}).get("phase") == "prove")


def run_proof(tmp_path, url, **overrides):
    """The proof task on localhost, then its registered result written to tmp_path/evidence.json."""
    with open(os.path.join(REPO, "roles", "sglang", "defaults", "main.yml"), encoding="utf-8") as handle:
        defaults = yaml.safe_load(handle)
    with open(os.path.join(REPO, "roles", "sglang", "vars", "main.yml"), encoding="utf-8") as handle:
        defaults.update(yaml.safe_load(handle))  # the role's own vars (this host's node rank, the smoke's arguments)
    host, port = url.rsplit("//", 1)[1].split(":")
    play_vars = dict(defaults, _sglang_local_address=host, sglang_port=int(port), sglang_api_key="",
                     sglang_ready_timeout=60, sglang_smoke_timeout=60, **overrides)
    # the full proof, as this node's decision keeps it in the run record after a change (prove.yml's first task),
    # put there by a test double's action (tests/unit/run_record_seed/): the prove phase reads it from the record
    decided = {"name": "This node's decision", "sglang_seed_run_record": {"record": {"results": {
        "decide": {"own": {"level": "full", "reason": "this run changed the files"}}}}}}
    prove = dict(prove_task(), register="_sglang_proof_ran")  # the role registers none: the record keeps it
    play = [{"name": "The proof as prove.yml runs it", "hosts": "localhost", "connection": "local",
             "gather_facts": False, "vars": play_vars,
             "tasks": [decided, prove,
                       {"name": "Keep the evidence", "changed_when": False,
                        "ansible.builtin.copy": {"content": "{{ _sglang_proof_ran.smoke | to_json }}",
                                                 "dest": str(tmp_path / "evidence.json")}}]}]
    path = tmp_path / "proof.yml"
    path.write_text(yaml.safe_dump(play, sort_keys=False))
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_ACTION_PLUGINS=os.pathsep.join([os.path.join(REPO, "action_plugins"),
                                                       os.path.join(REPO, "tests/unit/run_record_seed")]))
    # The progress file under tmp_path, not /run (extra vars outrank the role's vars).
    return subprocess.run([os.path.join(BIN, "ansible-playbook"), str(path), "-e",
                           "_sglang_smoke_progress=%s" % (tmp_path / "progress.json")],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=300)


def test_the_proof_prints_its_stage_every_few_seconds_and_keeps_the_modules_result(double, tmp_path):
    with double(PINNED, gpu={"prefill_tokens_per_s": 20000}) as (url, _):
        proc = run_proof(tmp_path, url)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = [line for line in proc.stdout.splitlines() if line.startswith("localhost: proof: ")]
    assert any(line.startswith("localhost: proof: prefill started, 196,") and line.endswith("s") for line in lines), \
        proc.stdout
    assert "changed=0" in proc.stdout and "failed=0" in proc.stdout
    evidence = json.loads((tmp_path / "evidence.json").read_text())
    assert evidence["ok"] is True and evidence["pool_tokens"] == 200064 and evidence["prompt_tokens"] >= 190000
    assert evidence["changed"] is False and evidence["ttft_s"] > 9
    assert "ansible_job_id" not in evidence and "invocation" not in evidence
    assert not (tmp_path / "progress.json").exists()


def test_a_failed_proof_is_rank_0s_result_with_the_modules_message_at_the_next_try(double, tmp_path):
    # the prove phase hands the failure on (the record phase fails every node of the server with it)
    with double(PINNED) as (url, _):
        began = time.monotonic()
        proc = run_proof(tmp_path, url, sglang_smoke_min_pool_tokens=300000)
        took = time.monotonic() - began
    assert proc.returncode == 0, proc.stdout + proc.stderr
    evidence = json.loads((tmp_path / "evidence.json").read_text())
    assert evidence["failed"] is True
    assert "The KV pool holds 200,064 tokens" in evidence["msg"] and "under the 300,000 required" in evidence["msg"]
    assert took < 60  # not the backstop: the next try sees the job ended


def test_ansible_doc_renders_async_progress():
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg"), ANSIBLE_NOCOLOR="1")
    proc = subprocess.run([os.path.join(BIN, "ansible-doc"), "async_progress"], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    for word in ("results_file", "progress_file", "RETURN VALUES", "EXAMPLES", "finished"):
        assert word in proc.stdout


def test_a_progress_file_that_cannot_be_written_never_fails_the_proof(double, tmp_path):
    with double(PINNED) as (url, _):
        rc, result = finish(start_module(tmp_path, "smoke", MODULE, url=url, context_target=200000,
                                         prompt_tokens="5000", progress_file=str(tmp_path / "no-such-dir" / "p")))
    assert rc == 0 and result["ok"], result
