#!/usr/bin/python3
"""Plant faults in the backup store: four entries whose backup.json is not a manifest (null, a list, a string, not
JSON) and 20200101T000000000000Z, a copy of the live state's entry with one more line in its env file (a state a
rollback can be asked for, whose restore must write into /etc/sglang). Notes which entry holds the live state."""

import hashlib
import json
import os
import shutil

STORE = "/var/backups/sglang"
LIVE = ["/etc/systemd/system/sglang.service", "/etc/sglang/sglang.env", "/etc/sglang/sglang.yaml"]


def sha(path):
    with open(path, "rb") as handle:
        return hashlib.sha256(handle.read()).hexdigest()


live = {os.path.basename(p): sha(p) for p in LIVE}
for name in sorted(os.listdir(STORE)):
    manifest = os.path.join(STORE, name, "backup.json")
    if os.path.isfile(manifest):
        with open(manifest) as handle:
            meta = json.load(handle)
        if meta.get("files") == live:
            break
else:
    raise SystemExit("no entry of %s holds the live state" % STORE)
with open("/root/store-faults/live-entry.txt", "w") as handle:
    handle.write("%s %s\n" % (name, "proven" if meta.get("proven") else "unproven"))

for number, text in enumerate(["null", "[]", '"deployed"', '{"files": '], start=1):
    folder = os.path.join(STORE, "20200101T00000000000%dZ" % number)
    os.mkdir(folder, 0o700)
    with open(os.path.join(folder, "backup.json"), "w") as handle:
        handle.write(text + "\n")

target = os.path.join(STORE, "20200101T000000000000Z")
shutil.copytree(os.path.join(STORE, name), target)
for base in live:  # owners too (copytree keeps modes only): a restore puts the copy's owner back
    status = os.stat(os.path.join(STORE, name, base))
    os.chown(os.path.join(target, base), status.st_uid, status.st_gid)
with open(os.path.join(target, "sglang.env"), "a") as handle:
    handle.write("SGLANG_MOLECULE_MARK=full-disk\n")
meta.update(files=dict(live, **{"sglang.env": sha(os.path.join(target, "sglang.env"))}), proven=None,
            created_at="2020-01-01T00:00:00+00:00",
            reason="planted by molecule: the live state with one more line in its env file")
with open(os.path.join(target, "backup.json"), "w") as handle:
    json.dump(meta, handle)
