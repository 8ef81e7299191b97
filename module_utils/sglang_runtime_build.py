"""The builds of library/sglang_runtime.py: state=builder makes sure the runtimes' builder holds uv (or says why the
build falls back to pip), state=install runs uv for a build (`uv venv` once, one `uv pip install` per step), then
compiles the runtime's bytecode. module_utils/sglang_uv.py holds uv's own part: the builder, pip's configuration
translated, the shared cache and bytecode."""

from __future__ import annotations

import os
import subprocess

from ansible.module_utils.sglang_runtime_build_path import kernel_build_path
from ansible.module_utils.sglang_runtime_markers import NAME_RE, VERSION_RE, built_here, marker_for_path, read_markers
from ansible.module_utils.sglang_runtime_python import python_identity
from ansible.module_utils.sglang_runtime_refusal import RuntimeError_
from ansible.module_utils.sglang_uv import (
    BUILDER,
    builder_complete,
    compile_bytecode,
    index_summary,
    install_builder,
    pip_options,
    redact,
    uv_environment,
    uv_settings,
)

# uv builds a host's runtimes from one cache (module_utils/sglang_uv.py says why). A build can take many minutes (torch
# and its CUDA wheels from an index): bounded only against a hang, never against a slow link.
BUILD_TIMEOUT = 4 * 3600


def run_builder(module, p):
    """The builder for a build: uv (installed once, reused) or pip with the reason."""
    version = (p["uv_version"] or "").strip()
    if not version:
        return {"changed": False, "builder": "pip", "why": "sglang_uv_version is empty"}
    if not VERSION_RE.match(version) or ".." in version:
        raise RuntimeError_("sglang_uv_version is %r: a uv release such as 0.13.8, or empty to build with pip"
                            % (version,))
    changed = False
    if not builder_complete(p["dir"], version):
        if module.check_mode:
            return {"changed": True, "builder": "uv", "index": "(read once uv is installed)", "not_carried": []}
        python = python_identity(module, p["python"])
        if python is None:
            return {"changed": False, "builder": "pip", "why": "%s is not on the host's PATH" % p["python"]}
        os.makedirs(p["dir"], mode=0o755, exist_ok=True)
        why = install_builder(p["dir"], version, python["path"])
        if why:
            return {"changed": False, "builder": "pip", "why": "uv %s could not be installed: %s" % (version, why)}
        changed = True
    env, flags, not_carried = uv_settings(pip_options(p["dir"]))
    for key in not_carried:
        module.warn("the pip setting %s has no uv equivalent: uv builds the runtime without it" % key)
    return {"changed": changed, "builder": "uv", "index": index_summary(env, flags),
            "not_carried": not_carried}


def run_install(module, p):
    """uv venv (once) and one uv pip install per step into the runtime p['path'] (a build's, never a complete one)."""
    runtime, version = p["path"], (p["uv_version"] or "").strip()
    if not runtime or not built_here(runtime, p["dir"]) or not NAME_RE.match(os.path.basename(runtime)):
        raise RuntimeError_("state=install needs path, a runtime folder directly in %s (from state=plan)" % p["dir"])
    if marker_for_path(read_markers(p["dir"]), runtime)[0]:
        raise RuntimeError_("%s is complete: a runtime is never modified once complete" % runtime)
    for step in p["steps"]:
        for item in step:
            if not isinstance(item, str) or not item.strip() or item.startswith("-"):
                raise RuntimeError_("state=install's step %r holds %r: uv would read it as an option, not a "
                                    "requirement. Give a wheel, a pin or a folder; set the index in pip.conf."
                                    % (step, item))
    if module.check_mode:  # state=builder installed nothing in check mode either
        return {"changed": True, "path": runtime}
    if not builder_complete(p["dir"], version):
        raise RuntimeError_("the builder in %s does not hold uv %s: run state=builder first"
                            % (os.path.join(p["dir"], BUILDER), version))
    env, flags, _not_carried = uv_settings(pip_options(p["dir"]))
    env = uv_environment(p["dir"], env)
    if p["cuda_home"]:
        env.update(CUDA_HOME=p["cuda_home"], PATH=kernel_build_path(p["cuda_home"], runtime))
    uv = os.path.join(p["dir"], BUILDER, "bin", "uv")
    python = python_identity(module, p["python"])
    if python is None:
        raise RuntimeError_("%s is not on the host's PATH: a runtime is made with it" % p["python"])
    commands = []
    if not os.path.isfile(os.path.join(runtime, "pyvenv.cfg")):
        # the interpreter as `python3 -m venv` names it (pyvenv.cfg's home), not its resolved file
        binary = module.get_bin_path(p["python"]) if "/" not in p["python"] else p["python"]
        commands.append(("making the virtualenv %s" % runtime, [uv, "venv", "--python", binary, runtime]))
    for step in p["steps"]:
        argv = [uv, "pip", "install", "--python", os.path.join(runtime, "bin", "python")] + flags
        if p["no_build_isolation"]:
            argv.append("--no-build-isolation")
        commands.append(("installing %s" % " ".join(step), argv + list(step)))
    for what, argv in commands:
        try:
            proc = subprocess.run(argv, capture_output=True, text=True, errors="replace", timeout=BUILD_TIMEOUT,
                                  stdin=subprocess.DEVNULL, check=False, env=env, cwd=p["chdir"] or None)
        except subprocess.TimeoutExpired:
            raise RuntimeError_("uv, %s, did not finish within %d s" % (what, BUILD_TIMEOUT)) from None
        if proc.returncode != 0:
            said = redact((proc.stderr or proc.stdout).strip())[-2000:]
            raise RuntimeError_("uv, %s (rc %d): %s" % (what, proc.returncode, said))
    # the other complete runtimes of the host: the same files from uv's cache, compiled once
    others = [m["path"] for m in read_markers(p["dir"]).values()
              if os.path.normpath(m["path"]) != os.path.normpath(runtime)]
    try:
        bytecode = compile_bytecode(runtime, others)
    except OSError as err:
        raise RuntimeError_("compiling the bytecode of %s: %s" % (runtime, err)) from None
    return {"changed": True, "path": runtime, "bytecode": bytecode}
