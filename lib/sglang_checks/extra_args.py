"""Extra launch arguments (sglang_extra_args, sglang_router_extra_args) may not set an option the role or the plan
owns, nor a secret: each is resolved as the release's argparse resolves it (lib/sglang_checks/flags.py), prefixes
and aliases included, and a refusal names the knob that owns the option."""

from sglang_checks import flags
from sglang_checks.kinds import Refusal, Refusals, string_list


def check(knob, table, owners_by_flag, value, what):
    """Refusals (one per bad item) when the list `value` of knob `knob` sets an option of `owners_by_flag`."""
    string_list(value)
    owners = {table[flag]: text for flag, text in owners_by_flag.items() if flag in table}
    found = [refusal for refusal in (one(knob, table, owners, item, what) for item in value) if refusal]
    if found:
        raise Refusals(found)


def one(knob, table, owners, item, what):
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
        if isinstance(owners[found], tuple):  # (what it is, the fix to give): an option a knob of its own sets
            owner, fix = owners[found][0], owners[found][1] % {"knob": knob}
        else:
            owner, fix = owners[found], "remove it from %s" % knob
        return Refusal("sets %s%s, which %s" % (name, spelled, owner), fix, shown)
    return None


def option_value(table, items, dest):
    """The value the release's argparse gives `dest` from the extra arguments `items` (`--opt value` or
    `--opt=value`, abbreviations resolved as argparse does; the last one wins), else None: how the planner learns
    an option that changes the pool but is the operator's to set (--mm-feature-transport)."""
    if not isinstance(items, (list, tuple)):
        return None
    value = None
    for i, item in enumerate(items):
        if not isinstance(item, str):
            continue
        kind, found = flags.resolve(item, table)
        if kind == "end":
            break
        if kind != "option" or found != dest:
            continue
        if "=" in item:
            value = item.split("=", 1)[1]
        elif i + 1 < len(items) and isinstance(items[i + 1], str):
            value = items[i + 1]
    return value


def option_given(table, items, dests):
    """The first item of the extra arguments `items` that reaches one of `dests` (abbreviations resolved as the
    release's argparse resolves them), else None: how the planner learns a switch of the operator's that it must
    refuse or plan for (--enable-lora, --enable-dp-lm-head)."""
    if not isinstance(items, (list, tuple)):
        return None
    for item in items:
        if not isinstance(item, str):
            continue
        kind, found = flags.resolve(item, table)
        if kind == "end":
            break
        if kind == "option" and found in dests:
            return item.split("=", 1)[0]
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
    "--enable-metrics": "the role sets from sglang_metrics (true by default)",
    "--api-key": "belongs in sglang_api_key (the role puts it in the --config file, never in argv)",
    "--admin-api-key": "takes a secret, and every local user reads argv (/proc/PID/cmdline); the role has no "
                       "admin key knob",
    "--ssl-keyfile-password": "takes a secret, and every local user reads argv (/proc/PID/cmdline)",
    "--context-length": "the plan sets from sglang_context_target",
    # (what it is, the fix): the planner's refusals say "size it by hand", and the knob is how
    "--max-total-tokens": ("the plan sets (the pool's pin)",
                           "for a pool sized by hand set sglang_max_total_tokens to it, and remove it from %(knob)s"),
    "--mem-fraction-static": "the plan sets (from sglang_min_headroom_gib and the calibration)",
    "--max-running-requests": "the plan sets from sglang_max_running_requests",
    "--kv-cache-dtype": "the plan sets from sglang_kv_cache_dtype",
    "--page-size": "the plan sets from sglang_page_size",
    "--speculative-algorithm": "the plan sets from sglang_speculative.algorithm",
    "--speculative-draft-model-path": "the plan sets from sglang_speculative.draft_model_path",
    "--speculative-num-steps": "the plan sets from sglang_speculative.num_steps",
    "--speculative-eagle-topk": "the plan sets from sglang_speculative.eagle_topk",
    "--speculative-num-draft-tokens": "the plan sets from sglang_speculative.num_draft_tokens",
    # DFLASH makes --speculative-num-draft-tokens this block size (0.5.11 server_args.py:3358-3374, 0.5.23
    # arg_groups/speculative_hook.py:368-387), which widens the pin: the plan must know it
    "--speculative-dflash-block-size": "sets DFLASH's --speculative-num-draft-tokens, which the plan sets from "
                                       "sglang_speculative.num_draft_tokens",
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
