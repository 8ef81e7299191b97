"""The one derivation of where a router is reached, and of a replica's URL (lib/sglang_checks/urls.py), and what
keeps it the only one: the sglang role spells no loopback address and none of the router role's paths."""

import glob
import os
import re

import pytest
import yaml
from sglang_checks import urls

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.mark.parametrize("listen, url", [
    ("::1", "http://[::1]:30000"),            # bracketed
    ("::", "http://[::1]:30000"),             # an IPv6 wildcard is reached on ::1
    ("0.0.0.0", "http://127.0.0.1:30000"),    # an IPv4 wildcard on 127.0.0.1
    ("", "http://127.0.0.1:30000"),
    ("127.0.0.2", "http://127.0.0.2:30000"),  # one address: that address, not 127.0.0.1
    ("10.0.0.5", "http://10.0.0.5:30000"),
    ("2001:db8::5", "http://[2001:db8::5]:30000"),
    ("[::1]", "http://[::1]:30000"),
])
def test_a_router_is_reached_where_it_listens(listen, url):
    assert urls.router_endpoint(listen, 30000, "sglang-router")["url"] == url


def test_a_routers_unit_and_key_files_follow_its_service_name_and_root():
    assert urls.router_endpoint("0.0.0.0", "30100", "edge-router") == {
        "url": "http://127.0.0.1:30100", "service": "edge-router",
        "unit": "/etc/systemd/system/edge-router.service", "etc": "/etc/edge-router",
        "api_key_file": "/etc/edge-router/api-key", "admin_api_key_file": "/etc/edge-router/admin-api-key"}
    below = urls.router_endpoint("::1", 1, "r", root="/tmp/t/")
    assert below["unit"] == "/tmp/t/etc/systemd/system/r.service" and below["api_key_file"] == "/tmp/t/etc/r/api-key"


@pytest.mark.parametrize("address, port, url", [
    ("10.0.0.5", 30000, "http://10.0.0.5:30000"), ("2001:db8::5", "30001", "http://[2001:db8::5]:30001"),
    ("ct200", 30000, "http://ct200:30000"),
])
def test_a_replicas_url_as_its_routers_list_it(address, port, url):
    assert urls.worker_url(address, port) == url


def _sglang_role_files():
    for path in sorted(glob.glob(os.path.join(REPO, "roles", "sglang", "**", "*.yml"), recursive=True)):
        if os.sep + "defaults" + os.sep not in path and os.sep + "meta" + os.sep not in path:
            yield path


def test_the_sglang_role_reaches_no_router_by_a_literal_address_or_path():
    """Its tasks and vars: no loopback address in a URL (the host's own server is _sglang_local_address, a router is
    the sglang_router role's business), no read of the router role's files, no router key path."""
    found = []
    for path in _sglang_role_files():
        with open(path, encoding="utf-8") as handle:
            for number, line in enumerate(handle, 1):
                if re.search(r"https?://(127\.|\[?::1|localhost)", line) or "sglang_router/" in line \
                        or re.search(r"/etc/\{\{ *_?(service|sglang_router)", line):
                    found.append("%s:%d: %s" % (os.path.relpath(path, REPO), number, line.strip()))
    assert not found, found


def _defaults(role):
    with open(os.path.join(REPO, "roles", role, "defaults", "main.yml"), encoding="utf-8") as handle:
        return yaml.safe_load(handle)


def test_the_shared_defaults_are_the_sglang_roles():
    """sglang_common holds what the router role reads of a replica host that sets nothing: the sglang role's
    own defaults of sglang_host and sglang_port."""
    common, sglang = _defaults("sglang_common"), _defaults("sglang")
    assert common == {"sglang_common_server_host": sglang["sglang_host"],
                      "sglang_common_server_port": sglang["sglang_port"]}


def test_the_router_role_reads_no_literal_default_of_the_sglang_role():
    """Its tasks and vars take a worker's unset sglang_host/sglang_port from sglang_common, not a copy."""
    found = []
    for path in glob.glob(os.path.join(REPO, "roles", "sglang_router", "*", "*.yml")):
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
        found += re.findall(r"sglang_(?:port|host)\b[^\n]*\| *default\((?!sglang_common_)[^)]*\)", text)
    assert not found, found
