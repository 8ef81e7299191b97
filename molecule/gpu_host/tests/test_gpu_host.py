"""Verify the GPU host roles on the simulated ct200 and HGX H200 instances (testinfra)."""


import pytest

DRIVER = {"ct200-gpuhost": "580.95.05-1", "hgx-gpuhost": "580.82.07-1"}  # newest of the branch / exactly as asked
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
    policy = host.check_output("apt-cache policy nvidia-driver-cuda")
    assert "Candidate: %s" % DRIVER[name] in policy


def test_signed_apt_source(host):
    source = host.file("/etc/apt/sources.list.d/nvidia-cuda.sources")
    assert source.contains("^URIs: file:///srv/nvidia-standin-repo/")
    assert source.contains("^Signed-By: /etc/apt/keyrings/nvidia-cuda.asc")
    assert host.file("/etc/apt/keyrings/nvidia-cuda.asc").contains("BEGIN PGP PUBLIC KEY BLOCK")


def test_nouveau_blacklisted(host):
    conf = host.file("/etc/modprobe.d/blacklist-nouveau.conf")
    assert conf.contains("^blacklist nouveau$") and conf.contains("^options nouveau modeset=0$")
    assert conf.contains("Ansible managed")


def test_kernel_headers_for_the_running_kernel(host):
    assert host.package("linux-headers-%s" % host.check_output("uname -r")).is_installed


def test_persistenced_enabled_and_running(host):
    service = host.service("nvidia-persistenced")
    assert service.is_enabled and service.is_running


def test_fabric_manager_only_on_nvswitch_at_the_drivers_exact_version(host, name):
    fm = host.package("nvidia-fabricmanager")
    if name == "ct200-gpuhost":
        assert not fm.is_installed
    else:
        assert fm.is_installed and fm.version == DRIVER[name] == host.package("nvidia-driver-cuda").version
        assert host.check_output("dpkg-query -W -f='${Status}' nvidia-fabricmanager").startswith("hold ")
        assert host.service("nvidia-fabricmanager").is_running


def test_open_kernel_module_flavour(host):
    assert host.check_output("modinfo -F license nvidia") == "Dual MIT/GPL"


def test_gpu_facts(host, name):
    facts = host.ansible("nvidia_gpu_facts", check=False)["ansible_facts"]["nvidia_gpu"]
    expected = {"ct200-gpuhost": (8, 97887, False), "hgx-gpuhost": (8, 143771, True)}[name]
    assert (facts["count"], facts["memory_mib_min"], facts["nvswitch"]) == expected
    assert facts["source"] == "nvidia-smi" and facts["driver_version"] == DRIVER[name].split("-")[0]
    assert facts["module_flavour"] == "open"


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
