"""Verify the GPU host roles on the simulated ct200 and HGX H200 (Debian 12) and ct200 (Debian 13) (testinfra).

prepare.yml left an interrupted first run on the Debian 12 hosts; converge finished it; side_effect bumped
the HGX driver to 580.105.08 against a stale apt cache."""

import datetime
import json
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "lib"))
from sglang_report.clock import section

# ct200: newest of the branch; HGX: 580.82.07 as asked, then bumped to 580.105.08 by side_effect.
DRIVER = {"ct200-gpuhost": "580.95.05-1", "hgx-gpuhost": "580.105.08-1", "trixie-gpuhost": "580.95.05-1"}
PACKAGES = ["nvidia-driver-cuda", "nvidia-kernel-open-dkms", "nvidia-persistenced"]


@pytest.fixture
def name(host):
    return host.backend.get_hostname()


@pytest.mark.parametrize("package", PACKAGES)
def test_driver_packages_held_at_the_pinned_version(host, name, package):
    pkg = host.package(package)
    assert pkg.is_installed
    assert pkg.version == DRIVER[name]
    assert host.check_output("dpkg-query -W -f='${Status}' %s" % package).startswith("hold ")


def test_apt_pin_and_unattended_upgrades(host, name):
    pin = host.file("/etc/apt/preferences.d/nvidia-driver")
    assert pin.contains("Pin: version %s" % DRIVER[name]) and pin.contains("Pin-Priority: 1001")
    assert host.file("/etc/apt/apt.conf.d/51nvidia-unattended-upgrades").contains('"nvidia-";')
    policy = host.run("apt-cache policy nvidia-driver-cuda")
    # apt reads every source here: a second Signed-By for the same URI would fail it ("Conflicting values").
    assert policy.rc == 0 and "E:" not in policy.stderr, policy.stderr
    assert "Candidate: %s" % DRIVER[name] in policy.stdout


def test_one_source_for_the_repository_with_the_pinned_key(host, name):
    own = host.file("/etc/apt/sources.list.d/nvidia-cuda.sources")
    keyring = host.file("/etc/apt/sources.list.d/cuda-debian12-x86_64.list")
    if name == "hgx-gpuhost":  # cuda-keyring was installed before: its source is reused, no second one
        assert keyring.exists and not own.exists
        assert keyring.contains("signed-by=/usr/share/keyrings/cuda-archive-keyring.gpg")
        return
    assert own.contains("^URIs: file:///srv/nvidia-standin-repo/")
    assert own.contains("^Signed-By: /etc/apt/keyrings/nvidia-cuda.asc")
    assert own.contains("^Suites: /")
    assert host.file("/etc/apt/keyrings/nvidia-cuda.asc").contains("BEGIN PGP PUBLIC KEY BLOCK")
    assert not keyring.exists


def test_older_list_source_replaced_and_backed_up(host, name):
    if name != "ct200-gpuhost":
        pytest.skip("the older .list was left on ct200-gpuhost")
    assert not host.file("/etc/apt/sources.list.d/nvidia-old.list").exists
    backups = host.check_output("ls /var/backups/nvidia_driver")
    assert "nvidia-old.list." in backups


def test_nouveau_blacklisted(host):
    conf = host.file("/etc/modprobe.d/blacklist-nouveau.conf")
    assert conf.contains("^blacklist nouveau$") and conf.contains("^options nouveau modeset=0$")
    assert conf.contains("Ansible managed")


def test_headers_for_this_kernel_and_the_next_and_dkms_built_for_both(host, name):
    kernel = host.check_output("uname -r")
    for package in ("linux-headers-%s" % kernel, "linux-headers-standin", "linux-headers-%s-next" % kernel):
        assert host.package(package).is_installed, package
    status = host.check_output("dkms status")
    version = DRIVER[name].split("-")[0]
    for k in (kernel, kernel + "-next"):
        assert "nvidia/%s, %s, x86_64: installed" % (version, k) in status
    assert "nvidia/580.82.07" not in status  # the bumped-from version is gone from every kernel


def test_interrupted_first_run_stopped_cleanly_and_was_finished(host, name):
    log = host.file("/var/log/standin-reboots.log").content_string
    version = DRIVER[name].split("-")[0]
    if name == "trixie-gpuhost":
        assert log.count("reboot: loaded nvidia 580.95.05") == 1 and "interrupted" not in log
        return
    first = host.file("/root/first-run.txt").content_string
    if name == "ct200-gpuhost":  # reboots disabled: a clear stop, driver held, services not started
        assert "Stop here when the reboot is not allowed" in first
        assert "needs a reboot to load NVIDIA driver 580.95.05" in first and "nvidia_driver_reboot is false" in first
        assert "driver: hold ok installed 580.95.05-1" in first and "persistenced: inactive" in first
        assert log.count("reboot:") == 1 and "loaded nvidia 580.95.05" in log
    else:  # the reboot itself failed; the next run (converge) rebooted although it installed nothing new
        assert "Reboot with nvidia_driver_reboot_command" in first
        lines = [line.split(" ", 1)[1] for line in log.splitlines()]
        assert lines == ["reboot interrupted (injected failure)", "reboot: loaded nvidia 580.82.07",
                         "reboot: loaded nvidia 580.105.08"]
    assert host.file("/sys/module/nvidia/version").content_string.strip() == version


def test_persistenced_enabled_and_running(host):
    service = host.service("nvidia-persistenced")
    assert service.is_enabled and service.is_running


