"""report.html as an operator sees it: opened in a headless Chromium (Debian's `chromium`), its rendered text holds
the run's key numbers and its embedded picture decodes to the PNG's size and is drawn, not blank.

The report has no script (one self-contained, inert file; tests/unit/test_report.py checks that), so the test
opens a copy with a probe appended: on `load` it writes what the browser rendered (document.body.innerText, the
picture's naturalWidth/Height, its place on the page) into a <pre id="probe">, which --dump-dom prints. A
screenshot of the unmodified report, at the same window size, is then read at that place.

Chromium missing fails the test, everywhere, CI or not: a check that skips itself on the machines that lack it
is a check that nobody runs. `make unit` / `make test` install it first as root (tests/browser/
install_chromium.sh); the failure says how to install it by hand.
"""

import base64
import html
import json
import os
import shutil
import struct
import subprocess

import matplotlib.image
import pytest
from sglang_report.report import write_run_report

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
WINDOW = "1400,2600"
PROBE = """<script>
window.addEventListener("load", function () {
  var img = document.getElementById("picture"), box = img.getBoundingClientRect();
  var probe = document.createElement("pre");
  probe.id = "probe";
  probe.textContent = JSON.stringify({
    text: document.body.innerText, complete: img.complete, naturalWidth: img.naturalWidth,
    naturalHeight: img.naturalHeight, box: [box.left, box.top, box.width, box.height],
    ratio: window.devicePixelRatio});
  document.body.appendChild(probe);
});
</script>
"""


def chromium():
    """The browser to use: $CHROMIUM, else Debian's chromium on PATH; a failure that says how to get it."""
    name = os.environ.get("CHROMIUM", "chromium")
    path = shutil.which(name)
    if not path:
        pytest.fail("%s is not installed, and the report's browser test needs it: run `make unit` as root (it runs "
                    "tests/browser/install_chromium.sh), or `apt-get install -y --no-install-recommends chromium`, "
                    "or set CHROMIUM to a Chromium or Chrome binary." % name, pytrace=False)
    return path


def browse(page, *flags, tmp_path):
    """Run headless Chromium on a file; returns its stdout."""
    proc = subprocess.run(
        [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
         "--user-data-dir=%s" % (tmp_path / "profile"), "--window-size=%s" % WINDOW, *flags, "file://%s" % page],
        capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


@pytest.fixture(scope="module")
def report_page(tmp_path_factory):
    with open(os.path.join(REPO, "tests", "fixtures", "report_facts_ct200.json"), encoding="utf-8") as handle:
        facts = json.load(handle)
    root = tmp_path_factory.mktemp("reports")
    out = write_run_report(facts, str(root), "20261129T100500Z", "2026-11-29T10:05:00+00:00")
    return os.path.join(out, "report.html")


@pytest.fixture(scope="module")
def rendered(report_page, tmp_path_factory):
    """What the browser rendered (the probe's JSON) and the PNG embedded in the page."""
    tmp_path = tmp_path_factory.mktemp("browser")
    with open(report_page, encoding="utf-8") as handle:
        page = handle.read()
    probe_page = tmp_path / "probe.html"
    probe_page.write_text(page.replace("</body>", PROBE + "</body>"), encoding="utf-8")
    dom = browse(probe_page, "--dump-dom", tmp_path=tmp_path)
    assert '<pre id="probe">' in dom, "the probe did not run: " + dom[-500:]
    probe = json.loads(html.unescape(dom.split('<pre id="probe">', 1)[1].split("</pre>", 1)[0]))
    png = base64.b64decode(page.split('src="data:image/png;base64,', 1)[1].split('"', 1)[0])
    return probe, png


@pytest.mark.parametrize("words", [
    "--mem-fraction-static\t0.926",  # the fraction
    "predicted pool (tokens)\t200,229",  # the pool
    "required pool (tokens)\t200,000",  # the target
    "context target\t200,000",
    "P, free GiB before the weights\t85.33",
    "A, free GiB after the weights\t19.419",
    "prompt (tokens, server-counted)\t60,002",
    "time to first token (s)\t0.104",
    "prefill (tokens/s)\t495,414.6",
    "corrective restarts\t1",
    "answer\tDog.",
])
def test_the_rendered_text_holds_the_runs_numbers(rendered, words):
    text = rendered[0]["text"]
    assert words in text, text


def test_the_plan_sentence_is_shown(rendered):
    assert "target 200,000 -> pool 200,229 tokens" in rendered[0]["text"]


def test_the_picture_decodes_to_the_embedded_pngs_size(rendered):
    probe, png = rendered
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", png[16:24])  # the IHDR chunk
    assert probe["complete"] is True
    assert (probe["naturalWidth"], probe["naturalHeight"]) == (width, height) == (1300, 660)


def test_the_picture_is_drawn_where_it_sits(report_page, rendered, tmp_path):
    probe, _ = rendered
    shot = tmp_path / "report.png"
    browse(report_page, "--screenshot=%s" % shot, tmp_path=tmp_path)
    pixels = matplotlib.image.imread(str(shot))[..., :3]
    scale = probe["ratio"] or 1
    left, top, width, height = (int(round(v * scale)) for v in probe["box"])
    assert width >= 1000 and top + height <= pixels.shape[0], (probe["box"], pixels.shape)
    inside = pixels[top:top + height, left:left + width]
    # A drawn chart: mostly white, with lines, text and the blue pool line; a blank or broken image is uniform.
    drawn = (inside < 0.9).any(axis=-1).mean()
    assert 0.02 < drawn < 0.6, drawn
    blue = ((inside[..., 2] > 0.5) & (inside[..., 0] < 0.4)).sum()
    assert blue > 200, blue

