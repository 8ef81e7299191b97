"""The runtimes' builder: uv in a virtualenv of its own under the runtimes folder, and the package cache every runtime
of the host shares (library/sglang_runtime.py, state=builder and state=install).

Why uv: from a local folder of SGLang 0.5.23's 207 wheels, pip takes 534 s, uv 63 s with an empty cache and 3.4 s warm,
and two runtimes hard-linked from uv's cache take 9.5 GB where pip's take 22 GB (issue 33). The cache is
<runtimes dir>/.uv-cache, on the runtimes' own file system, since a hard link cannot cross file systems; the builder
is <runtimes dir>/.builder. Neither name is a runtime's (<version>-<digest12>), so the prune never removes them.

uv does not read pip's configuration, and the host's package index is declared there (pip.conf, PIP_* variables): the
builder asks its own pip for that configuration (`pip config list`) and gives uv the same index, links, certificate,
trusted hosts, constraints, timeout and proxy as environment variables (never as arguments: an index URL may hold a
password, and a process's arguments are readable by every user). What uv has no equivalent for is named, not dropped
silently."""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import subprocess

BUILDER = ".builder"
CACHE = ".uv-cache"
# Written last, once `uv --version` answered the pinned version: a builder without it is a half install, redone.
BUILDER_MARKER = "complete.json"
# Installing uv (a 20 MB wheel) from a reachable index takes seconds; an index that does not answer must not hold the
# run: past this, the build falls back to pip and says why.
INSTALL_TIMEOUT = 300
# pip's order of precedence for `pip install` (pip/_internal/cli/parser.py, ConfigOptionParser: global, then the
# command's section, then PIP_* variables): a later scope wins.
SCOPES = ("global", "install", ":env:")
TRUE = {"1", "true", "yes", "on"}
# pip settings that change what pip prints or where pip keeps its own things, not what a runtime holds: not for uv.
PIP_ONLY = {"disable-pip-version-check", "no-input", "progress-bar", "quiet", "verbose", "no-color", "no-cache-dir",
            "cache-dir", "retries", "root-user-action", "break-system-packages", "log", "exists-action",
            "require-virtualenv", "no-python-version-warning", "use-feature", "use-deprecated", "python"}
CREDENTIALS = re.compile(r"(://)[^/@\s:]+(:[^/@\s]*)?@")


def redact(text):
    """A text with the user and password of every URL in it replaced (an index URL may hold them)."""
    return CREDENTIALS.sub(r"\1***@", text or "")


def parse_pip_config(text):
    """{key: value} that `pip install` uses, from `pip config list`'s lines (`<scope>.<key>='<value>'`)."""
    scoped = {scope: {} for scope in SCOPES}
    for line in (text or "").splitlines():
        name, sep, value = line.partition("=")
        scope, dot, key = name.rpartition(".")
        if not sep or not dot or scope not in scoped:
            continue
        try:
            value = ast.literal_eval(value.strip())
        except (ValueError, SyntaxError):
            value = value.strip().strip("'\"")
        scoped[scope][key.strip()] = str(value)
    merged = {}
    for scope in SCOPES:
        merged.update(scoped[scope])
    return merged


def _words(value):
    return value.split()


def uv_settings(pip_options):
    """(environment, flags, not_carried) that give uv the package index pip's configuration names. Flags hold no
    secret (only --no-index); not_carried lists the pip settings uv gets no equivalent of."""
    env, flags, not_carried = {}, [], []
    for key, value in sorted(pip_options.items()):
        if key == "index-url":
            env["UV_INDEX_URL"] = value.strip()
        elif key == "extra-index-url":
            env["UV_EXTRA_INDEX_URL"] = " ".join(_words(value))
        elif key == "find-links":
            env["UV_FIND_LINKS"] = ",".join(_words(value))  # uv's list is comma-separated, pip's space-separated
        elif key == "no-index":
            if value.strip().lower() in TRUE:
                flags.append("--no-index")
        elif key == "cert":
            env["SSL_CERT_FILE"] = value.strip()
        elif key == "client-cert":
            env["SSL_CLIENT_CERT"] = value.strip()
        elif key == "trusted-host":
            env["UV_INSECURE_HOST"] = " ".join(_words(value))
        elif key in ("constraint", "constraints"):
            env["UV_CONSTRAINT"] = " ".join(_words(value))
        elif key in ("timeout", "default-timeout"):
            env["UV_HTTP_TIMEOUT"] = value.strip()
        elif key == "proxy":
            env["HTTP_PROXY"] = env["HTTPS_PROXY"] = value.strip()
        elif key not in PIP_ONLY:
            not_carried.append(key)
    # pip takes the best version across every index it is given; uv's default stops at the first index that has the
    # package. The same runtime from the same configuration needs pip's rule (with pip's exposure to a name
    # published on a second index, which the operator's configuration already accepts for pip).
    env["UV_INDEX_STRATEGY"] = "unsafe-best-match"
    return env, flags, not_carried


