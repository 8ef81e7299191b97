"""Probe 6's D7 and D8 against library/hf_download.py, with the probe's own inputs, on the Hub stand-in of
test_hf_download.py (127.0.0.1): a file the listing gives no size and hash for is fetched only when allowed by name;
an answer shorter than its Content-Length or its listed size is never complete; the module's own names are refused
in a listing; a redirect goes only to https (http from an http endpoint); a full disk names the file, what its .part
keeps and how to resume."""

import errno
import hashlib
import json
import os
import subprocess
import threading

import pytest
from ansible.module_utils import (
    sglang_download_call,
    sglang_download_fetch,
    sglang_download_listing,
    sglang_download_records,
)
from ansible.module_utils.sglang_http import redirect_schemes
from test_hf_download import Hub, HubHandler, checkpoint, download, hub_entry, module_args, one_try

WEIGHTS = "model.safetensors"


class CuttingHandler(HubHandler):
    """The stand-in, but a file named in server.cut is sent only that far and the connection closed (a link cut
    mid-file); with server.no_length its answer has no Content-Length (HTTP/1.1 then ends the body by closing)."""

    def do_GET(self, head=False):
        name = self.path.rsplit("/", 1)[-1]
        if "/resolve/" not in self.path or name not in self.server.cut:
            return super().do_GET(head)
        data = self.server.files[name]
        self.server.requests.append((self.command, self.path, self.headers.get("Range"), None))
        self.send_response(200)
        if not self.server.no_length:
            self.send_header("Content-Length", str(len(data)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(data[:self.server.cut[name]])
        self.wfile.flush()
        self.close_connection = True
        return None


def cutting_hub(files, cut, no_length=False, **kwargs):
    server = Hub(files, **kwargs)
    server.RequestHandlerClass = CuttingHandler
    server.cut, server.no_length = cut, no_length
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def file_gets(server):
    return [r for r in server.requests if "/resolve/" in r[1]]


# --- D8: what the listing does not prove is not fetched unless allowed by name ---------------------------------

@pytest.mark.parametrize("entry", [
    {"rfilename": WEIGHTS},  # no size, no hash
    {"rfilename": WEIGHTS, "size": 4096},  # the size alone: the same size, other bytes would pass
    {"rfilename": WEIGHTS, "lfs": {"sha256": "ab" * 32}},  # a hash without a size
    {"rfilename": WEIGHTS, "size": 4096, "lfs": {"sha256": "not-a-digest"}},
])
def test_probe6_d8_a_file_without_a_listed_size_and_hash_is_refused_by_name_before_any_fetch(tmp_path, entry):
    files = {WEIGHTS: os.urandom(4096)}
    server = Hub(files, siblings=[entry])
    threading.Thread(target=server.serve_forever, daemon=True).start()
    rc, out, target = download(server, tmp_path)
    assert rc != 0 and WEIGHTS in out["msg"], out
    assert "sglang_download_allow_unverified" in out["msg"] and "nothing was downloaded" in out["msg"], out
    assert file_gets(server) == [] and os.listdir(target) == []


def test_probe6_d8_the_early_download_refuses_an_unverified_file_by_name_too(tmp_path):
    files = {"config.json": b"{}", WEIGHTS: os.urandom(4096)}
    siblings = [hub_entry("config.json", b"{}"), {"rfilename": WEIGHTS, "size": 4096}]
    server = serve_listing(files, siblings)
    rc, out, target = download(server, tmp_path, background=True)
    assert rc != 0 and WEIGHTS in out["msg"] and "sglang_download_allow_unverified" in out["msg"], out
    assert file_gets(server) == [] and sorted(os.listdir(target)) == []


def test_probe6_d8_the_body_cut_without_content_length_and_no_listed_size_is_refused_unless_allowed(tmp_path):
    # The probe: a listing without size, a body cut mid-file without Content-Length -> rc 0, a truncated file.
    files = {WEIGHTS: os.urandom(2**20)}
    rc, out, target = download(cutting_hub(files, {WEIGHTS: 300_000}, no_length=True,
                                           siblings=[{"rfilename": WEIGHTS}]), tmp_path)
    assert rc != 0 and WEIGHTS in out["msg"] and not (target / WEIGHTS).exists(), out
    # Allowed by name, it is fetched as served: nothing says how long it is (what the allowance accepts).
    rc, out, target = download(cutting_hub(files, {WEIGHTS: 300_000}, no_length=True,
                                           siblings=[{"rfilename": WEIGHTS}]), tmp_path, allow_unverified=[WEIGHTS])
    assert rc == 0 and out["fetched"] == [WEIGHTS], out


def test_probe6_d8_allowed_by_pattern_and_refused_when_the_pattern_does_not_match(tmp_path):
    files = {WEIGHTS: os.urandom(4096), "config.json": b"{}"}
    siblings = [{"rfilename": WEIGHTS, "size": 4096}, {"rfilename": "config.json", "size": 2}]
    rc, out, _ = download(serve_listing(files, siblings), tmp_path, allow_unverified=["*.safetensors"])
    assert rc != 0 and "config.json" in out["msg"] and WEIGHTS not in out["msg"].split(" for ")[1], out
    rc, out, target = download(serve_listing(files, siblings), tmp_path, allow_unverified=["*.safetensors",
                                                                                           "config.json"])
    assert rc == 0 and (target / WEIGHTS).read_bytes() == files[WEIGHTS], out


def serve_listing(files, siblings):
    server = Hub(files, siblings=siblings)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


@pytest.mark.parametrize("names", [[""], ["  "], ["a\x00b"]])
def test_probe6_d8_an_allowance_that_is_not_a_name_is_refused(tmp_path, names):
    rc, out = one_try(dict(module_args("org/model", "main", tmp_path, tmp_path / "t", "http://127.0.0.1:9"),
                           allow_unverified=names), tmp_path)
    assert rc != 0 and "allow_unverified (sglang_download_allow_unverified) holds" in out["msg"], out


def test_probe6_d8_an_allowed_file_cut_short_of_its_content_length_is_kept_as_part_and_resumed(tmp_path):
    files = {WEIGHTS: os.urandom(2**20)}
    rc, out, target = download(cutting_hub(files, {WEIGHTS: 300_000}, siblings=[{"rfilename": WEIGHTS}]),
                               tmp_path, allow_unverified=[WEIGHTS])
    assert rc != 0 and "broke off after 300000 of the 1048576 bytes" in out["msg"], out
    assert "run again to resume" in out["msg"] and not (target / WEIGHTS).exists()
    assert (target / (WEIGHTS + ".part")).stat().st_size == 300_000
    rc, out, target = download(serve_listing(files, [{"rfilename": WEIGHTS}]), tmp_path,
                               allow_unverified=[WEIGHTS])
    assert rc == 0 and out["resumed"] == {WEIGHTS: 300_000} and (target / WEIGHTS).read_bytes() == files[WEIGHTS]


def test_probe6_d8_a_listed_file_cut_short_of_its_content_length_is_never_complete(tmp_path):
    files = {WEIGHTS: os.urandom(2**20)}
    siblings = [hub_entry(WEIGHTS, files[WEIGHTS])]
    rc, out, target = download(cutting_hub(files, {WEIGHTS: 500_000}, siblings=siblings), tmp_path)
    assert rc != 0 and "broke off after 500000 of the 1048576 bytes" in out["msg"], out
    assert not (target / WEIGHTS).exists() and (target / (WEIGHTS + ".part")).stat().st_size == 500_000
    rc, out, target = download(serve_listing(files, siblings), tmp_path)
    assert rc == 0 and (target / WEIGHTS).read_bytes() == files[WEIGHTS], out


def test_probe6_d8_a_listed_file_cut_without_content_length_is_refused_with_both_sizes(tmp_path):
    files = {WEIGHTS: os.urandom(2**20)}
    rc, out, target = download(cutting_hub(files, {WEIGHTS: 500_000}, no_length=True,
                                           siblings=[hub_entry(WEIGHTS, files[WEIGHTS])]), tmp_path)
    assert rc != 0 and "500000 bytes" in out["msg"] and "says 1048576" in out["msg"], out
    assert not (target / WEIGHTS).exists()


def test_probe6_d8_same_size_other_bytes_of_a_plain_file_are_caught_by_its_git_blob_id(tmp_path):
    good = b'{"model_type": "llama"}'
    bad = b'{"model_type": "LLAMA"}'
    rc, out, target = download(serve(files={"config.json": good}, served={"config.json": bad}), tmp_path)
    assert rc != 0 and "config.json" in out["msg"] and "git blob id" in out["msg"], out
    assert not (target / "config.json").exists() and not (target / "config.json.part").exists()
    expected = hashlib.sha1(b"blob %d\x00" % len(good) + good).hexdigest()  # git's id, as listed
    assert expected in out["msg"]
    rc, out, target = download(serve(files={"config.json": good}), tmp_path)
    assert rc == 0 and (target / "config.json").read_bytes() == good, out


def serve(**kwargs):
    server = Hub(**kwargs)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


@pytest.mark.parametrize("name", [".sglang-verified.json", ".sglang-download-complete", ".sglang-download.json",
                                  ".sglang-verified.json.tmp", "model.safetensors.part", "sub/x.part", ".sglang-x",
                                  ".sglang-verified.json/x", "x.part/y"])
def test_probe6_d8_a_listed_name_the_module_keeps_for_itself_is_refused_by_name(tmp_path, name):
    files = {"config.json": b"{}", name: b"{}"}
    rc, out, target = download(serve(files=files), tmp_path)
    assert rc != 0 and repr(name) in out["msg"] and "keeps for its own files" in out["msg"], out
    assert os.listdir(target) == []


def test_probe6_d8_x_beside_x_part_is_refused(tmp_path):
    files = {"x": b"abc", "x.part": b"abc"}
    rc, out, target = download(serve(files=files), tmp_path)
    assert rc != 0 and "'x.part'" in out["msg"] and os.listdir(target) == [], out


def test_probe6_d8_a_name_listed_twice_is_refused(tmp_path):
    data = b"abc"
    rc, out, _ = download(serve(files={"x": data}, siblings=[hub_entry("x", data), hub_entry("x", data)]), tmp_path)
    assert rc != 0 and "lists 'x' twice" in out["msg"], out


@pytest.mark.parametrize("location", ["ftp://127.0.0.1/org/model/x", "file:///etc/passwd",
                                      "data:text/plain;base64,eA=="])
def test_probe6_d8_a_redirect_to_another_scheme_is_refused_naming_it(tmp_path, location):
    data = b"x" * 1000
    rc, out, target = download(serve(files={"w.bin": data}, redirect=location), tmp_path)
    assert rc != 0 and "w.bin" in out["msg"] and "refused, only http or https is followed" in out["msg"], out
    assert location.split(":")[0] + ":" in out["msg"] and "run again" not in out["msg"], out
    assert not (target / "w.bin").exists() and not (target / "w.bin.part").exists()


def test_probe6_d8_redirects_go_to_https_only_and_to_http_only_from_an_http_endpoint():
    assert redirect_schemes("https://huggingface.co/api/x") == ("https",)
    assert redirect_schemes("HTTPS://mirror/x") == ("https",)
    assert redirect_schemes("http://10.0.0.5:8080/x") == ("http", "https")


def test_probe6_d8_an_https_endpoint_is_not_sent_down_to_http(monkeypatch):
    # open_following itself: the first answer (stood in) redirects an https request to http; nothing is opened there.
    import urllib.error
    from email.message import Message

    from ansible.module_utils import sglang_http

    opened = []

    def fake_open_bearer(url, token=None, headers=None, **kwargs):
        opened.append((url, token))
        headers = Message()
        headers["Location"] = "http://storage.example/x"
        raise urllib.error.HTTPError(url, 302, "Found", headers, None)

    monkeypatch.setattr(sglang_http, "open_bearer", fake_open_bearer)
    with pytest.raises(sglang_http.RedirectRefused, match="only https is followed"):
        sglang_http.open_following("https://hub.example/x", "tok")
    assert opened == [("https://hub.example/x", "tok")]


# --- D7: a full disk names the file, what its .part keeps, and how to resume -------------------------------------

def full_disk_check(out, target, size):
    assert out.get("failed") and "defect" not in out["msg"], out
    msg = out["msg"]
    assert msg.startswith("Downloading %s from org/model stopped: " % WEIGHTS), msg
    assert "No space left on device" in msg and str(target / (WEIGHTS + ".part")) in msg, msg
    kept = (target / (WEIGHTS + ".part")).stat().st_size
    assert 0 < kept < size and "keeps " in msg and "the next run resumes there" in msg, msg
    assert "run again to resume" in msg and "Free space" in msg, msg
    assert not (target / ".sglang-verified.json.tmp").exists() and not (target / ".sglang-download.json.tmp").exists()
    return kept


@pytest.fixture
def small_disk(tmp_path):
    """A 256 KiB tmpfs (as the probe's), or a skip where this user may not mount one."""
    mount = tmp_path / "disk"
    mount.mkdir()
    made = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(mount)], capture_output=True,
                          check=False)
    if made.returncode != 0:
        pytest.skip("no tmpfs here (%s): the monkeypatched write below stands in" % made.stderr.decode()[:100])
    yield mount
    subprocess.run(["umount", "-l", str(mount)], check=False)


