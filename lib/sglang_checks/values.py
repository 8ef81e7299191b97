"""Refuse, before anything changes, every inventory value that would inject into, escape from, or break a file
the roles write: the unit, the env file, SGLang's --config file, argv, a path, a URL.

    refusals(host, variables) -> [one sentence per bad value]

`variables` are one host's variables after the roles' defaults (sglang_*, sglang_router_*), as hostvars give
them; a knob that is absent is not checked (its default applies). Each sentence names the host, the variable,
the value (a secret's only by its type and length) and the fix. Plain Python: no Ansible import, so the
controller-side check phase and the unit tests call the same code. docs/security.md lists what is checked.
"""

import ipaddress
import math
import os
import re
from collections.abc import Mapping

from sglang_checks import flags

# Characters a path may hold: the unit's settings (WorkingDirectory=, ReadWritePaths=, Environment=) give
# whitespace, quotes, backslashes and `%` (specifiers) a meaning, and ReadWritePaths= splits on spaces.
PATH_CHARS = re.compile(r"^/[A-Za-z0-9._+@,:=~/-]*$")
# A systemd unit name without its suffix (no `@`: that would be a template), an interface list for NCCL.
UNIT_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
USER_NAME = re.compile(r"^[a-z_][a-z0-9_-]{0,31}$")
SERVER_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
SERVED_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:/@+-]{0,255}$")
ENV_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
IFNAME = re.compile(r"^[A-Za-z0-9_.:^=,-]{1,255}$")
HF_REPO = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*(/[A-Za-z0-9][A-Za-z0-9._-]*)?$")
HF_REVISION = re.compile(r"^[A-Za-z0-9._/-]{1,255}$")
HOSTNAME_LABEL = re.compile(r"^(?!-)[A-Za-z0-9-]{1,63}(?<!-)$")
URL = re.compile(r"^https?://[A-Za-z0-9.\[\]:_-]+(:\d{1,5})?(/[A-Za-z0-9._~/%+-]*)?$")

# Where no path of the roles may point: pseudo file systems and the system's own folders (the roles create and
# chown what these paths name, as the service user's), and the world-writable /tmp and /var/tmp (another local
# user could plant a symlink there that the role's chown would follow; the units' PrivateTmp= hides them too).
FORBIDDEN_ROOTS = ("/proc", "/sys", "/dev", "/run", "/boot", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32",
                   "/etc", "/usr/bin", "/usr/sbin", "/usr/lib", "/usr/include", "/usr/share", "/tmp", "/var/tmp")
# Folders that must not be a path of the roles themselves (they would be chowned to the service user).
SYSTEM_DIRS = {"/", "/opt", "/srv", "/var", "/var/lib", "/var/cache", "/var/log", "/var/backups", "/var/spool",
               "/usr", "/usr/local", "/mnt", "/media", "/data", "/home", "/root"}
# The controller's report folder: not under these either (see report_dir()).
CONTROLLER_FORBIDDEN = ("/proc", "/sys", "/dev", "/run", "/boot", "/bin", "/sbin", "/lib", "/lib32", "/lib64",
                        "/etc", "/usr", "/var/lib", "/var/log", "/var/spool")

INT_MAX = 2**31 - 1


class Refusal(Exception):
    """One bad value: `problem` says what is wrong, `fix` what to write instead; `item`, when set, is the list
    item at fault (the sentence then shows it instead of the whole list)."""

    def __init__(self, problem, fix, item=None):
        super().__init__(problem)
        self.problem, self.fix, self.item = problem, fix, item


class Refusals(Exception):
    """Several bad items of one list, each a Refusal."""

    def __init__(self, refusals):
        super().__init__("; ".join(refusal.problem for refusal in refusals))
        self.refusals = refusals


def show(value, secret=False):
    """The value as the sentence shows it: a secret by its type and length only, anything else by its repr,
    cut at 80 characters (a newline shows as \\n)."""
    if secret:
        unit = "characters" if isinstance(value, str) else "items"
        size = " of %d %s" % (len(value), unit) if isinstance(value, str | list | dict) else ""
        return "a %s%s (hidden)" % (type(value).__name__, size)
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _text(value, what="a string"):
    if not isinstance(value, str):
        raise Refusal("is a %s, not %s" % (type(value).__name__, what), "give %s" % what)
    bad = [char for char in value if ord(char) < 32 or ord(char) == 127]
    if bad:
        raise Refusal("holds the control character %r (a newline would add a line to the file it reaches)"
                      % bad[0], "remove it")
    return value


