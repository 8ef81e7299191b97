"""Parsing nvidia-smi, lspci, modinfo and the loaded module's files (real outputs in tests/fixtures/nvidia,
with the public thread each came from in SOURCES.md there)."""
# ruff: noqa: E501 - real tool output, kept whole

import pathlib

import nvidia_gpu_facts as module

FIXTURES = pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "nvidia"

SMI = """0, NVIDIA RTX PRO 6000 Blackwell Server Edition, 97887, 580.95.05
1, NVIDIA RTX PRO 6000 Blackwell Server Edition, 97887, 580.95.05
"""
LSPCI = """17:00.0 3D controller [0302]: NVIDIA Corporation GB202GL [RTX PRO 6000 Blackwell Server Edition] [10de:2bb5] (rev a1)
18:00.0 VGA compatible controller [0300]: NVIDIA Corporation AD102GL [RTX 6000 Ada Generation] [10de:26b1] (rev a1)
05:00.0 Bridge [0680]: NVIDIA Corporation GH100 [H100 NVSwitch] [10de:22a3] (rev a1)
00:1f.3 Audio device [0403]: Intel Corporation Device [8086:7a50] (rev 11)
"""


def fixture(name):
    return (FIXTURES / name).read_text()


def test_nvidia_smi_rows():
    gpus = module.parse_nvidia_smi(SMI)
    assert [g["memory_mib"] for g in gpus] == [97887, 97887]
    assert gpus[0]["name"] == "NVIDIA RTX PRO 6000 Blackwell Server Edition" and gpus[0]["driver_version"] == "580.95.05"
    assert module.parse_nvidia_smi("No devices were found") == []


def test_lspci_gpus_and_nvswitches():
    gpus, switches = module.parse_lspci(LSPCI)
    assert [g["name"] for g in gpus] == ["NVIDIA RTX PRO 6000 Blackwell Server Edition", "NVIDIA RTX 6000 Ada Generation"]
    assert switches == 1


def test_lspci_real_vga_line_with_prog_if():
    # https://github.com/hyprwm/Hyprland/pull/6715
    gpus, switches = module.parse_lspci(fixture("lspci-nn-rtx3080.txt"))
    assert [g["name"] for g in gpus] == ["NVIDIA GeForce RTX 3080"] and switches == 0


def test_lspci_display_controller_class_0380():
    line = "07:00.0 Display controller [0380]: NVIDIA Corporation GA107 [10de:25a2]\n"
    gpus, _ = module.parse_lspci(line)
    assert len(gpus) == 1
    # A class this parser does not know is not a GPU (0403: audio function of the same board).
    assert module.parse_lspci("01:00.1 Audio device [0403]: NVIDIA Corporation GA102 High Definition Audio Controller [10de:1aef] (rev a1)\n") == ([], 0)


def test_module_flavour_from_license():
    assert module.flavour_from_license("Dual MIT/GPL\n") == "open"
    assert module.flavour_from_license("NVIDIA\n") == "proprietary"
    assert module.flavour_from_license("") == "none"


def test_loaded_module_from_real_proc_files():
    # https://github.com/nix-community/nixGL/issues/186 and /121, https://github.com/dylanaraps/neofetch/issues/876
    assert module.loaded_module(None, None, fixture("proc-version-open-565.57.01.txt")) == ("565.57.01", "open")
    assert module.loaded_module(None, None, fixture("proc-version-open-525.60.11.txt")) == ("525.60.11", "open")
    assert module.loaded_module(None, None, fixture("proc-version-proprietary-384.98.txt")) == ("384.98", "proprietary")


def test_loaded_module_from_sysfs_prefers_it_and_reads_the_taint():
    assert module.loaded_module("580.95.05\n", "O\n", None) == ("580.95.05", "open")
    assert module.loaded_module("580.95.05\n", "PO\n", None) == ("580.95.05", "proprietary")
    assert module.loaded_module(None, None, None) == (None, "none")


def test_compute_capability_from_nvidia_smi_and_from_the_chip_lspci_names():
    # nvidia-smi --query-gpu=compute_cap --format=csv,noheader on a B200 host and a mixed one
    assert module.parse_compute_caps("10.0\n10.0\n") == "10.0"
    assert module.parse_compute_caps("12.0\n8.9\n") == "8.9"  # the lowest GPU decides
    assert module.parse_compute_caps('Field "compute_cap" is not a valid field to query.\n') is None
    gpus, _ = module.parse_lspci(LSPCI)
    assert [g["compute_capability"] for g in gpus] == ["12.0", "8.9"]  # GB202GL (RTX PRO 6000), AD102GL
    gpus, _ = module.parse_lspci(fixture("lspci-nn-rtx3080.txt"))
    assert gpus[0]["compute_capability"] == "8.6"  # GA102
    # a line built in lspci -nn's format (the chip name is what counts)
    b200 = "1b:00.0 3D controller [0302]: NVIDIA Corporation GB100 [B200] [10de:2901] (rev a1)"
    assert module.parse_lspci(b200)[0][0]["compute_capability"] == "10.0"
    assert module.compute_capability_of_chip("TU104") is None  # unknown chips say nothing
