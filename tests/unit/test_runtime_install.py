"""The install phase (lib/sglang_state/runtime_install.py) over a fake host: a re-run that finds its runtime
complete (one plan, nothing copied, no python started), a build beside the serving runtime, an adopted legacy venv,
versions that are not the asked ones, a kernel source that does not build, and --check."""

import pytest
from sglang_state import runtime_install
from sglang_state.transaction import PhaseFailed

ARGS = {
    "dir": "/opt/sglang/runtimes", "legacy": "/opt/sglang/venv", "unit": "/etc/systemd/system/sglang.service",
    "store_dir": "/var/lib/sglang/backups", "version": "0.5.23", "package": "files/sglang-0.5.23-py3-none-any.whl",
    "wheels_dir": "/opt/sglang/wheels", "extras": [], "min_free_gib": 20, "names": ["sglang", "ddtree"],
    "kernel_wheels": [{"src": "https://example.invalid/ddtree-0.3.1-py3-none-any.whl", "name": "ddtree",
                       "version": "0.3.1"}],
    "kernel_sources": [], "cuda_home": "/usr/local/cuda", "user": "sglang", "home": "/var/lib/sglang", "proven": True,
    "check": {"gpus": 8, "torch_cuda": "12.9", "torch": "2.9", "release": "0.5.23", "nodes": 1, "imports": []},
}
VERSIONS = {"sglang": "0.5.23", "ddtree": "0.3.1"}
SHA = "ab" * 32


class FakeHost:
    def __init__(self, action="use", versions=None, check_mode=False, build_rc=0):
        self.action, self.versions, self.check_mode, self.build_rc = action, versions or VERSIONS, check_mode, build_rc
        self.calls, self.copied, self.said = [], [], []

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
        if name == runtime_install.RUNTIME_MODULE and state is None:
            self.plan_args = args
            path = ARGS["legacy"] if self.action == "adopt" else ARGS["dir"] + "/0.5.23-0123456789ab"
            # the plan reads the versions of a runtime it finds (its manifest, or the legacy venv it adopts)
            plan = {"changed": False, "action": self.action, "path": path, "name": "0.5.23-0123456789ab",
                    "digest": "0123456789ab" * 5, "set": {}, "removed": [], "serving": {"path": path},
                    "versions": {} if self.action == "build" else self.versions}
            if self.action == "use" and args.get("prune_when_found"):  # as the module: pruned in the same call
                plan["pruned"] = {"changed": False, "removed": ["/opt/sglang/runtimes/0.5.9-aaaaaaaaaaaa"]}
            return plan
        if state == "versions":
            assert check_mode is False  # a read that runs in --check too
            return {"versions": self.versions}
        if state == "prune":
            return {"changed": False, "removed": []}
        if name == "ansible.builtin.command":
            return {"rc": self.build_rc, "stderr": "nvcc fatal: unsupported gpu architecture 'compute_120'"}
        return {"changed": True}


def names(host):
    return [name if state is None else "%s:%s" % (name, state) for name, state in host.calls]


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


def test_a_build_copies_the_wheels_installs_checks_and_only_then_marks_complete():
    host = FakeHost("build")
    result = runtime_install.install(host, dict(ARGS, proven=True))
    assert host.copied == [ARGS["package"]]  # the URL kernel wheel is pip's to fetch
    called = names(host)
    assert called.index("ansible.builtin.pip") < called.index("sglang_runtime:versions") \
        < called.index(runtime_install.CHECK_MODULE) < called.index("sglang_runtime:complete")
    assert result["changed"] and result["versions"] == VERSIONS
    assert host.said == ["built the runtime /opt/sglang/runtimes/0.5.23-0123456789ab"]


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


def test_a_kernel_source_that_does_not_build_says_which_and_why():
    source = {"repo": "https://example.invalid/ddtree.git", "ref": "v0.3.1", "name": "ddtree", "version": "0.3.1"}
    host = FakeHost("build", build_rc=1)
    with pytest.raises(PhaseFailed, match="ddtree.git with the CUDA toolkit at /usr/local/cuda: nvcc fatal"):
        runtime_install.install(host, dict(ARGS, kernel_wheels=[], kernel_sources=[source]))
    assert "sglang_runtime:complete" not in names(host)


def test_check_mode_with_a_build_to_do_reads_no_versions():
    host = FakeHost("build", check_mode=True)
    result = runtime_install.install(host, dict(ARGS))
    assert "sglang_runtime:versions" not in names(host) and result["versions"] == {}