def plain_path(value):
    """An absolute path whose characters mean nothing to systemd or a shell, without `..` or `//`."""
    _text(value, "an absolute path")
    if not PATH_CHARS.match(value):
        raise Refusal("is not an absolute path of letters, digits and . _ + @ , : = ~ - /",
                      "give an absolute path such as /srv/models/name, without spaces, quotes, $, % or \\")
    parts = value.rstrip("/").split("/")[1:]
    if ".." in parts or "." in parts or "" in parts:
        raise Refusal("holds a '..', '.' or empty component", "give the path in its plain form")
    return "/" + "/".join(parts)


def owned_path(value):
    """A path the roles create, chown to the service user or let the service read: not a system folder, not
    under one, not under /tmp. (/home and /root are not refused, but the units' ProtectHome= hides them from the
    service: it would fail to start, and the role's wait reports systemd's error.)"""
    path = plain_path(value)
    under = [root for root in FORBIDDEN_ROOTS if path == root or path.startswith(root + "/")]
    if under:
        raise Refusal("is under %s, a folder the roles must not create or chown (or that the service cannot see)"
                      % under[0], "use a folder of its own, e.g. under /srv, /opt or /var/lib")
    if path in SYSTEM_DIRS:
        raise Refusal("is a system folder that the roles would chown to the service user",
                      "use a folder of its own below it, e.g. %s/sglang" % path.rstrip("/"))
    return path


def integer(value, low, high=INT_MAX, none_ok=False):
    """A whole number in [low, high]: an int, a string of digits, or a float with no fraction. A bool, inf,
    nan or a number past `high` is refused (Python would turn inf into a traceback, 1e30 into nonsense)."""
    if value is None and none_ok:
        return value
    if isinstance(value, bool):
        raise Refusal("is a boolean, not a number", "give a whole number from %d to %d" % (low, high))
    number = value
    if isinstance(value, str) and re.match(r"^\s*-?\d+\s*$", value):
        number = int(value)
    if isinstance(number, float):
        if not math.isfinite(number) or number != int(number):
            raise Refusal("is not a whole number", "give a whole number from %d to %d" % (low, high))
        number = int(number)
    if not isinstance(number, int):
        raise Refusal("is not a whole number", "give a whole number from %d to %d" % (low, high))
    if not low <= number <= high:
        raise Refusal("is out of range", "give a whole number from %d to %d" % (low, high))
    return number


def real(value, low, high, none_ok=False):
    """A finite number in [low, high] (an int, a float or a numeric string)."""
    if value is None and none_ok:
        return value
    try:
        number = float(value) if not isinstance(value, bool) else None
    except (TypeError, ValueError):
        number = None
    if number is None or not math.isfinite(number) or not low <= number <= high:
        raise Refusal("is not a finite number from %g to %g" % (low, high), "give a number from %g to %g" % (low, high))
    return number


def pattern(regex, what, example):
    def check(value):
        if not regex.match(_text(value, what)):
            raise Refusal("is not %s" % what, "give %s such as %s" % (what, example))
    return check


def host_address(value, empty_ok=False):
    """An IPv4 or IPv6 address, or a DNS name (RFC 1123 labels)."""
    if value == "" and empty_ok:
        return
    _text(value, "an address or a host name")
    try:
        ipaddress.ip_address(value)
        return
    except ValueError:
        pass
    labels = value.rstrip(".").split(".")
    if len(value) > 253 or not all(HOSTNAME_LABEL.match(label) for label in labels):
        raise Refusal("is neither an IP address nor a host name",
                      "give an address (127.0.0.1, 0.0.0.0, ::1, ::) or a host name such as gpu1.example.net")


