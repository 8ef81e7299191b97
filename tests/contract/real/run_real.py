"""Plan the case matrix for a release and put it to that release's REAL resolver; write the fixture.

    .venv/bin/python tests/contract/real/run_real.py VERSION [OUT.json]

Needs tests/contract/real/setup_real.sh to have installed .cache/sglang-real/VERSION. The model folders are made
under .cache/sglang-real/models-VERSION/: each holds only config.json, and for a checkpoint whose auto_map makes
transformers import its own configuration module (--trust-remote-code), that module as the checkpoint ships it:
for Kimi K2.x, configuration_kimi_k25.py = SGLang's own sglang/srt/configs/kimi_k25.py of that release (what the
real checkpoint's file defines; it cannot be downloaded here). The driver runs once per GPU kind (one import each,
a forked child per case), two kinds at a time (the machines this runs on have 2 cores).
"""

import concurrent.futures
import glob
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import cases  # noqa: E402

BASE = os.environ.get("SGLANG_REAL_DIR") or os.path.join(cases.REPO, ".cache", "sglang-real")
FIXTURES = os.path.join(cases.REPO, "tests", "fixtures", "sglang_real")


def venv_python(version):
    return os.path.join(BASE, version, "bin", "python")


def installed(version):
    return os.path.isfile(os.path.join(BASE, version, ".complete"))


def _site_packages(version):
    return glob.glob(os.path.join(BASE, version, "lib", "python3*", "site-packages"))[0]


def make_models(version, root):
    """The model folders for `version`'s run: config.json, plus the auto_map'd configuration module."""
    for name, config in cases.MODELS.items():
        folder = os.path.join(root, name)
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, "config.json"), "w", encoding="utf-8") as handle:
            json.dump(config, handle, indent=1)
        auto = (config.get("auto_map") or {}).get("AutoConfig", "")
        if auto.startswith("configuration_kimi_k25."):
            shutil.copy(os.path.join(_site_packages(version), "sglang", "srt", "configs", "kimi_k25.py"),
                        os.path.join(folder, "configuration_kimi_k25.py"))


def materialise(entries, root):
    """The cases with the placeholders replaced: model folders under root, each case's --config file written."""
    out = []
    for entry in entries:
        config_path = os.path.join(root, "config-%s.yaml" % entry["id"])
        with open(config_path, "w", encoding="utf-8") as handle:
            handle.write(entry["config"])
        argv = [a.replace(cases.MODEL_ROOT + "/@CONFIG@", config_path).replace(cases.MODEL_ROOT, root)
                for a in entry["argv"]]
        out.append({"id": entry["id"], "gpu": entry["gpu"], "argv": argv, "probe": entry.get("probe")})
    return out


def question_key(entry):
    """What the real resolver is asked in a case, as a digest: argv, GPU kind, the model folders, the --config file."""
    question = {"argv": entry["argv"], "gpu": entry["gpu"], "config": entry["config"],
                "models": {name: cases.MODELS[name] for name in (entry["model"], entry["draft"]) if name}}
    if entry.get("probe"):  # a sliding-window plan's memory, which the release's configurator is given
        question["probe"] = entry["probe"]
    return hashlib.sha256(json.dumps(question, sort_keys=True).encode()).hexdigest()[:16]


def run(version, out_file=None):
    """Plan, run the real resolver, and write {release, cases: [planned + real]} to the fixture; return it."""
    if not installed(version):
        raise SystemExit("sglang %s is not installed under %s: run tests/contract/real/setup_real.sh %s"
                         % (version, BASE, version))
    entries = cases.planned(version)
    out_file = out_file or os.path.join(FIXTURES, "resolver-%s.json" % version)
    # A case asked before with the same question (argv, GPU, model folders, --config file) keeps its recorded answer:
    # resolution is deterministic for a release, so only changed cases go to the real resolver again.
    # SGLANG_REAL_FRESH=1 asks every case again.
    recorded = {}
    if os.environ.get("SGLANG_REAL_FRESH") != "1" and os.path.isfile(out_file):
        with open(out_file, encoding="utf-8") as handle:
            old = json.load(handle)
        if old.get("version") == version:
            recorded = {c["key"]: c["real"] for c in old["cases"] if "key" in c}
    for entry in entries:
        entry["key"] = question_key(entry)
    root = os.path.join(BASE, "models-" + version)
    make_models(version, root)
    runnable = materialise([e for e in entries if e["key"] not in recorded], root)
    results = {e["id"]: recorded[e["key"]] for e in entries if e["key"] in recorded}
    env = dict(os.environ, LD_LIBRARY_PATH=os.path.join(BASE, "stubcuda") + os.pathsep
               + os.environ.get("LD_LIBRARY_PATH", ""),
               # no download, no telemetry: everything the resolver reads is local
               HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", PYTHONWARNINGS="ignore")
    started = time.time()
    real_version = version
    with tempfile.TemporaryDirectory() as tmp:
        cases_file = os.path.join(tmp, "cases.json")
        with open(cases_file, "w", encoding="utf-8") as handle:
            json.dump(runnable, handle)

        def one(kind):
            out = os.path.join(tmp, "out-%s.json" % kind)
            log = os.path.join(tmp, "log-%s.txt" % kind)
            with open(log, "w", encoding="utf-8") as handle:
                proc = subprocess.run([venv_python(version), os.path.join(HERE, "driver.py"), kind, cases_file, out],
                                      env=env, stdout=handle, stderr=subprocess.STDOUT, check=False, cwd=tmp)
            if proc.returncode != 0:
                with open(log, encoding="utf-8") as handle:
                    raise RuntimeError("driver %s %s rc %s:\n%s" % (version, kind, proc.returncode,
                                                                   handle.read()[-4000:]))
            with open(out, encoding="utf-8") as handle:
                return json.load(handle)

        kinds = sorted({c["gpu"] for c in runnable}, key=lambda k: -sum(c["gpu"] == k for c in runnable))
        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            for done in pool.map(one, kinds):
                results.update(done["results"])
                real_version = done["sglang"]
    fixture = {"release": "sglang==%s" % real_version, "version": version,
               "note": "Real SGLang %s's prepare_server_args -> resolve_once -> check_server_args on each case "
                       "(tests/contract/real/; only torch.cuda's device queries and libcuda are faked). 'planner' is "
                       "the planner's verdict when this was recorded; tests compare the planner's current one."
                       % real_version,
               "seconds": round(time.time() - started, 1), "asked": len(runnable),
               "cases": [dict({k: e.get(k) for k in ("id", "gpu", "model", "draft", "knobs", "argv", "planner", "key",
                                                       "probe")},
                              real=results[e["id"]]) for e in entries]}
    os.makedirs(os.path.dirname(out_file), exist_ok=True)
    # the model folders are this machine's: the fixture names them as the cases do, so it reads the same anywhere
    text = json.dumps(fixture, indent=1, sort_keys=True).replace(root, cases.MODEL_ROOT)
    with open(out_file, "w", encoding="utf-8") as handle:
        handle.write(text + "\n")
    return fixture


if __name__ == "__main__":
    print(json.dumps({k: v for k, v in run(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else None).items()
                      if k != "cases"}))