def test_fabric_manager_only_on_nvswitch_at_the_drivers_exact_version(host, name):
    fm = host.package("nvidia-fabricmanager")
    if name != "hgx-gpuhost":
        assert not fm.is_installed
    else:
        assert fm.is_installed and fm.version == DRIVER[name] == host.package("nvidia-driver-cuda").version
        assert host.check_output("dpkg-query -W -f='${Status}' nvidia-fabricmanager").startswith("hold ")
        # The stand-in, like the real one, refuses to run against another loaded driver version.
        assert host.service("nvidia-fabricmanager").is_running


def test_loaded_open_kernel_module(host, name):
    assert host.check_output("modinfo -F license nvidia") == "Dual MIT/GPL"
    facts = host.ansible("nvidia_gpu_facts", check=False)["ansible_facts"]["nvidia_gpu"]
    assert facts["driver_loaded"] and facts["module_flavour"] == "open" and facts["ondisk_flavour"] == "open"
    assert facts["driver_version"] == facts["ondisk_version"] == DRIVER[name].split("-")[0]


def test_gpu_facts(host, name):
    facts = host.ansible("nvidia_gpu_facts", check=False)["ansible_facts"]["nvidia_gpu"]
    expected = {"ct200-gpuhost": (8, 97887, False), "hgx-gpuhost": (8, 143771, True),
                "trixie-gpuhost": (8, 97887, False)}[name]
    assert (facts["count"], facts["memory_mib_min"], facts["nvswitch"]) == expected
    assert facts["source"] == "nvidia-smi"


def test_distribution(host, name):
    expected = {"ct200-gpuhost": "12", "hgx-gpuhost": "12", "trixie-gpuhost": "13"}[name]
    assert host.system_info.distribution == "debian" and host.system_info.release.split(".")[0] == expected


def test_cuda_toolkit_on_path(host):
    assert host.package("cuda-toolkit-12-9").is_installed
    assert "release 12.9," in host.check_output("bash -lc 'nvcc --version'")


def test_refusals_came_before_any_package_change(host, name):
    if name != "ct200-gpuhost":
        pytest.skip("the refusals run on ct200-gpuhost")
    version = host.file("/root/refusal-driver-version.txt").content_string
    assert "nvidia_driver_version 580.999.99 is not in the repository" in version
    assert "580.95.05-1" in version and "580.82.07-1" in version and "No package was changed" in version
    count = host.file("/root/refusal-gpu-count.txt").content_string
    assert "has 8 NVIDIA GPU(s)" in count and "needs 16" in count and "Nothing was changed" in count
    assert host.package("nvidia-driver-cuda").version == DRIVER[name]


def test_a_rerun_skips_the_install_only_while_the_host_is_as_recorded(host):
    if host.backend.get_hostname() != "ct200-gpuhost":
        pytest.skip("the side effect edits ct200-gpuhost")
    unchanged = json.loads(host.file("/root/record-unchanged.json").content_string)
    assert unchanged["unchanged"] is True and unchanged["facts"]["deb_version"].startswith("580.")
    edited = json.loads(host.file("/root/record-after-edit.json").content_string)
    assert edited["unchanged"] is False
    assert "/etc/apt/preferences.d/nvidia-driver was changed" in edited["reasons"]
    assert any(r.startswith("nvidia-kernel-open-dkms is ") and r.endswith(" hold") for r in edited["reasons"])
    # the full run put both back
    assert "edited by hand" not in host.file("/etc/apt/preferences.d/nvidia-driver").content_string
    assert host.run("dpkg-query -W -f='${Status}' nvidia-kernel-open-dkms").stdout.startswith("hold ")


def test_the_model_downloaded_beside_the_driver_and_cuda_and_continued_after_the_reboot(host, name):
    if name != "ct200-gpuhost":
        pytest.skip("ct200-gpuhost downloads its model from the stand-in Hub")
    proof = json.loads(host.file("/root/early-download.json").content_string)
    clock, join, ledger = proof["clock"], proof["join"], proof["ledger_after_cuda"]
    total = join["bytes_total"]
    assert total > 96 * 2**20 and join["done"], join
    # the download began before the driver role, and the driver's reboot ended it part way
    log = host.file("/var/log/standin-reboots.log").content_string
    ended = [line for line in log.splitlines() if "ended sglang-download" in line]
    assert len(ended) == 1, log
    when = datetime.datetime.fromisoformat(ended[0].split(" ", 1)[0]).timestamp()
    on_disk = int(ended[0].rsplit(", ", 1)[1].split(" ")[0])
    assert clock["download"]["start"] < clock["driver"]["start"] < when < clock["driver"]["end"], (clock, ended)
    assert 0 < on_disk < total
    # started again after the driver role, it fetched while CUDA ran (a new process, its own bytes)
    killed = ended[0].split("(pid ", 1)[1].split(")")[0]
    assert ledger.get("pid") and str(ledger["pid"]) != killed, ledger
    assert ledger["early_fetched"] > 0 and ledger["updated"] <= clock["cuda"]["end"] + 5, ledger
    # and nothing was fetched again from zero: the Hub sent the checkpoint about once, the ledger counted it once
    assert proof["hub_sent"] <= total * 1.05, proof["hub_sent"]
    assert total * 0.95 <= join["download_fetched"] <= total * 1.05, join
    # the report's day-1 clock says the download ran beside the driver and CUDA
    beside = {item["phase"] for item in section(clock)["download_beside"]}
    assert {"driver", "cuda"} <= beside, section(clock)
    assert host.file("/srv/models/standin-tiny/.sglang-download-complete").exists
    assert not host.file("/srv/models/standin-tiny/.sglang-download.json").exists