def secret(value, empty_ok=True):
    """A key or token: a string of printable characters without spaces (it is sent in an HTTP header and
    written to a file as one line). A list or a mapping would be rendered as its Python text."""
    if value in ("", None) and empty_ok:
        return
    if not isinstance(value, str):
        raise Refusal("is not a string", "give the key as one quoted string (from the vault)")
    if not value or any(ord(char) <= 32 or ord(char) == 127 for char in value):
        raise Refusal("holds whitespace or a control character", "give the key as one word of printable characters")


def port(value):
    integer(value, 1, 65535)


def environment(value):
    """The env file's variables: names as a shell writes them, values without a line break (systemd's
    EnvironmentFile= reads one variable per line; the template quotes each value)."""
    if not isinstance(value, Mapping):
        raise Refusal("is not a mapping", "give {NAME: value, ...}")
    for name, item in value.items():
        if not isinstance(name, str) or not ENV_KEY.match(name):
            raise Refusal("has the variable name %r, which systemd's env file cannot hold" % (name,),
                          "use letters, digits and _ (not first a digit)")
        owner = ENV_OWNERS.get(name)
        if owner:
            raise Refusal("sets %s, which the role sets from %s" % (name, owner), "set %s instead" % owner)
        if isinstance(item, Mapping | list | tuple) or item is None:
            raise Refusal("gives %s a %s" % (name, type(item).__name__), "give %s a string or a number" % name)
        if isinstance(item, str) and any(ord(char) < 32 and char != "\t" or ord(char) == 127 for char in item):
            raise Refusal("gives %s a value with a line break or control character (it would add a line to the"
                          " env file)" % name, "remove it")


ENV_OWNERS = {"HOME": "sglang_home", "NCCL_SOCKET_IFNAME": "sglang_nccl_socket_ifname",
              "GLOO_SOCKET_IFNAME": "sglang_gloo_socket_ifname"}


def string_list(value):
    if isinstance(value, str) or not isinstance(value, list | tuple):
        raise Refusal("is not a list", "give a list, e.g. [--enable-metrics]")
    for item in value:
        if isinstance(item, bool) or not isinstance(item, str | int | float):
            raise Refusal("holds %s, which is not a string or a number" % show(item), "give one argument per item")
        if isinstance(item, str):
            _text(item)


def speculative(value):
    if not isinstance(value, Mapping):
        raise Refusal("is not a mapping", "give {} (off) or {algorithm: ..., draft_model_path: ...}")
    for key, check in (("draft_model_path", owned_path), ("draft_model_hf_repo", _optional(HF_REPO_CHECK)),
                       ("draft_model_hf_revision", _optional(HF_REVISION_CHECK)),
                       ("num_steps", lambda v: integer(v, 1, 64, none_ok=True)),
                       ("eagle_topk", lambda v: integer(v, 1, 64, none_ok=True)),
                       ("num_draft_tokens", lambda v: integer(v, 1, 1024, none_ok=True)),
                       ("algorithm", _optional(pattern(re.compile(r"^[A-Za-z0-9_]{1,32}$"), "an algorithm name",
                                                        "DFLASH or EAGLE3")))):
        if key in value and value[key] not in (None, ""):
            try:
                check(value[key])
            except Refusal as refusal:
                raise Refusal("has %s %s, which %s" % (key, show(value[key]), refusal.problem), refusal.fix) from None


def _optional(check):
    return lambda value: None if value in ("", None) else check(value)


def report_dir(value):
    """The controller's report folder. Empty: the repository's reports/. Otherwise an absolute path (a relative
    one would depend on where ansible-playbook runs) outside the system's folders, whose nearest existing folder
    the operator who runs Ansible owns: the report task creates it with that operator's rights."""
    if value in ("", None):
        return
    path = plain_path(value)
    under = [root for root in CONTROLLER_FORBIDDEN if path == root or path.startswith(root + "/")]
    if under or path in SYSTEM_DIRS:
        raise Refusal("is under %s, a system folder" % (under[0] if under else path),
                      "leave it empty (the repository's reports/) or give a folder of yours, e.g. ~/sglang-reports")
    existing = path
    while not os.path.exists(existing):
        existing = os.path.dirname(existing)
    if os.stat(existing).st_uid != os.getuid():
        raise Refusal("is in %s, which the user running Ansible does not own" % existing,
                      "leave it empty (the repository's reports/) or give a folder you own")


