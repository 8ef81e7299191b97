"""The weight loader's options: how the boot reads the checkpoint, planned per release (issue 33).

What each release has (read in its wheel; the flag tables releases/flags-<version>.json hold the flags):
- Multi-threaded safetensors loading, `--model-loader-extra-config '{"enable_multithread_load": true}'`
  (keys allowed: enable_multithread_load, num_threads; 8 threads by default, loader.py DEFAULT_NUM_THREADS):
  OFF by default in 0.5.9 (model_loader/loader.py:479 `extra_config.get("enable_multithread_load", False)`),
  ON from 0.5.10 (0.5.10 loader.py:482, 0.5.15 :548, 0.5.23 :613 `..., True)`).
- Checkpoint prefetch, `--weight-loader-prefetch-checkpoints` (a store_true, default off; threads
  `--weight-loader-prefetch-num-threads`, default 4): from 0.5.11 (absent from 0.5.9/0.5.10's tables; 0.5.15
  server_args.py:2379-2386, 0.5.23 arg_groups/fields/model.py:303-309). Each rank reads its share of the shards
  into the page cache while the load runs. 0.5.23 turns multi-threaded loading OFF when prefetch is on unless
  --model-loader-extra-config names enable_multithread_load or num_threads (loader.py:665-690); 0.5.15 keeps
  both (loader.py:573-598). So with prefetch the plan also names enable_multithread_load, as SGLang's own
  8-GPU CI does (sglang#25498, #25684), and every release gets the same two loaders.

Public figures: DeepSeek-R1 217 s -> 65 s with multi-threaded loading (sglang#7943), Kimi-K2.5's 64 shards
24:46 -> 6:11 (#18124); prefetch can cost on a slow array or an already cached checkpoint (pegainfer#950):
hence sglang_load_accelerate: off, which leaves every loader option at the release's default.
"""

import json
import os
import re

from .spec import KVPlanError

KNOB = "sglang_load_accelerate"
CHOICES = ("auto", "off")
EXTRA_CONFIG = "--model-loader-extra-config"
PREFETCH = "--weight-loader-prefetch-checkpoints"
PREFETCH_THREADS = "--weight-loader-prefetch-num-threads"
# The dests of the flags the plan sets (sglang_extra_args reaching one of them conflicts with `auto`).
DESTS = ("model_loader_extra_config", "weight_loader_prefetch_checkpoints", "weight_loader_prefetch_num_threads")
# The first release whose multi-threaded loading is on by default (0.5.10 model_loader/loader.py:482).
MULTITHREAD_DEFAULT_FROM = (0, 5, 10)
_RELEASES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "releases")


def _key(version):
    return tuple(int(n) for n in re.findall(r"\d+", str(version))[:3])


def release_flags(version):
    """{flag: default} of the loader flags in the release's flag table (the newest table not newer than
    `version`, as the unit's parser would be), {} for an unknown version string."""
    tables = sorted((name[len("flags-"):-len(".json")] for name in os.listdir(_RELEASES)
                     if name.startswith("flags-")), key=_key)
    older = [name for name in tables if _key(name) <= _key(version)] if _key(version) else []
    if not older:
        return {}
    with open(os.path.join(_RELEASES, "flags-%s.json" % older[-1]), encoding="utf-8") as handle:
        entries = json.load(handle)["flags"]
    return {name: entry["default"] for entry in entries for name in entry["names"]
            if name in (EXTRA_CONFIG, PREFETCH, PREFETCH_THREADS)}


def loader_args(version, flags, knob, given, shards=None):
    """(args, notes): the loader flags for SGLang `version`.

    flags: release_flags(version); knob: sglang_load_accelerate; given: the sglang_extra_args item that already
    sets one of DESTS (extra_args.option_given), else None; shards: the checkpoint's safetensors files, None when
    not known. `auto` turns on what the release has and leaves off: multi-threaded loading where it is not the
    default, and prefetch where the release has it and the checkpoint has more than one shard (one file leaves
    nothing to read ahead of the load)."""
    if knob not in CHOICES:
        raise KVPlanError("%s is %r: give 'auto' (the loader options the release has and leaves off: multi-threaded "
                          "loading, checkpoint prefetch) or 'off' (the release's defaults, for storage where prefetch "
                          "costs)." % (KNOB, knob))
    if knob == "off":
        return [], ["%s off: the weight loader runs with SGLang %s's defaults" % (KNOB, version)]
    if given:
        raise KVPlanError("sglang_extra_args sets %s, and %s 'auto' plans the weight loader's options itself (%s): "
                          "set %s: off to keep yours, or remove %s from sglang_extra_args."
                          % (given, KNOB, ", ".join((EXTRA_CONFIG, PREFETCH)), KNOB, given))
    prefetch = PREFETCH in flags and flags[PREFETCH] is False and shards != 1
    multithread_off = _key(version) < MULTITHREAD_DEFAULT_FROM and EXTRA_CONFIG in flags
    args, notes = [], []
    if prefetch:
        args.append(PREFETCH)
        notes.append("%s: each rank reads its share of the shards into the page cache during the load (default "
                     "off in %s)" % (PREFETCH, version))
    if prefetch or multithread_off:
        # Compact JSON: one argv item, nothing for the unit's quoting to split.
        args += [EXTRA_CONFIG, json.dumps({"enable_multithread_load": True}, separators=(",", ":"))]
        notes.append("multi-threaded loading named in %s (%s)" % (
            EXTRA_CONFIG, "off by default in %s" % version if multithread_off else
            "0.5.23+ turns it off beside prefetch unless named"))
    return args, notes
