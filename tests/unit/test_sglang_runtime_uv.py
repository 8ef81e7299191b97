"""Runtimes built with uv (library/sglang_runtime.py state=builder and state=install, module_utils/sglang_uv.py).

The host's pip configuration, translated for uv (index, links, certificate, constraints; a password never shown);
then for real on this machine, the module run as Ansible runs it: the builder installs the pinned uv from this
machine's package index once and reuses it, a half install is redone, a uv that cannot be installed falls back to
pip with the reason, and two runtimes built from a local folder of tiny wheels share the cache through hard links
(the second costs almost no disk). The prune never touches the builder nor the cache."""

import base64
import hashlib
import json
import os
import subprocess
import sys
import time
import zipfile

import pytest
from ansible.module_utils import sglang_uv

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODULE = os.path.join(REPO, "library", "sglang_runtime.py")
UV = "0.13.8"  # roles/sglang/defaults/main.yml's sglang_uv_version
BIG = 4 * 1024 * 1024  # the stand-in torch's payload: what a second runtime must not copy


# -- the pip configuration, for uv ----------------------------------------------------------------------------

PIP_CONFIG = """global.cert='/etc/ssl/certs/ca-certificates.crt'
global.constraint='/etc/xdg/pip/constraints.txt'
global.extra-index-url='file:///opt/pypi/simple file:///opt/pypi-more/simple'
global.find-links='/opt/wheels'
global.index-url='https://mirror.example.invalid/simple'
install.index-url='https://builder:s3cret@mirror.example.invalid/simple'
:env:.find-links='/opt/wheels /srv/wheels'
:env:.disable-pip-version-check='1'
:env:.require-hashes='1'
"""


def test_pip_configuration_precedence_is_pips_env_over_install_over_global():
    options = sglang_uv.parse_pip_config(PIP_CONFIG)
    assert options["index-url"] == "https://builder:s3cret@mirror.example.invalid/simple"  # install over global
    assert options["find-links"] == "/opt/wheels /srv/wheels"  # PIP_FIND_LINKS over both


def test_uv_gets_the_same_index_links_certificate_and_constraints_and_names_what_it_cannot_take():
    env, flags, not_carried = sglang_uv.uv_settings(sglang_uv.parse_pip_config(PIP_CONFIG))
    assert env["UV_INDEX_URL"] == "https://builder:s3cret@mirror.example.invalid/simple"
    assert env["UV_EXTRA_INDEX_URL"] == "file:///opt/pypi/simple file:///opt/pypi-more/simple"
    assert env["UV_FIND_LINKS"] == "/opt/wheels,/srv/wheels"  # uv's list is comma-separated
    assert env["SSL_CERT_FILE"] == "/etc/ssl/certs/ca-certificates.crt"
    assert env["UV_CONSTRAINT"] == "/etc/xdg/pip/constraints.txt"
    assert env["UV_INDEX_STRATEGY"] == "unsafe-best-match"  # pip's rule across several indexes
    assert flags == [] and not_carried == ["require-hashes"]  # pip-only cosmetics are not named
    assert sglang_uv.uv_settings({"no-index": "true"})[1] == ["--no-index"]
    # a password in an index URL is never shown: it reaches uv through its environment, not its arguments
    shown = sglang_uv.index_summary(env, flags)
    assert "s3cret" not in shown and "UV_INDEX_URL=https://***@mirror.example.invalid/simple" in shown
    assert sglang_uv.index_summary({}, []) == "PyPI (no pip configuration)"


def test_the_uv_environment_drops_the_callers_uv_and_pip_settings_and_adds_the_shared_cache():
    env = sglang_uv.uv_environment("/opt/sglang/runtimes", {"UV_FIND_LINKS": "/w"},
                                   base={"PATH": "/usr/bin", "UV_CACHE_DIR": "/root/.cache/uv", "PIP_NO_INDEX": "1"})
    assert env == {"PATH": "/usr/bin", "UV_FIND_LINKS": "/w", "UV_CACHE_DIR": "/opt/sglang/runtimes/.uv-cache",
                   "UV_LINK_MODE": "hardlink", "UV_PYTHON_DOWNLOADS": "never", "UV_COMPILE_BYTECODE": "0",
                   "UV_NO_PROGRESS": "1"}


def test_a_builder_without_its_marker_or_with_another_uv_is_not_complete(tmp_path):
    builder = tmp_path / ".builder"
    (builder / "bin").mkdir(parents=True)
    (builder / "bin" / "uv").write_text("")
    assert not sglang_uv.builder_complete(str(tmp_path), UV)  # a half install: no marker
    (builder / "complete.json").write_text(json.dumps({"uv": "0.9.0"}))
    assert not sglang_uv.builder_complete(str(tmp_path), UV)
    (builder / "complete.json").write_text(json.dumps({"uv": UV}))
    assert sglang_uv.builder_complete(str(tmp_path), UV)


