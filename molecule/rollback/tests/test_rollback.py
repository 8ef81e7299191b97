"""Each fault ends in one clear sentence, the last proven state serves again, no backup needed is lost,
and the API key appears in no process argument and in no output of a --diff -vvv run."""

import json
import os
import re

import pytest

KEYS = ("molecule-not-a-secret", "molecule-rotated-secret", "molecule-wrong-key")
STORE = "/var/backups/sglang"
RUNTIMES = "/opt/sglang/runtimes"
LEGACY = "/opt/sglang/venv"
NEW_RUNTIME = re.compile(r"^/opt/sglang/runtimes/0\.5\.22\+double-[0-9a-f]{12}$")
# The rescue proves what it restored, as a rollback does: the check (its pool and context as proven, a short prompt)
PROVED_AGAIN = r"It proved again (with the check \(pool \d+ tokens, context length 150000|in full)"


def read(host, path):
    return host.file(path).content_string


def entries(host):
    # the store's entries are its folders (the last full proof's record, last-full-proof.json, sits beside them)
    names = host.check_output("find %s -mindepth 1 -maxdepth 1 -type d -printf '%%f\\n'" % STORE).split()
    return {name: json.loads(read(host, "%s/%s/backup.json" % (STORE, name))) for name in names}


def proven_150k(host):
    unit = read(host, "/root/unit-150k.service")
    found = [n for n, m in entries(host).items()
             if m["context_target"] == 150_000 and m["proven"]
             and read(host, "%s/%s/sglang.service" % (STORE, n)) == unit]
    assert len(found) == 1, entries(host)
    return found[0]


def test_the_unit_takes_no_secret_and_is_hardened(host):
    unit = read(host, "/etc/systemd/system/sglang.service")
    assert '"--config" \\\n    "/etc/sglang/sglang.yaml"' in unit and "api-key" not in unit
    assert '"--context-length" \\\n    "150000"' in unit  # every argument quoted
    config = host.file("/etc/sglang/sglang.yaml")
    assert (config.user, config.group, config.mode) == ("root", "sglang", 0o640)
    assert config.contains('^api-key: "molecule-not-a-secret"$')
    assert host.file("/etc/sglang").mode == 0o750 and host.file("/etc/sglang/sglang.env").mode == 0o600
    shown = host.check_output("systemctl show sglang -p ProtectProc -p UMask -p CapabilityBoundingSet "
                              "-p StartLimitBurst -p After")
    assert "ProtectProc=invisible" in shown and "UMask=0077" in shown and "StartLimitBurst=3" in shown
    assert "CapabilityBoundingSet=\n" in shown + "\n" and "nvidia-fabricmanager.service" in shown


def test_the_key_is_in_no_process_argument(host):
    cmdlines = read(host, "/root/cmdlines.txt")
    # a runtime's launcher, or the adopted legacy venv's python running the same program with -c
    assert ("bin/sglang-serve" in cmdlines or "sglang.launch_server" in cmdlines) \
        and "--config /etc/sglang/sglang.yaml" in cmdlines
    for key in KEYS:
        assert key not in cmdlines


