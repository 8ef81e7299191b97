"""reboot_required from the host's state, and dkms status per kernel (real outputs in tests/fixtures/nvidia)."""
# ruff: noqa: E501 - real tool output, kept whole

import pathlib

import nvidia_driver_state as module
from ansible.module_utils.sglang_systemd import parse_show

FIXTURES = pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "nvidia"


def test_proc_version_real_files():
    # https://github.com/nix-community/nixGL/issues/186, https://github.com/dylanaraps/neofetch/issues/876
    assert module.parse_proc_version((FIXTURES / "proc-version-open-565.57.01.txt").read_text()) == ("565.57.01", "open")
    assert module.parse_proc_version((FIXTURES / "proc-version-proprietary-384.98.txt").read_text()) == ("384.98", "proprietary")
    assert module.parse_proc_version("") == (None, "none")


def test_upstream_version():
    assert module.upstream("580.95.05-1") == "580.95.05"
    assert module.upstream("1:580.95.05-0ubuntu1") == "580.95.05"
    assert module.upstream(None) is None


def test_no_driver_installed_needs_no_reboot():
    assert module.decide(None, None, "none") == []


def test_installed_but_not_loaded_needs_a_reboot():
    assert module.decide("580.95.05", None, "none") == ["no nvidia module is loaded; driver 580.95.05 is installed"]


def test_interrupted_upgrade_old_module_still_loaded():
    reasons = module.decide("580.95.05", "580.82.07", "open", "open")
    assert reasons == ["the loaded module is 580.82.07 but driver 580.95.05 is installed"]


def test_flavour_switch_needs_a_reboot_even_at_the_same_version():
    assert module.decide("580.95.05", "580.95.05", "proprietary", "open") == [
        "the loaded module is proprietary but open is wanted"]


def test_loaded_equals_installed():
    assert module.decide("580.95.05", "580.95.05", "open", "open") == []


def test_dkms_status_real_outputs_both_formats():
    # https://github.com/morrownr/rtl8852bu/issues/7 (dkms 3), https://github.com/negativo17/nvidia-driver/issues/56 (dkms 2)
    three = module.parse_dkms_status((FIXTURES / "dkms-status-3.txt").read_text())
    assert three == {("535.86.05", "6.5.0-060500rc5-generic"): "installed"}
    two = module.parse_dkms_status((FIXTURES / "dkms-status-2.txt").read_text())
    assert sorted(k for _, k in two) == ["4.17.11-200.fc28.x86_64", "4.17.12-200.fc28.x86_64", "4.17.14-202.fc28.x86_64"]


def test_dkms_per_kernel_flags_a_kernel_without_the_module():
    states = module.parse_dkms_status((FIXTURES / "dkms-status-2.txt").read_text())
    by_kernel = module.dkms_by_kernel(states, "396.45", ["4.17.12-200.fc28.x86_64", "4.18.5-200.fc28.x86_64"])
    assert by_kernel == {"4.17.12-200.fc28.x86_64": "installed", "4.18.5-200.fc28.x86_64": "missing"}
    # A module built for the kernel but at another driver version does not count.
    assert module.dkms_by_kernel(states, "580.95.05", ["4.17.12-200.fc28.x86_64"]) == {"4.17.12-200.fc28.x86_64": "missing"}


def test_the_services_state_from_one_systemctl_show():
    # systemd 252's output for a running, enabled unit, a stopped one and one it does not know (Debian 12)
    out = ("Id=nvidia-persistenced.service\nActiveState=active\nUnitFileState=enabled\n\n"
           "Id=nvidia-fabricmanager.service\nActiveState=inactive\nUnitFileState=disabled\n\n"
           "Id=nosuch.service\nActiveState=inactive\nUnitFileState=\n")
    shown = parse_show(out, ["nvidia-persistenced", "nvidia-fabricmanager.service", "nosuch"])
    assert module.services_state(shown) == {
        "nvidia-persistenced": {"active": True, "enabled": True},
        "nvidia-fabricmanager.service": {"active": False, "enabled": False},
        "nosuch": {"active": False, "enabled": False}}
    assert module.services_state(parse_show("", ["nvidia-persistenced"])) == {
        "nvidia-persistenced": {"active": False, "enabled": False}}