def test_a_failed_uv_install_leaves_no_half_builder_and_says_why(tmp_path):
    def run(argv, **kwargs):
        os.makedirs(os.path.join(tmp_path, ".builder", "bin"), exist_ok=True)
        failed = "uv==" in " ".join(argv)
        return subprocess.CompletedProcess(argv, 1 if failed else 0, "",
                                           "ERROR: No matching distribution found for uv==0.13.8" if failed else "")
    why = sglang_uv.install_builder(str(tmp_path), UV, sys.executable, run=run)
    assert why == "installing uv==0.13.8 with pip failed: ERROR: No matching distribution found for uv==0.13.8"
    assert not (tmp_path / ".builder").exists()


# -- for real: the module as Ansible runs it ------------------------------------------------------------------

def run(tmp_path, env=None, check_mode=False, **args):
    path = tmp_path / ("args-%d.json" % time.monotonic_ns())
    path.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": dict(args, _ansible_check_mode=check_mode)}))
    proc = subprocess.run([sys.executable, MODULE, str(path)], capture_output=True, text=True, timeout=900,
                          env=dict(os.environ, **(env or {})))
    assert "Traceback" not in proc.stdout + proc.stderr, proc.stdout + proc.stderr
    return json.loads(proc.stdout)


def record(name, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return "%s,sha256=%s,%d" % (name, digest, len(data))


def wheel(folder, name, version, files, requires=()):
    """A pure-Python wheel (a zip with metadata): name-version-py3-none-any.whl in folder."""
    info = "%s-%s.dist-info" % (name, version)
    files = dict(files)
    files[info + "/METADATA"] = ("Metadata-Version: 2.1\nName: %s\nVersion: %s\n%s" % (
        name, version, "".join("Requires-Dist: %s\n" % r for r in requires))).encode()
    files[info + "/WHEEL"] = b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    lines = [record(n, d) for n, d in sorted(files.items())] + ["%s/RECORD,," % info]
    path = os.path.join(folder, "%s-%s-py3-none-any.whl" % (name, version))
    with zipfile.ZipFile(path, "w") as archive:
        for n, d in sorted(files.items()):
            archive.writestr(n, d)
        archive.writestr(info + "/RECORD", "\n".join(lines) + "\n")
    return path


@pytest.fixture(scope="module")
def builder(tmp_path_factory):
    """A runtimes folder whose builder holds uv, installed by the module from this machine's package index."""
    tmp = tmp_path_factory.mktemp("uv")
    runtimes = tmp / "runtimes"
    started = time.monotonic()
    out = run(tmp, state="builder", dir=str(runtimes), uv_version=UV, python=sys.executable)
    if out.get("builder") == "pip":
        probe = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "uv==%s" % UV, "-d",
                                str(tmp / "probe")], capture_output=True, text=True, timeout=600)
        if probe.returncode != 0:
            pytest.skip("this machine's package index does not serve uv==%s: %s" % (UV, out["why"]))
    assert out["builder"] == "uv" and out["changed"], out
    return tmp, runtimes, time.monotonic() - started


def test_the_builder_is_installed_once_then_reused_and_a_half_install_is_redone(builder):
    tmp, runtimes, _first = builder
    assert (runtimes / ".builder" / "bin" / "uv").is_file()
    assert oct((runtimes / ".builder").stat().st_mode & 0o7777) == "0o755"
    assert oct((runtimes / ".uv-cache").stat().st_mode & 0o7777) == "0o755"
    again = run(tmp, state="builder", dir=str(runtimes), uv_version=UV, python=sys.executable)
    assert again["builder"] == "uv" and again["changed"] is False
    inode = (runtimes / ".builder" / "bin" / "uv").stat().st_ino
    (runtimes / ".builder" / "complete.json").unlink()  # as an install cut short before its marker
    redone = run(tmp, state="builder", dir=str(runtimes), uv_version=UV, python=sys.executable)
    assert redone["builder"] == "uv" and redone["changed"] is True
    assert (runtimes / ".builder" / "complete.json").is_file()
    assert (runtimes / ".builder" / "bin" / "uv").stat().st_ino != inode  # installed again from nothing


def test_check_mode_installs_no_builder_and_nothing_into_the_runtime(tmp_path):
    out = run(tmp_path, check_mode=True, state="builder", dir=str(tmp_path / "r"), uv_version=UV,
              python=sys.executable)
    assert out["builder"] == "uv" and out["changed"] and not (tmp_path / "r").exists()
    path = str(tmp_path / "r" / "0.5.23-abcdefabcdef")
    out = run(tmp_path, check_mode=True, state="install", dir=str(tmp_path / "r"), path=path, uv_version=UV,
              steps=[["sglang==0.5.23"]], python=sys.executable)
    assert out == dict(out, changed=True, path=path) and not (tmp_path / "r").exists()


