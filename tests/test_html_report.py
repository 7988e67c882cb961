"""``fuzzdce report``: time recorded by campaigns and lanes, and the HTML page checked in a real
headless browser (Debian's chromium): it renders, its charts draw, it fetches nothing.

The findings folder comes from the real writers: a ``Campaign`` with a stand-in evaluator (no
Thunder) writes summary.json and bug.json. The screenshot is kept at test-artifacts/report.png.
"""

import dataclasses
import re
import struct
import subprocess
import time
import zlib
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest
from builders import StandInEvaluator, split, wrong_values

from fuzzdce.cli import main
from fuzzdce.core.findings import FindingStore
from fuzzdce.core.model import Outcome
from fuzzdce.core.program import Program, Ref, Step, TensorInput
from fuzzdce.core.timeline import combine, sample
from fuzzdce.core.vocabulary import Verdict
from fuzzdce.fuzzing.campaign import Campaign
from fuzzdce.fuzzing.config import CampaignConfig
from fuzzdce.fuzzing.ledger import Stats
from fuzzdce.results.html_report import DATA_COLOUR, page, write_report
from fuzzdce.results.store import read_bugs, read_summary

CHROMIUM = Path("/usr/bin/chromium")
ARTIFACTS = Path(__file__).resolve().parent.parent / "test-artifacts"
CHART_TITLES = (
    "Distinct bugs found over time",
    "Programs per minute over time",
    "Steps drawn per op",
    "Programs compiled per path",
    "Programs in which each placement did otherwise than the reference",
)
PATHS = ("jit", "thunderfx")

SPLIT = split("thunderfx", "'t1' <script>", op="sub")
MISMATCH = wrong_values("jit", "add")
SUB = Program((TensorInput((2, 3)),), (Step("sub", "torch.sub({0}, {0})", (Ref(0), Ref(0))),), (1,), seed=1)
ADD = Program((TensorInput((2, 3)),), (Step("add", "torch.add({0}, {0})", (Ref(0), Ref(0))),), (1,), seed=1)


def shows(program, placement, paths):
    """Symcall splits programs with a sub on thunderfx; stock and symcall both mismatch on jit for
    programs with an add (a baseline bug)."""
    shown = [MISMATCH for path in paths if path == "jit" and "add" in program.ops]
    if placement.name == "symcall":
        shown += [SPLIT for path in paths if path == "thunderfx" and "sub" in program.ops]
    return shown


def outcome(program, placement, path):
    """Symcall removes a subsymbol of sub where it splits it."""
    activity = {("sub", 0): [1, 0]} if placement.name == "symcall" and "sub" in program.ops else {}
    return Outcome(path, placement.name, dce_activity=activity)


def bugs_in(folder: Path):
    """Every bug record the folder holds, by id (as the page reads them)."""
    return [record for record, _ in read_bugs(folder)]


def run_campaign(folder: Path) -> Campaign:
    """A campaign over stock and symcall writing ``folder``, with a progress line after each program."""

    def one_round(round_number):
        for program in (SUB, dataclasses.replace(SUB, seed=2), ADD):
            campaign.observe(program)
            campaign.progress()

    config = CampaignConfig.of(("stock", "symcall"), PATHS, max_examples=3, seed=1, findings_dir=str(folder))
    campaign = Campaign(config, evaluator=StandInEvaluator(shows, outcome), log=lambda line: None, run_round=one_round)
    campaign.run()
    return campaign


