"""Start sglang-router with its API keys read from files, so that no key is among the process's arguments.

sglang-router 0.3.2 takes its keys only on its command line: --api-key and --control-plane-api-keys
(sglang_router/router_args.py; unlike the Oracle/Postgres/Redis settings, no environment variable and no
config file), and a process's command line is readable by every local user (/proc/PID/cmdline, ps).
This launcher calls the two functions `sglang-router launch` calls (sglang_router/cli.py: parse_router_args,
then launch_router), with the keys added to the list it parses inside this process: the same parsing and
checks as the command line, and nothing secret in sys.argv.

usage: python sglang_router_launch.py --api-key-file PATH --admin-api-key-file PATH -- ROUTER_ARGS...

--api-key-file: the key the router sends to the workers, which 0.3.2 also demands from clients on its
    inference routes (and on its admin API when no admin key is set).
--admin-api-key-file: a control-plane key with the admin role: the admin API (/workers) then takes this key
    and no other.
An empty file means no key. Installed by the sglang_router role; this file is not part of sglang-router.
"""

import sys

# The control-plane entry's id and name ('id:name:role:key', router_args.py _parse_control_plane_api_keys,
# which splits on the first three colons: the key itself may hold colons, these two may not).
ADMIN_ENTRY = "ansible-admin:sglang_router role:admin:"
KEY_FLAGS = ("--api-key", "--control-plane-api-keys")


def split_argv(argv):
    """({'--api-key-file': path, '--admin-api-key-file': path}, router args) from this script's arguments."""
    if "--" not in argv:
        raise SystemExit("usage: sglang_router_launch.py --api-key-file PATH --admin-api-key-file PATH -- ROUTER_ARGS")
    mine, router_args = argv[:argv.index("--")], argv[argv.index("--") + 1:]
    files = dict(zip(mine[::2], mine[1::2], strict=False))
    if len(mine) % 2 or sorted(files) != ["--admin-api-key-file", "--api-key-file"]:
        raise SystemExit("expected exactly --api-key-file PATH --admin-api-key-file PATH before --, got %r" % mine)
    for arg in router_args:
        if arg.split("=", 1)[0] in KEY_FLAGS:
            raise SystemExit("%s must not be given on the command line (it would be visible to every local user);"
                             " put the key in its file" % arg.split("=", 1)[0])
    return files, router_args


def read_key(path):
    """The key in `path` (surrounding whitespace dropped); '' when the file is empty."""
    with open(path, encoding="utf-8") as handle:
        return handle.read().strip()


def key_args(api_key, admin_api_key):
    """The arguments that carry the keys, parsed in-process only. The --flag=value form keeps a key that starts
    with '-' a value (argparse would take `--api-key -x` for two options)."""
    args = []
    if api_key:
        args.append("--api-key=" + api_key)
    if admin_api_key:
        args.append("--control-plane-api-keys=" + ADMIN_ENTRY + admin_api_key)
    return args


def main(argv):
    files, router_args = split_argv(argv)
    api_key = read_key(files["--api-key-file"])
    admin_api_key = read_key(files["--admin-api-key-file"])
    from sglang_router.launch_router import launch_router, parse_router_args

    launch_router(parse_router_args(router_args + key_args(api_key, admin_api_key)))


if __name__ == "__main__":
    main(sys.argv[1:])
