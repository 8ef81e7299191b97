"""A runtime build from a local folder of wheels: pip against uv with an empty cache and with a warm one, and the disk
of one against two runtimes (issue 33). uv runs as the role runs it (module_utils/sglang_uv.py's environment: the
cache on the runtimes' file system, hard links; then compile_bytecode: the bytecode another runtime compiled from the
same files linked, the rest compiled, so that every runtime holds its bytecode as pip's does).

    python tests/benchmarks/bench_runtime_build.py [--wheelhouse DIR] [--requirement torch==2.9.1] [-n 1] [--json]

The default wheelhouse is .cache/bench/wheels, filled once with `pip download <requirement>` through this machine's
pip configuration (torch with the CUDA wheels PyPI serves for linux x86_64: about 3.8 GB). Each variant builds a new
runtime under --work (default .cache/bench/runtimes, removed at the end): pip cold (`python3 -m venv` + `pip install
--no-index --find-links`, no pip cache), uv cold (an empty cache), uv warm (the cache kept, a second runtime). The
host's own pip configuration is left out of the timed installs (PIP_CONFIG_FILE=/dev/null), so both installers read
only the wheelhouse. The disk of a set of folders counts a hard-linked file once, as du does. --json prints one object:
{"rows": [{"variant", "wall_s", "cpu_s", "disk_bytes"}], "ratios": {"pip_over_uv_cold", "pip_over_uv_warm",
"two_over_one_disk"}, ...}; disk_bytes is pip's runtime, uv's first runtime with the cache it filled, and what the
second uv runtime adds. uv's version is the sglang role's (roles/sglang/defaults/main.yml, sglang_uv_version).
A build or download that fails prints why and exits 1, with no figure (nor JSON). `make test` runs it once on a
one-file wheel the test makes (tests/unit/test_benchmarks_cheap.py; uv installed once into .cache/bench/tools).
"""

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, os.pardir, os.pardir))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(REPO, "module_utils"))

import sglang_uv  # noqa: E402  (module_utils/, no Ansible import)
from outcome import BenchmarkFailed, finish  # noqa: E402


def role_uv_version():
    """The uv the sglang role builds runtimes with (roles/sglang/defaults/main.yml, sglang_uv_version)."""
    with open(os.path.join(REPO, "roles", "sglang", "defaults", "main.yml"), encoding="utf-8") as handle:
        return str(yaml.safe_load(handle)["sglang_uv_version"])


UV_VERSION = role_uv_version()
DEFAULT_REQUIREMENT = "torch==2.9.1"


def children_cpu():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(commands, env):
    """(wall seconds, CPU seconds of the children) of commands run one after another; a failure stops the bench.
    The page cache is written back first (untimed): otherwise a variant pays for the gigabytes the one before it
    wrote and removed (measured: uv cold 24.6 s right after pip, 18.7 s alone)."""
    os.sync()
    wall, cpu = time.monotonic(), children_cpu()
    for argv in commands:
        proc = subprocess.run(argv, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, check=False)
        if proc.returncode:
            raise BenchmarkFailed("%s failed (rc %d): %s" % (" ".join(argv[:4]), proc.returncode,
                                                            (proc.stderr or proc.stdout)[-2000:]))
    return time.monotonic() - wall, children_cpu() - cpu


def disk(*folders):
    """Bytes the folders take on disk, a file with several hard links among them counted once (du's rule)."""
    seen, total = set(), 0
    for folder in folders:
        for base, dirs, files in os.walk(folder):
            for name in dirs + files:
                st = os.lstat(os.path.join(base, name))
                if (st.st_dev, st.st_ino) not in seen:
                    seen.add((st.st_dev, st.st_ino))
                    total += st.st_blocks * 512
    return total


def wheelhouse(folder, requirement):
    """The folder of wheels, downloaded once (a marker says the download finished)."""
    marker = os.path.join(folder, ".downloaded")
    if not os.path.isfile(marker):
        os.makedirs(folder, exist_ok=True)
        print("downloading %s and its dependencies into %s (once)" % (requirement, folder), file=sys.stderr)
        proc = subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--disable-pip-version-check",
                               requirement, "-d", folder], capture_output=True, text=True, check=False)
        if proc.returncode:
            raise BenchmarkFailed("pip download %s failed (rc %d): %s" % (requirement, proc.returncode,
                                                                        (proc.stderr or proc.stdout)[-2000:]))
        with open(marker, "w", encoding="utf-8") as handle:
            handle.write(requirement + "\n")
    return folder


