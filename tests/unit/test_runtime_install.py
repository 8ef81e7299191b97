"""The install phase (lib/sglang_state/runtime_install.py) over a fake host: a re-run that finds its runtime
complete (one plan, nothing copied, no python started), a build beside the serving runtime (with uv, or pip when uv
cannot be installed, said in the run), an adopted legacy venv, versions that are not the asked ones, a kernel source
that does not build, and --check."""

import pytest
from sglang_state import runtime_install
from sglang_state.transaction import PhaseFailed

ARGS = {
    "dir": "/opt/sglang/runtimes", "legacy": "/opt/sglang/venv", "unit": "/etc/systemd/system/sglang.service",
    "store_dir": "/var/lib/sglang/backups", "version": "0.5.23", "package": "files/sglang-0.5.23-py3-none-any.whl",
    "wheels_dir": "/opt/sglang/wheels", "extras": [], "min_free_gib": 20, "names": ["sglang", "ddtree"],
    "kernel_wheels": [{"src": "https://example.invalid/ddtree-0.3.1-py3-none-any.whl", "name": "ddtree",
                       "version": "0.3.1"}],
    "kernel_sources": [], "uv_version": "0.13.8", "cuda_home": "/usr/local/cuda", "user": "sglang",
    "home": "/var/lib/sglang", "proven": True,
    "check": {"gpus": 8, "torch_cuda": "12.9", "torch": "2.9", "release": "0.5.23", "nodes": 1, "imports": []},
}
VERSIONS = {"sglang": "0.5.23", "ddtree": "0.3.1"}
SHA = "ab" * 32


class FakeHost:
    def __init__(self, action="use", versions=None, check_mode=False, build_rc=0, uv_why=None, manifest_builder=None):
        self.action, self.versions, self.check_mode, self.build_rc = action, versions or VERSIONS, check_mode, build_rc
        self.uv_why, self.manifest_builder = uv_why, manifest_builder  # uv_why: uv cannot be installed, and why
        self.calls, self.copied, self.said, self.args = [], [], [], []

    def controller_sha256(self, src):
        return SHA

    def copy(self, args):
        self.copied.append(args["src"])
        return {"changed": True}

    def say(self, line):
        self.said.append(line)

    def module(self, name, args, secret=False, check_mode=None):
        state = args.get("state") if name == runtime_install.RUNTIME_MODULE else None
        self.calls.append((name, state))
        self.args.append((name, state, args))
        if name == runtime_install.RUNTIME_MODULE and state is None:
            self.plan_args = args
            path = ARGS["legacy"] if self.action == "adopt" else ARGS["dir"] + "/0.5.23-0123456789ab"
            # the plan reads the versions of a runtime it finds (its manifest, or the legacy venv it adopts)
            plan = {"changed": False, "action": self.action, "path": path, "name": "0.5.23-0123456789ab",
                    "digest": "0123456789ab" * 5, "set": {}, "removed": [], "serving": {"path": path},
                    "versions": {} if self.action == "build" else self.versions}
            if self.action == "use":
                plan["builder"] = self.manifest_builder
            if self.action == "use" and args.get("prune_when_found"):  # as the module: pruned in the same call
                plan["pruned"] = {"changed": False, "removed": ["/opt/sglang/runtimes/0.5.9-aaaaaaaaaaaa"]}
            return plan
        if state == "versions":
            assert check_mode is False  # a read that runs in --check too
            return {"versions": self.versions}
        if state == "prune":
            return {"changed": False, "removed": []}
        if state == "builder":
            if self.uv_why or not args["uv_version"]:
                return {"changed": False, "builder": "pip", "why": self.uv_why or "sglang_uv_version is empty"}
            return {"changed": True, "builder": "uv", "index": "PyPI", "not_carried": []}
        if state == "install" and args.get("no_build_isolation") and self.build_rc:
            return {"failed": True, "msg": "uv, installing . (rc 1): nvcc fatal: unsupported gpu architecture"}
        if name == "ansible.builtin.command":
            return {"rc": self.build_rc, "stderr": "nvcc fatal: unsupported gpu architecture 'compute_120'"}
        return {"changed": True}


def names(host):
    return [name if state is None else "%s:%s" % (name, state) for name, state in host.calls]


def sent(host, module, state=None):
    return [args for name, st, args in host.args if name == module and st == state]


def test_a_rerun_finds_its_runtime_complete_copies_nothing_and_checks_nothing():
    host = FakeHost("use")
    result = runtime_install.install(host, dict(ARGS))
    assert host.copied == []
    # the controller's digest of the local wheel named in the plan's arguments, so the host copy is not needed
    assert host.plan_args["wheel_sha256"] == {"sglang-0.5.23-py3-none-any.whl": SHA}
    # the plan's read of the manifest is the only read of the versions, and the plan prunes around what it found
    assert host.plan_args["prune_when_found"] is True and host.plan_args["store"] == ARGS["store_dir"]
    assert names(host) == ["sglang_runtime", "ansible.builtin.user"]
    assert result["versions"] == VERSIONS and result["action"] == "use" and result["changed"] is True  # the user
    assert result["removed"] == ["/opt/sglang/runtimes/0.5.9-aaaaaaaaaaaa"]


