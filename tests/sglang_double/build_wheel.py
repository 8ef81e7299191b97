"""Package a pure-Python folder as a wheel without a build backend (none can be fetched offline).

Default: the SGLang TEST DOUBLE as a wheel named `sglang`, so a venv can `pip install` it offline and a
systemd unit can run `python -m sglang.launch_server` unchanged. A wheel is a zip with metadata. The double's
wheel carries the real releases' flag tables (lib/sglang_kvplan/releases/flags-*.json) and their rules
(rules.json) as sglang/_double_flags/, from which it builds its argument parser and its per-release rules.
Usage: python build_wheel.py OUTDIR [PACKAGE_DIR DIST_NAME VERSION SUMMARY]  -> prints the wheel's path.
"""

import base64
import hashlib
import os
import sys
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
TAG = "py3-none-any"


def _record_line(name, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return "%s,sha256=%s,%d" % (name, digest, len(data))


RELEASES = os.path.join(HERE, os.pardir, os.pardir, "lib", "sglang_kvplan", "releases")


def build(outdir, package_dir, dist_name, version, summary, extra=None):
    """extra: {path inside the wheel: source file} added next to the package's .py files."""
    package = os.path.basename(package_dir.rstrip("/"))
    files = {}
    for name in sorted(os.listdir(package_dir)):
        if name.endswith(".py"):
            with open(os.path.join(package_dir, name), "rb") as handle:
                files["%s/%s" % (package, name)] = handle.read()
    for name, source in sorted((extra or {}).items()):
        with open(source, "rb") as handle:
            files[name] = handle.read()
    info = "%s-%s.dist-info" % (dist_name.replace("-", "_"), version)
    files[info + "/METADATA"] = ("Metadata-Version: 2.1\nName: %s\nVersion: %s\nSummary: %s\n"
                                 % (dist_name, version, summary)).encode()
    files[info + "/WHEEL"] = ("Wheel-Version: 1.0\nGenerator: sglang-longctx build_wheel.py\n"
                              "Root-Is-Purelib: true\nTag: %s\n" % TAG).encode()
    files[info + "/RECORD"] = ("\n".join([_record_line(n, d) for n, d in files.items()] + [info + "/RECORD,,"])
                               + "\n").encode()
    os.makedirs(outdir, exist_ok=True)
    path = os.path.join(outdir, "%s-%s-%s.whl" % (dist_name.replace("-", "_"), version, TAG))
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in files.items():
            archive.writestr(zipfile.ZipInfo(name, date_time=(2026, 1, 1, 0, 0, 0)), data)
    return path


if __name__ == "__main__":
    if len(sys.argv) == 2:
        sys.path.insert(0, HERE)
        from sglang import __version__

        tables = {"sglang/_double_flags/" + name: os.path.join(RELEASES, name)
                  for name in os.listdir(RELEASES) if name == "rules.json"
                  or (name.startswith("flags-") and name.endswith(".json"))}
        print(build(sys.argv[1], os.path.join(HERE, "sglang"), "sglang", __version__,
                    "TEST DOUBLE of SGLang for molecule and the demo; not SGLang", tables))
    else:
        print(build(*sys.argv[1:6]))