def _extra_args(knob, table, owners_by_flag, value, what):
    string_list(value)
    owners = {table[flag]: text for flag, text in owners_by_flag.items() if flag in table}
    found = [refusal for refusal in (_extra_arg(knob, table, owners, item, what) for item in value) if refusal]
    if found:
        raise Refusals(found)


def _extra_arg(knob, table, owners, item, what):
    """The Refusal of one extra argument, or None."""
    if not isinstance(item, str):
        return None
    kind, found = flags.resolve(item, table)
    name = item.split("=", 1)[0]
    if kind == "end":
        return Refusal("holds '--', after which %s takes nothing" % what, "remove it", item)
    if kind == "ambiguous":
        return Refusal("is %s, a prefix of %s, which %s refuses as ambiguous" % (name, ", ".join(found), what),
                       "write the option out in full", item)
    if kind == "value" and item.startswith("-") and " " in item:
        return Refusal("is an option and its value in one item", "give them as two items", item)
    if kind == "option" and found == "help":
        return Refusal("makes %s print its help and exit" % what, "remove it", item)
    if kind == "option" and found in owners:
        spelled = "" if table.get(name) == found else " (%s reads it as %s)" % (what, _long_name(table, found))
        shown = name + "=<hidden>" if found in SECRET_DESTS and "=" in item else item
        return Refusal("sets %s%s, which %s" % (name, spelled, owners[found]), "remove it from %s" % knob, shown)
    return None


# The dests whose value is a secret: an item `--api-key=X` is shown without X.
SECRET_DESTS = {"api_key", "admin_api_key", "ssl_keyfile_password", "control_plane_api_keys"}


def _long_name(table, dest):
    return min((name for name, d in table.items() if d == dest), key=lambda n: (not n.startswith("--"), len(n), n))


# The options the sglang role renders itself (roles/sglang/templates/sglang.service.j2), the plan's
# (lib/sglang_kvplan/plan.py, server.py), and the secrets, which must never be in argv (/proc/PID/cmdline).
# Keyed by the option string the role writes; each release's table says which dest it reaches (0.5.9 calls
# --tp-size's dest tensor_parallel_size, 0.5.23 tp_size), and any spelling of that dest is refused.
SGLANG_OWNERS = {
    "--model-path": "the role sets from sglang_model_path",
    "--served-model-name": "the role sets from sglang_served_model_name",
    "--host": "the role sets from sglang_host (the API key check depends on it)",
    "--port": "the role sets from sglang_port",
    "--tp-size": "the role sets from sglang_tp_size (the plan is computed for it)",
    "--pp-size": "the role sets from sglang_pp_size (the plan is computed for it)",
    "--dp-size": "the role sets from sglang_dp_size (the plan is computed for it)",
    "--enable-dp-attention": "the role sets from sglang_enable_dp_attention (the plan is computed for it)",
    "--attn-dp-size": "the plan derives from sglang_dp_size and sglang_enable_dp_attention",
    "--config": "the role sets (its --config file holds sglang_api_key)",
    "--api-key": "belongs in sglang_api_key (the role puts it in the --config file, never in argv)",
    "--admin-api-key": "takes a secret, and every local user reads argv (/proc/PID/cmdline); the role has no "
                       "admin key knob",
    "--ssl-keyfile-password": "takes a secret, and every local user reads argv (/proc/PID/cmdline)",
    "--context-length": "the plan sets from sglang_context_target",
    "--max-total-tokens": "the plan sets (the pool's pin; see sglang_pool_policy)",
    "--mem-fraction-static": "the plan sets (from sglang_min_headroom_gib and the calibration)",
    "--max-running-requests": "the plan sets from sglang_max_running_requests",
    "--kv-cache-dtype": "the plan sets from sglang_kv_cache_dtype",
    "--page-size": "the plan sets from sglang_page_size",
    "--speculative-algorithm": "the plan sets from sglang_speculative.algorithm",
    "--speculative-draft-model-path": "the plan sets from sglang_speculative.draft_model_path",
    "--speculative-num-steps": "the plan sets from sglang_speculative.num_steps",
    "--speculative-eagle-topk": "the plan sets from sglang_speculative.eagle_topk",
    "--speculative-num-draft-tokens": "the plan sets from sglang_speculative.num_draft_tokens",
    "--nnodes": "the plan sets from sglang_nodes",
    "--node-rank": "the plan sets from sglang_nodes",
    "--dist-init-addr": "the plan sets from sglang_dist_init_host and sglang_dist_init_port",
    "--dist-timeout": "the plan sets from sglang_dist_timeout",
}

