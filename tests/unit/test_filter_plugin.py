"""The filter plugin is a thin layer: same results, Ansible's error type."""

import pytest
from ansible.errors import AnsibleFilterError
from sglang_kv import FilterModule

FILTERS = FilterModule().filters()
SPEC = {"model": "kimi-k2.6", "tp_size": 8, "pre_load_avail_gib": 85.334, "post_load_avail_gib": 19.419}


def test_filters_are_registered():
    assert set(FILTERS) == {"sglang_kv_cell_bytes", "sglang_kv_pool_tokens", "sglang_kv_plan", "sglang_kv_calibration",
                            "sglang_release_rules", "sglang_kv_server_node", "sglang_kv_server_inputs"}


def test_release_rules_by_version_and_for_forks():
    assert FILTERS["sglang_release_rules"]("0.5.23+double")["torch_cuda"] == "13.0"
    assert FILTERS["sglang_release_rules"]("0.5.20")["name"] == "0.5.20"  # every release by its own rules
    assert FILTERS["sglang_release_rules"]("0.5.10")["min_driver_branch"] == 575  # cuda-python 12.9
    with pytest.raises(AnsibleFilterError, match="0.6.0 is newer than 0.5.23"):
        FILTERS["sglang_release_rules"]("0.6.0")
    assert FILTERS["sglang_release_rules"]("9.9", "0.5.9")["min_driver_branch"] == 575
    with pytest.raises(AnsibleFilterError, match="sglang_version"):
        FILTERS["sglang_release_rules"]("main")


def test_forward_uses_spec_fraction_or_argument():
    assert FILTERS["sglang_kv_pool_tokens"](dict(SPEC, mem_fraction_static=0.94)) == \
        FILTERS["sglang_kv_pool_tokens"](SPEC, 0.94)


def test_errors_become_ansible_filter_errors():
    with pytest.raises(AnsibleFilterError, match="mem_fraction_static"):
        FILTERS["sglang_kv_pool_tokens"](SPEC)
    with pytest.raises(AnsibleFilterError, match="does not fit"):
        FILTERS["sglang_kv_plan"](dict(SPEC, context_target=400_000))


def test_server_filters_raise_ansible_errors_naming_the_node_list():
    assert FILTERS["sglang_kv_server_node"]([], "ct200") == {"nnodes": 1, "node_rank": 0, "nodes": ["ct200"],
                                                             "rank0": "ct200"}
    with pytest.raises(AnsibleFilterError, match="sglang_nodes"):
        FILTERS["sglang_kv_server_node"](["a", "b"], "ct200")
    with pytest.raises(AnsibleFilterError, match="node b"):
        FILTERS["sglang_kv_server_inputs"]([{"node": "a", "gpu_memory_mib": 1000},
                                            {"node": "b", "gpu_memory_mib": "none"}])
