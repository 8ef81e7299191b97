"""Run an Ansible module as a plain script and SIGKILL it right after its Nth rename of a live file.

    python kill_after_renames.py N library/sglang_backup_store.py args.json

A rename of a live file is os.replace/os.rename with one of the module's `files` as source or destination (a
restore's swap: a staged copy over the live name, or a live file renamed away). The kill is the kernel's SIGKILL of
this very process: no handler, no finally block, no flush runs, as with `kill -9` or the OOM killer."""

import json
import os
import runpy
import signal
import sys


def main():
    limit, module, args_path = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    with open(args_path, encoding="utf-8") as handle:
        live = {os.path.abspath(p) for p in json.load(handle)["ANSIBLE_MODULE_ARGS"]["files"]}
    count = [0]

    def killing(real):
        def call(src, dest, *args, **kwargs):
            touched = {os.path.abspath(os.fspath(src)), os.path.abspath(os.fspath(dest))} & live
            result = real(src, dest, *args, **kwargs)
            if touched:
                count[0] += 1
                if count[0] == limit:
                    os.kill(os.getpid(), signal.SIGKILL)
            return result
        return call

    os.replace = killing(os.replace)
    os.rename = killing(os.rename)
    sys.argv = [module, args_path]
    runpy.run_path(module, run_name="__main__")


if __name__ == "__main__":
    main()
