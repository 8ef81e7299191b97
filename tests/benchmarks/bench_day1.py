#!/usr/bin/env python3
"""Day 1's download, measured: library/hf_download.py against a stand-in Hub that caps each connection and the whole.

    .venv/bin/python tests/benchmarks/bench_day1.py                 # 16 files of 64 MiB, 40 MB/s per connection,
                                                                    # 800 MB/s in all, 3 runs of each
    .venv/bin/python tests/benchmarks/bench_day1.py --file-mib 256  # the issue's 16 x 256 MiB (4.29 GB)
    .venv/bin/python tests/benchmarks/bench_day1.py --with-hf       # also huggingface_hub's snapshot_download (16
                                                                    # workers), installed into .cache/bench/hf
    .venv/bin/python tests/benchmarks/bench_day1.py --with-runtime  # also the runtime build, pip against uv

Prints, per variant, the median wall time (min-max) against the two floors (one stream's and the total cap's), then
the resume after a `kill -9` halfway: the bytes the stand-in sent again. The stand-in serves what the module reads
(the revision listing with each file's sha256, `resolve` with Range) and what huggingface_hub 2.x reads (the tree
listing, HEAD with X-Repo-Commit and ETag). Files live on /dev/shm so that the disk is not what is measured.
The module runs with the sglang role's default connections (roles/sglang/defaults/main.yml,
sglang_download_connections) unless --connections says otherwise. A download that fails, a resume that does not
finish, or a run that ends before the kill, prints why and exits 1, with no figure. `make test` runs it once on
2 files of 1 MiB at 2 MB/s per connection (tests/unit/test_benchmarks_cheap.py).
"""

import argparse
import hashlib
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from outcome import BenchmarkFailed, finish  # noqa: E402  pylint: disable=wrong-import-position

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODULE = os.path.join(REPO, "library", "hf_download.py")
NAME = "org/model"
# The stand-in Hub molecule serves too (molecule/standins/standin_hub.py): the caps, the listings, Range.
sys.path.insert(0, os.path.join(REPO, "molecule", "standins"))
from standin_hub import Hub  # noqa: E402  pylint: disable=wrong-import-position


def make_repo(folder, files, mib):
    digests = {}
    for i in range(1, files + 1):
        name = "model-%05d-of-%05d.safetensors" % (i, files)
        data = os.urandom(mib * 2**20)
        with open(os.path.join(folder, name), "wb") as handle:
            handle.write(data)
        digests[name] = hashlib.sha256(data).hexdigest()
    return digests


