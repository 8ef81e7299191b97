"""The weights download of roles/sglang/tasks/download.yml: the completeness check (library/hf_checkpoint_status.py)
on real-format safetensors files, and the download module (library/hf_download.py) with the task's own arguments,
against a Hub stand-in on 127.0.0.1 (the task's endpoint, sglang_hf_endpoint): a download killed halfway is
incomplete, and the next run resumes it with an HTTP Range request; the token reaches the Hub from the 0600 file,
never from the module's arguments.

The stand-in serves the two Hub endpoints the module uses, as huggingface_hub 2.4.0's source calls them
(hf_api.model_info with files_metadata: /api/models/<repo>/revision/<rev>?blobs=true, siblings with sizes;
file_download: GET /<repo>/resolve/<commit>/<file>, with Range)."""

import hashlib
import http.server
import json
import os
import pathlib
import signal
import struct
import subprocess
import sys
import threading
import time

import hf_checkpoint_status as status
import jinja2
import pytest
import yaml

REPO_ROOT = pathlib.Path(__file__).resolve().parents[2]
SHA = "0123456789abcdef0123456789abcdef01234567"
TOKEN = "hf_notarealtoken_for_the_test_0123456789"  # a test value, not a secret


def safetensors(tensors):
    """A safetensors file as the format lays it out: u64 header length, JSON header, data."""
    header, offset = {}, 0
    for name, size in tensors.items():
        header[name] = {"dtype": "BF16", "shape": [size // 2], "data_offsets": [offset, offset + size]}
        offset += size
    raw = json.dumps(header).encode()
    return struct.pack("<Q", len(raw)) + raw + os.urandom(4096) * (offset // 4096) + os.urandom(offset % 4096), offset


def checkpoint(sizes):
    """{filename: bytes} of a sharded checkpoint, with its index and config.json."""
    files, weight_map, total = {}, {}, 0
    for i, size in enumerate(sizes, 1):
        name = "model-%05d-of-%05d.safetensors" % (i, len(sizes))
        files[name], data = safetensors({"layer.%d.weight" % i: size})
        weight_map["layer.%d.weight" % i] = name
        total += data
    files["model.safetensors.index.json"] = json.dumps({"metadata": {"total_size": total},
                                                        "weight_map": weight_map}).encode()
    files["config.json"] = b'{"model_type": "llama"}'
    return files


def write(path, files):
    for name, data in files.items():
        (path / name).write_bytes(data)


def test_complete_checkpoint(tmp_path):
    write(tmp_path, checkpoint([4096, 2048]))
    result = status.check(str(tmp_path))
    assert result["complete"] and result["files"] == 2 and result["problems"] == []


def test_missing_and_truncated_files_are_named(tmp_path):
    files = checkpoint([4096, 2048, 1024])
    files["model-00002-of-00003.safetensors"] = files["model-00002-of-00003.safetensors"][:-100]
    del files["model-00003-of-00003.safetensors"]
    write(tmp_path, files)
    result = status.check(str(tmp_path))
    assert not result["complete"]
    assert result["missing"] == ["model-00003-of-00003.safetensors"]
    assert result["truncated"][0].startswith("model-00002-of-00003.safetensors (")


def test_an_incomplete_checkpoint_fails_the_mark_naming_what_is_missing_and_removes_a_stale_marker(tmp_path):
    files = checkpoint([4096, 2048])
    del files["model-00002-of-00002.safetensors"]
    write(tmp_path, files)
    (tmp_path / ".sglang-download-complete").write_text("{}")
    args = tmp_path / "args.json"
    args.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": {
        "path": str(tmp_path), "marker": ".sglang-download-complete", "repo": "org/model", "revision": "main",
        "fail_incomplete": True}}))
    proc = subprocess.run([sys.executable, str(REPO_ROOT / "library/hf_checkpoint_status.py"), str(args)],
                          capture_output=True, text=True, timeout=60)
    out = json.loads(proc.stdout)
    assert out["failed"] and out["msg"].startswith("%s is not a complete copy of org/model@main: " % tmp_path)
    assert "model-00002-of-00002.safetensors" in out["msg"] and "Run again to resume the download" in out["msg"]
    assert not (tmp_path / ".sglang-download-complete").exists()


