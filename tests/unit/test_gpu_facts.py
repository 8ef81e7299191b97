"""Parsing nvidia-smi, lspci and modinfo output (formats as the real tools print them)."""
# ruff: noqa: E501 - real tool output, kept whole

import nvidia_gpu_facts as module

SMI = """0, NVIDIA RTX PRO 6000 Blackwell Server Edition, 97887, 580.95.05
1, NVIDIA RTX PRO 6000 Blackwell Server Edition, 97887, 580.95.05
"""
LSPCI = """17:00.0 3D controller [0302]: NVIDIA Corporation GB202GL [RTX PRO 6000 Blackwell Server Edition] [10de:2bb5] (rev a1)
18:00.0 VGA compatible controller [0300]: NVIDIA Corporation AD102GL [RTX 6000 Ada Generation] [10de:26b1] (rev a1)
05:00.0 Bridge [0680]: NVIDIA Corporation GH100 [H100 NVSwitch] [10de:22a3] (rev a1)
00:1f.3 Audio device [0403]: Intel Corporation Device [8086:7a50] (rev 11)
"""


def test_nvidia_smi_rows():
    gpus = module.parse_nvidia_smi(SMI)
    assert [g["memory_mib"] for g in gpus] == [97887, 97887]
    assert gpus[0]["name"] == "NVIDIA RTX PRO 6000 Blackwell Server Edition" and gpus[0]["driver_version"] == "580.95.05"
    assert module.parse_nvidia_smi("No devices were found") == []


def test_lspci_gpus_and_nvswitches():
    gpus, switches = module.parse_lspci(LSPCI)
    assert [g["name"] for g in gpus] == ["NVIDIA RTX PRO 6000 Blackwell Server Edition", "NVIDIA RTX 6000 Ada Generation"]
    assert switches == 1


def test_module_flavour_from_license():
    assert module.flavour_from_license("Dual MIT/GPL\n") == "open"
    assert module.flavour_from_license("NVIDIA\n") == "proprietary"
    assert module.flavour_from_license("") == "none"