def module_run(endpoint, dest, connections, kill_after=None, total=None):
    args = os.path.join(os.path.dirname(dest), "args-%d.json" % connections)
    with open(args, "w") as handle:
        json.dump({"ANSIBLE_MODULE_ARGS": {"repo": NAME, "path": dest, "endpoint": endpoint,
                                           "connections": connections}}, handle)
    env = dict(os.environ, PYTHONPATH=os.path.join(REPO, "tests", "module_utils_path"))
    began = time.monotonic()
    proc = subprocess.Popen([sys.executable, MODULE, args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env,
                            start_new_session=True)
    if kill_after is not None:
        while proc.poll() is None and _on_disk(dest) < kill_after * total:
            time.sleep(0.05)
        if proc.poll() is not None:
            raise BenchmarkFailed("hf_download ended (rc %d) before %.0f%% of the bytes were on disk: nothing to "
                                  "resume (bigger files or lower caps)" % (proc.returncode, 100 * kill_after))
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        return time.monotonic() - began, None
    out = proc.communicate()[0]
    wall = time.monotonic() - began
    try:
        result = json.loads(out)
    except ValueError:
        raise BenchmarkFailed("hf_download (rc %d) printed no result: %s" % (proc.returncode, out[-2000:])) from None
    if proc.returncode or result.get("failed"):
        raise BenchmarkFailed("hf_download failed (rc %d): %s" % (proc.returncode, result.get("msg")))
    return wall, result


def role_connections():
    """The sglang role's default sglang_download_connections: what a host's download uses unless told otherwise."""
    with open(os.path.join(REPO, "roles", "sglang", "defaults", "main.yml"), encoding="utf-8") as handle:
        return int(yaml.safe_load(handle)["sglang_download_connections"])


def _on_disk(folder):
    return sum(os.path.getsize(os.path.join(folder, n)) for n in os.listdir(folder)) if os.path.isdir(folder) else 0


def hf_python():
    """A python with huggingface_hub, in .cache/bench/hf (made once, from the package index pip is set up for)."""
    venv = os.path.join(REPO, ".cache", "bench", "hf")
    python = os.path.join(venv, "bin", "python")
    if not os.path.exists(python):
        subprocess.run([sys.executable, "-m", "venv", venv], check=True)
        subprocess.run([python, "-m", "pip", "install", "-q", "huggingface_hub"], check=True)
    return python


def hf_run(python, endpoint, dest, workers):
    code = ("import huggingface_hub, sys; huggingface_hub.snapshot_download(%r, local_dir=%r, max_workers=%d)"
            % (NAME, dest, workers))
    env = dict(os.environ, HF_ENDPOINT=endpoint, HF_HUB_DISABLE_TELEMETRY="1", HF_HUB_OFFLINE="0",
               HF_HOME=os.path.join(os.path.dirname(dest), "hf-home"))
    began = time.monotonic()
    done = subprocess.run([python, "-c", code], env=env, capture_output=True, text=True)
    if done.returncode:
        raise BenchmarkFailed("snapshot_download failed: %s" % done.stderr[-2000:])
    return time.monotonic() - began


def hf_version(python):
    return subprocess.run([python, "-c", "import huggingface_hub; print(huggingface_hub.__version__)"],
                          capture_output=True, text=True).stdout.strip()


def row(label, walls, floor_one, floor_total):
    median = statistics.median(walls)
    return "%-44s %7.1f s (%5.1f-%5.1f)  %5.2fx one stream's floor  %5.1fx the total cap's floor" % (
        label, median, min(walls), max(walls), median / floor_one, median / floor_total)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=16)
    parser.add_argument("--file-mib", type=int, default=64)
    parser.add_argument("--per-connection-mb", type=float, default=40.0, help="MB/s per connection")
    parser.add_argument("--total-mb", type=float, default=800.0, help="MB/s for the whole stand-in")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--connections", type=int, default=None,
                        help="hf_download's connections (default: the sglang role's sglang_download_connections)")
    parser.add_argument("--with-hf", action="store_true", help="also huggingface_hub's snapshot_download")
    parser.add_argument("--skip-one-stream", action="store_true", help="the slowest variant (one connection)")
    parser.add_argument("--with-runtime", action="store_true",
                        help="also the runtime build, pip against uv (bench_runtime_build.py; ~4 GB of wheels, once)")
    opts = parser.parse_args(argv)
    return finish("bench_day1", lambda: measure(opts))


