"""Start the SGLang TEST DOUBLE as a subprocess for tests and benchmarks, exactly as a unit would:
`python -m sglang.launch_server <flags>`, with the simulated GPU in SGLANG_DOUBLE_GPU."""

import contextlib
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
PRESETS = os.path.join(HERE, os.pardir, os.pardir, "lib", "sglang_kvplan", "model_presets.yml")


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def model_dir(root, preset="kimi-k2.6"):
    """A checkpoint folder holding only the preset's config.json (the double reads no weights)."""
    import yaml

    with open(PRESETS, encoding="utf-8") as handle:
        config = yaml.safe_load(handle)[preset]["config"]
    path = os.path.join(root, preset)
    os.makedirs(path, exist_ok=True)
    with open(os.path.join(path, "config.json"), "w", encoding="utf-8") as handle:
        json.dump(config, handle)
    return path


@contextlib.contextmanager
def running_double(flags, gpu=None, preset="kimi-k2.6", ready_timeout=20):
    """Yield (url, log_path) of a double launched with `flags`; stop it afterwards."""
    with tempfile.TemporaryDirectory() as root:
        port = free_port()
        gpu_path = os.path.join(root, "gpu.json")
        with open(gpu_path, "w", encoding="utf-8") as handle:
            json.dump(gpu or {}, handle)
        env = dict(os.environ, SGLANG_DOUBLE_GPU=gpu_path, PYTHONPATH=HERE)
        log_path = os.path.join(root, "server.log")
        with open(log_path, "w", encoding="utf-8") as log:
            proc = subprocess.Popen(
                [sys.executable, "-m", "sglang.launch_server", "--model-path", model_dir(root, preset),
                 "--port", str(port), *flags], env=env, stdout=log, stderr=subprocess.STDOUT)
        url = "http://127.0.0.1:%d" % port
        try:
            deadline = time.monotonic() + ready_timeout
            while time.monotonic() < deadline and proc.poll() is None:
                try:
                    with urllib.request.urlopen(url + "/health", timeout=1):
                        break
                except (urllib.error.URLError, OSError):
                    time.sleep(0.05)
            yield url, log_path
        finally:
            proc.terminate()
            proc.wait(timeout=10)
