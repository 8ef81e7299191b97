"""The double's api_key rule is the pinned release's (0.5.23 srt/utils/auth.py:102-106 decide_request_auth): the
probes and /metrics answer without the key, every other endpoint answers 401 without it."""

import os
import sys
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

from run_double import running_double  # noqa: E402


def _status(url, key=None):
    headers = {"Authorization": "Bearer " + key} if key else {}
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=10) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code


def test_metrics_and_health_need_no_key_and_the_rest_does():
    with running_double(["--api-key", "k3y", "--enable-metrics"], preset="llama-3.1-8b") as (url, _log):
        assert _status(url + "/metrics") == 200
        assert _status(url + "/health") == 200
        assert _status(url + "/v1/models") == 401
        assert _status(url + "/server_info") == 401
        assert _status(url + "/v1/models", "k3y") == 200
