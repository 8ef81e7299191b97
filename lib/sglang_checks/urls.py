"""The one derivation of the host part of every URL the roles build (the proof, the boot wait, a router's
worker list): an IPv6 address goes in brackets (RFC 3986), a wildcard listener is reached on loopback."""

import ipaddress


def url_host(host):
    """The host part of a URL for an address or name: '::1' -> '[::1]', 'ct200' -> 'ct200'."""
    host = str(host).strip()
    if host.startswith("[") and host.endswith("]"):
        return host
    try:
        address = ipaddress.ip_address(host.split("%", maxsplit=1)[0])
    except ValueError:
        return host
    return "[%s]" % host if address.version == 6 else host


def local_host(listen):
    """Where a check on the host itself reaches a server listening on `listen` (SGLang's --host)."""
    listen = str(listen or "").strip()
    if listen in ("", "0.0.0.0"):
        return "127.0.0.1"
    if listen == "::":
        return "[::1]"
    return url_host(listen)


def http_url(host, port):
    """http://<host>:<port>, the host bracketed when it is an IPv6 address."""
    return "http://%s:%d" % (url_host(host), int(port))


def worker_url(address, port):
    """A replica as its routers list it (--worker-urls, the admin API): http://<address>:<port>, where address is
    the replica's ansible_host or inventory name. The sglang role (the replica's own URL) and the sglang_router
    role (the boot list) both call this."""
    return http_url(address, port)


def router_endpoint(listen, port, service_name, root="/"):
    """Everything about a router host that another host's task needs, derived from its three knobs
    (sglang_router_host, sglang_router_port, sglang_router_service_name):

      url                  where a task on the router host reaches it (a wildcard listener on loopback,
                           IPv6 in brackets): http://127.0.0.1:30000, http://[::1]:30000, http://127.0.0.2:30000
      unit                 its systemd unit file; present once the router role has deployed it there
      etc                  the folder of its key files
      api_key_file         the workers' key, as the router sends it (--api-key)
      admin_api_key_file   the admin API's key (--control-plane-api-keys)

    `root` is where the host's / is (the role's tests render below a temporary folder)."""
    service_name = str(service_name).strip()
    base = "/" + str(root or "/").strip("/")
    base = base.rstrip("/")
    etc = "%s/etc/%s" % (base, service_name)
    return {
        "url": "http://%s:%d" % (local_host(listen), int(port)),
        "service": service_name,
        "unit": "%s/etc/systemd/system/%s.service" % (base, service_name),
        "etc": etc,
        "api_key_file": etc + "/api-key",
        "admin_api_key_file": etc + "/admin-api-key",
    }