def test_probe6_d7_a_full_tmpfs_names_the_file_the_part_it_keeps_and_the_resume(tmp_path, small_disk):
    files = {WEIGHTS: os.urandom(2**20), "config.json": b"{}"}
    target = small_disk / "model"
    target.mkdir()
    server = serve(files=files)
    args = module_args("org/model", "main", target, tmp_path / "no-token", "http://127.0.0.1:%d" % server.server_port)
    args["connections"] = 1  # config.json first, then the weights fill the disk (side by side, either may meet it)
    try:
        rc, out = one_try(args, tmp_path)
        assert rc != 0
        kept = full_disk_check(out, target, 2**20)
        # a run while the disk is still full says the same, and loses nothing
        rc, out = one_try(args, tmp_path)
        assert rc != 0 and full_disk_check(out, target, 2**20) >= kept
        kept = (target / (WEIGHTS + ".part")).stat().st_size
        # room again (the disk grows, as freeing space does): the next run resumes at what was kept
        subprocess.run(["mount", "-o", "remount,size=4m", str(small_disk)], check=True)
        rc, out = one_try(args, tmp_path)
    finally:
        server.shutdown()
    assert rc == 0 and out["resumed"] == {WEIGHTS: kept}, out
    assert (target / WEIGHTS).read_bytes() == files[WEIGHTS]


