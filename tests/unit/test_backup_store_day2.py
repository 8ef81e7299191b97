"""The last proven state is the one that served, proven, most recently (issue 48, "Lost on day 2"): every proof and
every proven restore moves an entry's proof time, whichever entry was made first. The demo's day 2 at the store
level, on a fake clock: deploy A 200k (proven), deploy B 150k (proven), roll back to A (proven again), deploy C (its
proof fails): the rescue and a rollback go back to A, not to B."""

import itertools
import json
import os
from datetime import UTC, datetime, timedelta

import pytest
import sglang_backup_store as module
from ansible.module_utils.sglang_files import sha256
from ansible.module_utils.sglang_store import StoreError, newest_proven, proof_time, refreshed_proof

START = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)


@pytest.fixture
def host(tmp_path):
    """(store, deploy(target), minutes(n)): the clock moves only when the test moves it (one second per read
    between, so two entries never share a name)."""
    etc = tmp_path / "etc"
    etc.mkdir()
    files = [etc / "sglang.service", etc / "sglang.env", etc / "sglang.yaml"]
    ticks = itertools.count()
    offset = {"minutes": 0}

    def now():
        return START + timedelta(minutes=offset["minutes"], seconds=next(ticks))

    def deploy(target):
        files[0].write_text('ExecStart="/opt/venv/bin/python" "--context-length" "%d"\n' % target)
        files[1].write_text("SGLANG_X=1\n")
        files[2].write_text('api-key: "k"\n')

    def minutes(count):
        offset["minutes"] += count

    return module.Store(str(tmp_path / "backups"), [str(f) for f in files], now=now), deploy, minutes


def _proof(pool):
    return {"pool_tokens": pool, "prompt_tokens": 5001, "context_length": pool - 200}


def _day2(store, deploy, minutes):
    """Deploy A and B (each proven), roll back to A (proven again), deploy C (never proven): (A, B, C)."""
    deploy(200_000)
    a = store.mark_proven(_proof(200_230), {"reason": "deployed"})[0]
    minutes(60)
    deploy(150_000)
    b = store.mark_proven(_proof(150_102), {"reason": "deployed"})[0]
    minutes(60)
    assert store.restore(a)[1]  # playbooks/rollback.yml's restore, then its full proof of A
    assert store.mark_proven(_proof(200_230), {}) == (a, True)
    minutes(60)
    deploy(180_000)
    c = store.add({"reason": "deployed"})[0]  # its proof fails: never marked
    return a, b, c


def test_probe6_day2_the_rescue_and_a_rollback_go_back_to_the_state_that_served_proven_last(host):
    store, deploy, minutes = host
    a, b, c = _day2(store, deploy, minutes)
    assert a < b < c  # made in that order: B is the newer entry, A the newer proof
    entries, current, last_proven, newest = store.view()
    assert current == c and last_proven == a and newest == a
    by_name = {e["name"]: e for e in entries}
    assert by_name[a]["context_target"] == 200_000 and by_name[b]["context_target"] == 150_000
    assert proof_time(by_name[a]) > proof_time(by_name[b])
    assert by_name[a]["proven"]["first_at"] < by_name[b]["proven"]["at"] < by_name[a]["proven"]["at"]
    # what the modules return and the rollback lists: A is the default, and says when it was first proven
    facts = module.store_facts(store)
    assert facts["last_proven"] == a
    line = next(line for line in facts["lines"] if line.startswith(a))
    assert "[rollback default]" in line and "PROVEN %s " % by_name[a]["proven"]["at"] in line  # the newest proof
    assert "[rollback default]" not in next(line for line in facts["lines"] if line.startswith(b))


def test_probe6_day2_keep_one_keeps_the_state_that_served_proven_last(host):
    store, deploy, minutes = host
    a, b, c = _day2(store, deploy, minutes)
    assert store.prune(1, [c]) == [b]  # B, the older proof, goes; A, what the rescue restores, stays
    assert store.view()[2] == a


