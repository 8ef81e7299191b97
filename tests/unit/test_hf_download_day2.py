"""hf_download on day 2 (issue 27, probe day 2 #18, N17, #13): a file already there at its listed size but with
other bytes is not taken for the file, a listing's commit that is not a commit is refused, a token_file that is a
folder is a sentence. The module runs as Ansible runs it, against a local Hub double."""

import hashlib
import json
import os

from test_hf_download import download, module_args, one_try, serve


def listed(data):
    return [{"rfilename": "w.bin", "size": len(data), "lfs": {"sha256": hashlib.sha256(data).hexdigest(),
                                                             "size": len(data)}}]


def test_a_same_size_file_with_other_bytes_is_downloaded_again(tmp_path):
    good = os.urandom(2**16)
    target = tmp_path / "model"
    target.mkdir()
    (target / "w.bin").write_bytes(bytes(reversed(good)))  # the listed size, other bytes
    rc, out, _ = download(serve(files={"w.bin": good}, siblings=listed(good)), tmp_path)
    assert rc == 0 and (target / "w.bin").read_bytes() == good, out
    assert out["fetched"] == ["w.bin"] and "not the listed sha256" in json.dumps(out.get("warnings"))
    recorded = json.loads((target / ".sglang-verified.json").read_text())
    assert recorded["w.bin"][2] == hashlib.sha256(good).hexdigest()
    rc, again, _ = download(serve(files={"w.bin": good}, siblings=listed(good)), tmp_path)
    assert rc == 0 and not again["changed"] and again["fetched"] == []


def test_a_whole_file_already_there_is_checked_once_and_kept(tmp_path):
    good = os.urandom(2**16)
    target = tmp_path / "model"
    target.mkdir()
    (target / "w.bin").write_bytes(good)
    rc, out, _ = download(serve(files={"w.bin": good}, siblings=listed(good)), tmp_path)
    assert rc == 0 and out["fetched"] == [] and (target / ".sglang-verified.json").exists(), out


def test_a_listing_commit_that_is_not_a_commit_is_refused(tmp_path):
    rc, out, target = download(serve(files={"config.json": b"{}"}, commit="../../../x"), tmp_path)
    assert rc != 0 and "not 40 hex digits" in out["msg"] and os.listdir(target) == [], out


def test_a_token_file_that_is_a_folder_is_a_sentence(tmp_path):
    (tmp_path / "tokdir").mkdir()
    server = serve(files={"config.json": b"{}"})
    try:
        args = module_args("org/model", "main", tmp_path / "model", tmp_path / "tokdir",
                           "http://127.0.0.1:%d" % server.server_port)
        rc, out = one_try(args, tmp_path)
    finally:
        server.shutdown()
    assert rc != 0 and "is not a file" in out["msg"] and "sglang_hf_token_file" in out["msg"], out
    assert "defect" not in out["msg"]
