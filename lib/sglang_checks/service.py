"""The sglang role's service settings that no argument spec can express: the rules roles/sglang/tasks/assert.yml
held until they moved here, so that the check phase refuses them before anything connects, and the role, used
alone, refuses them through the same function (inputs.host_refusals; roles/sglang/tasks/inputs.yml).

value(name) gives a knob's value with the role's defaults applied (inputs.value).
"""

import re

from sglang_kvplan.spec import SPECULATIVE_KEYS

from sglang_checks import planspec

# A release as pip names it (the trailing space of "0.5.23 " is not one: pip would be asked for another name).
VERSION = re.compile(r"^[0-9][0-9A-Za-z.+-]*$")
# Listeners only this host reaches: no API key needed behind them.
LOOPBACK = ("127.0.0.1", "localhost", "::1")
CALIBRATION_KEYS = ["post_load_avail_gib", "pre_load_avail_gib"]
# What the role measures on the host and hands the planner itself (model.yml reads both checkpoints): not the
# operator's.
_MEASURED_SPECULATIVE = ("draft_model_config", "draft_weights_gib", "draft_checkpoint_gib")
# The keys an operator may give in sglang_speculative: the planner's, less what the role measures, and where
# the draft comes from (the role's own).
SPECULATIVE_OPERATOR_KEYS = tuple(key for key in SPECULATIVE_KEYS if key not in _MEASURED_SPECULATIVE) \
    + planspec.ROLE_ONLY_SPECULATIVE


def refusals(host, value):
    """One sentence per service setting the role would refuse, naming the variable, the value and the fix."""
    out = []
    version = value("sglang_version")
    if not isinstance(version, str) or not VERSION.match(version):
        out.append("%s: sglang_version is %r: give a release as pip names it, e.g. 0.5.23 (no spaces)."
                   % (host, version))
    for name, key, example in (("sglang_kernel_wheels", "src", "src: https://host/kernels-0.3.1-cp311-linux.whl"),
                               ("sglang_kernel_sources", "repo", "repo: https://github.com/org/kernels.git")):
        items = value(name) or []
        missing = [index for index, item in enumerate(items) if not isinstance(item, dict) or key not in item]
        if missing:
            out.append("%s: %s item(s) %s have no %s: give each one (%s)."
                       % (host, name, ", ".join(map(str, missing)), key, example))
    listen = value("sglang_host")
    if listen not in LOOPBACK and not value("sglang_api_key"):
        out.append("%s: sglang_host is %s but sglang_api_key is empty: anyone who reaches the port could use the "
                   "GPUs. Set sglang_api_key (from a vault), or keep sglang_host at 127.0.0.1 behind a proxy."
                   % (host, listen))
    calibration = value("sglang_calibration") or {}
    if isinstance(calibration, dict) and calibration and sorted(calibration) != CALIBRATION_KEYS:
        out.append("%s: sglang_calibration has keys %s; it takes exactly pre_load_avail_gib and "
                   "post_load_avail_gib (SGLang's 'Load weight begin/end ... avail mem', GiB). A misspelled key "
                   "would turn a measured plan into an estimate." % (host, ", ".join(sorted(map(str, calibration)))))
    speculative = value("sglang_speculative") or {}
    unknown = sorted(str(key) for key in speculative if key not in SPECULATIVE_OPERATOR_KEYS) \
        if isinstance(speculative, dict) else []
    if unknown:
        out.append("%s: sglang_speculative has unknown key(s) %s; it takes %s."
                   % (host, ", ".join(unknown), ", ".join(SPECULATIVE_OPERATOR_KEYS)))
    return out
