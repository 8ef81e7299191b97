"""lib/sglang_state/run_record.py: one record per host and run, on the controller; what a phase action reads of an
earlier phase (its own or a peer's), never handed through YAML. Failure paths: a missing peer named, a record that
is not one this code wrote refused with its path."""

import os

import pytest
from sglang_state import run_record


def test_a_host_without_a_record_reads_empty_and_a_written_one_reads_back(tmp_path):
    folder = str(tmp_path / "sglang-run")
    assert run_record.read(folder, "ct200") == {}
    record = run_record.with_result({}, "deploy", {"phase": "render", "files_changed": True,
                                                   "invocation": {"module_args": {"api_key": "sk-x"}}},
                                    run={"began": 1.0})
    run_record.write(folder, "ct200", record)
    assert run_record.read(folder, "ct200") == {"run": {"began": 1.0},
                                                "results": {"deploy": {"phase": "render", "files_changed": True}}}
    assert oct(os.stat(folder).st_mode & 0o777) == "0o700"


def test_an_inventory_name_with_a_slash_is_one_file_in_the_folder(tmp_path):
    folder = str(tmp_path)
    run_record.write(folder, "../../etc/evil", {"run": {}})
    assert os.listdir(folder) == ["..%2F..%2Fetc%2Fevil.json"]
    assert run_record.read(folder, "../../etc/evil") == {"run": {}}


def test_a_run_that_begins_keeps_only_the_first_look_and_the_runtime_install():
    record = {"run": {"changed_this_run": True}, "results": {"observe": {"proven": True}, "install": {"clock": {}},
                                                            "deploy": {}, "prove": {}}}
    assert run_record.begin(record, 5.0) == {"run": {"began": 5.0}, "results": {"observe": {"proven": True},
                                                                                "install": {"clock": {}}}}


def test_peers_are_read_in_order_and_a_node_without_the_step_is_named(tmp_path):
    folder = str(tmp_path)
    run_record.write(folder, "n0", {"results": {"look": {"status": 200}}})
    run_record.write(folder, "n1", {"results": {"deploy": {}}})
    assert run_record.peers(folder, ["n0"], "look", "the look") == {"n0": {"status": 200}}
    with pytest.raises(ValueError, match="n1 has no look: the look did not run there"):
        run_record.peers(folder, ["n0", "n1"], "look", "the look")


@pytest.mark.parametrize("content, said", [(b"[1]", "is not a mapping"), (b"{nope", "is not JSON"),
                                           (b" " * (run_record.MAX_BYTES + 1), "is over")])
def test_a_record_this_code_did_not_write_is_refused_with_its_path(tmp_path, content, said):
    (tmp_path / "ct200.json").write_bytes(content)
    with pytest.raises(run_record.RecordError, match=said) as error:
        run_record.read(str(tmp_path), "ct200")
    assert str(tmp_path / "ct200.json") in str(error.value)


def test_the_run_facts_are_the_deploys_last_findings_and_the_proofs_result():
    deployed = {"phase": "verify", "facts": {"sglang_boot": {"pool_tokens": 5}, "calibration_in_use": {}}}
    assert run_record.run_facts({"results": {"deploy": deployed}}) == deployed["facts"]
    recorded = {"phase": "record", "smoke": {"level": "check"}, "level": {"level": "check"}, "last_full": {"at": 1}}
    assert run_record.run_facts({"results": {"deploy": deployed, "record": recorded}}) == dict(
        deployed["facts"], sglang_smoke={"level": "check"}, sglang_proof_level={"level": "check"},
        sglang_proof_record={"at": 1})
    # a failed deploy phase found nothing to report; a failed record phase proved nothing
    assert run_record.run_facts({"results": {"deploy": {"failed": True, "msg": "x"},
                                             "record": dict(recorded, failed=True)}}) == {}
    assert run_record.run_facts({}) == {}
