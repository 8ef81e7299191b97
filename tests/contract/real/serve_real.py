"""Boot the REAL SGLang server on this CPU the way the role's unit starts it, and record what it says (issue 34).

The runtime is the real release installed by setup_real.sh; the program is the role's own launcher
(module_utils/sglang_runtime_launcher.py launcher_text, written beside the release's python as the role writes it
into every runtime), the API key in a --config file as roles/sglang/templates/sglang.yaml.j2 renders it, the pool
pinned as the planner pins. SGLANG_USE_CPU_ENGINE=1 and the stub libcuda.so.1 are what let a CUDA build of SGLang
run on a CPU (shared/reference/sglang-real-run.md, boots 3 and 4). The model is the 2-layer random Llama the
real_server scenario boots too (make_tiny.py, made here: two layers whose weights are set by hand so that it answers
the proof's needle).

What it records under tests/fixtures/sglang_real/server-<version>/: the boot's journal lines (boot.log, the key
redacted by the launcher), the answers of /health, /server_info (with and without the key), /v1/models,
/generate (plain and streamed), /metrics, the project's proof module (library/sglang_smoke_test.py, level full)
run against it, and then what a real Prometheus returned for every alert and panel expression while it scraped the
live server through the rendered targets (scrape_real.py; Debian's prometheus must be installed: it fails before
the boot otherwise). test_stored_real_server.py holds the journal parser, the double and the catalog to these on
every make unit.

    python tests/contract/real/serve_real.py 0.5.23     (after setup_real.sh 0.5.23; ~4-12 min on 2 cores)

With SGLANG_REAL_OUT=DIR it records into DIR/server-<version>/ instead (make test's real-contract: the boot and the
proof made again on every run, the tree unchanged, and test_stored_real_server.py run on that recording).
"""

import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
BASE = os.environ.get("SGLANG_REAL_DIR", os.path.join(REPO, ".cache", "sglang-real"))
sys.path.insert(0, os.path.join(REPO, "tests", "module_utils_path"))
sys.path.insert(0, os.path.join(REPO, "library"))
sys.path.insert(0, HERE)

KEY = "sk-real-server-test-key"
CONTEXT = 2048
POOL = 2052  # the planner's pin for a 2,048 context: one request at full length and SGLang's 4-token margin
RUNNING = 4  # --max-running-requests: the proof sends this many prompts at once
PORT = int(os.environ.get("SGLANG_REAL_PORT", "31923"))
READY_S = int(os.environ.get("SGLANG_REAL_READY_S", "1500"))


def _http(path, key=None, body=None, timeout=120):
    request = urllib.request.Request("http://127.0.0.1:%d%s" % (PORT, path),
                                     data=json.dumps(body).encode() if body is not None else None,
                                     headers=dict({"Content-Type": "application/json"},
                                                  **({"Authorization": "Bearer " + key} if key else {})))
    try:
        with urllib.request.urlopen(request, timeout=timeout) as answer:
            return answer.status, answer.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode("utf-8", "replace")


def _json_or_text(text):
    try:
        return json.loads(text)
    except ValueError:
        return text


def prepare(version, work):
    """The model, the runtime's launcher and the --config file, under `work`."""
    import make_tiny  # tests/contract/real/: the needle model, the same bytes every time
    from ansible.module_utils.sglang_runtime_launcher import launcher_text  # the role's, for this release's venv

    model = os.path.join(work, "tiny-llama")
    make_tiny.write(model)

    launcher = os.path.join(work, "sglang-serve")
    with open(launcher, "w", encoding="utf-8") as handle:
        handle.write(launcher_text(os.path.join(BASE, version)))
    os.chmod(launcher, 0o755)
    config = os.path.join(work, "sglang.yaml")
    with open(config, "w", encoding="utf-8") as handle:
        handle.write("api-key: %s\n" % json.dumps(KEY))  # as sglang.yaml.j2 renders it (to_json)
    os.chmod(config, 0o600)
    return launcher, config, model


def boot(version, work):
    launcher, config, model = prepare(version, work)
    argv = [launcher, "--model-path", model, "--device", "cpu", "--host", "127.0.0.1", "--port", str(PORT),
            "--config", config, "--context-length", str(CONTEXT), "--max-total-tokens", str(POOL),
            "--max-running-requests", str(RUNNING), "--enable-metrics", "--log-level", "info"]
    env = dict(os.environ, SGLANG_USE_CPU_ENGINE="1", PYTHONUNBUFFERED="1",
               LD_LIBRARY_PATH=os.path.join(BASE, "stubcuda") + ":" + os.environ.get("LD_LIBRARY_PATH", ""))
    log = open(os.path.join(work, "boot.log"), "wb")  # held open while the server runs
    began = time.monotonic()
    server = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    while time.monotonic() - began < READY_S:
        if server.poll() is not None:
            raise SystemExit("the real server exited (%s) before it was ready: %s" % (server.returncode,
                                                                                       os.path.join(work, "boot.log")))
        try:
            if _http("/health", timeout=5)[0] == 200 and b"fired up" in open(log.name, "rb").read():
                return server, round(time.monotonic() - began, 1)
        except OSError:
            pass
        time.sleep(3)
    stop(server)
    raise SystemExit("the real server was not ready in %d s: %s" % (READY_S, os.path.join(work, "boot.log")))