def test_a_uv_that_cannot_be_installed_falls_back_to_pip_with_the_reason(builder, tmp_path):
    # builder: the index answers (else skipped); 0.0.1 is a release uv never published
    out = run(tmp_path, state="builder", dir=str(tmp_path / "r"), uv_version="0.0.1", python=sys.executable)
    assert out["builder"] == "pip" and out["why"].startswith("uv 0.0.1 could not be installed: installing "
                                                             "uv==0.0.1 with pip failed: "), out
    assert not (tmp_path / "r" / ".builder").exists()
    empty = run(tmp_path, state="builder", dir=str(tmp_path / "r"), uv_version="", python=sys.executable)
    assert empty == dict(empty, builder="pip", why="sglang_uv_version is empty", changed=False)
    bad = run(tmp_path, state="builder", dir=str(tmp_path / "r"), uv_version="0.13 --index-url=x",
              python=sys.executable)
    assert bad["failed"] and bad["msg"].startswith("sglang_uv_version is '0.13 --index-url=x': a uv release")


def disk(*folders):
    """Bytes the folders take, a hard-linked file counted once (as du counts it)."""
    seen, total = set(), 0
    for folder in folders:
        for base, dirs, files in os.walk(folder):
            for name in dirs + files:
                st = os.lstat(os.path.join(base, name))
                if (st.st_dev, st.st_ino) not in seen:
                    seen.add((st.st_dev, st.st_ino))
                    total += st.st_blocks * 512
    return total


def build(tmp, runtimes, wheels, kernels, env):
    """One runtime through the module's states as the install phase calls them: plan, builder, install, versions,
    complete; returns the plan."""
    kernel_wheels = [{"src": "/controller/" + os.path.basename(k), "name": "kern", "version": v} for k, v in kernels]
    base = dict(dir=str(runtimes), version="0.5.23", package="/controller/sglang-0.5.23-py3-none-any.whl",
                wheels_dir=str(wheels), kernel_wheels=kernel_wheels, python=sys.executable,
                names=["sglang", "kern"], min_free_gib=0)
    plan = run(tmp, **base)
    assert plan["action"] == "build", plan
    assert run(tmp, state="builder", dir=str(runtimes), uv_version=UV, python=sys.executable)["builder"] == "uv"
    steps = [[os.path.join(str(wheels), "sglang-0.5.23-py3-none-any.whl")]] + [["kern==%s" % v] for _k, v in kernels]
    installed = run(tmp, env=env, state="install", dir=str(runtimes), path=plan["path"], uv_version=UV, steps=steps,
                    python=sys.executable)
    assert installed["changed"] and not installed.get("failed"), installed
    plan["bytecode"] = installed["bytecode"]
    versions = run(tmp, state="versions", dir=str(runtimes), path=plan["path"], names=["sglang", "kern", "tinytorch"])
    assert versions["versions"] == {"sglang": "0.5.23", "kern": kernels[0][1], "tinytorch": "2.14.1"}
    done = run(tmp, state="complete", dir=str(runtimes), path=plan["path"], name=plan["name"], digest=plan["digest"],
               set=plan["set"], versions=versions["versions"], builder="uv %s" % UV)
    assert done["changed"], done
    return plan


