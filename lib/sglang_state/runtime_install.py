"""The runtime of this run: found by its package set, or built beside the one serving, checked, marked complete.

A runtime per package set (library/sglang_runtime.py): SGLang, its source (a wheel by its sha256), the extras, the
kernel wheels and sources and the host's python make a digest, and the runtime lives in
<runtimes dir>/<version>-<digest12>. It is built beside the runtime serving now (which keeps serving: nothing here
touches its folder), checked (versions, torch's CUDA build and GPUs, the kernels' imports) and only then marked
complete; the unit names it when the deploy renders it, so a restored unit switches the code too.

A re-run with the same package set finds it, and prunes what nothing names, with one module call (then the service
user): a controller-side wheel enters the digest by the sha256 the controller reads (the executor's
controller_sha256), so a complete runtime is found by its manifest without copying anything, and its versions come
from that same call's read of the manifest, with no pip and no python started. Wheels are copied to the host only for
a build. A host deployed before runtimes (its single sglang_venv) keeps that venv as its first runtime
when it holds exactly the asked versions (adopted, recorded, nothing reinstalled); it is never modified again.

A build uses the host's builder, uv (library/sglang_runtime.py state=builder: installed once from the host's package
index under the runtimes folder, with one package cache every runtime of the host shares through hard links), or
pip when uv cannot be installed or sglang_uv_version is empty; the run says so, and the runtime's manifest records
which built it. The package set, its digest and the checks are the same whichever builds.

Plain Python over the transaction's executor (action_plugins/sglang_runtime_install.py); the unit tests
give it a fake host. It returns the runtime module's plan plus `versions` (the runtime's SGLang and kernels).
"""

from __future__ import annotations

import os

from sglang_state.module_utils_file import load as load_module_utils
from sglang_state.transaction import RUNTIME_MODULE, PhaseFailed, succeeded

CHECK_MODULE = "sglang_runtime_check"


# a kernel source's build PATH, the same for pip here as for uv in the runtime module (module_utils/), written once
kernel_build_path = load_module_utils("sglang_runtime_build_path").kernel_build_path


def _local(src):
    """A controller-side wheel (copied for a build) rather than a URL or an index requirement."""
    return bool(src) and "://" not in src


def _pip_name(args):
    package, wheels_dir = args["package"], args["wheels_dir"]
    if _local(package):
        return os.path.join(wheels_dir, os.path.basename(package))
    if package:
        return package
    extras = "[%s]" % ",".join(args["extras"]) if args["extras"] else ""
    return "sglang%s==%s" % (extras, args["version"])


def _kernel_name(args, wheel):
    src = str(wheel["src"])
    return src if not _local(src) else os.path.join(args["wheels_dir"], os.path.basename(src))


def _wheels(args):
    """The controller-side wheels: SGLang's (when sglang_package names one) and the kernel wheels'."""
    return ([args["package"]] if _local(args["package"]) else []) + [
        str(w["src"]) for w in args["kernel_wheels"] if _local(str(w["src"]))]


def _kernel_source_checkouts(ex, args, path):
    """[(source, checkout)] of the kernel sources, fetched inside the runtime (pruned with it)."""
    checkouts = []
    for source in args["kernel_sources"]:
        name = source.get("name") or os.path.basename(source["repo"]).removesuffix(".git")
        dest = os.path.join(path, "src", name)
        succeeded(ex.module("ansible.builtin.git", {"repo": source["repo"], "version": str(source.get("ref", "HEAD")),
                                                    "dest": dest, "depth": 1}),
                  "fetching the kernel source %s" % source["repo"])
        checkouts.append((source, dest))
    return checkouts


def _kernel_source_failed(source, cuda, said):
    return PhaseFailed("building the kernels of %s with the CUDA toolkit at %s: %s" % (source["repo"], cuda, said))