def stop(server):
    try:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=60)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        os.killpg(server.pid, signal.SIGKILL)


def probe():
    """Each endpoint the role, the proof or an operator reads, as the real server answers it."""
    out = {}
    for name, path, key, body in (
            ("health", "/health", None, None),
            ("server_info_no_key", "/server_info", None, None),
            ("server_info", "/server_info", KEY, None),
            ("models", "/v1/models", KEY, None),
            ("generate", "/generate", KEY, {"text": "the quick brown fox", "sampling_params":
                                            {"max_new_tokens": 8, "temperature": 0}}),
            ("too_long", "/generate", KEY, {"text": "one two " * 2000, "sampling_params": {"max_new_tokens": 1}}),
            ("metrics", "/metrics", None, None)):
        status, text = _http(path, key, body)
        out[name] = {"status": status, "body": _json_or_text(text) if name != "metrics" else text}
    return out


def smoke(version):
    """The proof module, full level, against the real server: the needle at the full context, then 4 short needle
    prompts at once (the server's --max-running-requests)."""
    args = {"ANSIBLE_MODULE_ARGS": {
        "url": "http://127.0.0.1:%d" % PORT, "api_key": KEY, "level": "full", "context_target": CONTEXT,
        "concurrent_requests": RUNNING, "timeout": 600}}
    path = os.path.join(BASE, "smoke-args.json")
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(args, handle)
    env = dict(os.environ, PYTHONPATH=os.path.join(REPO, "tests", "module_utils_path"))
    run = subprocess.run([sys.executable, os.path.join(REPO, "library", "sglang_smoke_test.py"), path],
                         capture_output=True, text=True, env=env, timeout=900)
    os.unlink(path)
    try:
        return json.loads(run.stdout)
    except ValueError:
        return {"failed": True, "msg": "not JSON: %s %s" % (run.stdout[-2000:], run.stderr[-2000:])}


def record(version):
    import scrape_real  # tests/contract/real/: the real Prometheus scraping this server (issue 49)

    scrape_real.require()  # before the boot's minutes
    work = os.path.join(BASE, "server-%s" % version)
    os.makedirs(work, exist_ok=True)
    server, ready_s = boot(version, work)
    stopped = []

    def stop_once():  # the scrape stops the server to see it down; the finally must not signal a gone group
        if not stopped:
            stopped.append(True)
            stop(server)

    try:
        answers = probe()
        proof = smoke(version)
        scraped = scrape_real.scrape(PORT, KEY, CONTEXT, POOL, RUNNING, stop_once)
    finally:
        stop_once()
    # SGLANG_REAL_OUT=DIR (make test's real-contract): a fresh recording outside the tree, which
    # test_stored_real_server.py then reads instead of the committed one
    out = os.path.join(os.environ.get("SGLANG_REAL_OUT") or os.path.join(REPO, "tests", "fixtures", "sglang_real"),
                       "server-%s" % version)
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(work, "boot.log"), encoding="utf-8", errors="replace") as handle:
        text = handle.read()
    if KEY in text:
        raise SystemExit("the API key reached the real server's log: the launcher's redaction failed")
    # the log as the journal holds it, without the machine's paths and the progress bars' repaints
    text = text.replace(work, "@WORK@").replace(BASE, "@BASE@").replace(REPO, "@REPO@")
    with open(os.path.join(out, "boot.log"), "w", encoding="utf-8") as handle:
        handle.write(text)
    for answer in answers.values():  # the key is in /server_info's launch_command and api_key (upstream, D7)
        answer["body"] = json.loads(json.dumps(answer["body"]).replace(KEY, "@KEY@").replace(work, "@WORK@")
                                    .replace(BASE, "@BASE@").replace(REPO, "@REPO@"))
    with open(os.path.join(out, "answers.json"), "w", encoding="utf-8") as handle:
        json.dump({"release": "sglang==" + version, "ready_s": ready_s, "context": CONTEXT, "pool": POOL,
                   "answers": answers, "proof": proof, "prometheus": scraped}, handle, indent=1, sort_keys=True)
        handle.write("\n")
    print("sglang %s: ready in %s s; proof failed=%s; %s scraped it: %s; recorded in %s" % (
        version, ready_s, proof.get("failed"), scraped["version"],
        {name: a["series"] for name, a in scraped["alerts"].items()}, out))
    return proof


if __name__ == "__main__":
    result = record(sys.argv[1] if len(sys.argv) > 1 else "0.5.23")
    sys.exit(1 if result.get("failed") else 0)
