"""Refuse, before anything changes, every inventory value that would inject into, escape from, or break a file
the roles write: the unit, the env file, SGLang's --config file, argv, a path, a URL.

    refusals(host, variables) -> [one sentence per bad value]

`variables` are one host's variables after the roles' defaults (sglang_*, sglang_router_*), as hostvars give
them; a knob that is absent is not checked (its default applies). Each sentence names the host, the variable,
the value (a secret's only by its type and length) and the fix. Plain Python: no Ansible import, so the
controller-side check phase and the unit tests call the same code. docs/security.md lists what is checked.
The kinds of check are in kinds.py, extra launch arguments in extra_args.py.
"""

import functools
import os
import re
from collections.abc import Mapping
from typing import Any

import yaml
from sglang_kvplan.spec import load_presets

from sglang_checks import extra_args, flags
from sglang_checks.kinds import (
    SYSTEM_DIRS,
    Refusal,
    Refusals,
    host_address,
    integer,
    optional,
    owned_path,
    pattern,
    plain_path,
    port,
    real,
    secret,
    show,
    text,
)

# A systemd unit name without its suffix (no `@`: that would be a template), an interface list for NCCL.
UNIT_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
USER_NAME = re.compile(r"^[a-z_][a-z0-9_-]{0,31}$")
SERVER_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
SERVED_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:/@+-]{0,255}$")
ENV_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
IFNAME = re.compile(r"^[A-Za-z0-9_.:^=,-]{1,255}$")
HF_REPO = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*(/[A-Za-z0-9][A-Za-z0-9._-]*)?$")
HF_REVISION = re.compile(r"^[A-Za-z0-9._/-]{1,255}$")
URL = re.compile(r"^https?://[A-Za-z0-9.\[\]:_-]+(:\d{1,5})?(/[A-Za-z0-9._~/%+-]*)?$")
# A release as pip and the runtime's folder name take it (PEP 440's characters; no space, / or ..).
VERSION = re.compile(r"^[0-9][0-9A-Za-z.+!-]{0,63}$")

# The largest pool a hand-set sglang_max_total_tokens may ask (the context target's own bound).
MAX_POOL_TOKENS = 100_000_000

# The controller's report folder: not under these either (see report_dir()).
CONTROLLER_FORBIDDEN = ("/proc", "/sys", "/dev", "/run", "/boot", "/bin", "/sbin", "/lib", "/lib32", "/lib64",
                        "/etc", "/usr", "/var/lib", "/var/log", "/var/spool")


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
            raise Refusal("gives %s %s" % (name, "no value (null)" if item is None else "a mapping"
                                           if isinstance(item, Mapping) else "a list"),
                          "give %s a string or a number" % name)
        if isinstance(item, str) and any(ord(char) < 32 and char != "\t" or ord(char) == 127 for char in item):
            raise Refusal("gives %s a value with a line break or control character (it would add a line to the"
                          " env file)" % name, "remove it")


ENV_OWNERS = {"HOME": "sglang_home", "NCCL_SOCKET_IFNAME": "sglang_nccl_socket_ifname",
              "GLOO_SOCKET_IFNAME": "sglang_gloo_socket_ifname"}


def speculative(value):
    if not isinstance(value, Mapping):
        raise Refusal("is not a mapping", "give {} (off) or {algorithm: ..., draft_model_path: ...}")
    for key, check in (("draft_model_path", owned_path), ("draft_model_hf_repo", optional(HF_REPO_CHECK)),
                       ("draft_model", lambda v: text(v, "a preset name (lib/sglang_kvplan/model_presets.yml)")),
                       ("draft_model_hf_revision", optional(HF_REVISION_CHECK)),
                       ("num_steps", lambda v: integer(v, 1, 64, none_ok=True)),
                       ("eagle_topk", lambda v: integer(v, 1, 64, none_ok=True)),
                       ("num_draft_tokens", lambda v: integer(v, 1, 1024, none_ok=True)),
                       ("algorithm", optional(pattern(re.compile(r"^[A-Za-z0-9_]{1,32}$"),
                                                      "an algorithm name", "DFLASH or EAGLE3")))):
        if key in value and value[key] not in (None, ""):
            try:
                check(value[key])
            except Refusal as refusal:
                raise Refusal("has %s %s, which %s" % (key, show(value[key]), refusal.problem), refusal.fix) from None