# The options the sglang_router role renders (roles/sglang_router/templates/sglang-router.service.j2).
ROUTER_OWNERS = dict(
    {"--" + dest.replace("_", "-"): "the role sets from sglang_router_%s" % knob for dest, knob in (
        ("host", "host"), ("port", "port"), ("policy", "policy"), ("prometheus_host", "prometheus_host"),
        ("prometheus_port", "prometheus_port"), ("health_check_interval_secs", "health_check_interval_s"),
        ("health_check_timeout_secs", "health_check_timeout_s"),
        ("health_failure_threshold", "health_failure_threshold"),
        ("health_success_threshold", "health_success_threshold"),
        ("health_check_endpoint", "health_check_endpoint"), ("request_timeout_secs", "request_timeout_s"),
        ("retry_max_retries", "retry_max_retries"), ("worker_startup_timeout_secs", "worker_startup_timeout_s"),
        ("shutdown_grace_period_secs", "shutdown_grace_period_s"), ("log_level", "log_level"),
        ("worker_urls", "workers"))},
    **{"--api-key": "the role sets from the workers' sglang_api_key (read from a file, never in argv)",
       "--control-plane-api-keys": "the role sets from sglang_router_admin_api_key (read from a file, never in "
                                   "argv)"},
)

HF_REPO_CHECK = pattern(HF_REPO, "a Hub repository name", "org/model")
HF_REVISION_CHECK = pattern(HF_REVISION, "a Hub revision (branch, tag or commit)", "main")

SECRETS = {"sglang_api_key", "sglang_hf_token", "sglang_router_admin_api_key"}