def test_probe6_day2_a_proven_restore_by_the_rescue_moves_the_time_with_a_check(host):
    # A and B proven; A put back by hand without a proof; C deployed and failed: the rescue restores B (its proof
    # is the newest) and proves it with the check, which moves B's time and keeps its full proof's measurements
    store, deploy, minutes = host
    deploy(200_000)
    a = store.mark_proven(_proof(200_230), {})[0]
    minutes(60)
    deploy(150_000)
    b = store.mark_proven(_proof(150_102), {})[0]
    minutes(60)
    store.restore(a)  # a hand rollback, its proof never ran (killed): A serves but its time is the old one
    minutes(60)
    deploy(180_000)
    store.add({})
    assert store.view()[2] == b  # B served proven after A's last proof
    store.restore(b)
    name, changed = store.mark_proven({"level": "check", "pool_tokens": 150_102}, {})
    assert (name, changed) == (b, True)
    proven = next(e for e in store.entries() if e["name"] == b)["proven"]
    assert proven["level"] == "check" and proven["prompt_tokens"] == 5001  # the full proof's measurements kept
    assert proven["at"] > proven["first_at"]


def test_probe6_day2_a_check_never_proves_a_state_that_was_not_proven(host):
    store, deploy, _ = host
    deploy(150_000)
    name = store.add({"reason": "found on the host"})[0]
    assert store.mark_proven({"level": "check", "pool_tokens": 150_102}, {}) == (name, False)
    assert store.entries()[0]["proven"] is None and store.view()[3] is None


def test_probe6_day2_a_proof_of_an_unknown_level_is_refused_naming_it(host):
    store, deploy, _ = host
    deploy(150_000)
    with pytest.raises(StoreError, match=r"level 'quick'; it is 'full' or 'check'"):
        store.mark_proven({"level": "quick"}, {})
    assert store.entries()[0]["proven"] is None  # refused before the manifest was written


def _old_entry(store, name, at, target):
    """An entry as the store wrote it before proof times moved: `proven` with only its first proof's `at`."""
    folder = os.path.join(store.dir, name)
    os.makedirs(folder)
    unit = 'ExecStart="/opt/venv/bin/python" "--context-length" "%d"\n' % target
    with open(os.path.join(folder, "sglang.service"), "w") as handle:
        handle.write(unit)
    manifest = {"format": 1, "created_at": name, "context_target": target,
                "files": {"sglang.service": sha256(os.path.join(folder, "sglang.service")),
                          "sglang.env": None, "sglang.yaml": None},
                "proven": {"at": at, "pool_tokens": target + 100} if at is not None else None}
    with open(os.path.join(folder, "backup.json"), "w") as handle:
        json.dump(manifest, handle)


def test_probe6_day2_old_manifests_order_by_their_one_proof_time_and_gain_first_at(host):
    store, deploy, _ = host
    os.makedirs(store.dir)
    # the older entry was proven after the newer one (an old store's rollback): its proof time decides
    _old_entry(store, "20261120T080000000000Z", "2026-11-22T08:00:00+00:00", 200_000)
    _old_entry(store, "20261121T080000000000Z", "2026-11-21T09:00:00+00:00", 150_000)
    _old_entry(store, "20261123T080000000000Z", None, 180_000)
    assert store.view()[3] == "20261120T080000000000Z"
    # an old proof's `at` that is no time counts as the entry's own making, never newer than a real proof
    _old_entry(store, "20261119T080000000000Z", "yesterday", 120_000)
    assert store.view()[3] == "20261120T080000000000Z"
    # a new proof of an old entry keeps the old time as its first
    old = refreshed_proof({"at": "2026-11-22T08:00:00+00:00", "pool_tokens": 1}, _proof(200_230),
                          "2026-12-01T09:00:00+00:00")
    assert old["first_at"] == "2026-11-22T08:00:00+00:00" and old["at"] == "2026-12-01T09:00:00+00:00"
    assert old["level"] == "full" and old["pool_tokens"] == 200_230


def test_probe6_day2_equal_proof_times_and_zulu_times_order_as_times():
    same = "2026-12-01T09:00:00+00:00"
    entries = [{"name": "20261202T000000Z", "proven": {"at": same}}, {"name": "20261201T000000Z",
                                                                      "proven": {"at": same}}]
    assert newest_proven(entries) == "20261202T000000Z"  # a tie: the newer entry
    zulu = [{"name": "b", "proven": {"at": "2026-12-01T08:00:00Z"}},
            {"name": "a", "proven": {"at": "2026-12-01T09:00"}}]
    assert newest_proven(zulu) == "a"  # a "Z" time and a naive one (UTC) compare as times
    assert newest_proven(zulu, other_than="a") == "b" and newest_proven([], other_than="a") is None
