"""library/hf_download.py downloads the files side by side (`connections`, sglang_download_connections), each resumable
by its own .part, hashed as its bytes arrive: against the Hub stand-in of test_hf_download.py, counting the file
requests in flight at once."""

import hashlib
import os
import threading
import time

import pytest
import yaml
from test_hf_download import REPO_ROOT, Hub, HubHandler, module_args, one_try


class CountingHandler(HubHandler):
    """The stand-in's handler, keeping when each file GET began and ended (the listing is not a file)."""

    def do_GET(self, head=False):
        began = time.monotonic()
        try:
            super().do_GET(head)
        finally:
            if "/resolve/" in self.path and not head:
                # the paced stand-in sleeps 0.05 s after its last piece, when the client may already ask the next
                with self.server.lock:
                    self.server.spans.append((began, time.monotonic() - (0.06 if self.server.bytes_per_s else 0)))


def most_at_once(spans):
    """The most file GETs in flight at one time."""
    edges = sorted([(b, 1) for b, _ in spans] + [(e, -1) for _, e in spans])
    most = now = 0
    for _, step in edges:
        now += step
        most = max(most, now)
    return most


def counting_hub(files, **kwargs):
    server = Hub(files, **kwargs)
    server.RequestHandlerClass = CountingHandler
    server.lock, server.spans = threading.Lock(), []
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def listed(files):
    return [{"rfilename": n, "size": len(d), "lfs": {"sha256": hashlib.sha256(d).hexdigest(), "size": len(d)}}
            for n, d in files.items()]


def shards(count, size):
    return {"model-%05d.safetensors" % i: os.urandom(size) for i in range(1, count + 1)}


def run(server, tmp_path, **extra):
    target = tmp_path / "model"
    target.mkdir(exist_ok=True)
    args = dict(module_args("org/model", "main", target, tmp_path / "no-token",
                            "http://127.0.0.1:%d" % server.server_port), **extra)
    rc, out = one_try(args, tmp_path)
    return rc, out, target


@pytest.mark.parametrize("connections, most", [(1, 1), (3, 3)])
def test_files_download_side_by_side_up_to_the_connections_asked(tmp_path, connections, most):
    files = shards(6, 256 * 1024)
    server = counting_hub(files, siblings=listed(files), bytes_per_s=1024 * 1024)  # each file ~0.25 s
    try:
        rc, out, target = run(server, tmp_path, connections=connections)
    finally:
        server.shutdown()
    assert rc == 0 and out["done"] and out["connections"] == connections, out
    assert most_at_once(server.spans) == most
    assert out["bytes_fetched"] == sum(len(d) for d in files.values())
    for name, data in files.items():
        assert (target / name).read_bytes() == data


def test_the_role_passes_the_knob_and_defaults_it_to_16():
    tasks = yaml.safe_load((REPO_ROOT / "roles/sglang/tasks/download.yml").read_text())
    task = next(t for t in next(t for t in tasks if "block" in t)["block"] if "hf_download" in t)
    assert task["hf_download"]["connections"] == "{{ sglang_download_connections }}"
    defaults = yaml.safe_load((REPO_ROOT / "roles/sglang/defaults/main.yml").read_text())
    assert defaults["sglang_download_connections"] == 16


def test_a_failing_file_fails_the_call_naming_it_and_the_others_resume_next_time(tmp_path):
    files = shards(4, 512 * 1024)
    broken = "model-00002.safetensors"
    server = counting_hub(files, siblings=listed(files), bytes_per_s=512 * 1024, broken_file=broken)
    try:
        rc, out, target = run(server, tmp_path, connections=4)
    finally:
        server.shutdown()
    assert rc != 0 and out["failed"] and broken in out["msg"] and "run again to resume" in out["msg"], out
    # the files beside it stopped at their next read and kept what they had
    kept = [n for n in files if n != broken and ((target / n).exists() or (target / (n + ".part")).exists())]
    assert kept, out
    server = counting_hub(files, siblings=listed(files))
    try:
        rc, out, target = run(server, tmp_path, connections=4)
    finally:
        server.shutdown()
    assert rc == 0 and out["done"], out
    for name, data in files.items():
        assert (target / name).read_bytes() == data


def test_a_resumed_file_is_hashed_from_its_prefix_and_a_bad_prefix_is_caught(tmp_path):
    files = shards(1, 1024 * 1024)
    name, data = next(iter(files.items()))
    target = tmp_path / "model"
    target.mkdir()
    # an earlier process left the first half (resumed with a Range); its hash state died with it
    (target / (name + ".part")).write_bytes(data[: len(data) // 2])
    server = counting_hub(files, siblings=listed(files))
    try:
        rc, out, target = run(server, tmp_path)
    finally:
        server.shutdown()
    assert rc == 0 and out["resumed"] == {name: len(data) // 2} and (target / name).read_bytes() == data, out
    # the same, but the half on disk is not the file's: the sha256 of prefix + rest differs, and the .part goes
    (target / name).unlink()
    (target / (name + ".part")).write_bytes(bytes(len(data) // 2))
    server = counting_hub(files, siblings=listed(files))
    try:
        rc, out, target = run(server, tmp_path)
    finally:
        server.shutdown()
    assert rc != 0 and "sha256" in out["msg"] and name in out["msg"], out
    assert not (target / name).exists() and not (target / (name + ".part")).exists()


@pytest.mark.parametrize("connections", [0, 65])
def test_connections_out_of_range_are_refused_by_the_knobs_name(tmp_path, connections):
    files = shards(1, 1024)
    server = counting_hub(files)
    try:
        rc, out, _ = run(server, tmp_path, connections=connections)
    finally:
        server.shutdown()
    assert rc != 0 and "sglang_download_connections" in out["msg"] and str(connections) in out["msg"], out
    assert server.spans == []


def test_the_rate_cap_holds_the_download_under_it_all_connections_together(tmp_path):
    # sglang_download_max_mb_per_s: 4 MiB at 2 MB/s cannot take less than ~2.1 s, however many connections
    files = shards(4, 2**20)
    server = counting_hub(files, siblings=listed(files))
    try:
        began = time.monotonic()
        rc, out, _ = run(server, tmp_path, connections=4, max_bytes_per_s=2 * 10**6)
        took = time.monotonic() - began
    finally:
        server.shutdown()
    assert rc == 0 and out["done"], out
    assert took >= 0.9 * 4 * 2**20 / (2 * 10**6), took


def test_the_role_passes_the_rate_cap_in_bytes_and_checks_the_knob():
    from test_hostile_values import refused  # the check phase's sentences for the role's knobs

    for name in ("download.yml", "download_early.yml"):
        text = (REPO_ROOT / "roles/sglang/tasks" / name).read_text()
        assert 'max_bytes_per_s: "{{ (sglang_download_max_mb_per_s | float * 1000000) | int }}"' in text, name
    assert refused(sglang_download_max_mb_per_s=250) == []
    assert any("sglang_download_max_mb_per_s" in line and "-5" in line
               for line in refused(sglang_download_max_mb_per_s=-5))
