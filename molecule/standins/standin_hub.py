#!/usr/bin/env python3
"""STAND-IN for the Hugging Face Hub (molecule and tests/benchmarks/bench_day1.py; never production): serves one
repository from a folder, capped per connection and in all as a CDN and a link are.

    standin_hub.py make-repo DIR --shards 4 --shard-mib 24   # config.json, a safetensors index, valid shards
    standin_hub.py serve DIR --repo org/model --port 8765 --per-connection 1048576 --total 2097152

It answers what library/hf_download.py reads (the revision listing with each file's size and sha256, `resolve`
with Range) and what huggingface_hub 2.x reads (the tree listing, HEAD with X-Repo-Commit and ETag). GET
/_standin/sent says how many file bytes it has sent, so that a test can tell a resume from a download started again.
Python's standard library only: it runs inside a bare instance.
"""

import argparse
import hashlib
import http.server
import json
import os
import struct
import threading
import time
import urllib.parse

SHA = "0123456789abcdef0123456789abcdef01234567"


class Bucket:
    """A token bucket in bytes per second (taken in pieces; a sleeping taker holds no lock)."""

    def __init__(self, rate):
        self.rate, self.lock, self.free_at = float(rate), threading.Lock(), time.monotonic()

    def take(self, count):
        with self.lock:
            now = time.monotonic()
            self.free_at = max(self.free_at, now) + count / self.rate
            wait = self.free_at - now - count / self.rate
        if wait > 0:
            time.sleep(wait)


class Hub(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, root, per_connection, total, repo="org/model", address=("127.0.0.1", 0)):
        super().__init__(address, Handler)
        self.root, self.repo, self.per_connection, self.total = root, repo, per_connection, Bucket(total)
        self.files = {n: os.path.getsize(os.path.join(root, n)) for n in sorted(os.listdir(root))}
        self.digests = {}
        self.sent, self.lock = 0, threading.Lock()

    def hash_files(self):
        for name in self.files:
            digest = hashlib.sha256()
            with open(os.path.join(self.root, name), "rb") as handle:
                for block in iter(lambda: handle.read(2**20), b""):  # pylint: disable=cell-var-from-loop
                    digest.update(block)
            self.digests[name] = digest.hexdigest()


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def setup(self):
        super().setup()
        self.bucket = Bucket(self.server.per_connection)  # kept across keep-alive requests, as a CDN's is

    def _send(self, code, body=b"", headers=None, head=False):
        self.send_response(code)
        for key, value in dict({"Content-Length": str(len(body))}, **(headers or {})).items():
            self.send_header(key, value)
        self.end_headers()
        if not head:
            self.wfile.write(body)

    def do_HEAD(self):
        self.do_GET(head=True)

    def do_GET(self, head=False):
        hub, path = self.server, urllib.parse.urlparse(self.path).path
        if path == "/_standin/sent":
            return self._send(200, json.dumps({"sent": hub.sent}).encode(), {"Content-Type": "application/json"}, head)
        repo = hub.repo
        if path.startswith("/api/models/%s/revision/" % repo) or path.startswith("/api/models/%s/tree/" % repo):
            entries = [{"rfilename": n, "path": n, "type": "file", "size": s, "oid": hub.digests[n][:40],
                        "lfs": {"sha256": hub.digests[n], "size": s, "oid": hub.digests[n], "pointerSize": 134}}
                       for n, s in hub.files.items()]
            body = json.dumps(entries if "/tree/" in path else {"id": repo, "sha": SHA, "siblings": entries}).encode()
            return self._send(200, body, {"Content-Type": "application/json"}, head)
        prefix = "/%s/resolve/" % repo
        name = path[len(prefix):].split("/", 1)[-1] if path.startswith(prefix) else None
        if name not in hub.files:
            return self._send(404, b"not found", {"X-Error-Code": "EntryNotFound"}, head)
        size = hub.files[name]
        start = int(self.headers["Range"].split("=")[1].split("-")[0]) if self.headers.get("Range") else 0
        etag = '"%s"' % hub.digests[name]
        headers = {"X-Repo-Commit": SHA, "ETag": etag, "X-Linked-Etag": etag, "X-Linked-Size": str(size),
                   "Accept-Ranges": "bytes", "Content-Length": str(size - start)}
        if start:
            headers["Content-Range"] = "bytes %d-%d/%d" % (start, size - 1, size)
        self.send_response(206 if start else 200)
        for key, value in headers.items():
            self.send_header(key, value)
        self.end_headers()
        if head:
            return None
        piece = 256 * 1024
        with open(os.path.join(hub.root, name), "rb") as handle:
            handle.seek(start)
            while True:
                block = handle.read(piece)
                if not block:
                    return None
                self.bucket.take(len(block))
                hub.total.take(len(block))
                try:
                    self.wfile.write(block)
                except OSError:
                    return None
                with hub.lock:
                    hub.sent += len(block)


def make_repo(folder, shards, shard_mib):
    """A checkpoint hf_checkpoint_status accepts: config.json, model.safetensors.index.json and `shards` valid
    safetensors files of about `shard_mib` MiB of random data each."""
    os.makedirs(folder, exist_ok=True)
    weight_map, total = {}, 0
    for i in range(1, shards + 1):
        name = "model-%05d-of-%05d.safetensors" % (i, shards)
        size = shard_mib * 2**20
        header = json.dumps({"layer.%d.weight" % i: {"dtype": "U8", "shape": [size],
                                                     "data_offsets": [0, size]}}).encode()
        with open(os.path.join(folder, name), "wb") as handle:
            handle.write(struct.pack("<Q", len(header)) + header)
            for _ in range(shard_mib):
                handle.write(os.urandom(2**20))
        weight_map["layer.%d.weight" % i] = name
        total += size
    with open(os.path.join(folder, "model.safetensors.index.json"), "w", encoding="utf-8") as handle:
        json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, handle)
    with open(os.path.join(folder, "config.json"), "w", encoding="utf-8") as handle:
        json.dump({"architectures": ["LlamaForCausalLM"], "model_type": "llama"}, handle)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    sub = parser.add_subparsers(dest="command", required=True)
    make = sub.add_parser("make-repo")
    make.add_argument("folder")
    make.add_argument("--shards", type=int, default=4)
    make.add_argument("--shard-mib", type=int, default=24)
    serve = sub.add_parser("serve")
    serve.add_argument("folder")
    serve.add_argument("--repo", default="org/model")
    serve.add_argument("--port", type=int, default=8765)
    serve.add_argument("--per-connection", type=int, default=40 * 10**6, help="bytes per second")
    serve.add_argument("--total", type=int, default=800 * 10**6, help="bytes per second")
    args = parser.parse_args()
    if args.command == "make-repo":
        make_repo(args.folder, args.shards, args.shard_mib)
        return
    hub = Hub(args.folder, args.per_connection, args.total, args.repo, ("127.0.0.1", args.port))
    hub.hash_files()
    hub.serve_forever()


if __name__ == "__main__":
    main()