@pytest.fixture(scope="module")
def findings(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("findings")
    run_campaign(folder)
    return folder


# --- time recorded --------------------------------------------------------------------------------


@pytest.mark.slow
def test_summary_has_a_timeline_and_bugs_when_they_were_first_seen(findings):
    summary = read_summary(findings)
    timeline = summary.timeline
    # Each progress line (generation's three, then one per cause shrunk), then the end.
    programs = [s["programs"] for s in timeline]
    assert programs[:3] == [1, 2, 3] and set(programs[3:]) == {3} and len(programs) > 3
    assert [s["seconds"] for s in timeline] == sorted(s["seconds"] for s in timeline)
    assert timeline[-1]["bugs"] == summary.n_bugs == 2
    for bug in bugs_in(findings):
        members = [m.first_seen_seconds for m in bug.members]
        assert bug.first_seen_seconds == min(members) and 0 <= min(members) <= timeline[-1]["seconds"]


def test_lanes_timelines_combine_on_one_clock():
    lanes = [[sample(10, 5, 0), sample(20, 9, 1)], [sample(15, 4, 1)]]
    assert combine(lanes, [12.0, 30.0]) == [sample(10, 5, 0), sample(15, 9, 1), sample(20, 13, 1)]


def test_merged_stores_keep_the_earliest_sighting_and_stats_keep_each_lanes_timeline():
    first, second = FindingStore(), FindingStore()
    first.add(Verdict.SHARED, ("stock",), MISMATCH, ADD, seconds=30.0)
    second.add(Verdict.SHARED, ("stock",), MISMATCH, ADD, seconds=12.5)
    first.merge(second)
    assert [f.first_seen_seconds for f in first] == [12.5]
    merged, lane = Stats(), Stats(timeline=[sample(1, 2, 0)])
    merged.merge(lane)
    assert merged.lane_timelines == [[sample(1, 2, 0)]]


# --- the page -------------------------------------------------------------------------------------


class Charts(HTMLParser):
    """Each chart's (``svg.chart``) drawn data marks: bars with a width and height, lines through two
    points or more, dots with a radius; and every attribute that could make the page fetch."""

    FETCHING = ("src", "href", "xlink:href", "srcset", "action", "poster", "data")

    def __init__(self):
        super().__init__()
        self.drawn: dict[str, int] = {}
        self.current: str | None = None
        self.fetches: list[str] = []
        self.tags: set[str] = set()

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        self.tags.add(tag)
        self.fetches += [f"{tag} {k}={v}" for k, v in attrs.items() if k in self.FETCHING and v and not v.startswith("#")]
        if tag == "svg" and "chart" in attrs.get("class", ""):
            self.current = attrs["data-title"]
            self.drawn[self.current] = 0
        elif self.current is not None and drawn(tag, attrs):
            self.drawn[self.current] += 1

    def handle_startendtag(self, tag, attrs):
        self.handle_starttag(tag, attrs)

    def handle_endtag(self, tag):
        if tag == "svg":
            self.current = None


def drawn(tag: str, attrs: dict) -> bool:
    """Is this SVG element a data mark with something to draw?"""
    number = lambda key: float(attrs.get(key) or 0)  # noqa: E731
    if tag == "rect":
        return number("width") > 0 and number("height") > 0
    if tag == "polyline":
        return len(set(attrs.get("points", "").split())) >= 2
    if tag == "circle":
        return number("r") > 0
    return False


def empty_charts(html: str) -> list[str]:
    """The titles of the charts with no drawn elements."""
    charts = Charts()
    charts.feed(html)
    return [title for title, n in charts.drawn.items() if n == 0]


@pytest.mark.slow
def test_the_checker_finds_charts_with_no_drawn_elements(findings):
    empty = dataclasses.replace(read_summary(findings), timeline=(sample(0, 0, 0),), op_counts={}, dce_activity={})
    html = page(empty, [], findings)
    assert {t.split(" (")[0] for t in empty_charts(html)} >= {"Programs per minute over time", "Steps drawn per op"}
    assert not empty_charts(page(read_summary(findings), bugs_in(findings), findings))


def test_a_folder_without_a_summary_renders_with_notes_where_data_is_missing(tmp_path):
    html = write_report(tmp_path).read_text()
    assert "no timeline in summary.json" in html and "no dce_activity" in html and "no op_counts" in html


@pytest.mark.slow
def test_everything_is_escaped(findings):
    html = page(read_summary(findings), bugs_in(findings), findings)
    assert "<script" not in html
    assert "exception: &#x27;t1&#x27; &lt;script&gt;" in html


# --- in a real browser ----------------------------------------------------------------------------


def chromium(*args: str) -> subprocess.CompletedProcess:
    """Headless chromium that cannot resolve any host: a page that fetches would fail to, visibly."""
    command = [str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu", "--host-resolver-rules=MAP * ~NOTFOUND", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=120)


def png_pixels(path: Path) -> np.ndarray:
    """An 8-bit RGB or RGBA non-interlaced PNG (what chromium writes) as a height x width x channels array."""
    data = path.read_bytes()
    chunks, at = {}, 8
    while at < len(data):
        length, kind = struct.unpack(">I4s", data[at : at + 8])
        chunks.setdefault(kind, []).append(data[at + 8 : at + 8 + length])
        at += 12 + length
    width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", chunks[b"IHDR"][0])
    assert depth == 8 and colour in (2, 6) and interlace == 0, "unexpected PNG format"
    channels = 3 if colour == 2 else 4
    raw = np.frombuffer(zlib.decompress(b"".join(chunks[b"IDAT"])), np.uint8).reshape(height, 1 + width * channels)
    rows = np.zeros((height, width * channels), np.int32)
    previous = np.zeros(width * channels, np.int32)
    for y in range(height):
        rows[y] = previous = unfilter(raw[y, 0], raw[y, 1:].astype(np.int32), previous, channels)
    return rows.reshape(height, width, channels).astype(np.uint8)


def unfilter(kind: int, line: np.ndarray, above: np.ndarray, bpp: int) -> np.ndarray:
    """Undo one scanline's PNG filter (None, Sub, Up, Average, Paeth)."""
    if kind == 0:
        return line
    if kind == 2:
        return (line + above) % 256
    if kind == 1:  # each byte adds the reconstructed one bpp to its left: a running sum per channel
        return (np.cumsum(line.reshape(-1, bpp), axis=0) % 256).reshape(-1)
    out = line.copy()
    for i in range(len(line)):
        left = out[i - bpp] if i >= bpp else 0
        up, corner = above[i], (above[i - bpp] if i >= bpp else 0)
        if kind == 3:
            out[i] = (line[i] + (left + up) // 2) % 256
        else:
            p = left + up - corner
            pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
            out[i] = (line[i] + (left if pa <= pb and pa <= pc else up if pb <= pc else corner)) % 256
    return out


def data_pixels(png: Path) -> int:
    """Pixels painted in the charts' data colour."""
    rgb = tuple(int(DATA_COLOUR[i : i + 2], 16) for i in (1, 3, 5))
    return int(np.all(png_pixels(png)[:, :, :3] == rgb, axis=2).sum())


def screenshot(html_file: Path, png: Path) -> str:
    """Screenshot ``html_file`` to ``png``; return the dumped DOM."""
    shot = chromium(f"--screenshot={png}", "--window-size=1280,2400", "--hide-scrollbars", html_file.as_uri())
    assert png.is_file(), shot.stderr[-2000:]
    dom = chromium("--dump-dom", html_file.as_uri())
    assert dom.returncode == 0, dom.stderr[-2000:]
    return dom.stdout


@pytest.mark.slow
@pytest.mark.skipif(
    not CHROMIUM.is_file(), reason="needs Debian's chromium (/usr/bin/chromium); ./dev test installs it when root"
)
def test_the_report_renders_with_drawn_charts_and_fetches_nothing(findings, tmp_path):
    assert main(["report", str(findings), "--output", str(tmp_path / "report.html")]) == 0
    html = (tmp_path / "report.html").read_text()
    ARTIFACTS.mkdir(exist_ok=True)
    png = ARTIFACTS / "report.png"
    png.unlink(missing_ok=True)
    dom = screenshot(tmp_path / "report.html", png)
    print(f"report screenshot: {png}")

    # It rendered: the browser's DOM has every bug and every chart, each with drawn data marks.
    for bug in bugs_in(findings):
        assert f"bug {bug.id}" in dom
    charts = Charts()
    charts.feed(dom)
    for title in CHART_TITLES:
        assert any(t.startswith(title) for t in charts.drawn), f"chart {title!r} missing"
    assert not empty_charts(dom), f"charts with no drawn elements: {empty_charts(dom)}"
    # It fetches nothing: no script, stylesheet, image or frame, no attribute that loads anything.
    assert not charts.fetches and not charts.tags & {"script", "link", "img", "iframe", "object", "embed"}
    assert not re.search(r"url\(|@import", html)

    # The charts drew pixels; the same page with empty charts draws none.
    assert data_pixels(png) > 2000
    blank = dataclasses.replace(read_summary(findings), timeline=(), op_counts={}, dce_activity={}, paths=(), counts=())
    (tmp_path / "blank.html").write_text(page(blank, [], findings))
    screenshot(tmp_path / "blank.html", tmp_path / "blank.png")
    assert data_pixels(tmp_path / "blank.png") == 0


@pytest.mark.slow
def test_a_merged_campaign_charts_its_lanes_on_one_clock(tmp_path):
    """Two lanes on the parent's clock, absorbed as run_lanes does: programs add up at each lane's
    samples, bugs count from their first sighting, and the merged campaign's end comes last."""
    started = time.time()
    lanes = []
    for lane in range(2):
        config = CampaignConfig.of(("stock", "symcall"), PATHS, max_examples=3, seed=lane, started_at=started, confirm=False)
        campaign = Campaign(config, evaluator=StandInEvaluator(shows, outcome), log=lambda line: None, run_round=lambda n: None)
        for program in (SUB, ADD)[lane:]:
            campaign.observe(program)
            campaign.progress()
            time.sleep(0.01)  # samples a clock tick apart (they are rounded to milliseconds)
        lanes.append(campaign)
    merged = Campaign(
        CampaignConfig.of(("stock", "symcall"), PATHS, started_at=started),
        evaluator=StandInEvaluator(shows, outcome),
        log=lambda line: None,
    )
    for lane in lanes:
        merged.absorb(lane.store, lane.stats, False)
    merged.sample()
    timeline = merged.summary().to_json()["timeline"]
    assert [s["seconds"] for s in timeline] == sorted(s["seconds"] for s in timeline)
    assert sorted(s["programs"] for s in timeline[:-1]) == [1, 2, 3] and timeline[-1]["programs"] == 3
    assert timeline[-1]["bugs"] == len(merged.ledger.bugs()) == 2
