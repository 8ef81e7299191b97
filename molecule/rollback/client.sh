#!/bin/sh
# A client of the serving SGLang, one /generate request after another, one line each: "<unix time> ok|fail".
# Run by side_effect.yml as a transient unit during an upgrade; tests/test_rollback.py reads the lines.
while :; do
  t=$(date +%s.%N)
  if curl -sf -m 10 -o /dev/null -H 'Authorization: Bearer molecule-not-a-secret' -H 'Content-Type: application/json' \
      -d '{"text": "the dog", "sampling_params": {"max_new_tokens": 1}}' http://127.0.0.1:30000/generate; then
    echo "$t ok"
  else
    echo "$t fail"
  fi
  sleep 0.2
done
