"""Package the SGLang TEST DOUBLE as a wheel named `sglang`, so a venv can `pip install` it offline
and a systemd unit can run `python -m sglang.launch_server` unchanged. A wheel is a zip with
metadata; writing it directly needs no build backend (none can be fetched offline).
Usage: python build_wheel.py OUTDIR  -> prints the wheel's path."""

import base64
import hashlib
import os
import sys
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from sglang import __version__  # noqa: E402

TAG = "py3-none-any"


def _record_line(name, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return "%s,sha256=%s,%d" % (name, digest, len(data))


def build(outdir):
    dist = "sglang-%s" % __version__
    path = os.path.join(outdir, "sglang-%s-%s.whl" % (__version__, TAG))
    files = {}
    for name in sorted(os.listdir(os.path.join(HERE, "sglang"))):
        if name.endswith(".py"):
            with open(os.path.join(HERE, "sglang", name), "rb") as handle:
                files["sglang/" + name] = handle.read()
    info = "%s.dist-info" % dist
    files[info + "/METADATA"] = ("Metadata-Version: 2.1\nName: sglang\nVersion: %s\n"
                                 "Summary: TEST DOUBLE of SGLang for molecule and the demo; not SGLang\n"
                                 % __version__).encode()
    files[info + "/WHEEL"] = ("Wheel-Version: 1.0\nGenerator: sglang-longctx build_wheel.py\n"
                              "Root-Is-Purelib: true\nTag: %s\n" % TAG).encode()
    record = [_record_line(name, data) for name, data in files.items()] + [info + "/RECORD,,"]
    files[info + "/RECORD"] = ("\n".join(record) + "\n").encode()
    os.makedirs(outdir, exist_ok=True)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in files.items():
            archive.writestr(zipfile.ZipInfo(name, date_time=(2026, 1, 1, 0, 0, 0)), data)
    return path


if __name__ == "__main__":
    print(build(sys.argv[1]))