def _build_pip(ex, args, path):
    """pip, as before uv: python3 -m venv, SGLang, each kernel wheel, each kernel source."""
    succeeded(ex.module("ansible.builtin.pip", {"name": [_pip_name(args)], "virtualenv": path,
                                                "virtualenv_command": "python3 -m venv"}),
              "installing SGLang into %s" % path)
    for wheel in args["kernel_wheels"]:
        succeeded(ex.module("ansible.builtin.pip", {"name": [_kernel_name(args, wheel)], "virtualenv": path}),
                  "installing the kernel wheel %s" % os.path.basename(str(wheel["src"])))
    cuda = args["cuda_home"]
    for source, dest in _kernel_source_checkouts(ex, args, path):
        built = ex.module("ansible.builtin.command", {
            "argv": ["env", "CUDA_HOME=" + cuda, "PATH=" + kernel_build_path(cuda, path),
                     path + "/bin/pip", "install", "--no-build-isolation", source.get("subdir", ".")],
            "chdir": dest})
        if not ex.check_mode and (built.get("failed") or built.get("rc")):
            raise _kernel_source_failed(source, cuda, (built.get("stderr") or built.get("msg") or "failed")[-2000:])


def _build_uv(ex, args, path):
    """uv, from the host's shared cache: SGLang, then each kernel wheel (one install each, in order, as pip did), then
    each kernel source with uv's --no-build-isolation (the runtime's own torch, as pip's)."""
    install = {"state": "install", "dir": args["dir"], "path": path, "uv_version": args["uv_version"]}
    steps = [[_pip_name(args)]] + [[_kernel_name(args, wheel)] for wheel in args["kernel_wheels"]]
    succeeded(ex.module(RUNTIME_MODULE, dict(install, steps=steps)), "installing SGLang into %s with uv" % path)
    cuda = args["cuda_home"]
    for source, dest in _kernel_source_checkouts(ex, args, path):
        built = ex.module(RUNTIME_MODULE, dict(install, steps=[[source.get("subdir", ".")]], chdir=dest,
                                               no_build_isolation=True, cuda_home=cuda))
        if built.get("failed"):
            raise _kernel_source_failed(source, cuda, str(built.get("msg") or "failed")[-2000:])


def _build(ex, args, path):
    """The runtime's packages into its new folder, by uv (the host's builder) or pip (uv could not be installed, or
    sglang_uv_version is empty: said in the run). Returns which builder built it: 'uv <version>' or 'pip (why)'.
    PhaseFailed with the step that failed."""
    for src in _wheels(args):
        succeeded(ex.copy({"src": src, "dest": args["wheels_dir"] + "/", "mode": "0644"}),
                  "copying %s to the host" % os.path.basename(src))
    # python3-venv: the pip build's venv and the builder's own; python3-pip: the pip build. The package lists are
    # read first (a new build only): a host the driver and CUDA roles did not run on may have none
    packages = ["python3-venv", "python3-pip"] + (["git"] if args["kernel_sources"] else [])
    succeeded(ex.module("ansible.builtin.apt", {"name": packages, "state": "present", "update_cache": True}),
              "installing " + " ".join(packages))
    succeeded(ex.module("ansible.builtin.file", {"path": args["dir"], "state": "directory", "mode": "0755"}),
              "the runtimes' folder")
    builder = succeeded(ex.module(RUNTIME_MODULE, {"state": "builder", "dir": args["dir"],
                                                   "uv_version": args["uv_version"]}),
                        "preparing the runtimes' builder")
    if builder["builder"] == "uv":
        _build_uv(ex, args, path)
        return "uv %s" % args["uv_version"]
    ex.say("building the runtime %s with pip: %s" % (path, builder["why"]))
    _build_pip(ex, args, path)
    return "pip (%s)" % builder["why"]


