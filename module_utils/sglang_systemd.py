"""What systemd says of units, read one way by every module that asks (`systemctl show`): the deploy's unit
(sglang_unit_state) and the driver's services (nvidia_driver_state)."""

from __future__ import annotations


def _unit_id(name):
    """The Id systemd prints for a name given without its type: a service's."""
    return name if "." in name else name + ".service"


def parse_show(out, units):
    """{unit as asked: {property: value}} from `systemctl show -p Id -p ... -- <units>` (a block of Key=value lines
    per unit, blocks apart by an empty line). A unit systemd does not know is answered too (ActiveState=inactive,
    empty values); one missing from the output is {}."""
    found = {}
    for block in out.strip().split("\n\n"):
        props = dict(line.partition("=")[::2] for line in block.splitlines() if "=" in line)
        if props.get("Id"):
            found[props["Id"]] = props
    return {unit: found.get(_unit_id(unit)) or found.get(unit) or {} for unit in units}


def show(module, units, properties):
    """parse_show of one `systemctl show` for these units and properties; the module fails with systemctl's own
    words when it does."""
    argv = [module.get_bin_path("systemctl", required=True), "show", "-p", "Id"]
    for name in properties:
        argv += ["-p", name]
    rc, out, err = module.run_command(argv + ["--"] + list(units))
    if rc != 0:
        module.fail_json(msg="systemctl show %s failed: %s" % (" ".join(units), (err or out).strip()))
    return parse_show(out, units)
