"""host_role_record on a record with fields of the wrong type, or a path that cannot hold one (issue 27, probe day 2
N11): the role runs in full, or the refusal is a sentence; never a bare Python error."""

import pytest
from test_host_role_record import run


def whole_record(**odd):
    """A record this module would have written for inputs={} on this kernel, with `odd` fields put in: the fields'
    types are read only when the version, the inputs and the kernel match (the probe's records did)."""
    import json
    import os

    import host_role_record

    return json.dumps(dict({"version": host_role_record.VERSION, "inputs": host_role_record.digest({}),
                            "kernel": os.uname().release, "files": {}, "packages": {}, "facts": {}}, **odd))


@pytest.mark.parametrize("content", [whole_record(files=["a"]), whole_record(files="abc"), whole_record(files=5),
                                     whole_record(packages=["x"]), whole_record(packages={"x": 5}),
                                     whole_record(facts=[1]), whole_record(facts="x"), '{"files": ["a"]}',
                                     "[" * 200_000],
                         ids=["files a list", "files a string", "files a number", "packages a list",
                              "a package a number", "facts a list", "facts a string", "no version", "deep"])
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
