"""host_role_record on a record with fields of the wrong type, or a path that cannot hold one (issue 27, probe day 2
N11): the role runs in full, or the refusal is a sentence; never a bare Python error."""

import pytest
from test_host_role_record import run


@pytest.mark.parametrize("content", ['{"files": ["a"]}', '{"files": "abc"}', '{"files": 5}',
                                     '{"packages": ["x"]}', '{"packages": {"x": 5}}', '{"facts": [1]}',
                                     '{"facts": "x"}', "[" * 200_000])
def test_a_record_of_the_wrong_shape_runs_the_role_in_full(tmp_path, content):
    path = tmp_path / "record.json"
    path.write_text(content)
    result = run(tmp_path, path=str(path), inputs={})
    assert "failed" not in result, result
    assert result["unchanged"] is False and result["reasons"] and result["facts"] == {}


@pytest.mark.parametrize("where", ["folder", "missing"])
def test_a_record_path_that_cannot_hold_a_file_is_a_sentence(tmp_path, where):
    path = tmp_path / "rec"
    if where == "folder":
        path.mkdir()
    else:
        path = tmp_path / "nowhere" / "rec.json"
    result = run(tmp_path, path=str(path), inputs={}, state="record")
    assert result["failed"] and "Cannot record the host at" in result["msg"] and "defect" not in result["msg"]