def test_config_json_alone_is_not_a_checkpoint(tmp_path):
    # The old check was `creates: config.json`, and config.json lands first.
    (tmp_path / "config.json").write_text("{}")
    (tmp_path / "model.safetensors.index.json").write_bytes(checkpoint([1024])["model.safetensors.index.json"])
    assert not status.check(str(tmp_path))["complete"]


def test_index_total_size_must_match(tmp_path):
    files = checkpoint([1024])
    index = json.loads(files["model.safetensors.index.json"])
    index["metadata"]["total_size"] += 1
    files["model.safetensors.index.json"] = json.dumps(index).encode()
    write(tmp_path, files)
    assert "tensor bytes" in " ".join(status.check(str(tmp_path))["problems"])


def test_single_file_checkpoint_without_index(tmp_path):
    data, _ = safetensors({"w": 512})
    (tmp_path / "model.safetensors").write_bytes(data)
    (tmp_path / "config.json").write_text("{}")
    assert status.check(str(tmp_path))["complete"]
    (tmp_path / "model.safetensors").write_bytes(data[:20])
    assert not status.check(str(tmp_path))["complete"]


def hub_entry(name, data):
    """A file as the Hub lists it with ?blobs=true: its size, and what checks its content: a weights file (Git LFS)
    its sha256, a plain file (config.json, the index) its git blob id, the sha1 of "blob <size>\\0" and its bytes."""
    if name.endswith((".safetensors", ".bin")):
        return {"rfilename": name, "size": len(data), "blobId": "1" * 40,  # the LFS pointer's id: not the content's
                "lfs": {"sha256": hashlib.sha256(data).hexdigest(), "size": len(data), "pointerSize": 134}}
    return {"rfilename": name, "size": len(data), "blobId": hashlib.sha1(b"blob %d\x00" % len(data) + data).hexdigest()}


class Hub(http.server.ThreadingHTTPServer):
    def __init__(self, files, stall_file=None, bytes_per_s=None, ranges=True, broken_file=None, siblings=None,
                 served=None, redirect=None, commit=None):
        super().__init__(("127.0.0.1", 0), HubHandler)
        self.commit = commit or SHA  # the listing's commit, as a hostile mirror may give it
        self.files, self.stall_file, self.requests = files, stall_file, []
        # siblings: the listing as a hostile or broken Hub gives it; served: {name: bytes} sent instead of the
        # listed file; redirect: a base URL the file requests are sent to (302), as the Hub sends them to storage.
        self.siblings, self.served, self.redirect = siblings, served or {}, redirect
        self.stalled = threading.Event()
        # bytes_per_s: file data paced like a slow link; ranges=False: a mirror that ignores Range (200, whole
        # file); broken_file: answered 500, as a storage backend failing.
        self.bytes_per_s, self.ranges, self.broken_file = bytes_per_s, ranges, broken_file


