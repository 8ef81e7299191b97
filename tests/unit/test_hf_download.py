"""The weights download of roles/sglang/tasks/download.yml: the completeness check (library/hf_checkpoint_status.py)
on real-format safetensors files, and the download module (library/hf_download.py) with the task's own arguments,
against a Hub stand-in on 127.0.0.1 (the task's endpoint, sglang_hf_endpoint): a download killed halfway is
incomplete, and the next run resumes it with an HTTP Range request; the token reaches the Hub from the 0600 file,
never from the module's arguments.

The stand-in serves the two Hub endpoints the module uses, as huggingface_hub 2.4.0's source calls them
(hf_api.model_info with files_metadata: /api/models/<repo>/revision/<rev>?blobs=true, siblings with sizes;
file_download: GET /<repo>/resolve/<commit>/<file>, with Range)."""

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
TOKEN = "hf_notarealtoken_for_the_test_0123456789"  # noqa: S105 - a test value, not a secret


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


class Hub(http.server.ThreadingHTTPServer):
    def __init__(self, files, stall_file=None):
        super().__init__(("127.0.0.1", 0), HubHandler)
        self.files, self.stall_file, self.requests = files, stall_file, []
        self.stalled = threading.Event()


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
            siblings = [{"rfilename": n, "size": len(d)} for n, d in hub.files.items()]
            return self.send(200, json.dumps({"id": repo, "sha": SHA, "siblings": siblings}).encode(),
                             {"Content-Type": "application/json"}, head)
        prefix = "/%s/resolve/%s/" % (repo, SHA)
        if not self.path.startswith(prefix) or self.path[len(prefix):] not in hub.files:
            return self.send(404, b"not found", {"X-Error-Code": "EntryNotFound"}, head)
        name = self.path[len(prefix):]
        data = hub.files[name]
        headers = {"X-Repo-Commit": SHA, "ETag": '"etag-%s"' % name, "Accept-Ranges": "bytes"}
        start = int(self.headers["Range"].split("=")[1].split("-")[0]) if self.headers.get("Range") else 0
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
              "sglang_hf_token_file": str(token_file), "sglang_hf_endpoint": endpoint}
    return {key: jinja2.Template(value).render(**values) for key, value in task["hf_download"].items()}


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