def test_two_runtimes_that_share_torch_share_its_files_through_the_cache(builder):
    tmp, runtimes, _first = builder
    wheels = tmp / "wheels"  # the host's copies of the controller's wheels, and a folder the pip config links
    wheels.mkdir(exist_ok=True)
    wheel(str(wheels), "tinytorch", "2.14.1", {"tinytorch/__init__.py": b"VERSION = '2.14.1'\n\n\ndef f():\n    pass\n",
                                               "tinytorch/lib.bin": os.urandom(BIG)})
    wheel(str(wheels), "sglang", "0.5.23", {"sglang/__init__.py": b""}, requires=["tinytorch==2.14.1"])
    k1 = wheel(str(wheels), "kern", "1.0", {"kern/__init__.py": b"V = 1\n"})
    k2 = wheel(str(wheels), "kern", "2.0", {"kern/__init__.py": b"V = 2\n"})
    # the index as pip is configured on the host: no index, this folder of links (uv reads neither by itself)
    env = {"PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(wheels), "PIP_CONFIG_FILE": os.devnull}
    started = time.monotonic()
    one = build(tmp, runtimes, wheels, [(k1, "1.0")], env)
    cold = time.monotonic() - started
    started = time.monotonic()
    two = build(tmp, runtimes, wheels, [(k2, "2.0")], env)
    warm = time.monotonic() - started
    assert one["path"] != two["path"]
    lib = os.path.join("lib", "python%d.%d" % sys.version_info[:2], "site-packages", "tinytorch", "lib.bin")
    first, second = os.stat(os.path.join(one["path"], lib)), os.stat(os.path.join(two["path"], lib))
    assert first.st_ino == second.st_ino and first.st_nlink >= 3  # the cache's file and both runtimes'
    # bytecode: the first build compiled its sources; the second linked the first's for the files they share (the
    # same inodes from uv's cache) and compiled only its own kernel (another file)
    assert one["bytecode"]["linked"] == 0 and one["bytecode"]["compiled"] >= 3, one["bytecode"]
    assert two["bytecode"]["linked"] >= 2 and two["bytecode"]["compiled"] == 1, two["bytecode"]
    site = os.path.join("lib", "python%d.%d" % sys.version_info[:2], "site-packages")
    pyc = "__pycache__/__init__.%s.pyc" % sys.implementation.cache_tag
    assert os.stat(os.path.join(one["path"], site, "tinytorch", pyc)).st_ino == \
        os.stat(os.path.join(two["path"], site, "tinytorch", pyc)).st_ino
    assert os.stat(os.path.join(one["path"], site, "kern", pyc)).st_ino != \
        os.stat(os.path.join(two["path"], site, "kern", pyc)).st_ino
    # the shared .pyc loads in the second runtime under the second runtime's path (tracebacks name the right file),
    # without compiling again (-B: nothing would be written; the cached file is the one used)
    probe = subprocess.run([os.path.join(two["path"], "bin", "python"), "-B", "-c",
                            "import tinytorch; print(tinytorch.f.__code__.co_filename); print(tinytorch.__cached__)"],
                           capture_output=True, text=True, timeout=60, check=True).stdout.split()
    assert probe[0].startswith(two["path"] + os.sep) and probe[1].startswith(two["path"] + os.sep), probe
    alone, both = disk(one["path"]), disk(one["path"], two["path"])
    assert alone > BIG and both < 1.5 * alone, (alone, both)
    # the manifest records the builder, and a re-run finds the runtime complete and says which built it
    base = dict(dir=str(runtimes), version="0.5.23", package="/controller/sglang-0.5.23-py3-none-any.whl",
                wheels_dir=str(wheels), kernel_wheels=[{"src": "/controller/kern-1.0-py3-none-any.whl", "name": "kern",
                                                        "version": "1.0"}],
                python=sys.executable, names=["sglang", "kern"], min_free_gib=0)
    again = run(tmp, **base)
    assert again["action"] == "use" and again["builder"] == "uv %s" % UV
    print("uv builds here: first %.1f s, second %.1f s; one runtime %d KiB, both %d KiB"
          % (cold, warm, alone // 1024, both // 1024))
    # a complete runtime is never installed into again
    refused = run(tmp, env=env, state="install", dir=str(runtimes), path=one["path"], uv_version=UV,
                  steps=[["kern==2.0"]], python=sys.executable)
    assert refused["failed"] and "is complete: a runtime is never modified once complete" in refused["msg"]
    # the prune removes a runtime nothing names, never the builder nor the cache every runtime shares
    pruned = run(tmp, state="prune", dir=str(runtimes), keep=[one["path"]])
    assert pruned["removed"] == [two["path"]], pruned
    assert (runtimes / ".builder" / "bin" / "uv").is_file() and (runtimes / ".uv-cache").is_dir()
    assert os.path.isfile(os.path.join(one["path"], lib))


def test_an_install_step_that_fails_names_it_and_hides_a_password(builder):
    tmp, runtimes, _first = builder
    path = str(runtimes / "0.5.23-abcdefabcdef")
    env = {"PIP_INDEX_URL": "http://builder:s3cret@127.0.0.1:9/simple", "PIP_CONFIG_FILE": os.devnull,
           "PIP_DEFAULT_TIMEOUT": "5"}
    out = run(tmp, env=env, state="install", dir=str(runtimes), path=path, uv_version=UV,
              steps=[["surely-not-a-package-zz==1"]], python=sys.executable)
    assert out["failed"] and out["msg"].startswith("uv, installing surely-not-a-package-zz==1 (rc "), out
    assert "s3cret" not in json.dumps(out)
    outside = run(tmp, state="install", dir=str(runtimes), path=str(tmp / "elsewhere-abcdefabcdef"), uv_version=UV,
                  steps=[["x"]], python=sys.executable)
    assert outside["failed"] and "a runtime folder directly in" in outside["msg"]
    option = run(tmp, state="install", dir=str(runtimes), path=path, uv_version=UV,
                 steps=[["--index-url=http://elsewhere.invalid/simple"]], python=sys.executable)
    assert option["failed"] and "uv would read it as an option, not a requirement" in option["msg"]
