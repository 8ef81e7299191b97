"""Per-distribution names of the nvidia_driver role, rendered by the role's own tasks (tasks/distro.yml) on
localhost, with the distribution and the running kernel given as they would come from the host's facts.

This is what is proven for Ubuntu here: the variables file is found, and the package names, the repository,
its key and the kernel-headers metapackage resolve as below. Not proven: that NVIDIA's Ubuntu repository has
these packages at these versions, or that the role converges on Ubuntu (no Ubuntu image can be built here)."""

import json
import os
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PLAYBOOK_BIN = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")
PLAY = """
- hosts: localhost
  gather_facts: false
  connection: local
  tasks:
    - ansible.builtin.include_role:
        name: nvidia_driver
        tasks_from: distro.yml
        public: true
    - ansible.builtin.copy:
        dest: "{{ out }}"
        content: "{{ {'repo': _nvidia_driver_repo_url, 'key': _nvidia_driver_repo_key_url,
                      'packages': _nvidia_driver_packages, 'module': _nvidia_driver_module_package,
                      'all': _nvidia_driver_all_packages,
                      'headers_meta': _nvidia_driver_headers_metapackage} | to_json }}"
        mode: "0644"
"""


def render(tmp_path, os_name, kernel, **extra):
    play = tmp_path / "render.yml"
    play.write_text(PLAY)
    out = tmp_path / "out.json"
    variables = {"__nvidia_driver_os": os_name, "__nvidia_driver_kernel": kernel, "out": str(out),
                 "ansible_python_interpreter": sys.executable,
                 "_nvidia_driver_fabricmanager_wanted": True, **extra}
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg"), ANSIBLE_NOCOLOR="1")
    result = subprocess.run([PLAYBOOK_BIN, "-i", "localhost,", str(play), "-e", json.dumps(variables)],
                            cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    return result, (json.loads(out.read_text()) if out.exists() else None)


@pytest.mark.parametrize("os_name,kernel,repo,packages,module,extra,meta", [
    ("Debian-12", "6.1.0-28-cloud-amd64", "debian12", ["nvidia-driver-cuda", "nvidia-kernel-open-dkms"],
     "nvidia-kernel-open-dkms", ["nvidia-persistenced", "nvidia-fabricmanager"], "linux-headers-cloud-amd64"),
    ("Debian-13", "6.12.48+deb13-amd64", "debian13", ["nvidia-driver-cuda", "nvidia-kernel-open-dkms"],
     "nvidia-kernel-open-dkms", ["nvidia-persistenced", "nvidia-fabricmanager"], "linux-headers-amd64"),
    ("Ubuntu-24.04", "6.8.0-45-generic", "ubuntu2404", ["nvidia-headless-580-open", "nvidia-utils-580"],
     "nvidia-dkms-580-open", ["nvidia-compute-utils-580", "nvidia-fabricmanager-580"], "linux-headers-generic"),
    ("Ubuntu-22.04", "6.8.0-1015-aws", "ubuntu2204", ["nvidia-headless-580-open", "nvidia-utils-580"],
     "nvidia-dkms-580-open", ["nvidia-compute-utils-580", "nvidia-fabricmanager-580"], "linux-headers-aws"),
])
def test_distribution_names(tmp_path, os_name, kernel, repo, packages, module, extra, meta):
    result, got = render(tmp_path, os_name, kernel)
    assert result.returncode == 0, result.stdout + result.stderr
    assert got["repo"] == "https://developer.download.nvidia.com/compute/cuda/repos/%s/x86_64/" % repo
    assert got["key"] == got["repo"] + "3bf863cc.pub"
    assert got["packages"] == packages and got["module"] == module
    assert got["all"] == list(dict.fromkeys(packages + [module] + extra))  # each once
    assert got["headers_meta"] == meta


def test_ubuntu_branch_is_part_of_the_names(tmp_path):
    result, got = render(tmp_path, "Ubuntu-24.04", "6.8.0-45-generic", nvidia_driver_branch="570",
                         nvidia_driver_flavour="proprietary")
    assert result.returncode == 0, result.stdout + result.stderr
    assert got["packages"] == ["nvidia-headless-570", "nvidia-utils-570"] and got["module"] == "nvidia-dkms-570"


def test_a_mirror_and_explicit_metapackage_win(tmp_path):
    result, got = render(tmp_path, "Debian-12", "6.18.44-fc-v595", nvidia_driver_repo_url="http://mirror.example/cuda/",
                         nvidia_driver_kernel_headers_metapackage="linux-headers-standin")
    assert result.returncode == 0, result.stdout + result.stderr
    assert got["repo"] == "http://mirror.example/cuda/" and got["key"] == "http://mirror.example/cuda/3bf863cc.pub"
    assert got["headers_meta"] == "linux-headers-standin"


def test_unknown_kernel_fails_naming_the_variable(tmp_path):
    result, got = render(tmp_path, "Debian-12", "6.18.44-fc-v595")
    assert result.returncode != 0 and got is None
    assert "6.18.44-fc-v595 is not one of Debian-12's packaged kernels" in result.stdout
    assert "nvidia_driver_kernel_headers_metapackage" in result.stdout and "Nothing was changed" in result.stdout


def test_unknown_distribution_fails_naming_the_file(tmp_path):
    result, got = render(tmp_path, "Ubuntu-20.04", "5.15.0-91-generic")
    assert result.returncode != 0 and got is None
    assert "no variables for Ubuntu-20.04" in result.stdout and "vars/Ubuntu-20.04.yml" in result.stdout