def report_dir(value):
    """The controller's report folder. Empty: the repository's reports/. Otherwise an absolute path (a relative
    one would depend on where ansible-playbook runs) outside the system's folders: a folder, or a new one in a
    folder, that the operator who runs Ansible owns and can write to (the report task creates it with that
    operator's rights)."""
    if value in ("", None):
        return
    path = plain_path(value)
    under = [root for root in CONTROLLER_FORBIDDEN if path == root or path.startswith(root + "/")]
    if under or path in SYSTEM_DIRS:
        raise Refusal("is under %s, a system folder" % (under[0] if under else path),
                      "leave it empty (the repository's reports/) or give a folder of yours, e.g. ~/sglang-reports")
    # The folder itself may be new (the report task creates it, and <host>/<timestamp> in it), its parent not: a
    # mistyped path (/nonexistent/x) would otherwise become a tree of folders made from the root down, with the
    # rights of whoever runs Ansible, root included (probe day 2).
    existing = path if os.path.lexists(path) else os.path.dirname(path)
    if not os.path.lexists(existing):
        raise Refusal("is in %s, which does not exist: the report creates the folder itself, not the folders "
                      "above it" % existing,
                      "create %s first, fix the path, or leave it empty (the repository's reports/)" % existing)
    if not os.path.isdir(existing):
        raise Refusal("%s %s, which is not a folder" % ("is" if existing == path else "is in", existing),
                      "give a folder, or leave it empty (the repository's reports/)")
    if os.stat(existing).st_uid != os.getuid():
        raise Refusal("is in %s, which the user running Ansible does not own" % existing,
                      "leave it empty (the repository's reports/) or give a folder you own")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise Refusal("is in %s, which the user running Ansible cannot write to" % existing,
                      "give a folder you can write to, or leave it empty (the repository's reports/)")


HF_REPO_CHECK = pattern(HF_REPO, "a Hub repository name", "org/model")
HF_REVISION_CHECK = pattern(HF_REVISION, "a Hub revision (branch, tag or commit)", "main")

SECRETS = {"sglang_api_key", "sglang_hf_token", "sglang_router_admin_api_key"}


def _preset(value):
    """The planner takes sglang_model as a preset's name even where the host's config.json wins (spec.py): refused
    here, before the runtime is built, rather than at the plan after it."""
    names = sorted(load_presets())
    if value is not None and value not in names:  # null: the planner takes the host's config.json alone
        raise Refusal("is not a preset of lib/sglang_kvplan/model_presets.yml",
                      "name the nearest one (%s); the host's config.json still wins" % ", ".join(names))


