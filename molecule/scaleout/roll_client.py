# A client for the rolling redeploy: sends small /generate requests through the router until a stop file
# appears, then writes how many succeeded and how many failed (with the first failures), as JSON.
# argv: router URL, API key, output file, stop file. Standard library only: it runs on the router host.
import json
import os
import sys
import time
import urllib.error
import urllib.request

url, key, out, stop = sys.argv[1:5]
counts = {"ok": 0, "errors": 0, "first_errors": [], "started": time.time()}
body = json.dumps({"text": "Say hello.", "sampling_params": {"max_new_tokens": 4, "temperature": 0}}).encode()
while not os.path.exists(stop):
    request = urllib.request.Request(url + "/generate", data=body, method="POST", headers={
        "Content-Type": "application/json", "Authorization": "Bearer " + key})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            json.load(response)
        counts["ok"] += 1
    except (urllib.error.URLError, OSError, ValueError) as error:
        counts["errors"] += 1
        if len(counts["first_errors"]) < 5:
            detail = error.read().decode(errors="replace")[:300] if isinstance(error, urllib.error.HTTPError) else ""
            counts["first_errors"].append("%.1f s: %s %s" % (time.time() - counts["started"], error, detail))
    time.sleep(0.2)
counts["seconds"] = round(time.time() - counts["started"], 1)
with open(out + ".tmp", "w", encoding="utf-8") as handle:
    json.dump(counts, handle)
os.replace(out + ".tmp", out)
