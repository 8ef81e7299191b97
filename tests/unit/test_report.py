"""The report and its picture: the plotted line is SGLang's forward formula, the report carries the run's
numbers, and report.html is one self-contained page whose picture decodes as a PNG."""

import base64
import io
import json
import math
import os
from html.parser import HTMLParser

import matplotlib.image
import pytest
import sglang_kvplan
from matplotlib.backends.backend_agg import FigureCanvasAgg
from sglang_report.picture import curves, draw
from sglang_report.report import build_report, measured_boots, previous_report, write_run_report

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GIB = 2 ** 30


@pytest.fixture
def facts():
    with open(os.path.join(REPO, "tests", "fixtures", "report_facts_ct200.json"), encoding="utf-8") as handle:
        return json.load(handle)


@pytest.fixture(scope="module")
def drawn():
    """The ct200 fixture's curves and figure, drawn once for the tests that only read them."""
    with open(os.path.join(REPO, "tests", "fixtures", "report_facts_ct200.json"), encoding="utf-8") as handle:
        facts = json.load(handle)
    data = curves(facts["sglang_kv_spec"], facts["sglang_kv_plan_result"], measured_boots(facts))
    return data, draw(data, "ct200")[1]


def forward(pre, post, fraction, cell=70272):
    """SGLang's profile_max_num_token, written out: floor((A - P * (1 - f)) * 2**30 / cell)."""
    return max(int((post - pre * (1 - fraction)) * GIB // cell), 0)


def line(fig, gid):
    """(x, y) of the plotted line with this gid, read back from the figure."""
    for axes in fig.axes:
        for artist in axes.get_lines():
            if artist.get_gid() == gid:
                return [float(x) for x in artist.get_xdata()], [float(y) for y in artist.get_ydata()]
    raise AssertionError("no line %r on the figure" % gid)


def at(xs, ys, fraction):
    return ys[min(range(len(xs)), key=lambda i: abs(xs[i] - fraction))]


def test_the_fixture_plan_is_the_planners(facts):
    assert sglang_kvplan.plan(facts["sglang_kv_spec"]) == facts["sglang_kv_plan_result"]


@pytest.mark.parametrize("fraction", [0.78, 0.85, 0.90, 0.926, 0.95, 0.985])
def test_plotted_line_is_the_forward_formula(facts, drawn, fraction):
    spec = facts["sglang_kv_spec"]
    _data, fig = drawn
    xs, ys = line(fig, "pool")
    assert min(abs(x - fraction) for x in xs) < 1e-9, "the fraction is a plotted point"
    plotted = at(xs, ys, fraction)
    assert plotted == sglang_kvplan.pool_tokens(spec, fraction)
    assert plotted == forward(85.33, 19.418589, fraction)


def test_chosen_point_target_and_headroom(drawn):
    data, fig = drawn
    assert line(fig, "chosen") == ([0.926], [200229.0])
    assert line(fig, "target")[1] == [200000.0, 200000.0]
    # The least fraction leaving min_headroom_gib 4.0 of P 85.33 unreserved: floor((1 - 4/85.33) * 1000) / 1000.
    assert data["ceiling"] == 0.953
    assert data["chosen"]["headroom_gib"] == pytest.approx((1 - 0.926) * 85.33, abs=1e-3)


def test_fp8_line_and_the_trade_off(drawn):
    data, fig = drawn
    xs, ys = line(fig, "fp8")
    assert at(xs, ys, 0.926) == forward(85.33, 19.418589, 0.926, cell=70272 // 2)
    trade = data["tradeoff"]
    assert trade["pool_at_ceiling"] == forward(85.33, 19.418589, 0.953)
    # Full-length requests the pool holds: pool // context, e.g. 64k requests at the ceiling.
    i = trade["contexts"].index(65536)
    assert trade["requests_at_ceiling"][i] == forward(85.33, 19.418589, 0.953) // 65536
    assert trade["fp8_requests_at_ceiling"][i] == forward(85.33, 19.418589, 0.953, cell=35136) // 65536
    assert trade["requests_at_plan"] == 1
    # No context past the model's window (Kimi K2.6: max_position_embeddings 262,144).
    assert max(trade["contexts"]) == 262144


def test_a_pool_cap_flattens_the_line(facts):
    plan = dict(facts["sglang_kv_plan_result"], max_total_tokens=210000)
    data = curves(facts["sglang_kv_spec"], plan, [])
    _png, fig = draw(data, "ct200")
    xs, ys = line(fig, "pool")
    assert at(xs, ys, 0.95) == 210000 < forward(85.33, 19.418589, 0.95)
    assert at(xs, ys, 0.90) == forward(85.33, 19.418589, 0.90)
    assert line(fig, "cap")[1] == [210000.0, 210000.0]


def test_measured_boots_are_drawn_on_the_line(facts, drawn):
    boots = measured_boots(facts)
    assert [(b["mem_fraction_static"], b["pool_tokens"]) for b in boots] == [
        (0.85, 101134), (0.889, 151987), (0.92, 192406), (0.926, 200229), (0.94, 218484)]
    data, fig = drawn
    assert line(fig, "measured") == ([0.85, 0.889, 0.92, 0.926, 0.94], [101134.0, 151987.0, 192406.0, 200229.0,
                                                                        218484.0])
    # The boots sit on this run's line (P 85.33, A 19.418589) within plan.yml's tolerance, 0.1% or 2 tokens.
    for boot in data["measured"]:
        assert abs(boot["predicted"] - boot["pool_tokens"]) <= max(2, boot["pool_tokens"] // 1000)


class Page(HTMLParser):
    """Tables as {id: {header: cell}}, the images, and anything that would load another file."""

    def __init__(self):
        super().__init__()
        self.tables, self.images, self.external, self.scripts, self.text = {}, [], [], 0, []
        self._table = self._th = None
        self._cell = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "table":
            self._table = self.tables.setdefault(attrs.get("id", "table%d" % len(self.tables)), {})
        if tag in ("th", "td"):
            self._cell = []
        if tag == "img":
            self.images.append(attrs)
        if tag == "script":
            self.scripts += 1
        for key in ("src", "href"):
            if attrs.get(key) and not attrs[key].startswith("data:"):
                self.external.append(attrs[key])

    def handle_endtag(self, tag):
        if tag == "th":
            self._th = "".join(self._cell).strip()
        elif tag == "td" and self._table is not None and self._th is not None:
            self._table[self._th] = "".join(self._cell).strip()
            self._th = None
        elif tag == "table":
            self._table = None

    def handle_data(self, data):
        self._cell.append(data)
        self.text.append(data)


def test_report_json_and_html(facts, tmp_path):
    out = write_run_report(facts, str(tmp_path), "20261129T100500Z", "2026-11-29T10:05:00+00:00")
    assert out == str(tmp_path / "ct200" / "20261129T100500Z")
    with open(os.path.join(out, "report.json"), encoding="utf-8") as handle:
        report = json.load(handle)
    assert report["plan"]["mem_fraction_static"] == 0.926
    assert report["plan"]["predicted_pool_tokens"] == 200229
    assert report["plan"]["pre_load_avail_gib"] == 85.33 and report["plan"]["post_load_avail_gib"] == 19.419
    assert report["plan"]["calibration_source"].startswith("this run's first boot")
    # the pool (200,229) holds one 200k request; the headroom affords the seed's 8 side by side
    assert report["plan"]["args"][:6] == ["--context-length", "200000", "--mem-fraction-static", "0.926",
                                          "--max-running-requests", "8"]
    assert report["boot"]["pool_tokens"] == 200229 and report["boot_wait_s"] == 42.3
    assert report["calibration"]["pool_tokens"] == 151987
    assert report["restarts"] == {"starts": 2, "corrective": 1}
    assert report["proof"]["prompt_tokens"] == 60002 and report["proof"]["ttft_s"] == 0.104
    assert report["proof"]["prefill_tokens_per_s"] == 495414.6 and report["proof"]["completion"] == " Dog."
    assert report["previous"] is None

    with open(os.path.join(out, "report.html"), encoding="utf-8") as handle:
        page_text = handle.read()
    assert "api_key" not in page_text and "VALUE_SPECIFIED" not in page_text
    page = Page()
    page.feed(page_text)
    assert page.external == [] and page.scripts == 0, "one self-contained file"
    assert page.tables["plan"]["--mem-fraction-static"] == "0.926"
    assert page.tables["plan"]["predicted pool (tokens)"] == "200,229"
    assert page.tables["plan"]["P and A came from"].startswith("this run's first boot")
    assert page.tables["boot"]["corrective restarts"] == "1"
    assert page.tables["proof"]["prompt (tokens, server-counted)"] == "60,002"
    assert page.tables["proof"]["time to first token (s)"] == "0.104"
    assert page.tables["proof"]["prefill (tokens/s)"] == "495,414.6"
    assert page.tables["proof"]["answer"] == "Dog."
    assert page.tables["calibration"]["pool_tokens"] == "151,987"
    assert page.tables["proof"]["short requests at once (answered / sent)"] == "8 / 8"
    assert page.tables["proof"]["short requests at once: time to the last answer (s)"] == "0.21"
    tradeoff = page_text[page_text.index('id="tradeoff"'):]
    assert "8 requests at once, up to %s tokens each (pool / 8)" % format(200229 // 8, ",") in tradeoff
    assert "beyond that SGLang queues them" in tradeoff and "instead: fp8_e4m3 KV" in tradeoff
    assert "prefill 495,414.6 tokens/s over 60,002 prompt tokens" in tradeoff
    assert "8 of 8 answered with their own needle, the last after 0.21 s, 114.5 completion tokens/s" in tradeoff

    (image,) = page.images
    head, _, payload = image["src"].partition(",")
    assert head == "data:image/png;base64"
    png = base64.b64decode(payload, validate=True)
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    pixels = matplotlib.image.imread(io.BytesIO(png), format="png")
    assert pixels.shape[:2] == (660, 1300)
    assert pixels.std() > 0.05, "a picture, not a blank"


def test_the_next_report_shows_the_difference(facts, tmp_path):
    write_run_report(facts, str(tmp_path), "20261129T100500Z", "2026-11-29T10:05:00+00:00")
    facts["sglang_smoke"] = dict(facts["sglang_smoke"], prefill_tokens_per_s=400000.0, pool_tokens=200230)
    out = write_run_report(facts, str(tmp_path), "20261130T090000Z", "2026-11-30T09:00:00+00:00")
    with open(os.path.join(out, "report.json"), encoding="utf-8") as handle:
        report = json.load(handle)
    previous = report["previous"]
    assert previous["path"].endswith(os.path.join("ct200", "20261129T100500Z", "report.json"))
    assert previous["pool_tokens"] == {"now": 200230, "before": 200229, "change": 1, "change_pct": 0.0}
    assert previous["prefill_tokens_per_s"]["change"] == pytest.approx(-95414.6)
    assert previous["prefill_tokens_per_s"]["change_pct"] == pytest.approx(-19.26, abs=0.01)
    page = Page()
    with open(os.path.join(out, "report.html"), encoding="utf-8") as handle:
        page.feed(handle.read())
    assert page.tables["previous"]["prefill (tokens/s)"].startswith("495,414.6 -> 400,000.0")
    # The earlier report is the newest one before this run's, never this run's own folder.
    assert previous_report(str(tmp_path / "ct200"), exclude=out)[0] == previous["path"]


def test_the_proof_says_what_it_asked_and_what_the_answer_had_to_match():
    smoke = {"ok": True, "question": "needle", "needle": 4424153, "expect": r"\b4424153\b", "completion": " 4424153."}
    proof = build_report({"host": "ct200", "sglang_smoke": smoke}, "2026-11-29T10:05:00+00:00")["proof"]
    assert (proof["question"], proof["needle"], proof["expect"]) == ("needle", 4424153, r"\b4424153\b")


def test_missing_facts_give_a_report_that_says_so(tmp_path):
    report = build_report({"host": "ct200", "sglang_smoke": {"ok": False, "msg": "pool too small"}},
                          "2026-11-29T10:05:00+00:00")
    assert report["plan"]["mem_fraction_static"] is None and report["proof"]["msg"] == "pool too small"
    out = write_run_report({"host": "ct200"}, str(tmp_path), "20261129T100500Z", "2026-11-29T10:05:00+00:00")
    with open(os.path.join(out, "report.html"), encoding="utf-8") as handle:
        text = handle.read()
    assert "No picture: this run has no plan." in text and "not recorded" in text


def test_forward_formula_helper_is_sglangs():
    # ct200's hand-tuned boot at 0.94 logged 218,484 tokens; P and A in host_vars are rounded to 3 decimals.
    assert abs(forward(85.334, 19.419, 0.94) - 218484) <= 2
    assert math.isclose(70272, (512 + 64) * 61 * 2)


@pytest.mark.parametrize(("plan", "corrective", "in_use", "says"), [
    (None, 0, {}, "not recorded (no plan this run)"),
    ({"calibrated": False}, 0, {}, "estimated from the GPU and the checkpoint"),
    ({"calibrated": True}, 1, {"pre_load_avail_gib": 85.3}, "this run's first boot (the estimate fell short"),
    ({"calibrated": True}, 0, {"pre_load_avail_gib": 85.0}, "inventory: sglang_calibration in host_vars"),
    ({"calibrated": True}, 0, {"pre_load_avail_gib": 85.3}, "stored on the host: ansible_local.sglang_calibration"),
])
def test_the_calibration_source_says_where_the_plan_s_calibration_came_from(plan, corrective, in_use, says):
    from sglang_report.report import calibration_source
    said = calibration_source(plan, corrective, in_use, {"pre_load_avail_gib": 85.0}, "sglang_calibration")
    assert said.startswith(says)


def test_a_picture_that_shows_the_same_is_taken_from_the_previous_report_not_drawn_again(facts, tmp_path,
                                                                                       monkeypatch):
    first = write_run_report(facts, str(tmp_path), "20261129T100500Z", "2026-11-29T10:05:00+00:00")
    with open(os.path.join(first, "picture.png"), "rb") as handle:
        drawn_png = handle.read()

    def no_drawing(data, title):
        raise AssertionError("drawn again although the previous report shows the same picture")

    monkeypatch.setattr("sglang_report.report.draw", no_drawing)
    facts["sglang_smoke"] = dict(facts["sglang_smoke"], prefill_tokens_per_s=400000.0)  # not on the picture
    again = write_run_report(facts, str(tmp_path), "20261130T090000Z", "2026-11-30T09:00:00+00:00")
    with open(os.path.join(again, "picture.png"), "rb") as handle:
        assert handle.read() == drawn_png
    with open(os.path.join(again, "report.html"), encoding="utf-8") as handle:
        assert base64.b64encode(drawn_png).decode() in handle.read()
    # another plan is another picture: drawn
    facts["sglang_kv_plan_result"] = dict(facts["sglang_kv_plan_result"], explanation="another plan")
    with pytest.raises(AssertionError, match="drawn again"):
        write_run_report(facts, str(tmp_path), "20261201T090000Z", "2026-12-01T09:00:00+00:00")


def test_the_legends_cover_none_of_the_data_labels(drawn):
    # issue 37: the plan's legend sat over the measured boots' labels (upper left, where the low fractions' pools are)
    _data, fig = drawn
    renderer = FigureCanvasAgg(fig).get_renderer()
    fig.draw(renderer)
    for axes in fig.axes:
        legend = axes.get_legend().get_window_extent(renderer)
        assert not legend.overlaps(axes.get_window_extent(renderer)), "a legend inside the plot"
        for text in axes.texts:
            assert not legend.overlaps(text.get_window_extent(renderer)), text.get_text()
        for artist in axes.get_lines():
            points = axes.transData.transform(list(zip(artist.get_xdata(), artist.get_ydata(), strict=True)))
            assert not any(legend.contains(x, y) for x, y in points), artist.get_gid()