def _checks(variables):
    """{knob: check(value)}; a check raises Refusal. sglang_extra_args needs the release's option table."""
    version = variables.get("sglang_version") or "0.5.23"
    sglang_table = flags.sglang_table(version)
    return {
        "sglang_home": owned_path, "sglang_venv": owned_path, "sglang_model_path": owned_path,
        "sglang_runtimes_dir": owned_path,
        "sglang_backup_dir": owned_path, "sglang_cuda_home": plain_path,
        "sglang_hf_token_file": _token_file(variables),
        "sglang_report_dir": report_dir,
        "sglang_server_name": pattern(SERVER_NAME, "a name of letters, digits, . _ - (no / or ..)", "ct200"),
        "sglang_service_name": pattern(UNIT_NAME, "a unit name of letters, digits, . _ -", "sglang"),
        "sglang_user": _user,
        "sglang_served_model_name": optional(pattern(SERVED_NAME,
                                                     "a model name of letters, digits, . _ : / @ + -", "kimi-k2.6")),
        "sglang_host": host_address, "sglang_dist_init_host": lambda v: host_address(v, empty_ok=True),
        "sglang_port": port, "sglang_dist_init_port": port,
        "sglang_api_key": secret, "sglang_hf_token": secret,
        "sglang_environment": environment,
        "sglang_extra_args": lambda v: extra_args.check("sglang_extra_args", sglang_table, extra_args.SGLANG_OWNERS,
                                                        v, "SGLang %s's parser" % version),
        "sglang_speculative": speculative,
        "sglang_model": _preset,
        "sglang_nccl_socket_ifname": optional(pattern(IFNAME, "an interface list", "eth0 or ^lo,docker")),
        "sglang_gloo_socket_ifname": optional(pattern(IFNAME, "an interface list", "eth0")),
        "sglang_model_hf_repo": optional(HF_REPO_CHECK),
        "sglang_model_hf_revision": HF_REVISION_CHECK,
        "sglang_hf_endpoint": optional(pattern(URL, "an http(s) URL", "https://hf-mirror.example.net")),
        "sglang_context_target": lambda v: integer(v, 1, 100_000_000),
        "sglang_tp_size": lambda v: integer(v, 1, 4096), "sglang_pp_size": lambda v: integer(v, 1, 4096),
        "sglang_dp_size": lambda v: integer(v, 1, 4096), "sglang_page_size": lambda v: integer(v, 1, 4096),
        "sglang_max_running_requests": lambda v: integer(v, 1, 1_000_000, none_ok=True),
        # a pool of tokens: past 10^8 no GPU set holds it, and a typo's extra digits are caught here
        "sglang_max_total_tokens": lambda v: integer(v, 1, MAX_POOL_TOKENS, none_ok=True),
        "sglang_dist_timeout": lambda v: integer(v, 1, 86_400),
        "sglang_ready_timeout": lambda v: integer(v, 1, 86_400 * 7),
        "sglang_drain_timeout": lambda v: integer(v, 0, 86_400),
        "sglang_backup_keep": lambda v: integer(v, 1, 1000),
        "sglang_run_lock_wait": lambda v: integer(v, 0, 86_400),
        "sglang_run_lock_lease": lambda v: integer(v, 60, 86_400 * 7),
        "sglang_download_connections": lambda v: integer(v, 1, 64),
        "sglang_download_max_mb_per_s": lambda v: real(v, 0, 100000),
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
        "sglang_runtime_min_free_gib": lambda v: real(v, 0, 1024 * 1024),
        # pip's pin and the builder's marker take it: a release, or empty to build with pip
        "sglang_uv_version": optional(pattern(VERSION, "a uv release", "0.13.8 (or empty: build with pip)")),
        "sglang_uncalibrated_margin": lambda v: real(v, 0, 1),
        "sglang_serial": serial, "sglang_calibration": calibration, "sglang_measured_boots": measured_boots,
        "sglang_nodes": nodes,
        "sglang_version": release, "sglang_package": package_source("sglang_version"), "sglang_extras": extras,
        "sglang_kernel_wheels": kernel_wheels, "sglang_kernel_sources": kernel_sources,
        # days as a timedelta takes them: a finite number, at most 100 years (nan/inf/1e308 fail prove.yml)
        "sglang_reprove_after_days": lambda v: real(v, 0, 36_500),
        "sglang_router_admin_api_key": secret, "sglang_router_version": release,
        "sglang_router_venv": owned_path, "sglang_router_home": owned_path,
        "sglang_router_user": _user,
        "sglang_router_service_name": pattern(UNIT_NAME, "a unit name of letters, digits, . _ -", "sglang-router"),
        "sglang_router_host": host_address, "sglang_router_prometheus_host": host_address,
        "sglang_router_port": port, "sglang_router_prometheus_port": port,
        "sglang_router_health_check_endpoint": health_path,
        "sglang_router_package": package_source("sglang_router_version"),
        "sglang_router_extra_args": lambda v: extra_args.check("sglang_router_extra_args", flags.router_table(),
                                                               extra_args.ROUTER_OWNERS, v,
                                                               "sglang-router 0.3.2's parser"),
        **{"sglang_router_%s" % name: (lambda v, low=low: integer(v, low, 86_400 * 7)) for name, low in (
            ("health_check_interval_s", 1), ("health_check_timeout_s", 1), ("health_failure_threshold", 1),
            ("health_success_threshold", 1), ("request_timeout_s", 1), ("retry_max_retries", 0),
            ("worker_startup_timeout_s", 1), ("shutdown_grace_period_s", 0), ("ready_timeout", 1),
            ("restart_sec", 0))},
    }


# Knobs whose strings are data, not settings: the checkpoint's config.json as a mapping.
FREE_FORM = {"sglang_model_config"}
ROLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir, "roles")


@functools.cache
def declared_knobs():
    """The knobs the two roles declare (meta/argument_specs.yml): the generic check reads only those, not the facts a
    run sets under sglang_* names (the plan, the boot, the proof), whose text may hold anything."""
    knobs = set()
    for role in ("sglang", "sglang_router"):
        with open(os.path.join(ROLES, role, "meta", "argument_specs.yml"), encoding="utf-8") as handle:
            knobs.update(yaml.safe_load(handle)["argument_specs"]["main"]["options"])
    return frozenset(knobs)