def test_bad_flag_run_fails_in_one_sentence_restores_and_leaks_nothing():
    path = os.path.join(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"], "bad-flag-run.txt")
    with open(path, encoding="utf-8") as handle:
        out = handle.read()
    assert out.rstrip().endswith("rc=2"), out[-3000:]
    assert "SGLang stopped while starting" in out and "unrecognized arguments: --no-such-flag" in out
    assert re.search(r"Restored the last proven state [0-9T]+Z \(context 150000\), which serves again "
                     r"\(always, for a start that never became healthy\)\. " + PROVED_AGAIN, out), out[-3000:]
    assert "Last lines of sglang's journal before the rescue" in out
    assert "ESTABLISH" in out or "EXEC" in out  # the run really was verbose
    assert "--- before" in out or "+++ after" in out  # and --diff showed the unit's change
    for key in KEYS:
        assert key not in out, "the API key %s is in the output of a --diff -vvv run" % key


def test_keep_1_with_an_automatic_restore_keeps_the_source_and_the_last_proven(host):
    left = read(host, "/root/store-after-keep1.txt").split()
    # keep 1 (the bad state, newest) plus the last proven one, which was also the restore's source; the
    # older 200k entries went, as sglang_backup_keep 1 asks
    assert proven_150k(host) in left and len(left) == 2, left


def test_oom_at_start_is_restored(host):
    message = read(host, "/root/oom.txt")
    assert "torch.OutOfMemoryError: CUDA out of memory" in message and "SGLang stopped while starting" in message
    assert "Restored the last proven state" in message and "which serves again" in message
    assert re.search(PROVED_AGAIN, message), message  # the rescue proved what it restored


def runtime_of(unit_text):
    """The runtime a unit runs: its ExecStart's first word, '<runtime>/bin/sglang-serve' (older units:
    '<runtime>/bin/python')."""
    first = re.search(r'^ExecStart="([^"]+)/bin/(?:python|sglang-serve)"', unit_text, re.MULTILINE)
    return first.group(1) if first else None


def serving(host, when):
    """(the main process's argv[0] minus /bin/python, /server_info's version) as recorded then."""
    argv0 = read(host, "/root/argv0-%s.txt" % when).strip()
    assert argv0.endswith("/bin/python"), argv0
    return argv0[:-len("/bin/python")], json.loads(read(host, "/root/server-info-%s.json" % when))["version"]


def test_the_legacy_venv_is_the_first_runtime_adopted_and_never_modified(host):
    # converge found /opt/sglang/venv holding the asked versions: adopted (recorded), nothing built or reinstalled
    assert runtime_of(read(host, "/root/unit-150k.service")) == LEGACY
    names = host.check_output("ls %s" % RUNTIMES).split()
    manifests = [json.loads(read(host, "%s/%s" % (RUNTIMES, n))) for n in names if n.endswith(".json")]
    adopted = [m for m in manifests if m["path"] == LEGACY]
    assert len(adopted) == 1 and adopted[0]["adopted"] and adopted[0]["versions"]["sglang"] == "0.5.23+double"
    assert not [n for n in names if n.startswith("0.5.23+double-") and not n.endswith(".json")], names
    # every file of it (size, mtime, mode) as the legacy install left it, after every run of the scenario
    now = host.check_output("find %s -not -path '*/__pycache__*' -printf '%%p %%s %%T@ %%m\\n' | sort | sha256sum"
                            % LEGACY)
    assert now.split()[0] == read(host, "/root/legacy-venv.sum").split()[0]


def test_the_old_server_answered_every_request_while_the_new_runtime_was_built(host):
    restart = float(read(host, "/root/restart-at.txt").strip())
    build_start, build_end = (float(t) for t in read(host, "/root/build-window.txt").split())
    lines = [line.split() for line in read(host, "/root/client.log").splitlines() if line.strip()]
    requests = [(float(sent), float(ended), outcome) for sent, ended, outcome in lines]
    # answered (or given up) before systemd began stopping the old server: each of those must be an answer; one
    # still in flight when the stop began fails by design and says nothing about the build
    before = [r for r in requests if r[1] < restart]
    assert before and before[0][0] < build_start <= build_end <= restart, (before[:1], build_start, build_end, restart)
    assert [r for r in before if r[2] != "ok"] == [], [r for r in before if r[2] != "ok"][:5]
    during = [r for r in before if build_start <= r[0] <= build_end + 1]
    assert len(during) >= 1 and len(before) >= 10, (len(during), len(before))
    assert any(outcome == "fail" for _, ended, outcome in requests if ended >= restart)  # the client saw the restart


def test_a_failed_proof_leaves_the_new_state_running_and_says_how_to_go_back(host):
    message = read(host, "/root/proof-failed.txt")
    assert "does not match /\\bcat\\b/" in message
    assert "stays running for inspection (sglang_rollback_on_failure is false)" in message
    assert "playbooks/rollback.yml" in message
    unit = read(host, "/root/unit-180k.service")
    assert '"--context-length" \\\n    "180000"' in unit
    # the upgrade's state runs its own runtime, built in its own folder and complete
    assert NEW_RUNTIME.match(runtime_of(unit)), runtime_of(unit)
    path, version = serving(host, "after-failed-proof")
    assert path == runtime_of(unit) and version == "0.5.22+double"  # the new wheel's double says so
    manifest = json.loads(read(host, path + ".json"))
    assert manifest["path"] == path and manifest["versions"]["sglang"] == "0.5.22+double" and not manifest["adopted"]
    deployed = [m for m in entries(host).values() if m["context_target"] == 180_000 and m["reason"] == "deployed"]
    assert deployed and deployed[0]["runtime"] == path


def test_rollback_goes_back_to_the_previous_runtime_offline(host):
    assert "index-url = http://127.0.0.1:9/simple" in read(host, "/etc/pip.conf")
    # the upgrade's wheel was copied for its build and moved away; the adopted runtime's never reached the host (a
    # wheel is copied only for a build)
    assert host.file("/root/wheels-away/sglang-0.5.22+double-py3-none-any.whl").exists
    assert not host.file("/root/wheels-away/sglang-0.5.23+double-py3-none-any.whl").exists
    assert read(host, "/root/wheels-after-rollback.txt").strip() == ""  # no wheel on the host at all
    # the 0.5.23+double wheel's double reports the release it impersonates, 0.5.23 (its simulated GPU's default)
    assert serving(host, "after-rollback") == (LEGACY, "0.5.23+double")  # its wheel's __version__


def test_rollback_with_no_arguments_restores_the_last_proven_byte_for_byte(host):
    assert read(host, "/root/unit-after-rollback.service") == read(host, "/root/unit-150k.service")
    lines = read(host, "/root/store-lines.txt")
    assert "context 180000, not proven" in lines
    assert re.search(r"context 150000, PROVEN \S+ \(pool \d+, prompt \d+ tokens\), "
                     r"sglang 0\.5\.\d+\+double \[serving now\]", lines), lines


def test_an_upgrade_whose_proof_fails_is_rescued_onto_the_previous_runtime_with_the_index_closed(host):
    message = read(host, "/root/upgrade-rescued.txt")
    assert "does not match /\\bcat\\b/" in message
    assert re.search(r"Restored the last proven state [0-9T]+Z \(context 150000\), which serves again "
                     r"\(sglang_rollback_on_failure\)\. " + PROVED_AGAIN, message), message
    # the upgrade's proof failed on its expectation (cat); the restored state answers the check's own needle
    assert "did not prove" not in message
    assert "puts them back" not in message  # nothing for pip to do: the runtime came back with the unit
    assert "sglang-0.5.23+double-py3-none-any.whl" not in read(host, "/root/wheels-after-rescue.txt")
    assert serving(host, "after-rescue") == (LEGACY, "0.5.23+double")


def test_a_rerun_after_the_journal_rotated_restarts_nothing_and_passes(host):
    assert read(host, "/root/rerun.txt").strip() == "ok restarted=False changed=False"
    before, after = read(host, "/root/rerun-invocations.txt").split()
    assert before == after
    # it found its runtime complete (the adopted legacy venv) by its manifest and built nothing; its one change is
    # the prune of the runtime nothing names
    plan = json.loads(read(host, "/root/rerun-runtime.json"))
    assert (plan["action"], plan["path"]) == ("use", LEGACY)
    assert plan["removed"] == [RUNTIMES + "/0.5.1-000000000000"], plan["removed"]


def test_runtimes_are_pruned_only_when_nothing_names_them(host):
    assert not host.file(RUNTIMES + "/0.5.1-000000000000").exists
    assert not host.file(RUNTIMES + "/0.5.1-000000000000.json").exists
    named = {runtime_of(read(host, "%s/%s/sglang.service" % (STORE, n))) for n in entries(host)}
    named.add(runtime_of(read(host, "/etc/systemd/system/sglang.service")))
    on_disk = {RUNTIMES + "/" + n for n in host.check_output("ls %s" % RUNTIMES).split() if not n.endswith(".json")}
    assert on_disk <= named and LEGACY in named and host.file(LEGACY + "/bin/python").exists
    for path in on_disk:
        assert host.file(path + ".json").exists


def test_a_wrong_api_key_fails_the_proof_and_restores_nothing(host):
    message = read(host, "/root/wrong-key.txt")
    assert "401" in message and "Restored" not in message
    for key in KEYS:
        assert key not in message


def test_a_crash_loop_stops_at_the_start_limit(host):
    shown = read(host, "/root/crash-loop.txt")
    # systemd 252: the first start and two automatic restarts run (burst 3); the third restart is refused
    assert "Start request repeated too quickly" in shown and "ActiveState=failed" in shown
    assert "NRestarts=3" in shown


def test_the_repair_run_serves_the_last_proven_state_again(host):
    assert read(host, "/root/repair.txt").strip() == "ok"
    assert read(host, "/etc/systemd/system/sglang.service") == read(host, "/root/unit-150k.service")
    assert host.service("sglang").is_running
    info = json.loads(host.check_output(
        "curl -s -H 'Authorization: Bearer molecule-not-a-secret' http://127.0.0.1:30000/server_info"))
    assert info["context_length"] == 150_000 and info["max_total_num_tokens"] >= 150_000


def test_no_proven_backup_is_lost(host):
    assert proven_150k(host)
    for meta in entries(host).values():
        assert meta["format"] == 1 and set(meta["files"]) == {"sglang.service", "sglang.env", "sglang.yaml"}
    assert host.file(STORE).mode == 0o700


def test_rollback_refuses_an_entry_whose_runtime_is_gone_and_changes_nothing(host):
    out = read(host, "/root/rollback-gone-runtime.txt")
    assert out.rstrip().endswith("rc=2"), out[-2000:]
    assert re.search(r"The store entry [0-9T]+Z runs the runtime /opt/sglang/runtimes/0\.5\.22\+double-[0-9a-f]{12}, "
                     r"which is gone from this host", out), out[-2000:]
    before, after = read(host, "/root/gone-runtime-invocations.txt").split()
    assert before == after  # nothing restarted


@pytest.mark.parametrize("name", ["rollback-beside-deploy.txt", "second-site-run.txt"])
def test_a_run_started_during_a_deploy_is_refused_naming_it_and_changes_nothing(name):
    # side_effect.yml started rollback.yml, then a second site.yml, while the bad-flag site.yml run held the host's
    # run lock (frozen there); the deploy then went on and ended as test_bad_flag_run_fails_in_one_sentence_restores_
    # and_leaks_nothing reads
    path = os.path.join(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"], name)
    with open(path, encoding="utf-8") as handle:
        out = re.sub(r"\x1b\[[0-9;]*m", "", handle.read())  # the recap's colours
    assert out.rstrip().endswith("rc=2"), out[-3000:]
    assert re.search(r"This host is being changed by another run: run \S+ \(play 'Deploy SGLang for the context "
                     r"target, and prove it', controller \S+, pid \d+", out), out[-3000:]
    assert "Waited 3 s (sglang_run_lock_wait)" in out and "Traceback" not in out
    recap = re.search(r"^ct200-rollback\s+:.*$", out, re.M)
    assert recap and "changed=0" in recap.group(0) and "failed=1" in recap.group(0), out[-3000:]
    for key in KEYS:
        assert key not in out