def measure(opts):
    lines = []
    connections = role_connections() if opts.connections is None else opts.connections
    work = tempfile.mkdtemp(prefix="bench-day1-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
    try:
        repo = os.path.join(work, "repo")
        os.mkdir(repo)
        digests = make_repo(repo, opts.files, opts.file_mib)
        hub = Hub(repo, opts.per_connection_mb * 1e6, opts.total_mb * 1e6)
        hub.digests = digests
        threading.Thread(target=hub.serve_forever, daemon=True).start()
        endpoint = "http://127.0.0.1:%d" % hub.server_port
        total = opts.files * opts.file_mib * 2**20
        floor_one, floor_total = total / (opts.per_connection_mb * 1e6), total / (opts.total_mb * 1e6)
        lines.append("stand-in Hub: %d files x %d MiB = %.2f GB; %.0f MB/s per connection, %.0f MB/s in all; load %s"
                     % (opts.files, opts.file_mib, total / 1e9, opts.per_connection_mb, opts.total_mb,
                        " ".join("%.2f" % x for x in os.getloadavg())))
        lines.append("floors: one stream %.1f s, the total cap %.1f s" % (floor_one, floor_total))
        variants = [("hf_download, connections=%d%s" % (connections, " (the role's default)"
                                                       if opts.connections is None else ""),
                     lambda d: module_run(endpoint, d, connections)[0])]
        if not opts.skip_one_stream:
            variants.append(("hf_download, connections=1 (one stream, as before)",
                             lambda d: module_run(endpoint, d, 1)[0]))
        if opts.with_hf:
            python = hf_python()
            variants.append(("snapshot_download, 16 workers (huggingface_hub %s)" % hf_version(python),
                             lambda d: hf_run(python, endpoint, d, 16)))
        walls = {label: [] for label, _ in variants}
        for _run in range(opts.runs):  # variants alternate within a run, so a drift of the machine hits all
            for label, measure in variants:
                dest = os.path.join(work, "dest")
                shutil.rmtree(dest, ignore_errors=True)
                os.mkdir(dest)
                walls[label].append(measure(dest))
        lines += [row(label, walls[label], floor_one, floor_total) for label, _ in variants]
        # resume: killed when half the bytes are on disk, then run again; what the stand-in sent beyond the total
        dest = os.path.join(work, "dest")
        shutil.rmtree(dest, ignore_errors=True)
        os.mkdir(dest)
        hub.sent = 0
        module_run(endpoint, dest, connections, kill_after=0.5, total=total)
        first = hub.sent
        if first >= total:
            raise BenchmarkFailed("the stand-in had sent all %d bytes when the download was killed: nothing to "
                                  "resume (bigger files or lower caps)" % total)
        _, result = module_run(endpoint, dest, connections)
        if not result.get("done") or _on_disk(dest) < total:
            raise BenchmarkFailed("the resumed download did not finish: done=%s, %d of %d bytes on disk"
                                  % (result.get("done"), _on_disk(dest), total))
        again = hub.sent - total
        lines.append("resume after kill -9 at %.0f%%: the first run got %.1f MiB; the second fetched %.1f MiB, "
                     "%.1f MiB again (%.2f%% of the total); done=%s"
                     % (100.0 * first / total, first / 2**20, result["bytes_fetched"] / 2**20, again / 2**20,
                        100.0 * again / total, result["done"]))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if opts.with_runtime:
        lines += runtime_section()
    return lines


def runtime_section():
    """The runtime build, pip against uv, from bench_runtime_build.py (a local folder of wheels, torch with its CUDA
    wheels), in the same run."""
    proc = subprocess.run([sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                        "bench_runtime_build.py"), "--json"],
                          capture_output=True, text=True, check=False)
    if proc.returncode:
        raise BenchmarkFailed("the runtime build failed: %s" % (proc.stderr or proc.stdout)[-2000:])
    got = json.loads(proc.stdout)
    lines = ["runtime build of %s from %d local wheels (%.2f GB), uv %s, bytecode %s:" % (
        got["requirement"], got["wheels"], got["wheel_bytes"] / 1e9, got["uv"],
        "compiled" if got["bytecode"] else "not compiled")]
    lines += ["  %-9s %7.1f s wall, %7.1f s CPU, %6.2f GB" % (row_["variant"], row_["wall_s"], row_["cpu_s"],
                                                             row_["disk_bytes"] / 1e9) for row_ in got["rows"]]
    ratios = got["ratios"]
    lines.append("  pip/uv: %.1fx cold, %.1fx warm; two uv runtimes %.2fx one's disk (pip: 2x)" % (
        ratios["pip_over_uv_cold"], ratios["pip_over_uv_warm"], ratios["two_over_one_disk"]))
    lines.append("  uv cold's CPU seconds over %d cores: at best %.1fx pip's wall time on this machine" % (
        got["cores"], got["uv_cold_best_ratio_here"]))
    return lines


if __name__ == "__main__":
    sys.exit(main())