def _no_control_anywhere(value, depth=0):
    """No control character in any string of a value, however nested (a list of mappings included)."""
    if isinstance(value, str):
        text(value)
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


CALIBRATION_KEYS = ["post_load_avail_gib", "pre_load_avail_gib"]


def calibration(value):
    """{pre_load_avail_gib, post_load_avail_gib}: GiB as SGLang logs them (finite, 0 to 16 TiB), both or neither
    (other keys would be ignored and the plan would fall back to the estimate without a word)."""
    if not isinstance(value, Mapping):
        raise Refusal("is not a mapping", "give {pre_load_avail_gib: 85.3, post_load_avail_gib: 19.4} or {}")
    if value and sorted(str(k) for k in value) != CALIBRATION_KEYS:
        raise Refusal("has the keys %s, not exactly pre_load_avail_gib and post_load_avail_gib"
                      % ", ".join(sorted(str(k) for k in value)),
                      "give {pre_load_avail_gib: <P>, post_load_avail_gib: <A>} (GiB, as SGLang logs 'avail mem=' at "
                      "'Load weight begin' and 'Load weight end') or {}")
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
        from sglang_kvplan.spec import SPEC_KEYS

        unknown = sorted(str(k) for k in boot.get("setup", {}) if k not in SPEC_KEYS)
        if unknown:
            raise Refusal("holds %s, whose setup names %s, which the planner does not know"
                          % (show(boot), ", ".join(unknown)),
                          "name the planner's keys the boot ran under, e.g. setup: {pool_rules: '0.5.9', "
                          "kv_cache_dtype: auto, tp_size: 8, pp_size: 1}")
        try:
            real(boot["mem_fraction_static"], 0.01, 1)
            integer(boot["pool_tokens"], 0, 100_000_000)
        except Refusal as refusal:
            raise Refusal("holds %s, which %s" % (show(boot), refusal.problem), refusal.fix) from None


def kernel_wheels(value):
    """[{src, name, version, import}]: src is what pip installs (a URL or a controller-side .whl)."""
    _kernels(value, "src", "{src: https://.../k-1.0-py3-none-any.whl, name: k, version: '1.0'}")


def kernel_sources(value):
    """[{repo, ref, subdir, name, version, import}]: repo is what git clones."""
    _kernels(value, "repo", "{repo: https://github.com/org/kernels.git, ref: v1.0, name: k, version: '1.0'}")


def _kernels(value, needed, example):
    if not isinstance(value, list):
        raise Refusal("is not a list", "give [%s, ...] or []" % example)
    for item in value:
        if not isinstance(item, Mapping) or not isinstance(item.get(needed), str) or not item[needed].strip():
            raise Refusal("has no %s" % needed, "give each as %s" % example, item=item)
        if ".." in re.split(r"[/\\]", item[needed]):
            raise Refusal("has %s %r, with a '..' component (a path is taken as written)" % (needed, item[needed]),
                          "give it in its plain form", item=item)
        for key in ("name", "version", "ref", "subdir", "import"):
            if isinstance(item.get(key), str) and item[key] != item[key].strip():
                raise Refusal("has %s %r, with a space at an end" % (key, item[key]), "remove the space", item=item)
        _no_control_anywhere(item)


# What pip installs from a file: a wheel, or a source archive.
ARCHIVES = (".whl", ".tar.gz", ".tgz", ".zip")


def package_source(version_knob):
    """sglang_package, sglang_router_package: empty (the index, at version_knob's release), a URL (scheme://, git+https://
    included), or a wheel on the controller; never a pip option. The roles copy any value without :// from the
    controller as a file and install the copy (lib/sglang_state/runtime_install.py _local, the router's install.yml),
    so a requirement such as sglang==0.5.23 is no source, and a path goes through as written: no '..' in it."""
    def check(value):
        if value in ("", None):
            return
        text(value, "a URL or a wheel")
        if value.startswith("-") or any(char.isspace() for char in value):
            raise Refusal("would reach pip as an option or several words (an --index-url, a -r file), not one "
                          "package", "give a URL or a wheel's path; set pip's index in pip.conf")
        if ".." in re.split(r"[/\\]", value):
            raise Refusal("holds a '..' component: the path is taken as written, and a '..' can lead anywhere on the "
                          "controller (or on the index's server)",
                          "give the path in its plain form, e.g. /srv/wheels/sglang-0.5.23-py3-none-any.whl")
        if "://" not in value and not value.endswith(ARCHIVES):
            raise Refusal("is neither a URL nor a wheel's path: the role copies a value without :// from the "
                          "controller as a file and installs the copy, so a requirement would be looked for as a file",
                          "give a URL or the path of a wheel (.whl) on the controller, or leave it empty and set "
                          "%s to install that release from the index" % version_knob)
    return check