def _check_versions(installed, args, path):
    """SGLang and every kernel with a version are the versions asked for."""
    pinned = {k["name"]: str(k["version"]) for k in args["kernel_wheels"] + args["kernel_sources"]
              if k.get("name") and k.get("version") is not None}
    wanted = dict(pinned, sglang=args["version"])
    if {name: installed.get(name) for name in wanted} != wanted:
        raise PhaseFailed(
            "Installed in %s: %s; expected %s. Check sglang_version / sglang_package and the versions in "
            "sglang_kernel_wheels / sglang_kernel_sources. The runtime is not marked complete: the next run removes it "
            "and builds it again." % (path, installed, wanted))


def install(ex, args):
    """Find or build this run's runtime, check it, mark it complete, prune what nothing names.

    args: dir, legacy, unit, version, package, wheels_dir, extras, kernel_wheels, kernel_sources, min_free_gib,
    names, uv_version (the builder's uv; empty builds with pip), cuda_home, user, home, check ({gpus, torch_cuda,
    torch, release, nodes, imports}), proven (the serving state is the proven one: a runtime in use is not checked
    again), store_dir (the backup store's folder). The result's builder says which builder built the runtime."""
    find = {key: args[key] for key in ("dir", "legacy", "unit", "version", "package", "wheels_dir", "extras",
                                       "kernel_wheels", "kernel_sources", "min_free_gib", "names")}
    find["wheel_sha256"] = {os.path.basename(src): ex.controller_sha256(src) for src in _wheels(args)}
    # a runtime found complete is pruned around in the same call (keeping it); a new one once it is complete
    find.update(prune_when_found=True, store=args["store_dir"])
    plan = dict(succeeded(ex.module(RUNTIME_MODULE, find), "finding the runtime"))
    plan.pop("invocation", None)
    path, action = plan["path"], plan["action"]
    changed = bool(plan.get("changed"))
    # which builder built the runtime: this run's, or the one a complete runtime's manifest records
    builder = plan.get("builder") or ("adopted: built before runtimes" if action == "adopt"
                                      else "not recorded (built before the builder was recorded)")
    if action == "build":
        builder = _build(ex, args, path)
        changed = True
    user = {"name": args["user"], "system": True, "home": args["home"], "create_home": True,
            "shell": "/usr/sbin/nologin"}
    changed = bool(succeeded(ex.module("ansible.builtin.user", user), "the service user").get("changed")) or changed
    # the plan read a runtime it found (its manifest, or the legacy venv it adopts); a new build is read once built
    versions = plan.get("versions") or {}
    if not (ex.check_mode and action == "build"):  # nothing was built in check mode: nothing to read
        if action == "build":
            read = succeeded(ex.module(RUNTIME_MODULE, {"state": "versions", "dir": args["dir"], "path": path,
                                                        "names": args["names"]}, check_mode=False),
                             "reading the runtime's versions")
            versions = read["versions"]
        _check_versions(versions, args, path)
        # torch and the kernels import as they did when the serving state was proven, unless this run built or
        # adopted a runtime or the serving process is not the proven one (a driver change reboots; a restart re-reads)
        if action != "use" or not args["proven"]:
            succeeded(ex.module(CHECK_MODULE, dict(args["check"], path=path)), "checking the runtime")
    if action != "use":
        done = ex.module(RUNTIME_MODULE, {"state": "complete", "dir": args["dir"], "path": path, "name": plan["name"],
                                          "digest": plan["digest"], "set": plan["set"], "versions": versions,
                                          "builder": builder})
        changed = bool(succeeded(done, "marking the runtime complete").get("changed")) or changed
    pruned = plan.get("pruned")
    if pruned is None:
        pruned = ex.module(RUNTIME_MODULE, {"state": "prune", "dir": args["dir"], "legacy": args["legacy"],
                                            "unit": args["unit"], "store": args["store_dir"], "keep": [path]})
        pruned = succeeded(pruned, "pruning the runtimes nothing names")
        changed = bool(pruned.get("changed")) or changed
    if action == "build":
        ex.say("built the runtime %s with %s" % (path, builder))
    return dict(plan, phase="install", builder=builder, versions=versions,
                removed=plan.get("removed", []) + pruned.get("removed", []),
                changed=changed)
