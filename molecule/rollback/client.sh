#!/bin/sh
# A client of the serving SGLang, one /generate request after another, one line each:
# "<unix time sent> <unix time answered or given up> ok|fail" (a request still in flight when the planned restart
# stops the server fails, and only its end time says it was not a failure of the old server).
# Run by side_effect.yml as a transient unit during an upgrade; tests/test_rollback.py reads the lines.
while :; do
  t=$(date +%s.%N)
  if curl -sf -m 10 -o /dev/null -H 'Authorization: Bearer molecule-not-a-secret' -H 'Content-Type: application/json' \
      -d '{"text": "the dog", "sampling_params": {"max_new_tokens": 1}}' http://127.0.0.1:30000/generate; then
    echo "$t $(date +%s.%N) ok"
  else
    echo "$t $(date +%s.%N) fail"
  fi
  sleep 0.2
done