def uv_binary(work_root):
    """uv UV_VERSION, installed from this machine's package index into a venv of its own (as the role's builder)."""
    builder = os.path.join(work_root, "uv-%s" % UV_VERSION)
    uv = os.path.join(builder, "bin", "uv")
    if not os.path.isfile(uv):
        why = sglang_uv.install_builder(work_root, UV_VERSION, sys.executable)  # into <work_root>/.builder
        if why:
            raise BenchmarkFailed("uv %s cannot be installed: %s" % (UV_VERSION, why))
        shutil.rmtree(builder, ignore_errors=True)
        os.rename(os.path.join(work_root, sglang_uv.BUILDER), builder)
        shutil.rmtree(os.path.join(work_root, sglang_uv.CACHE), ignore_errors=True)
    return uv


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--wheelhouse", default=os.path.join(REPO, ".cache", "bench", "wheels"))
    parser.add_argument("--requirement", default=DEFAULT_REQUIREMENT, help="what each runtime installs")
    parser.add_argument("--work", default=os.path.join(REPO, ".cache", "bench", "runtimes"),
                        help="where the runtimes and uv's cache are built (one file system, as on a host)")
    parser.add_argument("-n", type=int, default=1, help="builds of each variant (the median is reported)")
    parser.add_argument("--python", default=shutil.which("python3") or sys.executable)
    parser.add_argument("--no-bytecode", action="store_true",
                        help="no bytecode in either (the role's builds compile it, as pip does by default)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    return finish("bench_runtime_build", lambda: measure(args))


def measure(args):
    wheels = wheelhouse(os.path.abspath(args.wheelhouse), args.requirement)
    work = os.path.abspath(args.work)
    tools = os.path.join(os.path.dirname(work), "tools")
    os.makedirs(tools, exist_ok=True)
    try:
        return build_all(args, wheels, work, tools)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def build_all(args, wheels, work, tools):
    """Every variant built n times; the lines to print (or one line of JSON)."""
    uv = None  # installed after pip's build: a pip build that fails needs no uv
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    base = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "UV_", "VIRTUAL_ENV"))}
    pip_env = dict(base, PIP_CONFIG_FILE=os.devnull, PIP_NO_CACHE_DIR="1", PIP_DISABLE_PIP_VERSION_CHECK="1")
    # the role's uv environment, its cache under the runtimes folder (work), the wheelhouse its only source
    uv_env = sglang_uv.uv_environment(work, {}, base=dict(base, PIP_CONFIG_FILE=os.devnull))
    pip_flags = []
    if args.no_bytecode:
        pip_flags = ["--no-compile"]  # an option: PIP_NO_COMPILE=1 left pip compiling (the same disk, measured)
    cache = uv_env["UV_CACHE_DIR"]
    find = ["--no-index", "--find-links", wheels, args.requirement]
    runs = {"pip cold": [], "uv cold": [], "uv warm": []}
    bytecode = {}
    disks = {}
    for i in range(args.n):
        rt = os.path.join(work, "pip-%d" % i)
        runs["pip cold"].append(timed([[args.python, "-m", "venv", rt],
                                       [rt + "/bin/python", "-m", "pip", "install", "-q"] + pip_flags + find],
                                      pip_env))
        disks["pip one"] = disk(rt)
        shutil.rmtree(rt)
        uv = uv or uv_binary(tools)
        for variant in ("uv cold", "uv warm"):
            if variant == "uv cold":
                shutil.rmtree(cache, ignore_errors=True)
            rt = os.path.join(work, "%s-%d" % (variant.replace(" ", "-"), i))
            wall, cpu = timed([[uv, "venv", "-q", "--python", args.python, rt],
                               [uv, "pip", "install", "-q", "--python", rt + "/bin/python"] + find], uv_env)
            if not args.no_bytecode:
                # as the role's install does: the bytecode the first runtime compiled, linked; the rest compiled
                others = [os.path.join(work, "uv-cold-%d" % i)] if variant == "uv warm" else []
                began, used = time.monotonic(), children_cpu()
                bytecode[variant] = sglang_uv.compile_bytecode(rt, others)
                wall, cpu = wall + time.monotonic() - began, cpu + children_cpu() - used
            runs[variant].append((wall, cpu))
        one, two = os.path.join(work, "uv-cold-%d" % i), os.path.join(work, "uv-warm-%d" % i)
        disks["uv one"], disks["uv two"] = disk(cache, one), disk(cache, one, two)
        disks["uv one runtime alone"] = disk(one)
        shutil.rmtree(one)
        shutil.rmtree(two)
    shutil.rmtree(work, ignore_errors=True)
    med = {k: (statistics.median(w for w, _c in v), statistics.median(c for _w, c in v)) for k, v in runs.items()}
    rows = [{"variant": "pip cold", "wall_s": round(med["pip cold"][0], 2), "cpu_s": round(med["pip cold"][1], 2),
             "disk_bytes": disks["pip one"]},
            {"variant": "uv cold", "wall_s": round(med["uv cold"][0], 2), "cpu_s": round(med["uv cold"][1], 2),
             "disk_bytes": disks["uv one"]},
            {"variant": "uv warm", "wall_s": round(med["uv warm"][0], 2), "cpu_s": round(med["uv warm"][1], 2),
             "disk_bytes": disks["uv two"] - disks["uv one"]}]
    result = {
        "rows": rows,
        "ratios": {"pip_over_uv_cold": round(med["pip cold"][0] / med["uv cold"][0], 1),
                   "pip_over_uv_warm": round(med["pip cold"][0] / med["uv warm"][0], 1),
                   "two_over_one_disk": round(disks["uv two"] / disks["uv one"], 3)},
        "pip_two_runtimes_bytes": 2 * disks["pip one"], "uv_two_runtimes_bytes": disks["uv two"],
        "uv_runtime_alone_bytes": disks["uv one runtime alone"],
        "requirement": args.requirement, "wheels": len([w for w in os.listdir(wheels) if w.endswith(".whl")]),
        "wheel_bytes": sum(os.path.getsize(os.path.join(wheels, w)) for w in os.listdir(wheels)),
        "n": args.n, "uv": UV_VERSION, "bytecode": not args.no_bytecode, "load": os.getloadavg()[0],
        "bytecode_files": bytecode, "cores": os.cpu_count(),
        # Both installers are CPU-bound here (inflating the wheels, writing the files, compiling): uv cold cannot take
        # less wall time than its CPU seconds spread over every core, so on few cores its lead over pip is capped
        "uv_cold_best_ratio_here": round(med["pip cold"][0] / (med["uv cold"][1] / os.cpu_count()), 1),
    }
    if args.json:
        return [json.dumps(result)]
    gb = 1e9
    lines = ["runtime build of %s from %d local wheels (%.2f GB), uv %s, %s, median of %d, load %.2f"
             % (args.requirement, result["wheels"], result["wheel_bytes"] / gb, UV_VERSION,
                "bytecode compiled" if result["bytecode"] else "no bytecode", args.n, result["load"]),
             "%-9s %9s %9s %10s" % ("variant", "wall s", "cpu s", "disk GB")]
    lines += ["%-9s %9.1f %9.1f %10.2f" % (row["variant"], row["wall_s"], row["cpu_s"], row["disk_bytes"] / gb)
              for row in rows]
    ratios = result["ratios"]
    lines.append("pip/uv cold %.1fx, pip/uv warm %.1fx; two runtimes: uv %.2f GB (%.2fx one), pip %.2f GB"
                 % (ratios["pip_over_uv_cold"], ratios["pip_over_uv_warm"], disks["uv two"] / gb,
                    ratios["two_over_one_disk"], 2 * disks["pip one"] / gb))
    lines.append("uv cold's CPU over %d cores: at best %.1fx pip's wall time on this machine" % (
        result["cores"], result["uv_cold_best_ratio_here"]))
    return lines


if __name__ == "__main__":
    sys.exit(main())
