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