class HubHandler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def send(self, code, body=b"", headers=None, head=False):
        headers = {"Content-Length": str(len(body)), **(headers or {})}
        self.send_response(code)
        for key, value in headers.items():
            self.send_header(key, value)
        self.end_headers()
        if not head:
            self.wfile.write(body)

    def do_HEAD(self):
        self.do_GET(head=True)

    def do_GET(self, head=False):
        hub = self.server
        hub.requests.append((self.command, self.path, self.headers.get("Range"), self.headers.get("Authorization")))
        repo = "org/model"
        if self.path.startswith("/api/models/%s/revision/" % repo):
            siblings = hub.siblings if hub.siblings is not None else [hub_entry(n, d) for n, d in hub.files.items()]
            return self.send(200, json.dumps({"id": repo, "sha": hub.commit, "siblings": siblings}).encode(),
                             {"Content-Type": "application/json"}, head)
        prefix = "/%s/resolve/%s/" % (repo, SHA)
        if not self.path.startswith(prefix) or self.path[len(prefix):] not in hub.files:
            return self.send(404, b"not found", {"X-Error-Code": "EntryNotFound"}, head)
        name = self.path[len(prefix):]
        if hub.redirect:
            return self.send(302, b"", {"Location": hub.redirect + self.path}, head)
        if name == hub.broken_file:
            return self.send(500, b"Internal Error - We're working hard to fix this as soon as possible!", head=head)
        data = hub.served.get(name, hub.files[name])
        headers = {"X-Repo-Commit": SHA, "ETag": '"etag-%s"' % name, "Accept-Ranges": "bytes"}
        start = int(self.headers["Range"].split("=")[1].split("-")[0]) if self.headers.get("Range") else 0
        if not hub.ranges:
            start = 0
        if head:
            headers["Content-Length"] = str(len(data))
            return self.send(200, b"", headers, head=True)
        if start:
            headers["Content-Range"] = "bytes %d-%d/%d" % (start, len(data) - 1, len(data))
        headers["Content-Length"] = str(len(data) - start)
        self.send_response(206 if start else 200)
        for key, value in headers.items():
            self.send_header(key, value)
        self.end_headers()
        if name == hub.stall_file and not hub.stalled.is_set():
            # 12 MiB (more than the client's 10 MiB write chunk), then nothing: the run is killed here, as a run
            # interrupted mid-download is.
            self.wfile.write(data[: 12 * 2**20])
            self.wfile.flush()
            hub.stalled.set()
            time.sleep(60)
            return
        if hub.bytes_per_s:
            piece = max(1, hub.bytes_per_s // 20)
            for at in range(start, len(data), piece):
                try:
                    self.wfile.write(data[at:at + piece])
                    self.wfile.flush()
                except OSError:  # the client stopped reading (its try's time was up)
                    return
                time.sleep(0.05)
            return
        self.wfile.write(data[start:])


@pytest.fixture
def hub():
    files = checkpoint([16 * 2**20, 400_000])
    server = Hub(files, stall_file="model-00001-of-00002.safetensors")
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()


def module_args(repo, revision, path, token_file, endpoint):
    """The arguments of download.yml's download task, rendered with these values."""
    tasks = yaml.safe_load((REPO_ROOT / "roles/sglang/tasks/download.yml").read_text())
    block = next(t for t in tasks if "block" in t)["block"]
    task = next(t for t in block if "hf_download" in t)
    assert task["become_user"] == "{{ sglang_user }}" and "environment" not in task
    values = {"_sglang_download_repo": repo, "_sglang_download_revision": revision, "_sglang_download_path": str(path),
              "sglang_hf_token_file": str(token_file), "sglang_hf_endpoint": endpoint,
              "sglang_download_connections": 16, "sglang_download_max_mb_per_s": 0,  # the role's defaults
              "sglang_download_allow_unverified": []}
    return {key: render(value, values) for key, value in task["hf_download"].items()}


def render(value, values):
    """A task argument rendered as Ansible does: "{{ knob }}" alone keeps the knob's type (a list stays a list)."""
    if not isinstance(value, str):
        return value
    alone = value.strip()
    if alone.startswith("{{") and alone.endswith("}}") and alone[2:-2].strip() in values:
        return values[alone[2:-2].strip()]
    return jinja2.Template(value).render(**values)


def run_module(args, tmp_path):
    """Run library/hf_download.py as Ansible runs a module: a process reading its arguments from a file."""
    args_file = tmp_path / "args.json"
    args_file.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": args}))
    return subprocess.Popen([sys.executable, str(REPO_ROOT / "library/hf_download.py"), str(args_file)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)


def test_interrupted_download_is_resumed_and_only_then_complete(hub, tmp_path):
    target = tmp_path / "model"
    target.mkdir()
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n")
    token_file.chmod(0o600)
    args = module_args("org/model", "main", target, token_file, "http://127.0.0.1:%d" % hub.server_port)
    assert TOKEN not in json.dumps(args)

    first = run_module(args, tmp_path)
    assert hub.stalled.wait(60), "the download never reached the stalled file"
    time.sleep(0.5)  # let the module write what it received
    os.killpg(first.pid, signal.SIGKILL)
    first.wait()
    half = status.check(str(target))
    assert not half["complete"] and half["partial"] == ["model-00001-of-00002.safetensors.part"], half
    assert os.path.getsize(target / "model-00001-of-00002.safetensors.part") > 0

    second = run_module(args, tmp_path)
    out = json.loads(second.communicate(timeout=120)[0])
    assert second.returncode == 0, out
    offset = out["resumed"]["model-00001-of-00002.safetensors"]
    assert offset >= 8 * 2**20
    stalled = [r for r in hub.requests if r[0] == "GET" and r[1].endswith("model-00001-of-00002.safetensors")]
    assert stalled[-1][2] == "bytes=%d-" % offset  # the second run asked only for the rest
    done = status.check(str(target))
    assert done["complete"], done
    for name, data in hub.files.items():
        assert (target / name).read_bytes() == data
    # Every request carried the token, read from the file.
    assert {r[3] for r in hub.requests} == {"Bearer " + TOKEN}

    third = run_module(args, tmp_path)
    out = json.loads(third.communicate(timeout=60)[0])
    assert third.returncode == 0 and out["changed"] is False and out["fetched"] == []


# --- tries with `poll`, as download.yml runs them: each try returns bytes done / total, the next continues ---

@pytest.fixture
def slow_hub():
    """Two shards (3 MiB, 1 MiB) served at 1 MiB/s: a 1 s try stops inside a file."""
    server = Hub(checkpoint([3 * 2**20, 2**20]), bytes_per_s=2**20)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server
    server.shutdown()


def one_try(args, tmp_path):
    proc = run_module(args, tmp_path)
    out = json.loads(proc.communicate(timeout=60)[0])
    return proc.returncode, out


def test_tries_report_bytes_done_of_total_and_resume_where_the_last_stopped(slow_hub, tmp_path):
    target = tmp_path / "model"
    target.mkdir()
    args = dict(module_args("org/model", "main", target, tmp_path / "no-token", "http://127.0.0.1:%d"
                            % slow_hub.server_port), poll=1)
    total = sum(len(data) for data in slow_hub.files.values())
    tries = []
    for _ in range(15):
        rc, out = one_try(args, tmp_path)
        assert rc == 0, out
        tries.append(out)
        if out["done"]:
            break
    first, last = tries[0], tries[-1]
    assert len(tries) >= 3 and last["done"] and not first["done"]
    assert first["bytes_total"] == total and first["files_total"] == 4
    assert 0 < first["bytes_done"] < total and first["bytes_per_s"] > 0
    assert first["changed"] is True and first["progress_clock"] == "task"
    assert first["progress"].startswith("downloading org/model: ") and " of 4.0 MiB (" in first["progress"]
    assert "/4 files, " in first["progress"] and "MiB/s (about " in first["progress"]
    done = [out["bytes_done"] for out in tries]
    assert done == sorted(done) and done[-1] == total  # it only ever goes forward
    assert last["progress"] == "downloaded org/model: 4.0 MiB, 4 files"
    # Every try after the first asked the Hub for the rest of the file it stopped in, never from 0 again.
    gets = [r for r in slow_hub.requests if r[0] == "GET" and "/resolve/" in r[1]]
    resumed = [r for r in gets if r[2]]
    assert resumed and all(int(r[2].split("=")[1].rstrip("-")) > 0 for r in resumed)
    assert sum(1 for r in gets if r[1].endswith("00001-of-00002.safetensors") and not r[2]) == 1
    assert status.check(str(target))["complete"]
    for name, data in slow_hub.files.items():
        assert (target / name).read_bytes() == data
    rc, out = one_try(args, tmp_path)
    assert rc == 0 and out["done"] and out["changed"] is False and out["fetched"] == []


def test_a_mirror_that_ignores_range_gets_its_file_finished_in_one_try(tmp_path):
    server = Hub(checkpoint([3 * 2**20]), bytes_per_s=2 * 2**20, ranges=False)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        target = tmp_path / "model"
        target.mkdir()
        name = "model-00001-of-00001.safetensors"
        (target / (name + ".part")).write_bytes(server.files[name][:2**20])  # an earlier run's part
        args = dict(module_args("org/model", "main", target, tmp_path / "no-token",
                                "http://127.0.0.1:%d" % server.server_port), poll=1)
        rc, out = one_try(args, tmp_path)
    finally:
        server.shutdown()
    # Stopping after 1 s would lose the file again (the next try would get it from byte 0 once more): the try
    # ran past its second (3 MiB at 2 MiB/s) to finish it; the files after it are the next try's.
    assert rc == 0, out
    assert name in out["fetched"] and name not in out["resumed"]
    assert (target / name).read_bytes() == server.files[name]


def test_a_failing_file_fails_the_try_with_the_hubs_answer(tmp_path):
    server = Hub(checkpoint([2**20]), broken_file="model-00001-of-00001.safetensors")
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        target = tmp_path / "model"
        target.mkdir()
        args = dict(module_args("org/model", "main", target, tmp_path / "no-token",
                                "http://127.0.0.1:%d" % server.server_port), poll=30)
        rc, out = one_try(args, tmp_path)
    finally:
        server.shutdown()
    assert rc != 0 and out["failed"]
    assert out["msg"].startswith("Downloading model-00001-of-00001.safetensors from org/model failed: HTTP Error 500")


def test_poll_under_one_second_is_refused(tmp_path):
    args = dict(module_args("org/model", "main", tmp_path, tmp_path / "t", "http://127.0.0.1:9"), poll=0)
    rc, out = one_try(args, tmp_path)
    assert rc != 0 and "poll=0 must be at least 1" in out["msg"]


# --- download.yml itself, through ansible-playbook with the repository's ansible.cfg and callbacks ---

def run_download_yml(tmp_path, hub_url, target, **extra):
    play = tmp_path / "download.yml"
    play.write_text(yaml.safe_dump([{
        "name": "Run the role's download tasks against the Hub stand-in", "hosts": "localhost",
        "connection": "local", "gather_facts": False,
        # the folder and the token as download_start.yml leaves them (download_prepare.yml), then the tries
        "tasks": [{"name": step, "ansible.builtin.include_role": {"name": "sglang", "tasks_from": step},
                   "vars": {"_sglang_internal": step, "_sglang_download_repo": "org/model",
                            "_sglang_download_revision": "main",
                            "_sglang_download_path": str(target), "sglang_user": "root",
                            "sglang_hf_token": TOKEN, "sglang_hf_token_file": str(tmp_path / "hf" / "hub" / "token"),
                            "sglang_hf_endpoint": hub_url,
                            # the run lock the tries renew (the role's main took it before)
                            "sglang_backup_dir": str(tmp_path / "backups"), **extra}}
                  for step in ("download_prepare", "download")]}]))
    env = dict(os.environ, ANSIBLE_CONFIG=str(REPO_ROOT / "ansible.cfg"), ANSIBLE_NOCOLOR="1")
    # No sudo on a test machine: the tasks' `become` (to the service user) is switched off by the variable.
    return subprocess.run([str(pathlib.Path(sys.executable).parent / "ansible-playbook"), str(play),
                           "-e", "ansible_become=false"], cwd=REPO_ROOT, env=env, capture_output=True, text=True,
                          timeout=300)


def test_download_yml_prints_one_line_per_try_then_changes_nothing(slow_hub, tmp_path, monkeypatch):
    # download.yml's tries are 30 s long; 1 s here, from the same task file.
    text = (REPO_ROOT / "roles/sglang/tasks/download.yml").read_text()
    assert text.count("poll: 30\n") == 1
    role = tmp_path / "roles" / "sglang"
    (role / "tasks").mkdir(parents=True)
    for sub in ("defaults", "meta", "vars"):
        (role / sub).symlink_to(REPO_ROOT / "roles/sglang" / sub)
    (role / "tasks" / "download.yml").write_text(text.replace("poll: 30\n", "poll: 1\n"))
    (role / "tasks" / "download_prepare.yml").symlink_to(REPO_ROOT / "roles/sglang/tasks/download_prepare.yml")
    monkeypatch.setenv("ANSIBLE_ROLES_PATH", str(tmp_path / "roles"))
    target = tmp_path / "model"
    url = "http://127.0.0.1:%d" % slow_hub.server_port
    first = run_download_yml(tmp_path, url, target)
    assert first.returncode == 0, first.stdout + first.stderr
    lines = [line for line in first.stdout.splitlines() if line.startswith("localhost: downloading org/model: ")]
    assert len(lines) >= 2, first.stdout
    assert all(" of 4.0 MiB (" in line and "/4 files" in line for line in lines)
    assert lines[-1].rsplit(", ", 1)[1][-1] == "s"  # the task's clock, added by the callback
    assert "FAILED - RETRYING" not in first.stdout
    assert "changed=" in first.stdout and "changed=0" not in first.stdout
    assert TOKEN not in first.stdout
    assert status.check(str(target))["complete"]
    second = run_download_yml(tmp_path, url, target)
    assert second.returncode == 0, second.stdout + second.stderr
    assert "changed=0" in second.stdout and "localhost: downloading" not in second.stdout


def test_download_yml_stops_waiting_before_the_run_locks_lease_and_keeps_what_it_fetched(slow_hub, tmp_path,
                                                                                        monkeypatch):
    # A download longer than the lock's lease: the tries renew the lock first and end before the lease would (here
    # 60 s: one try and the last), with a sentence; the .part files stay for the next run.
    text = (REPO_ROOT / "roles/sglang/tasks/download.yml").read_text()
    role = tmp_path / "roles" / "sglang"
    (role / "tasks").mkdir(parents=True)
    for sub in ("defaults", "meta", "vars"):
        (role / sub).symlink_to(REPO_ROOT / "roles/sglang" / sub)
    (role / "tasks" / "download.yml").write_text(text.replace("poll: 30\n", "poll: 1\n"))
    (role / "tasks" / "download_prepare.yml").symlink_to(REPO_ROOT / "roles/sglang/tasks/download_prepare.yml")
    monkeypatch.setenv("ANSIBLE_ROLES_PATH", str(tmp_path / "roles"))
    target = tmp_path / "model"
    run = run_download_yml(tmp_path, "http://127.0.0.1:%d" % slow_hub.server_port, target,
                           sglang_run_lock_lease=60)
    assert run.returncode != 0, run.stdout
    assert "localhost: org/model is still downloading into %s after 2 tries of ~30 s" % target in run.stdout, \
        run.stdout
    assert "sglang_run_lock_lease, 60 s" in run.stdout and "run site.yml again to continue" in run.stdout
    assert "FAILED - RETRYING" not in run.stdout and TOKEN not in run.stdout
    assert (tmp_path / "backups" / ".run-lock.json").exists()  # renewed (here: taken) before the tries
    assert not status.check(str(target))["complete"]


# --- hostile or broken peers (issue 20): what a listing names, what a server sends, where a redirect points ---

def serve(**kwargs):
    server = Hub(**kwargs)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def download(server, tmp_path, **extra):
    target = tmp_path / "model"
    target.mkdir(exist_ok=True)
    args = dict(module_args("org/model", "main", target, tmp_path / "no-token",
                            "http://127.0.0.1:%d" % server.server_port), **extra)
    try:
        return (*one_try(args, tmp_path), target)
    finally:
        server.shutdown()


@pytest.mark.parametrize("name", ["../../escaped", "/tmp/escaped-absolute", "a/../../escaped", "", "a//b", "a\\..\\b"])
def test_a_listed_name_outside_the_folder_is_refused_before_anything_is_written(tmp_path, name):
    rc, out, target = download(serve(files={"config.json": b"{}"},
                                     siblings=[{"rfilename": "config.json", "size": 2}, {"rfilename": name}]),
                               tmp_path)
    assert rc != 0 and "outside the download folder" in out["msg"] and "nothing was downloaded" in out["msg"], out
    assert os.listdir(target) == [] and not (tmp_path / "escaped").exists()
    assert not os.path.exists("/tmp/escaped-absolute")


def test_content_is_checked_against_the_listed_sha256(tmp_path):
    good = os.urandom(2**16)
    bad = bytes(reversed(good))  # the listed size, other bytes
    listed = [{"rfilename": "w.bin", "size": len(good), "lfs": {"sha256": hashlib.sha256(good).hexdigest(),
                                                                "size": len(good)}}]
    rc, out, target = download(serve(files={"w.bin": good}, siblings=listed, served={"w.bin": bad}), tmp_path)
    assert rc != 0 and "w.bin" in out["msg"] and hashlib.sha256(good).hexdigest() in out["msg"], out
    assert "sha256" in out["msg"] and not (target / "w.bin").exists() and not (target / "w.bin.part").exists()
    rc, out, target = download(serve(files={"w.bin": good}, siblings=listed), tmp_path)
    assert rc == 0 and (target / "w.bin").read_bytes() == good, out


@pytest.mark.parametrize("served", [2**16 + 100, 2**16 - 100])
def test_a_file_served_longer_or_shorter_than_listed_is_a_final_error_with_both_sizes(tmp_path, served):
    data = os.urandom(2**16)
    rc, out, target = download(serve(files={"w.bin": data}, served={"w.bin": os.urandom(served)}), tmp_path)
    assert rc != 0 and "w.bin" in out["msg"], out
    assert "%d bytes" % served in out["msg"] and "says %d" % len(data) in out["msg"], out
    assert "run again to resume" not in out["msg"] and not (target / "w.bin.part").exists()


def test_the_token_does_not_follow_a_redirect_to_another_origin(tmp_path):
    storage = serve(files={"w.bin": b"x" * 1000})
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN)
    hub = serve(files={"w.bin": b"x" * 1000}, redirect="http://localhost:%d" % storage.server_port)
    target = tmp_path / "model"
    target.mkdir()
    args = module_args("org/model", "main", target, token_file, "http://127.0.0.1:%d" % hub.server_port)
    try:
        rc, out = one_try(args, tmp_path)
    finally:
        hub.shutdown()
        storage.shutdown()
    assert rc == 0 and (target / "w.bin").read_bytes() == b"x" * 1000, out
    assert [r[3] for r in hub.requests] == ["Bearer " + TOKEN] * 2  # the listing and the file request
    assert storage.requests and all(r[3] is None for r in storage.requests), storage.requests


def test_a_git_lfs_pointer_shard_is_named_not_read(tmp_path):
    write(tmp_path, checkpoint([4096, 4096]))
    (tmp_path / "model-00002-of-00002.safetensors").write_bytes(
        b"version https://git-lfs.github.com/spec/v1\noid sha256:" + b"0" * 64 + b"\nsize 4096\n")
    result = status.check(str(tmp_path))
    assert not result["complete"] and "git-lfs pointer" in " ".join(result["problems"]), result


def test_a_header_length_past_the_file_is_named_not_allocated(tmp_path):
    write(tmp_path, checkpoint([4096]))
    (tmp_path / "model-00001-of-00001.safetensors").write_bytes(struct.pack("<Q", 2_300_000_000_000_000_000) + b"{}")
    result = status.check(str(tmp_path))
    assert not result["complete"] and "not a safetensors file" in " ".join(result["problems"]), result


@pytest.mark.parametrize("index, says", [
    (b"{not json", "cannot be read"),
    (b"[1, 2]", "not a JSON object"),
    (b'{"metadata": {}}', "no weight_map object"),
    (b'{"weight_map": ["model-00001-of-00001.safetensors"]}', "no weight_map object"),
    (b'{"weight_map": {}}', "weight_map is empty"),
    (b'{"weight_map": {"w": 7}}', "not a file inside the checkpoint folder"),
    (b'{"weight_map": {"w": "../../etc/passwd"}}', "not a file inside the checkpoint folder"),
    (b'{"weight_map": {"w": "model-00001-of-00001.safetensors"}, "metadata": {"total_size": "many"}}',
     "not a byte count"),
])
def test_a_malformed_index_is_a_sentence_and_never_complete(tmp_path, index, says):
    write(tmp_path, checkpoint([4096]))
    (tmp_path / "model.safetensors.index.json").write_bytes(index)
    result = status.check(str(tmp_path))
    assert result["complete"] is False and says in " ".join(result["problems"]), result


# --- model.yml: each checkpoint read once a run (the look's read, unless main's step has just fetched into it) ---

def run_model_yml(tmp_path, hub_url, target, steps):
    """A play that includes the role's model step once per (name, download) in steps, registering after each whether
    the checkpoints were read and what is kept; returns (rc, output, [kept after each step])."""
    tasks = []
    for number, (name, download) in enumerate(steps):
        tasks.append({"name": name, "ansible.builtin.include_role": {"name": "sglang", "tasks_from": "model"},
                      "vars": {"_sglang_internal": "model", "_sglang_download": download}})
        tasks.append({"name": "Keep what step %d left" % number, "ansible.builtin.copy": {
            "dest": str(tmp_path / ("step%d.json" % number)),
            "content": "{{ {'read': _sglang_checkpoint_read is not skipped, "
                       "'kept': _sglang_checkpoints | default({}) | list, "
                       "'fetched': (inventory_hostname | sglang_run_result('download')).fetched | default([])}"
                       " | to_json }}"}})
    play = tmp_path / "model.yml"
    play.write_text(yaml.safe_dump([{"hosts": "localhost", "connection": "local", "gather_facts": False,
                                     "vars": {"sglang_model_path": str(target), "sglang_model_hf_repo": "org/model",
                                              "sglang_user": "root", "sglang_hf_endpoint": hub_url,
                                              "sglang_hf_token_file": str(tmp_path / "token"),
                                              "sglang_backup_dir": str(tmp_path / "backups")},
                                     "tasks": tasks}]))
    env = dict(os.environ, ANSIBLE_CONFIG=str(REPO_ROOT / "ansible.cfg"), ANSIBLE_NOCOLOR="1")
    run = subprocess.run([str(pathlib.Path(sys.executable).parent / "ansible-playbook"), str(play),
                          "-e", "ansible_become=false"], cwd=REPO_ROOT, env=env, capture_output=True, text=True,
                         timeout=300)
    return run.returncode, run.stdout + run.stderr, [
        json.loads((tmp_path / ("step%d.json" % n)).read_text()) for n in range(len(steps))
        if (tmp_path / ("step%d.json" % n)).exists()]


def test_model_yml_reads_each_checkpoint_once_a_run_unless_it_has_just_fetched_into_it(tmp_path):
    server = serve(files=checkpoint([4096, 2048]))
    url, target = "http://127.0.0.1:%d" % server.server_port, tmp_path / "model"
    try:
        # A first run: the look finds nothing on the host (fetches nothing, keeps nothing); main's step fetches the
        # checkpoint and reads it.
        rc, out, steps = run_model_yml(tmp_path, url, target, [("The look", False), ("Main", True)])
        assert rc == 0, out
        assert steps[0] == {"read": True, "kept": [], "fetched": []}
        assert steps[1] == {"read": True, "kept": ["sglang_model_path"], "fetched": [str(target)]}
        # The next run: the look reads it; main's step finds the checkpoint complete and takes the look's read.
        rc, out, steps = run_model_yml(tmp_path, url, target, [("The look", False), ("Main", True)])
        assert rc == 0, out
        assert steps[0] == {"read": True, "kept": ["sglang_model_path"], "fetched": []}
        assert steps[1] == {"read": False, "kept": ["sglang_model_path"], "fetched": []}
    finally:
        server.shutdown()