def _checks(variables):
    """{knob: check(value)}; a check raises Refusal. sglang_extra_args needs the release's option table."""
    version = variables.get("sglang_version") or "0.5.23"
    sglang_table = flags.sglang_table(version)
    return {
        "sglang_home": owned_path, "sglang_venv": owned_path, "sglang_model_path": owned_path,
        "sglang_backup_dir": owned_path, "sglang_cuda_home": plain_path,
        "sglang_hf_token_file": _token_file(variables),
        "sglang_report_dir": report_dir,
        "sglang_server_name": pattern(SERVER_NAME, "a name of letters, digits, . _ - (no / or ..)", "ct200"),
        "sglang_service_name": pattern(UNIT_NAME, "a unit name of letters, digits, . _ -", "sglang"),
        "sglang_user": _user,
        "sglang_served_model_name": _optional(pattern(SERVED_NAME, "a model name of letters, digits, . _ : / @ + -",
                                                      "kimi-k2.6")),
        "sglang_host": host_address, "sglang_dist_init_host": lambda v: host_address(v, empty_ok=True),
        "sglang_port": port, "sglang_dist_init_port": port,
        "sglang_api_key": secret, "sglang_hf_token": secret,
        "sglang_environment": environment,
        "sglang_extra_args": lambda v: _extra_args("sglang_extra_args", sglang_table, SGLANG_OWNERS, v,
                                                   "SGLang %s's parser" % version),
        "sglang_speculative": speculative,
        "sglang_nccl_socket_ifname": _optional(pattern(IFNAME, "an interface list", "eth0 or ^lo,docker")),
        "sglang_gloo_socket_ifname": _optional(pattern(IFNAME, "an interface list", "eth0")),
        "sglang_model_hf_repo": _optional(HF_REPO_CHECK),
        "sglang_model_hf_revision": HF_REVISION_CHECK,
        "sglang_hf_endpoint": _optional(pattern(URL, "an http(s) URL", "https://hf-mirror.example.net")),
        "sglang_context_target": lambda v: integer(v, 1, 100_000_000),
        "sglang_tp_size": lambda v: integer(v, 1, 4096), "sglang_pp_size": lambda v: integer(v, 1, 4096),
        "sglang_dp_size": lambda v: integer(v, 1, 4096), "sglang_page_size": lambda v: integer(v, 1, 4096),
        "sglang_max_running_requests": lambda v: integer(v, 1, 1_000_000, none_ok=True),
        "sglang_dist_timeout": lambda v: integer(v, 1, 86_400),
        "sglang_ready_timeout": lambda v: integer(v, 1, 86_400 * 7),
        "sglang_drain_timeout": lambda v: integer(v, 0, 86_400),
        "sglang_backup_keep": lambda v: integer(v, 1, 1000),
        "sglang_restart_sec": lambda v: integer(v, 0, 86_400),
        "sglang_start_limit_burst": lambda v: integer(v, 1, 1000),
        "sglang_start_limit_interval_s": lambda v: integer(v, 0, 86_400 * 7),
        "sglang_smoke_timeout": lambda v: integer(v, 1, 86_400),
        "sglang_smoke_min_pool_tokens": lambda v: integer(v, 1, 100_000_000, none_ok=True),
        "sglang_smoke_context_target": lambda v: integer(v, 1, 100_000_000, none_ok=True),
        "sglang_smoke_prompt_tokens": lambda v: None if v in ("target", "full") else integer(v, 1, 100_000_000),
        "sglang_gpu_memory_mib": lambda v: real(v, 1, 16 * 1024 * 1024, none_ok=True),
        "sglang_checkpoint_gib": lambda v: real(v, 0, 1024 * 1024, none_ok=True),
        "sglang_weights_gib_per_gpu": lambda v: real(v, 0, 16 * 1024, none_ok=True),
        "sglang_preload_overhead_gib": lambda v: real(v, 0, 16 * 1024),
        "sglang_min_headroom_gib": lambda v: real(v, 0, 16 * 1024),
        "sglang_uncalibrated_margin": lambda v: real(v, 0, 1),
        "sglang_serial": serial, "sglang_calibration": calibration, "sglang_measured_boots": measured_boots,
        "sglang_nodes": nodes,
        "sglang_router_admin_api_key": secret,
        "sglang_router_venv": owned_path, "sglang_router_home": owned_path,
        "sglang_router_user": _user,
        "sglang_router_service_name": pattern(UNIT_NAME, "a unit name of letters, digits, . _ -", "sglang-router"),
        "sglang_router_host": host_address, "sglang_router_prometheus_host": host_address,
        "sglang_router_port": port, "sglang_router_prometheus_port": port,
        "sglang_router_extra_args": lambda v: _extra_args("sglang_router_extra_args", flags.router_table(),
                                                          ROUTER_OWNERS, v, "sglang-router 0.3.2's parser"),
        **{"sglang_router_%s" % name: (lambda v, low=low: integer(v, low, 86_400 * 7)) for name, low in (
            ("health_check_interval_s", 1), ("health_check_timeout_s", 1), ("health_failure_threshold", 1),
            ("health_success_threshold", 1), ("request_timeout_s", 1), ("retry_max_retries", 0),
            ("worker_startup_timeout_s", 1), ("shutdown_grace_period_s", 0), ("ready_timeout", 1),
            ("restart_sec", 0))},
    }


# Knobs whose strings are data, not settings: the checkpoint's config.json as a mapping.
FREE_FORM = {"sglang_model_config"}


def _no_control_anywhere(value, depth=0):
    """No control character in any string of a value, however nested (a list of mappings included)."""
    if isinstance(value, str):
        _text(value)
    elif isinstance(value, Mapping) and depth < 8:
        for key, item in value.items():
            _no_control_anywhere(key, depth + 1)
            _no_control_anywhere(item, depth + 1)
    elif isinstance(value, list | tuple) and depth < 8:
        for item in value:
            _no_control_anywhere(item, depth + 1)


def serial(value):
    """site.yml's batch size (`serial:`): a whole number, a percentage, or a list of those (0: all at once)."""
    items = value if isinstance(value, list) else [value]
    for item in items:
        if isinstance(item, str) and re.match(r"^\d{1,3}%$", item):
            continue
        integer(item, 0, 100_000)


