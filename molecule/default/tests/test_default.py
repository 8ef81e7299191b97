"""After site.yml on the simulated ct200: the unit's flags, the service, the calibration, a backup."""

import json

UNIT = "/etc/systemd/system/sglang.service"


def journal(host):
    return host.run("journalctl -u sglang --no-pager -n 40").stdout


def test_unit_carries_the_calibrated_plan(host):
    unit = host.file(UNIT).content_string
    assert "--context-length 200000 --mem-fraction-static 0.926 --max-running-requests 1" in unit
    assert "-m sglang.launch_server" in unit and "--tp-size 8" in unit and "--host 127.0.0.1" in unit
    assert unit.startswith("#\n# Ansible managed")
    for hardening in ("User=sglang", "NoNewPrivileges=yes", "ProtectSystem=strict", "PrivateTmp=yes"):
        assert hardening in unit


def test_env_file_is_private_and_holds_the_api_key(host):
    env = host.file("/etc/sglang/sglang.env")
    assert env.mode == 0o600 and env.user == "root"
    assert env.contains("SGLANG_DOUBLE_GPU=/etc/sglang-double/gpu.json")
    assert env.contains("^SGLANG_API_KEY=molecule-not-a-secret$")
    unit = host.file(UNIT).content_string
    assert "--api-key ${SGLANG_API_KEY}" in unit and "molecule-not-a-secret" not in unit
    assert host.check_output("curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:30000/server_info") == "401"


def test_sglang_and_the_kernel_wheel_at_their_versions(host):
    pip = "/opt/sglang/venv/bin/pip show %s"
    assert "Version: 0.5.9+double" in host.check_output(pip % "sglang")
    assert "Version: 0.3.1" in host.check_output(pip % "ddtree-kernels")


def test_service_active_and_serving_the_pool(host):
    service = host.service("sglang")
    assert service.is_running and service.is_enabled, journal(host)
    info = json.loads(host.check_output("curl -s -H 'Authorization: Bearer molecule-not-a-secret' http://127.0.0.1:30000/server_info"))
    assert info["max_total_num_tokens"] >= 200_000
    assert host.check_output("ps -o user= -C python3 -C python | sort -u").strip() in ("sglang",), journal(host)


def test_two_starts_in_total_one_of_them_corrective(host):
    boots = host.check_output("journalctl -u sglang --no-pager -o cat | grep -c 'Load weight begin. avail mem' || true")
    assert int(boots) == 2 * 8, journal(host)  # 8 TP ranks log each boot: the estimate's and the corrected one


def test_calibration_stored_as_a_local_fact(host):
    fact = json.loads(host.file("/etc/ansible/facts.d/sglang_calibration.fact").content_string)
    (key, entry), = fact["entries"].items()
    assert key.startswith("/srv/models/kimi-k2.6@") and "tp8 pp1 dp1" in key and "sglang-0.5.9+double" in key
    assert entry["pre_load_avail_gib"] == 85.33 and abs(entry["post_load_avail_gib"] - 19.419) < 0.002
    assert entry["pool_tokens"] < 200_000  # measured on the estimate's boot, which fell short
    local = host.ansible("setup", "filter=ansible_local")["ansible_facts"]["ansible_local"]
    assert local["sglang_calibration"]["entries"][key]["pre_load_avail_gib"] == 85.33


def test_backup_of_the_replaced_unit(host):
    backups = host.check_output("ls /var/backups/sglang").split()
    assert len(backups) == 1  # the estimate's unit, replaced by the corrected one
    old = host.file("/var/backups/sglang/%s/sglang.service" % backups[0]).content_string
    assert "--mem-fraction-static 0.889" in old
    meta = json.loads(host.file("/var/backups/sglang/%s/backup.json" % backups[0]).content_string)
    assert meta["context_target"] == 200_000
    assert host.file("/var/backups/sglang/%s/sglang.env" % backups[0]).mode == 0o600
