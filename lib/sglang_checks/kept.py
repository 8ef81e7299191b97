"""Each host's last calibration, kept on the controller, so the check phase and `make plan` plan a host from the
same P, A and boot flags as the role on it (issue 35: one target refused twice, with maxima of 297,456 from the
inventory's estimate and 217,520 from the host's calibration).

The run's report step (action_plugins/sglang_run_report.py) writes `<reports>/<host>/calibration.json` after every
run that planned: the calibration the role plans the host from (the one stored on the host for its setup) and that
setup's key. Before anything connects, the check phase reads it for the setup the knobs name: the key of
lib/sglang_state/model_inputs.py with the checkpoints' digests left out (only the host can read config.json; the role
checks them and plans from its own store). A file of another setup, or one that cannot be read, is not used, and
the plan says so.
"""

from __future__ import annotations

import datetime
import json
import os
import re
import tempfile

from sglang_state.model_inputs import calibration_key

FILE = "calibration.json"
LIMIT = 256 * 1024  # a calibration is a few hundred bytes; more is not one
_DIGEST = re.compile(r"@[0-9a-f]{1,12}")
SETUP_KNOBS = ("model_path", "tp_size", "pp_size", "dp_size", "enable_dp_attention", "version", "pool_rules",
               "kv_cache_dtype", "speculative", "nodes")


def without_digests(key):
    """A calibration key with the checkpoints' digests left out ('kimi@1a2b3c4d5e6f ...' -> 'kimi@ ...')."""
    return _DIGEST.sub("@", str(key))


def knobs_key(knobs):
    """The calibration key the role would compute on the host for these knobs, without the digests: the draft
    named by its path (the role reads its config there) as 'ALGORITHM:path@'."""
    setup = {name: knobs.get("sglang_" + name) for name in SETUP_KNOBS}
    speculative = setup.get("speculative") or {}
    draft = None
    if speculative.get("draft_model_path"):
        draft = "%s:%s@" % (str(speculative.get("algorithm")).upper(), speculative.get("draft_model_path"))
    return without_digests(calibration_key(setup, {"sha256": ""}, draft))


def path(root, host):
    return os.path.join(root, host, FILE)


def read(root, host, knobs):
    """(calibration, note): the calibration `host`'s last run kept for the setup these knobs name, else {}; the
    note says what was used or why not (empty when there is no file)."""
    where = path(root, host)
    try:
        with open(where, "rb") as handle:
            raw = handle.read(LIMIT + 1)
    except FileNotFoundError:
        return {}, ""
    except OSError as error:
        return {}, "%s could not be read (%s): planned without it" % (where, error.strerror or error)
    if len(raw) > LIMIT:
        return {}, "%s is over %d KiB, which no calibration is: planned without it" % (where, LIMIT // 1024)
    try:
        kept = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return {}, "%s is not JSON: planned without it (the next run writes it again)" % where
    if not isinstance(kept, dict) or not isinstance(kept.get("calibration"), dict) or not kept["calibration"]:
        return {}, "%s holds no calibration: planned without it" % where
    if without_digests(kept.get("calibration_key")) != knobs_key(knobs):
        return {}, ("%s is of another setup (%s): planned without it until a run of this one"
                    % (where, kept.get("calibration_key")))
    return kept["calibration"], "P and A from %s (the host's last run, %s)" % (where, kept.get("written_at", "?"))


def write(root, host, key, calibration, now=None):
    """Keep `calibration` (the one the host's role plans from) for `host`, all or nothing; returns the path."""
    folder = os.path.join(root, host)
    os.makedirs(folder, exist_ok=True)
    now = now or datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    body = json.dumps({"calibration_key": key, "calibration": calibration, "written_at": now}, indent=1,
                      sort_keys=True)
    handle, temporary = tempfile.mkstemp(prefix=".calibration.", dir=folder)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(body + "\n")
        os.chmod(temporary, 0o644)
        os.replace(temporary, path(root, host))
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise
    return path(root, host)