def health_path(value):
    """sglang_router_health_check_endpoint: sglang-router appends it to each worker's URL as it is
    (format!("{}{}", url, endpoint) in its worker health check), so it must be a path: '/' first, then the characters
    a URL's path and query may hold. 'health' would make http://host:30000health, 'http://evil/h' another host."""
    text(value, "a path such as /health")
    if not HEALTH_PATH.match(value):
        raise Refusal("is not a URL path ('/' first, then only what a URL's path and query hold: no space, a "
                      "percent sign only before two hex digits): sglang-router appends it to each worker's URL "
                      "as it is",
                      "give a path such as /health or /health_generate")


HEALTH_PATH = re.compile(r"^/(?:[A-Za-z0-9._~!$&'()*+,;=:@/-]|%[0-9A-Fa-f]{2})*"
                         r"(?:\?(?:[A-Za-z0-9._~!$&'()*+,;=:@/?-]|%[0-9A-Fa-f]{2})*)?$")


def extras(value):
    if not isinstance(value, list) or not all(isinstance(e, str) and re.match(r"^[A-Za-z0-9][A-Za-z0-9._-]*$", e)
                                              for e in value):
        raise Refusal("is not a list of extra names", "give names such as [all] or []")


def release(value):
    text(value, "a release such as 0.5.23")
    if not VERSION.match(value) or ".." in value:
        raise Refusal("is not a release (digits, letters, . + - only: it names the runtime's folder and pip's pin)",
                      "give a release such as 0.5.23, without spaces")


def nodes(value):
    """sglang_nodes: inventory names in rank order."""
    if not isinstance(value, list) or not all(isinstance(item, str) and item for item in value):
        raise Refusal("is not a list of inventory names", "give [ct400-a, ct400-b] (rank order) or []")
    for item in value:
        text(item)


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


def refusals(host: str, variables: Mapping[str, Any], hidden=()) -> list[str]:
    """One sentence per bad value of `host`'s `variables` (empty when all are fine); `hidden`: knobs whose value is
    never shown (the vault's), besides the secrets."""
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
            elif knob in declared_knobs() and knob not in FREE_FORM:
                _no_control_anywhere(value)  # any other knob: no line break or NUL either (it reaches a file or argv)
        except Refusal as refusal:
            found.append(_sentence(host, knob, value, refusal, knob in hidden))
        except Refusals as many:
            found.extend(_sentence(host, knob, value, refusal, knob in hidden) for refusal in many.refusals)
    return found


def _sentence(host, knob, value, refusal, hidden=False):
    secret = knob in SECRETS or hidden
    if refusal.item is not None:
        return "%s: %s holds %s: it %s; %s." % (
            host, knob, show(refusal.item, secret), refusal.problem, refusal.fix)
    return "%s: %s is %s: it %s; %s." % (host, knob, show(value, secret), refusal.problem, refusal.fix)


def preflight_refusals(host, variables):
    """preflight_required_gpus, when the inventory gives it (its default is the plan's GPUs per node): preflight
    compares the host's GPU count with it as a number (`| int`), so 0, or text that is no number (0 as a number),
    would pass a host without a GPU (probe-5 N-S5-14)."""
    if variables.get("preflight_required_gpus") is None:
        return []
    given = variables["preflight_required_gpus"]
    try:
        integer(given, 1, 4096)
    except Refusal as refusal:
        return [_sentence(host, "preflight_required_gpus", given, Refusal(
            "%s (preflight compares the GPU count with it as a number, so 0 or a word would pass a host with no "
            "GPU)" % refusal.problem, "give the GPUs each host must have, from 1 to 4096, or leave it unset (the "
            "plan's GPUs per node)"))]
    return []