def index_summary(env, flags):
    """What uv was told about the package index, as a person reads it (passwords replaced)."""
    shown = {k: redact(v) for k, v in sorted(env.items()) if k != "UV_INDEX_STRATEGY"}
    return " ".join(flags + ["%s=%s" % item for item in shown.items()]) or "PyPI (no pip configuration)"


def paths(runtimes_dir):
    return os.path.join(runtimes_dir, BUILDER), os.path.join(runtimes_dir, CACHE)


def builder_complete(runtimes_dir, version):
    """Whether the builder holds uv `version`, complete (its marker names that version and uv is there)."""
    builder, _cache = paths(runtimes_dir)
    try:
        with open(os.path.join(builder, BUILDER_MARKER), encoding="utf-8") as handle:
            marker = json.load(handle)
    except (OSError, ValueError):
        return False
    uv = os.path.join(builder, "bin", "uv")
    return isinstance(marker, dict) and marker.get("uv") == version and os.path.isfile(uv)


def _tail(proc):
    """The last line a failed command printed (pip says why last), or its exit status."""
    lines = (proc.stderr or proc.stdout or "").strip().splitlines()
    return redact(lines[-1]) if lines else "rc %d" % proc.returncode


def install_builder(runtimes_dir, version, python, run=subprocess.run):
    """Install uv `version` into the builder from the host's package index (pip's own configuration), root's, 0755.
    Returns None when uv is ready, else why it is not (a phrase): the caller builds with pip and says so."""
    builder, cache = paths(runtimes_dir)
    if os.path.lexists(builder):  # a half install, or another uv version: redone from nothing
        shutil.rmtree(builder) if os.path.isdir(builder) and not os.path.islink(builder) else os.unlink(builder)
    steps = [("creating the builder's virtualenv", [python, "-m", "venv", builder]),
             ("installing uv==%s with pip" % version,
              [os.path.join(builder, "bin", "python"), "-m", "pip", "install", "--no-input",
               "--disable-pip-version-check", "uv==%s" % version])]
    for what, argv in steps:
        try:
            proc = run(argv, capture_output=True, text=True, errors="replace", timeout=INSTALL_TIMEOUT,
                       stdin=subprocess.DEVNULL, check=False)
        except subprocess.TimeoutExpired:
            shutil.rmtree(builder, ignore_errors=True)
            return "%s did not finish within %d s (the package index does not answer?)" % (what, INSTALL_TIMEOUT)
        except OSError as error:
            shutil.rmtree(builder, ignore_errors=True)
            return "%s failed: %s" % (what, error)
        if proc.returncode != 0:
            shutil.rmtree(builder, ignore_errors=True)
            return "%s failed: %s" % (what, _tail(proc))
    uv = os.path.join(builder, "bin", "uv")
    proc = run([uv, "--version"], capture_output=True, text=True, errors="replace", timeout=60,
               stdin=subprocess.DEVNULL, check=False)
    said = (proc.stdout or "").split()
    if proc.returncode != 0 or said[:2] != ["uv", version]:
        shutil.rmtree(builder, ignore_errors=True)
        return "the installed uv says %r, not uv %s" % ((proc.stdout or proc.stderr or "").strip()[:200], version)
    os.makedirs(cache, mode=0o755, exist_ok=True)
    for folder in (builder, cache):
        os.chmod(folder, 0o755)  # root's, readable by all, written by root only (the module runs as root)
    with open(os.path.join(builder, BUILDER_MARKER), "w", encoding="utf-8") as handle:
        json.dump({"uv": version}, handle)
    return None


def pip_options(runtimes_dir, run=subprocess.run):
    """The host's pip configuration for `pip install` ({key: value}), read by the builder's own pip."""
    builder, _cache = paths(runtimes_dir)
    proc = run([os.path.join(builder, "bin", "python"), "-m", "pip", "config", "list"], capture_output=True,
               text=True, errors="replace", timeout=60, stdin=subprocess.DEVNULL, check=False)
    if proc.returncode != 0:
        raise OSError("the builder's pip cannot read the host's pip configuration: %s" % _tail(proc))
    return parse_pip_config(proc.stdout)


