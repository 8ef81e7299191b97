#!/bin/bash
# What the store faults must leave as it was: every store entry (by sha256; the lock file aside), the live files,
# the hidden files beside them (a staged copy or a displaced original would show here), the service's invocation
# (a restart would change it) and what the server says it serves. Usage: record.sh before|after
set -euo pipefail
out=/root/store-faults/$1
mkdir -p "$out"
date +%s > "$out/at.txt"
(cd /var/backups/sglang && find . -type f ! -name .lock -print0 | sort -z | xargs -0 sha256sum) > "$out/store.sha"
sha256sum /etc/systemd/system/sglang.service /etc/sglang/sglang.env /etc/sglang/sglang.yaml > "$out/live.sha"
ls -A /etc/sglang /etc/systemd/system > "$out/ls.txt"
systemctl show -p InvocationID --value sglang > "$out/invocation.txt"
curl -s -H 'Authorization: Bearer molecule-not-a-secret' http://127.0.0.1:30000/server_info > "$out/server_info.json"