# -- how the role's folders may lie (issue 27) ----------------------------------------------------------------------
# What each folder is: code the runtime prune removes (venv, runtimes), the store whose prune removes entries and which
# holds the API key (0700, root), the service user's data (home, the weights).
FOLDERS = ("sglang_venv", "sglang_runtimes_dir", "sglang_backup_dir", "sglang_home", "sglang_model_path")
_KIND = {"sglang_venv": "code", "sglang_runtimes_dir": "code", "sglang_backup_dir": "store", "sglang_home": "home",
         "sglang_model_path": "model", "sglang_speculative.draft_model_path": "model"}
_WHY = {
    "code": "the runtime prune removes what it finds there that nothing names, and a legacy venv holding the runtimes "
            "would be pruned with them",
    "store": "the store's prune removes old entries there, and it holds the API key (root only)",
    "home": "the service user owns that folder and what it holds",
    "model": "the weights are the service user's, downloaded and checked there",
}


def _inside(path, folder):
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def _unsafe(outer_kind, inner_kind):
    """Whether a folder of inner_kind may not lie inside one of outer_kind (equal folders are never allowed)."""
    if "store" in (outer_kind, inner_kind) or "code" in (outer_kind, inner_kind):
        return True
    return not (outer_kind == "home" and inner_kind == "model")  # weights under the service's home are fine


def other_home(path, user):
    """The home of another user than `user` that `path` is, or lies in: /root (the service never runs as root), or
    /home/<name> for a name other than `user`; None otherwise."""
    parts = path.split("/")
    if parts[1] == "root":
        return "/root"
    if parts[1] == "home" and len(parts) > 2 and parts[2] != user:
        return "/home/" + parts[2]
    return None


def folder_refusals(host, folders):
    """One sentence per pair of the role's folders that are the same or nested where that is unsafe, naming both
    (folders: {knob: path} after the defaults; sglang_speculative's draft_model_path is read from that knob), per
    folder or token file in another user's home, per token file in the code, the store or the weights, and a home that
    holds the model folders. Values that are not plain absolute paths are refused by refusals() and skipped here."""
    paths = {k: folders.get(k) for k in FOLDERS}
    spec = folders.get("sglang_speculative")
    if isinstance(spec, Mapping):
        paths["sglang_speculative.draft_model_path"] = spec.get("draft_model_path")
    plain = {}
    for knob, path in paths.items():
        try:
            plain[knob] = plain_path(path)
        except Refusal:
            continue
    found = _home_refusals(host, plain, folders.get("sglang_hf_token_file"), folders.get("sglang_user"))
    names = sorted(plain)
    for index, one in enumerate(names):
        for other in names[index + 1:]:
            a, b = plain[one], plain[other]
            if a == b:
                found.append("%s: %s and %s are the same folder (%s): %s. Give each its own folder."
                             % (host, one, other, a, _WHY[_KIND[one]] if _KIND[one] != "model" else _WHY[_KIND[other]]))
                continue
            for outer, inner in ((one, other), (other, one)):
                if _inside(plain[inner], plain[outer]) and _unsafe(_KIND[outer], _KIND[inner]):
                    kind = _KIND[outer] if _KIND[outer] in ("code", "store") else _KIND[inner]
                    found.append("%s: %s (%s) holds %s (%s): %s. Give them folders side by side, e.g. %s and %s."
                                 % (host, outer, plain[outer], inner, plain[inner], _WHY[kind],
                                    _example(outer), _example(inner)))
    return found


# An inventory host name as the run report and the plan picture use it in a file name (reports/<host>/...,
# reports/plan/<host>.png): an IP address, IPv6 included, or a DNS name; never a / or a name made of dots alone, and
# short enough that the longest file named after it, <host>.png, fits a file name (NAME_MAX, 255 bytes; a longer one
# failed plan.yml's picture with "File name too long", probe-5 N-S5-12). The characters are ASCII: bytes = characters.
NAME_MAX = 255
HOST_NAME_MAX = NAME_MAX - len(".png")
HOST_NAME = re.compile(r"^[A-Za-z0-9_:\[\]][A-Za-z0-9_.:\[\]-]*$")