class FillingFile:
    """A file whose writes fail with `code` (ENOSPC, EDQUOT) once `room` bytes are in it, as a full disk's do."""

    def __init__(self, handle, room, code):
        self.handle, self.room, self.code = handle, room, code

    def write(self, data):
        if self.handle.tell() + len(data) > self.room:
            self.handle.write(data[:max(0, self.room - self.handle.tell())])
            raise OSError(self.code, os.strerror(self.code))
        return self.handle.write(data)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.handle.close()


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EDQUOT])
def test_probe6_d7_a_write_that_finds_the_disk_full_is_a_sentence_not_a_defect(tmp_path, monkeypatch, code):
    files = {WEIGHTS: os.urandom(2**20)}
    server = serve(files=files)
    target = tmp_path / "model"
    target.mkdir()
    real_open = open

    def full_open(path, mode="r", *args, **kwargs):
        handle = real_open(path, mode, *args, **kwargs)
        if str(path).endswith(".part"):
            return FillingFile(handle, 200_000, code)
        if str(path).endswith(".tmp"):  # the records beside the files cannot be written either
            handle.close()
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
        return handle

    # the .part files are written by the fetcher, the records beside them (.tmp, then renamed) by the records' code
    monkeypatch.setattr(sglang_download_fetch, "open", full_open, raising=False)
    monkeypatch.setattr(sglang_download_records, "open", full_open, raising=False)
    p = {"repo": "org/model", "revision": "main", "path": str(target), "timeout": 30, "connections": 4,
         "max_bytes_per_s": 0, "allow_unverified": [], "endpoint": "http://127.0.0.1:%d" % server.server_port}
    try:
        found = sglang_download_call.survey(p, p["endpoint"], None)
        with pytest.raises(sglang_download_call.Failed) as failed:
            sglang_download_call.download(p, p["endpoint"], None, found, found[3], None, lambda _text: None)
    finally:
        server.shutdown()
    msg = str(failed.value)
    assert msg.startswith("Downloading %s from org/model stopped: %s while writing %s"
                          % (WEIGHTS, os.strerror(code), target / (WEIGHTS + ".part"))), msg
    assert "keeps " in msg and "run again to resume" in msg and "defect" not in msg
    assert (target / (WEIGHTS + ".part")).exists() and not (target / WEIGHTS).exists()