def calibration(value):
    """{pre_load_avail_gib, post_load_avail_gib}: GiB as SGLang logs them (finite, 0 to 16 TiB); the keys are
    checked by tasks/assert.yml."""
    if not isinstance(value, Mapping):
        raise Refusal("is not a mapping", "give {pre_load_avail_gib: 85.3, post_load_avail_gib: 19.4} or {}")
    for key, item in value.items():
        try:
            real(item, 0, 16 * 1024)
        except Refusal as refusal:
            raise Refusal("has %s %s, which %s" % (key, show(item), refusal.problem), refusal.fix) from None


def measured_boots(value):
    """[{mem_fraction_static, pool_tokens[, setup]}]: boots measured by hand, drawn on the plan's picture
    (lib/sglang_report/picture.py; `setup`, the planner keys the boot ran under, e.g. {pool_rules: "0.5.9"})."""
    if not isinstance(value, list):
        raise Refusal("is not a list", "give [{mem_fraction_static: 0.85, pool_tokens: 101134}, ...] or []")
    for boot in value:
        keys = sorted(boot) if isinstance(boot, Mapping) else None
        if keys not in (["mem_fraction_static", "pool_tokens"], ["mem_fraction_static", "pool_tokens", "setup"]) \
                or not isinstance(boot.get("setup", {}), Mapping):
            raise Refusal("holds %s, not {mem_fraction_static, pool_tokens[, setup: {...}]}" % show(boot),
                          "give each boot as {mem_fraction_static: 0.85, pool_tokens: 101134}")
        try:
            real(boot["mem_fraction_static"], 0.01, 1)
            integer(boot["pool_tokens"], 0, 100_000_000)
        except Refusal as refusal:
            raise Refusal("holds %s, which %s" % (show(boot), refusal.problem), refusal.fix) from None


def nodes(value):
    """sglang_nodes: inventory names in rank order."""
    if not isinstance(value, list) or not all(isinstance(item, str) and item for item in value):
        raise Refusal("is not a list of inventory names", "give [ct400-a, ct400-b] (rank order) or []")
    for item in value:
        _text(item)


def _user(value):
    pattern(USER_NAME, "a user name (lower case letters, digits, _ -)", "sglang")(value)
    if value == "root":
        raise Refusal("is root, but the service runs unprivileged (its unit drops every capability)",
                      "use a user of its own, e.g. sglang")


def _token_file(variables):
    def check(value):
        path = plain_path(value)
        home, folder = variables.get("sglang_home"), os.path.dirname(path)
        if isinstance(home, str) and path.startswith(home.rstrip("/") + "/"):
            return  # download.yml creates the folders below sglang_home, the service user's
        if folder == "/etc/%s" % variables.get("sglang_service_name", "sglang"):
            return  # the service's own folder under /etc (root:<user> 0750), which the role creates
        try:
            owned_path(folder)
        except Refusal as refusal:
            raise Refusal("is in %s, which %s" % (folder, refusal.problem),
                          "put it under sglang_home (the default), in /etc/<sglang_service_name>/, or in a folder of "
                          "its own that exists") from None
    return check


def refusals(host: str, variables: Mapping) -> list[str]:
    """One sentence per bad value of `host`'s `variables` (empty when all are fine)."""
    found = []
    checks = _checks(variables)
    for knob in sorted(variables):
        if not isinstance(knob, str) or not knob.startswith("sglang_"):
            continue
        value = variables[knob]
        check = checks.get(knob)
        try:
            if check is not None:
                check(value)
            elif knob not in FREE_FORM:
                _no_control_anywhere(value)  # any other knob: no line break or NUL either (it reaches a file or argv)
        except Refusal as refusal:
            found.append(_sentence(host, knob, value, refusal))
        except Refusals as many:
            found.extend(_sentence(host, knob, value, refusal) for refusal in many.refusals)
    return found


def _sentence(host, knob, value, refusal):
    if refusal.item is not None:
        return "%s: %s holds %s: it %s; %s." % (host, knob, show(refusal.item, knob in SECRETS), refusal.problem,
                                               refusal.fix)
    return "%s: %s is %s: it %s; %s." % (host, knob, show(value, knob in SECRETS), refusal.problem, refusal.fix)