def uv_environment(runtimes_dir, settings, base=None):
    """The environment uv runs with: the host's (base), the index settings, the shared cache hard-linked into each
    runtime, the host's own python only. uv compiles no bytecode: compile_bytecode does, after the install, sharing
    what the host's other runtimes compiled."""
    _builder, cache = paths(runtimes_dir)
    env = {k: v for k, v in (os.environ if base is None else base).items()
           if not k.startswith(("UV_", "PIP_", "VIRTUAL_ENV"))}
    env.update(settings)
    env.update(UV_CACHE_DIR=cache, UV_LINK_MODE="hardlink", UV_PYTHON_DOWNLOADS="never", UV_COMPILE_BYTECODE="0",
               UV_NO_PROGRESS="1")
    return env


# -- bytecode -------------------------------------------------------------------------------------------------
# A runtime is root's and never modified once complete, so the service user cannot write __pycache__ into it: without
# bytecode compiled at the build, every start of every rank would compile SGLang and torch again. Compiling torch's
# and SGLang's ~20,000 files takes a minute of a build on two cores, the same minute for every runtime. But a runtime
# uv built holds its files as hard links into uv's cache, so a second runtime's torch is the very same files (the same
# inodes) as the first's; their bytecode is the same too (a .pyc records its source's mtime and size, which a hard link
# shares, and the importer puts the loading path into the code object, importlib's _fix_co_filename). So a build links
# the .pyc of every source another complete runtime already compiled, and compiles only the rest.
COMPILE_TIMEOUT = 3600


def site_packages(runtime):
    """[(site-packages folder, cache tag such as cpython-311)] of a runtime."""
    out = []
    lib = os.path.join(runtime, "lib")
    for entry in sorted(os.listdir(lib)) if os.path.isdir(lib) else []:
        match = re.match(r"^python(\d+)\.(\d+)$", entry)
        folder = os.path.join(lib, entry, "site-packages")
        if match and os.path.isdir(folder) and not os.path.islink(folder):
            out.append((folder, "cpython-%s%s" % match.groups()))
    return out


def compiled_sources(runtimes):
    """{(device, inode, cache tag): .pyc path} of the sources the runtimes compiled (plain .pyc, not opt-1/2)."""
    known = {}
    for runtime in runtimes:
        for folder, _tag in site_packages(runtime):
            for base, _dirs, files in os.walk(folder):
                if os.path.basename(base) != "__pycache__":
                    continue
                for name in files:
                    parts = name.split(".")
                    if len(parts) != 3 or parts[2] != "pyc":
                        continue
                    try:
                        st = os.stat(os.path.join(os.path.dirname(base), parts[0] + ".py"))
                    except OSError:
                        continue
                    known[(st.st_dev, st.st_ino, parts[1])] = os.path.join(base, name)
    return known


def share_bytecode(runtime, others):
    """Link into `runtime` the .pyc of each of its sources that one of `others` (complete runtimes of the host)
    compiled from the same file; ([sources left to compile], linked count)."""
    known = compiled_sources(others) if others else {}
    left, linked = [], 0
    for folder, tag in site_packages(runtime):
        for base, dirs, files in os.walk(folder):
            dirs[:] = [d for d in dirs if d != "__pycache__"]
            for name in files:
                if not name.endswith(".py"):
                    continue
                source = os.path.join(base, name)
                target = os.path.join(base, "__pycache__", "%s.%s.pyc" % (name[:-3], tag))
                if os.path.exists(target):
                    continue
                try:
                    st = os.stat(source)
                except OSError:
                    continue
                have = known.get((st.st_dev, st.st_ino, tag))
                if have is None:
                    left.append(source)
                    continue
                os.makedirs(os.path.dirname(target), mode=0o755, exist_ok=True)
                try:
                    os.link(have, target)
                    linked += 1
                except OSError:
                    left.append(source)
    return left, linked


def compile_bytecode(runtime, others, run=subprocess.run):
    """Bytecode for every source of the runtime's site-packages: linked from `others` where they compiled the same
    file, compiled by the runtime's own python (compileall, every core) for the rest. {linked, compiled}. A source
    that does not compile (a template, another Python's syntax) is left without bytecode, as pip and uv leave it."""
    left, linked = share_bytecode(runtime, others)
    if left:
        try:
            run([os.path.join(runtime, "bin", "python"), "-m", "compileall", "-q", "-j", "0", "-i", "-"],
                input="\n".join(left) + "\n", capture_output=True, text=True, errors="replace",
                timeout=COMPILE_TIMEOUT, check=False)
        except subprocess.TimeoutExpired:
            raise OSError("compiling %d files of %s took over %d s" % (len(left), runtime, COMPILE_TIMEOUT)) from None
    return {"linked": linked, "compiled": len(left)}