def test_probe6_d8_the_listing_in_test_hf_download_gives_every_file_a_size_and_a_proof():
    # the stand-in lists as the Hub does (test_hf_download.hub_entry), so the other tests fetch without allowance
    for name, data in checkpoint([4096]).items():
        entry = hub_entry(name, data)
        assert entry["size"] == len(data) and sglang_download_listing.listed_proof(entry, len(data)) is not None
    assert json.dumps(hub_entry("config.json", b"{}")).count("blobId") == 1


# --- the role's knob reaches the module, typed, through download.yml ------------------------------------------

def test_probe6_d8_the_role_knob_reaches_the_module_through_download_yml(tmp_path):
    import yaml
    from test_hf_download import REPO_ROOT, run_download_yml

    defaults = yaml.safe_load((REPO_ROOT / "roles/sglang/defaults/main.yml").read_text())
    assert defaults["sglang_download_allow_unverified"] == []
    for name in ("download.yml", "download_early.yml"):
        text = (REPO_ROOT / "roles/sglang/tasks" / name).read_text()
        assert 'allow_unverified: "{{ sglang_download_allow_unverified }}"' in text, name
    files = checkpoint([4096])  # valid safetensors: the role's completeness check reads the shard's header
    shard = "model-00001-of-00001.safetensors"
    siblings = [hub_entry(name, data) if name != shard else {"rfilename": shard, "size": len(data)}  # no hash
                for name, data in files.items()]
    server = serve_listing(files, siblings)
    url = "http://127.0.0.1:%d" % server.server_port
    try:
        refused = run_download_yml(tmp_path, url, tmp_path / "refused")
        allowed = run_download_yml(tmp_path, url, tmp_path / "allowed",
                                   sglang_download_allow_unverified=["*.safetensors"])
    finally:
        server.shutdown()
    assert refused.returncode != 0 and "sglang_download_allow_unverified" in refused.stdout, refused.stdout
    assert "gives no size and sha256 (or git blob id) for %s" % shard in refused.stdout, refused.stdout
    assert not (tmp_path / "refused" / shard).exists()
    assert allowed.returncode == 0, allowed.stdout + allowed.stderr
    assert (tmp_path / "allowed" / shard).read_bytes() == files[shard]


@pytest.mark.parametrize("code, passes", [(errno.ENOSPC, True), (errno.EDQUOT, True), (errno.EACCES, False)])
def test_probe6_d7_the_ledger_on_a_full_disk_is_left_as_it_was_and_other_errors_still_fail(tmp_path, monkeypatch,
                                                                                          code, passes):
    # The ledger is the download's tally: a full disk must not turn a resumable stop into "a defect" (the early
    # download's end, a settled ledger); any other failure to write it is still an error.
    def failing(folder, name, data):
        raise OSError(code, os.strerror(code), os.path.join(folder, name))

    monkeypatch.setattr(sglang_download_records, "write_mapping", failing)
    if passes:
        sglang_download_records.write_ledger(str(tmp_path), {"state": "running"})
    else:
        with pytest.raises(PermissionError):
            sglang_download_records.write_ledger(str(tmp_path), {"state": "running"})
