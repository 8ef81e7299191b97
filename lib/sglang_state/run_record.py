"""The run record: what one ansible-playbook run did on one host, kept on the controller by the role's phase actions.

One JSON file per host in a folder of the run's own (the caller gives it: Ansible's per-process local temporary
folder, made by ansible-playbook when it starts and removed when it ends, shared by its forks), so a record never
outlives its run and never mixes two runs. Each phase action reads this host's record before it runs and writes it
after, failed or not: `run` (what the deploy did to the host so far, which the rescue reads) and each step's result
by its name. The nodes of a server across nodes move in step (linear strategy), so a phase reads its peers' records
of the step before it, as it reads its own. Nothing here is handed through YAML: the role passes settings only.

The download's entry, results["download"] (action_plugins/hf_download.py keeps it after each of its calls):
{"clock": the download's part of the day-1 clock ({"download": {start, end}, "fetch": {bytes...}}, in
lib/sglang_report/clock.py's shape), "fetched": [each folder a try of this run fetched into]}. site.yml starts the
downloads before the first look at the host, so a new record (`fresh`) and a new run (`begin`) keep it.

Plain Python: tested without Ansible (tests/unit/test_run_record.py).
"""

from __future__ import annotations

import json
import os
import tempfile
from urllib.parse import quote

from sglang_state.nodes import peers_results

FOLDER = "sglang-run"
# A record is small (results without their arguments); a bigger file is not one this code wrote
MAX_BYTES = 4 << 20
# The steps a phase that begins a run keeps from before it: the first look at the host (observe) and the runtime
# install, which come before the deploy's render in a role's run
KEPT_BY_A_NEW_RUN = ("observe", "install", "download")
# The steps the first look at the host (a new record) keeps: the download, which site.yml starts before it
KEPT_BY_A_NEW_RECORD = ("download",)
DOWNLOAD = "download"


class RecordError(Exception):
    """A record that cannot be read or written, said with its path."""


def folder_of(local_tmp):
    """The run's records folder inside the run's own temporary folder."""
    return os.path.join(local_tmp, FOLDER)


def _path(folder, host):
    # an inventory name may hold any character: quoted whole, it is one file name in the folder
    return os.path.join(folder, quote(str(host), safe="") + ".json")


def read(folder, host):
    """This host's record, {} when it has none yet this run."""
    path = _path(folder, host)
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_BYTES + 1)
    except FileNotFoundError:
        return {}
    except OSError as error:
        raise RecordError("the run record %s cannot be read: %s" % (path, error)) from None
    if len(data) > MAX_BYTES:
        raise RecordError("the run record %s is over %d bytes: not one this run wrote" % (path, MAX_BYTES))
    try:
        record = json.loads(data)
    except ValueError as error:
        raise RecordError("the run record %s is not JSON: %s" % (path, error)) from None
    if not isinstance(record, dict):
        raise RecordError("the run record %s is not a mapping" % path)
    return record


def write(folder, host, record):
    """Replace this host's record, atomically (a peer reading it sees the old one or the new one, never a part)."""
    os.makedirs(folder, mode=0o700, exist_ok=True)
    path = _path(folder, host)
    handle, temporary = tempfile.mkstemp(prefix=".record-", dir=folder)
    try:
        with os.fdopen(handle, "w") as out:
            json.dump(record, out, sort_keys=True, default=str)
        os.replace(temporary, path)
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise


def _kept(record, steps):
    return {step: result for step, result in (record.get("results") or {}).items() if step in steps}


def begin(record, began):
    """A record whose run begins now (render, restore): the run is new, the steps after the first look are gone."""
    return {"run": {"began": began}, "results": _kept(record, KEPT_BY_A_NEW_RUN)}


def fresh(record):
    """A new record (the first look at the host): nothing of before is kept but the download's entry."""
    kept = _kept(record, KEPT_BY_A_NEW_RECORD)
    return {"results": kept} if kept else {}


def result(record, step):
    """The result this host's record keeps for a step, or None."""
    return (record.get("results") or {}).get(step)


def with_result(record, step, value, run=None):
    """The record with a step's result (and the run as it stands) kept, its arguments left out (they may hold a key)."""
    kept = {key: item for key, item in (value or {}).items() if key != "invocation"}
    updated = dict(record, results=dict(record.get("results") or {}, **{step: kept}))
    if run is not None:
        updated["run"] = run
    return updated


def peers(folder, nodes, step, said):
    """{node: its result of `step`} for the nodes of a server in this batch; a node without one is refused by name
    (nodes.peers_results): a missing result is never read as {}."""
    found = {}
    for node in nodes:
        kept = result(read(folder, node), step)
        if kept is not None:
            found[node] = kept
    return peers_results(list(nodes), found, step, said)


def run_facts(record):
    """The facts a run of the role leaves for what comes after it (docs/variables.md's run facts), from this host's
    record: what the deploy's last phase found (verify, or a restore) and, once the proof's record phase has kept its
    result, which proof ran and why, its result, and the last full proof's record."""
    facts = dict((result(record, "deploy") or {}).get("facts") or {})
    recorded = result(record, "record")
    if recorded and not recorded.get("failed"):
        facts.update(sglang_smoke=recorded.get("smoke") or {}, sglang_proof_level=recorded.get("level") or {},
                     sglang_proof_record=recorded.get("last_full") or {})
    return facts
