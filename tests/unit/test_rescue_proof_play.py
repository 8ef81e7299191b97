"""rescue.yml's proof of a restored state and its end phase, run by ansible-playbook on localhost: the two tasks
taken verbatim from roles/sglang/tasks/rescue.yml, with the role's defaults and vars, after a rescue phase that
restored an entry (its result as transaction_rescue.rescue returns it, put in the run record by a test double,
tests/unit/run_record_seed/). The SGLang double serving that entry passes
the check and the store records it (the entry's proof time moves); nothing answering fails it, and the run's message
says the restored state did not prove."""

import json
import os
import subprocess
import sys
from urllib.request import Request, urlopen

import sglang_backup_store as store_module
import yaml
from sglang_state.rescue import rescue_node, restored_proof

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "tests", "sglang_double"))

from run_double import running_double  # noqa: E402

CT200 = ["--tp", "8", "--trust-remote-code", "--context-length", "200000", "--mem-fraction-static", "0.94"]
KEY = "sk-rescue-play-secret"
ROTATED = "sk-rescue-play-rotated"
ENTRY = {"name": "20261201T090000000000Z", "context_target": 200_000, "current": True,
         "proven": {"at": "2026-12-01T11:00:00+00:00", "pool_tokens": 200_230, "context_length": 200_000}}


def _rescue_tasks():
    """rescue.yml's tasks after the rescue phase: the proof (which reads the restored key itself), the end."""
    with open(os.path.join(REPO, "roles/sglang/tasks/rescue.yml")) as handle:
        tasks = yaml.safe_load(handle)
    return [task for task in tasks if (task.get("sglang_prove") or {}).get("phase") == "prove"
            or (task.get("sglang_rescue") or {}).get("phase") == "end"]


def _rescue_done(entry=ENTRY):
    """The rescue phase's result after a restore (transaction_rescue.rescue's return, without the key)."""
    decided = dict(rescue_node({"status": -1}, [entry], entry["name"], "", "sglang is failed: it stopped."),
                   action="restore")
    facts = {"service": "sglang", "rescue_from": "", "journal": "started with api_key=<api key>",
             "current": entry["name"], "entry": entry, "versions_now": {}}
    return {"phase": "rescue", "changed": True, "run": {"restored": entry["name"], "changed_this_run": True},
            "said": {"decided": decided, "facts": facts}, "proof": restored_proof(entry)}


def _play(tmp_path, port, rescue_done, api_key=KEY, restored_key=KEY):
    """Run rescue.yml's tasks after the rescue phase against 127.0.0.1:port, this run's key api_key and the
    restored config's restored_key; (rc, output)."""
    (tmp_path / "sglang.yaml").write_text('api-key: "%s"\n' % restored_key)
    overrides = {  # what main.yml and the inventory give
        "sglang_port": port, "sglang_host": "127.0.0.1", "sglang_api_key": api_key, "sglang_ready_timeout": 0,
        "sglang_smoke_timeout": 30, "_sglang_node_rank": 0, "_sglang_rank0": "localhost",
        "sglang_backup_dir": str(tmp_path / "backups"),
        "_sglang_files": [{"dest": str(tmp_path / "etc" / "sglang.service")}],
        "_sglang_config_path": str(tmp_path / "sglang.yaml"),
    }
    (tmp_path / "overrides.yml").write_text(json.dumps(overrides))
    play = [{"name": "The rescue's proof of what it restored", "hosts": "localhost", "connection": "local",
             "gather_facts": False,
             "vars_files": [os.path.join(REPO, "roles/sglang/defaults/main.yml"),
                            os.path.join(REPO, "roles/sglang/vars/main.yml"), str(tmp_path / "overrides.yml")],
             # the run record as the rescue phase leaves it (its restore, and the proof before it dropped)
             "tasks": [{"sglang_seed_run_record": {"record": {"run": rescue_done["run"],
                                                              "results": {"rescue": rescue_done}}}}]
             + _rescue_tasks()}]
    assert len(play[0]["tasks"]) == 3
    (tmp_path / "play.yml").write_text(yaml.safe_dump(play))
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_ACTION_PLUGINS=os.pathsep.join([os.path.join(REPO, "action_plugins"),
                                                       os.path.join(REPO, "tests/unit/run_record_seed")]))
    result = subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-v",
                             str(tmp_path / "play.yml")], cwd=REPO, env=env, capture_output=True, text=True,
                            timeout=240)
    out = result.stdout + result.stderr
    return result.returncode, out


def test_probe6_day2_rescue_yml_s_proof_of_a_restore_that_does_not_answer_says_it_did_not_prove(tmp_path):
    rc, out = _play(tmp_path, 9, _rescue_done())  # the discard port: nothing answers
    assert rc != 0, out
    assert ("Restored the last proven state 20261201T090000000000Z (context 200000), which serves again (always, "
            "for a start that never became healthy). The restored state did not prove: ") in out, out
    assert "127.0.0.1:9" in out  # the check's own reason: nothing answers there
    assert KEY not in out  # -v shows every result: the key is in none
    assert not (tmp_path / "backups").exists()  # a proof that failed records nothing


def test_probe6_day2_rescue_yml_proves_the_restored_double_with_its_own_key_and_moves_its_proof_time(tmp_path):
    # the failed run rotated the key (sglang_api_key is the new one); the restored state serves with the old one
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc" / "sglang.service").write_text('ExecStart=x "--context-length" "200000"\n')
    store = store_module.Store(str(tmp_path / "backups"), [str(tmp_path / "etc" / "sglang.service")])
    with running_double(CT200 + ["--api-key", KEY]) as (url, _log):
        request = Request(url + "/server_info", headers={"Authorization": "Bearer " + KEY})
        with urlopen(request, timeout=10) as response:
            pool = json.loads(response.read())["max_total_num_tokens"]
        # the restored entry, proven in full before at this pool (as the day-2 rollback left it)
        name = store.mark_proven({"pool_tokens": pool, "context_length": 200_000, "prompt_tokens": 196_004,
                                  "at": "2026-12-01T11:00:00+00:00"}, {"reason": "deployed"})[0]
        entry = next(e for e in store.entries() if e["name"] == name)
        rc, out = _play(tmp_path, int(url.rsplit(":", 1)[1]), _rescue_done(dict(entry, current=True)),
                        api_key=ROTATED, restored_key=KEY)
    assert rc != 0, out  # the run failed: the change it was asked for did not happen
    assert ("Restored the last proven state %s (context 200000), which serves again (always, for a start that "
            "never became healthy). It proved again with the check (pool %d tokens, context length 200000, a "
            % (name, pool)) in out, out
    assert "did not prove" not in out and KEY not in out and ROTATED not in out
    proven = next(e for e in store.entries() if e["name"] == name)["proven"]
    assert proven["level"] == "check" and proven["first_at"] == "2026-12-01T11:00:00+00:00"
    assert proven["at"] > proven["first_at"] and proven["prompt_tokens"] == 196_004  # the full proof's kept
