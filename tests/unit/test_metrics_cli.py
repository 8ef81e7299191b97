"""python -m sglang_metrics, as the playbooks run it: files written, and a bad input is one sentence on stderr with
exit status 2 (no traceback)."""

import io
import json
import os

import pytest
from sglang_metrics import __main__ as cli


def run(monkeypatch, capsys, argv, stdin):
    monkeypatch.setattr("sys.stdin", io.StringIO(stdin))
    code = cli.main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_render_writes_the_folder_and_fills_the_role_s_defaults(monkeypatch, capsys, tmp_path):
    data = {"servers": {"ct200": {"groups": ["sglang_servers", "kimi_k26_dflash"], "vars": {"ansible_host": "h"}}},
            "routers": {}, "plans": {}}
    code, out, err = run(monkeypatch, capsys, ["render", "--out", str(tmp_path)], json.dumps(data))
    assert code == 0, err
    result = json.loads(out)
    assert result["servers"] == ["ct200"]  # sglang_server_name's templated default left to the rank-0 name
    assert sorted(os.listdir(tmp_path)) == sorted(["prometheus.yml", "sglang-rules.yml", "sglang-servers.json",
                                                   "sglang-routers.json", "sglang-dashboard.json"])
    assert json.loads((tmp_path / "sglang-servers.json").read_text())[0]["targets"] == ["h:30000"]


@pytest.mark.parametrize("interval", [0, "x", -5])
def test_a_bad_scrape_interval_is_one_sentence(monkeypatch, capsys, tmp_path, interval):
    code, out, err = run(monkeypatch, capsys, ["render", "--out", str(tmp_path)], json.dumps({"interval_s": interval}))
    assert code == 2 and out == ""
    assert "sglang_monitoring_scrape_interval_s is %r" % interval in err and "at least 1" in err
    assert os.listdir(tmp_path) == []


def test_input_that_is_no_json_is_one_sentence(monkeypatch, capsys, tmp_path):
    code, _, err = run(monkeypatch, capsys, ["render", "--out", str(tmp_path)], "{not json")
    assert code == 2 and "Traceback" not in err and err.count("\n") == 1


def test_a_templated_role_default_is_not_taken_as_a_value():
    class Roles:
        @staticmethod
        def default(name):
            return {"sglang_server_name": "{{ sglang_nodes[0] }}", "sglang_port": 30000}[name]
    assert cli.role_default(Roles, "sglang_server_name") is None
    assert cli.role_default(Roles, "sglang_port") == 30000