def test_a_build_copies_the_wheels_installs_with_uv_checks_and_only_then_marks_complete():
    host = FakeHost("build")
    result = runtime_install.install(host, dict(ARGS, proven=True))
    assert host.copied == [ARGS["package"]]  # the URL kernel wheel is the index's to serve
    called = names(host)
    assert called.index("sglang_runtime:builder") < called.index("sglang_runtime:install") \
        < called.index("sglang_runtime:versions") < called.index(runtime_install.CHECK_MODULE) \
        < called.index("sglang_runtime:complete")
    assert "ansible.builtin.pip" not in called
    # SGLang first, then each kernel wheel in its own install, in order (as pip installed them)
    (install,) = sent(host, "sglang_runtime", "install")
    assert install["steps"] == [["/opt/sglang/wheels/sglang-0.5.23-py3-none-any.whl"],
                                ["https://example.invalid/ddtree-0.3.1-py3-none-any.whl"]]
    assert install["path"] == "/opt/sglang/runtimes/0.5.23-0123456789ab" and install["uv_version"] == "0.13.8"
    (complete,) = sent(host, "sglang_runtime", "complete")
    assert complete["builder"] == "uv 0.13.8" and result["builder"] == "uv 0.13.8"
    assert result["changed"] and result["versions"] == VERSIONS
    assert host.said == ["built the runtime /opt/sglang/runtimes/0.5.23-0123456789ab with uv 0.13.8"]


def test_uv_that_cannot_be_installed_builds_with_pip_and_says_why():
    why = "uv 0.13.8 could not be installed: installing uv==0.13.8 with pip failed: No matching distribution"
    host = FakeHost("build", uv_why=why)
    result = runtime_install.install(host, dict(ARGS))
    called = names(host)
    assert "sglang_runtime:install" not in called
    pips = sent(host, "ansible.builtin.pip")
    assert [p["name"] for p in pips] == [["/opt/sglang/wheels/sglang-0.5.23-py3-none-any.whl"],
                                         ["https://example.invalid/ddtree-0.3.1-py3-none-any.whl"]]
    assert pips[0]["virtualenv_command"] == "python3 -m venv"
    assert host.said[0] == "building the runtime /opt/sglang/runtimes/0.5.23-0123456789ab with pip: " + why
    assert result["builder"] == "pip (%s)" % why
    (complete,) = sent(host, "sglang_runtime", "complete")
    assert complete["builder"] == result["builder"]


def test_an_empty_uv_version_builds_with_pip_and_says_so():
    host = FakeHost("build")
    result = runtime_install.install(host, dict(ARGS, uv_version=""))
    assert "ansible.builtin.pip" in names(host) and "sglang_runtime:install" not in names(host)
    assert result["builder"] == "pip (sglang_uv_version is empty)"
    assert "with pip: sglang_uv_version is empty" in host.said[0]


def test_a_found_runtime_says_the_builder_its_manifest_records_and_asks_for_no_builder():
    host = FakeHost("use", manifest_builder="uv 0.13.8")
    result = runtime_install.install(host, dict(ARGS))
    assert result["builder"] == "uv 0.13.8" and "sglang_runtime:builder" not in names(host)
    older = runtime_install.install(FakeHost("use"), dict(ARGS))
    assert older["builder"].startswith("not recorded")


def test_an_adopted_legacy_venv_is_checked_even_when_the_serving_state_is_proven():
    host = FakeHost("adopt")
    runtime_install.install(host, dict(ARGS))
    assert runtime_install.CHECK_MODULE in names(host) and "ansible.builtin.pip" not in names(host)
    assert "sglang_runtime:complete" in names(host)


def test_versions_other_than_the_asked_ones_leave_the_runtime_incomplete():
    host = FakeHost("build", versions={"sglang": "0.5.22", "ddtree": "0.3.1"})
    with pytest.raises(PhaseFailed, match="expected .*0.5.23.*not marked complete"):
        runtime_install.install(host, dict(ARGS))
    assert "sglang_runtime:complete" not in names(host)


@pytest.mark.parametrize("uv_version", ["0.13.8", ""])
def test_a_kernel_source_that_does_not_build_says_which_and_why(uv_version):
    source = {"repo": "https://example.invalid/ddtree.git", "ref": "v0.3.1", "name": "ddtree", "version": "0.3.1",
              "subdir": "csrc"}
    host = FakeHost("build", build_rc=1)
    with pytest.raises(PhaseFailed, match="ddtree.git with the CUDA toolkit at /usr/local/cuda: .*nvcc fatal"):
        runtime_install.install(host, dict(ARGS, kernel_wheels=[], kernel_sources=[source], uv_version=uv_version))
    assert "sglang_runtime:complete" not in names(host)
    if uv_version:  # uv's --no-build-isolation in the checkout, with the CUDA toolkit, as pip's was
        built = [a for a in sent(host, "sglang_runtime", "install") if a.get("no_build_isolation")]
        assert built == [dict(built[0], steps=[["csrc"]], chdir="/opt/sglang/runtimes/0.5.23-0123456789ab/src/ddtree",
                              cuda_home="/usr/local/cuda")]


def test_check_mode_with_a_build_to_do_reads_no_versions():
    host = FakeHost("build", check_mode=True)
    result = runtime_install.install(host, dict(ARGS))
    assert "sglang_runtime:versions" not in names(host) and result["versions"] == {}