def host_name_refusals(host):
    """The inventory host name names files on the controller (the run report, the plan picture): refused when it
    could write outside reports/, as sglang_server_name is, or when it is too long to be a file name."""
    if isinstance(host, str) and HOST_NAME.match(host) and ".." not in host and len(host) <= HOST_NAME_MAX:
        return []
    if isinstance(host, str) and HOST_NAME.match(host) and ".." not in host:
        return ["%s: the inventory host name %s is %d characters long, over the %d a host name may have here: it "
                "names the plan picture reports/plan/<host>.png, and a file name holds at most %d bytes. Give the "
                "host a shorter inventory name (set its address with ansible_host)."
                % (show(host), show(host), len(host), HOST_NAME_MAX, NAME_MAX)]
    return ["%s: the inventory host name %s is not a plain host name (letters, digits, . _ : -, no / or ..): it names "
            "the run report and the plan picture under reports/, and this one would write outside it. Rename the "
            "host in the inventory (set its address with ansible_host)." % (show(host), show(host))]


def _home_refusals(host, plain, token_file, user):
    """The rules of probe-5 N-S5-14 (plain: {knob: path} of the role's folders that are plain paths).

    Another user's home (/home/<name> of a name other than sglang_user, or /root): the roles create and chown their
    folders and write the Hub token as root, so a folder in a home another user controls could be swapped for a link
    between the check and the write, and a token path there is that user's own token (~/.cache/huggingface/token),
    which the token module would replace and hand to the service user. Nothing of the service works there anyway:
    its unit has ProtectHome=yes. The token file in the code (pruned), in the store (root 0700: the service user
    cannot cross it) or in the weights (the model folder is the model's, read by whoever serves it) is refused as
    sglang_home is. sglang_home as the folder that holds the model folder would make the folder every model shares
    the service's home (created, chowned, its caches beside the weights)."""
    found, user = [], user if isinstance(user, str) else "sglang"
    for knob in sorted(plain):
        home = other_home(plain[knob], user)
        if home:
            found.append("%s: %s (%s) is in %s, another user's home (sglang_user is %s): the role creates and chowns "
                         "its folders as root, which that user's own links could redirect, and the service cannot "
                         "see /home or /root (ProtectHome=yes). Give it a folder of its own, e.g. %s."
                         % (host, knob, plain[knob], home, user, _example(knob)))
    model_parents = {os.path.dirname(plain[k]): k for k in ("sglang_model_path", "sglang_speculative.draft_model_path")
                     if k in plain}
    if plain.get("sglang_home") in model_parents:
        knob = model_parents[plain["sglang_home"]]
        found.append("%s: sglang_home (%s) is the folder that holds %s (%s): the folder every model shares would "
                     "become the service user's home (created, chowned, its caches and the Hub token beside the "
                     "weights). Give the home a folder of its own, e.g. /var/lib/sglang, or the model a folder of its "
                     "own below the home (e.g. %s/models/<name>)." % (host, plain["sglang_home"], knob, plain[knob],
                                                                      plain["sglang_home"]))
    try:
        token = plain_path(token_file)
    except Refusal:
        return found  # not a plain path (the default's template before the role applies it): refused or fine there
    home = other_home(token, user)
    if home:
        found.append("%s: sglang_hf_token_file (%s) is in %s, another user's home (sglang_user is %s): a token there "
                     "is that user's own, which the role would replace and give to the service user, and that user "
                     "controls the folders on its way. Leave it at its default (below sglang_home) or put it in "
                     "/etc/<sglang_service_name>/." % (host, token, home, user))
    for knob in ("sglang_runtimes_dir", "sglang_venv", "sglang_backup_dir", "sglang_model_path",
                 "sglang_speculative.draft_model_path"):
        if knob in plain and _inside(token, plain[knob]):
            found.append("%s: sglang_hf_token_file (%s) is inside %s (%s): %s. Leave it at its default (below "
                         "sglang_home) or put it in /etc/<sglang_service_name>/."
                         % (host, token, knob, plain[knob], _TOKEN_WHY[_KIND[knob]]))
    return found


_TOKEN_WHY = {
    "code": "the runtime prune removes what it finds there that no runtime names, the token with it",
    "store": "the store is root's (0700), so the service user could not read the token through it, and its prune "
             "removes what it does not know",
    "model": "the model folder holds the weights, read by whatever serves or copies them; the token is a secret",
}


def _example(knob):
    return {"sglang_venv": "/opt/sglang/venv", "sglang_runtimes_dir": "/opt/sglang/runtimes",
            "sglang_backup_dir": "/var/backups/sglang", "sglang_home": "/var/lib/sglang",
            "sglang_model_path": "/srv/models/<name>",
            "sglang_speculative.draft_model_path": "/srv/models/<draft>"}[knob]
