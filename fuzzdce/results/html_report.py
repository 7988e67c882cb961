"""``fuzzdce report DIR``: one self-contained HTML page for a findings folder, merged or not.

It reads only ``DIR/summary.json`` and ``DIR/*/bug.json``, so it renders any folder a campaign, its
lanes or ``fuzzdce merge`` wrote; what the folder lacks (no summary.json yet, a merge of runs
without timelines) is shown as missing, not guessed. The page fetches nothing: inline CSS,
charts drawn here as inline SVG, every piece of text through ``html.escape``.
"""

from __future__ import annotations

import os
from html import escape
from pathlib import Path
from typing import Any

from fuzzdce.core.decisions import describe
from fuzzdce.core.errors import UsageError
from fuzzdce.core.findings import confirmation_words
from fuzzdce.oracles import ORACLES
from fuzzdce.results.records import BugRecord, RunSummary, by_standing, gone_lines
from fuzzdce.results.report import not_checked_lines, plural
from fuzzdce.results.slow import slow_lines
from fuzzdce.results.store import REPRO_FILE, SUMMARY_FILE, read_bugs, read_summary
from fuzzdce.running.coverage import activity_lines
from fuzzdce.strategies import CATALOG

REPORT_FILE = "report.html"
# The one colour of every chart's data (bars, lines, dots): the browser test counts its pixels.
DATA_COLOUR = "#1f6fd1"
CHART_WIDTH = 880
BAR_ROW = 14  # pixels per bar, gap included

STYLE = f"""
body {{ font: 14px/1.4 system-ui, sans-serif; color: #222; background: #fff; margin: 24px auto; max-width: 960px; }}
h1 {{ font-size: 22px; }} h2 {{ font-size: 18px; border-bottom: 1px solid #ccc; margin-top: 32px; }}
h3 {{ font-size: 15px; margin-bottom: 4px; }}
table.facts td {{ padding: 1px 12px 1px 0; vertical-align: top; }}
pre {{ background: #f5f5f5; padding: 8px; white-space: pre-wrap; overflow-wrap: anywhere; font-size: 12px; }}
.bug {{ border-left: 4px solid #c33; padding-left: 12px; margin: 16px 0; }}
.bug.known {{ border-color: #d90; }} .bug.shared {{ border-color: #888; }} .bug.fixed {{ border-color: #5a5; }}
.missing {{ color: #a60; font-style: italic; }}
svg.chart {{ display: block; margin: 8px 0; }}
svg.chart text {{ font-size: 11px; fill: #333; }}
svg.chart .bar, svg.chart .dot {{ fill: {DATA_COLOUR}; }}
svg.chart .line {{ fill: none; stroke: {DATA_COLOUR}; stroke-width: 2; }}
svg.chart .axis {{ stroke: #999; stroke-width: 1; }}
"""

# --- reading the folder ---------------------------------------------------------------------------


# --- small pieces ---------------------------------------------------------------------------------


def missing(what: str) -> str:
    """A note where the folder lacks data."""
    return f'<p class="missing">{escape(what)}</p>'


def joined(values: Any) -> str:
    return escape(", ".join(map(str, values))) if isinstance(values, (list, tuple)) else escape(str(values))


def number(value: float) -> str:
    """A value for an axis or a bar: no decimals for whole numbers."""
    return f"{value:.0f}" if float(value).is_integer() else f"{value:.1f}"


def facts_table(rows: list[tuple[str, str]]) -> str:
    """Label/value rows; values are HTML already escaped."""
    return '<table class="facts">' + "".join(f"<tr><td>{escape(k)}</td><td>{v}</td></tr>" for k, v in rows) + "</table>"


# --- charts: inline SVG, data drawn in DATA_COLOUR --------------------------------------------------


def bar_chart(title: str, bars: list[tuple[str, float, str]]) -> str:
    """Horizontal bars: (label, value, text shown after the bar) each, longest bar full width."""
    label_width, value_width = 200, 110
    span = CHART_WIDTH - label_width - value_width
    top = max((value for _, value, _ in bars), default=0) or 1
    height = max(len(bars), 1) * BAR_ROW + 8
    rows = []
    for i, (label, value, shown) in enumerate(bars):
        y = 4 + i * BAR_ROW
        width = round(span * value / top, 1)
        rows.append(
            f'<text x="{label_width - 6}" y="{y + 10}" text-anchor="end">{escape(label)}</text>'
            f'<rect class="bar" x="{label_width}" y="{y}" width="{width}" height="{BAR_ROW - 3}" shape-rendering="crispEdges"/>'
            f'<text x="{label_width + width + 4}" y="{y + 10}">{escape(shown)}</text>'
        )
    if not bars:
        rows.append(f'<text x="{label_width}" y="14">no data</text>')
    return svg(title, height, "".join(rows))


def line_chart(title: str, points: list[tuple[float, float]], *, x_label: str, y_label: str, dots: bool = True) -> str:
    """A line through ``points`` (x, y), with a dot at each when ``dots``, axes from 0 to the largest values."""
    left, right, top, bottom, height = 60, 20, 24, 36, 200
    x_max = max((x for x, _ in points), default=0) or 1
    y_max = max((y for _, y in points), default=0) or 1

    def at(x: float, y: float) -> str:
        px = left + (CHART_WIDTH - left - right) * x / x_max
        py = height - bottom - (height - top - bottom) * y / y_max
        return f"{px:.1f},{py:.1f}"

    origin, x_end, y_end = at(0, 0).split(","), at(x_max, 0).split(","), at(0, y_max).split(",")
    parts = [
        f'<line class="axis" x1="{origin[0]}" y1="{origin[1]}" x2="{x_end[0]}" y2="{x_end[1]}"/>',
        f'<line class="axis" x1="{origin[0]}" y1="{origin[1]}" x2="{y_end[0]}" y2="{y_end[1]}"/>',
        f'<text x="{left - 6}" y="{float(origin[1]) + 4}" text-anchor="end">0</text>',
        f'<text x="{left - 6}" y="{float(y_end[1]) + 4}" text-anchor="end">{number(y_max)}</text>',
        f'<text x="{x_end[0]}" y="{float(origin[1]) + 14}" text-anchor="end">{number(x_max)}</text>',
        f'<text x="{(CHART_WIDTH + left) / 2}" y="{height - 6}" text-anchor="middle">{escape(x_label)}</text>',
        f'<text x="{left}" y="{top - 10}">{escape(y_label)}</text>',
    ]
    if points:
        parts.append(f'<polyline class="line" points="{" ".join(at(x, y) for x, y in points)}"/>')
        centres = [at(x, y).split(",") for x, y in points] if dots else []
        parts += [f'<circle class="dot" cx="{cx}" cy="{cy}" r="3"/>' for cx, cy in centres]
    else:
        parts.append(f'<text x="{left + 10}" y="{top + 30}">no data</text>')
    return svg(title, height, "".join(parts))


def svg(title: str, height: int, body: str) -> str:
    """A chart: its title as a heading and as the SVG's accessible name."""
    return (
        f"<h3>{escape(title)}</h3>"
        f'<svg class="chart" data-title="{escape(title)}" role="img" aria-label="{escape(title)}" '
        f'width="{CHART_WIDTH}" height="{height}" viewBox="0 0 {CHART_WIDTH} {height}">'
        f"{body}</svg>"
    )


# --- sections -------------------------------------------------------------------------------------


def header(summary: RunSummary | None, bugs: list[BugRecord], folder: Path) -> str:
    """What was run and how much: programs, time, rate, placements, paths, seeds or shards, versions."""
    if summary is None:
        return f"<h1>fuzzdce report</h1>{missing(f'no {SUMMARY_FILE} in {folder}: only the bugs are shown')}"
    rows = [
        ("findings folder", escape(str(folder))),
        (
            "bugs",
            f"{len(bugs)} ({summary.new_regressions} new regressions; {summary.n_findings} findings)",
        ),
        ("programs", f"{summary.programs} ({summary.invalid_programs} invalid)"),
        ("wall time", f"{summary.wall_seconds / 60:.1f} min ({round(summary.wall_seconds, 3)} s)"),
        ("programs per minute", escape(str(summary.programs_per_minute))),
        ("placements", joined(summary.placements)),
        ("paths", joined(summary.paths)),
    ]
    rows += [
        (key, joined(value) if isinstance(value, tuple) else escape(str(value)))
        for key, value in (("seed", summary.seed), ("shard", summary.shard), ("shards", summary.shards))
        if value is not None
    ]
    if summary.runs:  # a merged folder: the runs it covers
        rows += [(f"run {escape(run_id)}", run_line(run)) for run_id, run in sorted(summary.runs.items())]
    if summary.memory:
        rows += memory_rows(summary.memory)
    rows.append(("versions", escape(", ".join(f"{k} {v}" for k, v in summary.versions.items())) or "not recorded"))
    return f"<h1>fuzzdce report: {len(bugs)} bug{'s' * (len(bugs) != 1)}</h1>{facts_table(rows)}"


def run_line(run: dict[str, Any]) -> str:
    """One run of a merged folder: which shard, its seed, how much it ran."""
    return escape(
        f"shard {run.get('shard', '?')}, seed {run.get('seed', '?')}: {run.get('programs', '?')} programs "
        f"in {number(run.get('wall_seconds', 0))} s"
    )


def memory_rows(memory: dict[str, Any]) -> list[tuple[str, str]]:
    """Resident memory per process (start, end, peak), and how many processes were recycled."""
    rows = [
        (
            f"memory: {escape(str(p.get('process', '?')))}",
            escape(
                " ".join(
                    f"{k.removesuffix('_rss_mb')} {number(p[k])} MB"
                    for k in ("start_rss_mb", "end_rss_mb", "peak_rss_mb")
                    if k in p
                )
            ),
        )
        for p in memory.get("processes", [])
    ]
    recycled = memory.get("recycled") or {}
    if recycled:
        rows.append(("recycled", escape(", ".join(f"{n} {what}" for what, n in recycled.items()))))
    return rows


def bug_block(bug: BugRecord, folder: Path) -> str:
    """One bug: what, where, how often, the message, its minimal program, how to reproduce it."""
    bug_dir = folder / bug.id
    first_seen = bug.first_seen_seconds
    rows = [
        ("placements", joined(bug.placements)),
        ("paths", joined(bug.paths)),
        ("oracles", joined(bug.oracles)),
        (
            "count",
            f"{plural(bug.count, 'occurrence')}, {plural(len(bug.members), 'finding')}, smallest program {plural(bug.n_ops, 'op')}",
        ),
        (
            "first seen",
            "not recorded" if first_seen is None else f"{first_seen:.0f} s ({first_seen / 60:.1f} min) into the campaign",
        ),
    ]
    if bug.upstream is not None:
        link = f'<a href="{escape(bug.upstream.url)}">{escape(str(bug.upstream))}</a>'
        rows.append(("upstream", link))
    if bug.known:
        rows.append(("known", escape(str(bug.known))))
    rows.append(("confirmed", escape(confirmation_words(bug.confirmed))))
    program = "\n".join(part for part in (bug.inputs, bug.program) if part)
    commands = f"python {bug_dir / REPRO_FILE}\nfuzzdce replay {bug_dir}"
    return (
        f'<div class="bug {bug.standing}" id="bug-{escape(bug.id)}">'
        f"<h3>bug {escape(bug.id)}</h3>{facts_table(rows)}"
        f"<pre>{escape(bug.message)}</pre>"
        + (
            f"<p>the decision that breaks:</p><pre>{escape(chr(10).join(describe(bug.decision, ORACLES)))}</pre>"
            if bug.decision
            else ""
        )
        + (f"<p>{escape(str(bug.standing))}:</p><pre>{escape(chr(10).join(gone_lines(bug)))}</pre>" if gone_lines(bug) else "")
        + f"<p>minimal program:</p><pre>{escape(program)}</pre>"
        f"<p>reproduce:</p><pre>{escape(commands)}</pre></div>"
    )


def bug_sections(bugs: list[BugRecord], folder: Path) -> str:
    """The bugs, new regressions first, then known regressions, fixed, shared."""
    parts = ["<h2>Bugs</h2>"]
    for title, members in by_standing(bugs):
        parts.append(f"<h3>{escape(title[0].upper() + title[1:])}: {len(members)}</h3>")
        parts += [bug_block(b, folder) for b in members]
    return "".join(parts)


def rates(timeline: list[dict[str, Any]], unit: float) -> list[tuple[float, float]]:
    """Programs per minute between consecutive samples (from the start for the first), at each sample's time in ``unit`` seconds."""
    points, before = [], {"seconds": 0.0, "programs": 0}
    for s in timeline:
        elapsed = s["seconds"] - before["seconds"]
        if elapsed > 0:
            points.append((s["seconds"] / unit, 60 * (s["programs"] - before["programs"]) / elapsed))
            before = s
    return points


def steps(timeline: list[dict[str, Any]], unit: float) -> list[tuple[float, float]]:
    """Bugs so far as a step line from the start: a count holds until the next sample changes it."""
    points = [(0.0, 0)]
    for s in timeline:
        points += [(s["seconds"] / unit, points[-1][1]), (s["seconds"] / unit, s["bugs"])]
    return points


def discoveries(bugs: list[BugRecord], end: float, unit: float) -> list[tuple[float, float]] | None:
    """Bugs so far as a step at each bug's first-seen time, to ``end``; None when a bug has no time."""
    times = sorted(b.first_seen_seconds for b in bugs if b.first_seen_seconds is not None)
    if len(times) != len(bugs):
        return None
    points = [(0.0, 0)]
    for count, t in enumerate(times, 1):
        points += [(t / unit, count - 1), (t / unit, count)]
    return points + [(max(end, times[-1] if times else 0.0) / unit, len(times))]


def time_section(summary: RunSummary, bugs: list[BugRecord]) -> str:
    """Distinct bugs and programs per minute over the campaign's time (in seconds when short, else
    minutes). Bugs step at their first-seen times, exact; programs are sampled at progress lines."""
    timeline = summary.timeline
    if not timeline:
        return "<h2>Over time</h2>" + missing("no timeline in summary.json")
    unit, name = (1, "seconds") if timeline[-1]["seconds"] < 300 else (60, "minutes")
    found = discoveries(bugs, timeline[-1]["seconds"], unit) or steps(timeline, unit)
    return (
        "<h2>Over time</h2>"
        + line_chart("Distinct bugs found over time", found, x_label=name, y_label="bugs", dots=False)
        + line_chart("Programs per minute over time", rates(timeline, unit), x_label=name, y_label="programs/min")
    )


def op_section(summary: RunSummary, bugs: list[BugRecord]) -> str:
    """Programs per catalog op, and which entries were never drawn."""
    counts = summary.op_counts
    if counts is None:
        return "<h2>Op coverage</h2>" + missing("no op_counts in summary.json")
    never = [spec.name for spec in CATALOG if spec.name not in counts]
    bars = [(op, n, str(n)) for op, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))]
    return (
        "<h2>Op coverage</h2>"
        + bar_chart("Steps drawn per op", bars)
        + f"<p>{len(never)} of {len(CATALOG)} catalog entries never drawn"
        + (f": {escape(', '.join(never[:60]))}{', ...' if len(never) > 60 else ''}" if never else "")
        + "</p>"
    )


def path_section(summary: RunSummary, bugs: list[BugRecord]) -> str:
    """Programs each path compiled (the skipped ones taken out), and violations observed per path."""
    paths = summary.paths or sorted({c["path"] for c in summary.counts})
    if not paths:
        return "<h2>Path coverage</h2>" + missing("no paths or programs in summary.json")
    notes = summary.notes
    skipped = {p: sum(n["programs"] for n in notes if n["path"] == p and n["note"].startswith("skipped")) for p in paths}
    ran = [(p, summary.programs - skipped[p], f"{summary.programs - skipped[p]} ({skipped[p]} skipped)") for p in paths]
    violations = {p: sum(c["occurrences"] for c in summary.counts if c["path"] == p) for p in paths}
    other = [f"{n['path']}: {n['note']} ({n['programs']})" for n in notes if not n["note"].startswith("skipped")]
    unchecked = [line.strip() for line in not_checked_lines(summary.not_checked)]  # the text report's lines
    return (
        "<h2>Path coverage</h2>"
        + bar_chart("Programs compiled per path (every placement; skipped programs taken out)", ran)
        + f"<p>violations observed per path (every placement and oracle): {escape(', '.join(f'{p} {n}' for p, n in violations.items()))}</p>"
        + (f"<p>other notes (programs): {escape('; '.join(other))}</p>" if other else "")
        + (f"<p><strong>{escape(unchecked[0])}</strong> {escape('; '.join(unchecked[1:]))}</p>" if unchecked else "")
    )


def dce_section(summary: RunSummary, bugs: list[BugRecord]) -> str:
    """Per placement: the share of programs in which it did otherwise than the reference (its edits:
    subsymbols changed, raises; or a regression), and where."""
    activity = summary.dce_activity
    if activity is None:
        return "<h2>DCE activity</h2>" + missing("no dce_activity in summary.json")
    bars = [
        (name, 100 * e["fraction_changed"], f"{100 * e['fraction_changed']:.0f}% ({e['programs_changed']}/{e['programs']})")
        for name, e in activity.items()
    ]
    lines = "\n".join(activity_lines(activity))
    return (
        "<h2>DCE activity</h2>"
        + bar_chart(
            "Programs in which each placement did otherwise than the reference: subsymbols changed, a raise, a regression (%)",
            bars,
        )
        + (f"<pre>{escape(lines)}</pre>" if lines else missing("no placement other than the reference"))
    )


def slow_section(summary: RunSummary, bugs: list[BugRecord]) -> str:
    """Programs past their limit (``results.slow``), as the text report lists them; nothing when none."""
    folder = Path(summary.findings_dir) if summary.findings_dir else None
    lines = slow_lines(summary.slow_programs, folder)
    if not lines:
        return ""
    return f"<h2>Slow programs</h2><pre>{escape(chr(10).join(lines[1:]))}</pre>"


# --- the page -------------------------------------------------------------------------------------

# Each section reads the summary and the bugs; a new chart is one more function here.
SECTIONS = (time_section, op_section, path_section, dce_section, slow_section)


def page(summary: RunSummary | None, bugs: list[BugRecord], folder: Path) -> str:
    """The whole HTML page (``summary`` None: the folder has none, its sections say what is missing)."""
    sections = "".join(section(summary or RunSummary(), bugs) for section in SECTIONS)
    body = header(summary, bugs, folder) + bug_sections(bugs, folder) + sections
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        f"<title>fuzzdce report: {escape(str(folder))}</title><style>{STYLE}</style></head>"
        f"<body>{body}</body></html>\n"
    )


def write_report(folder: str | os.PathLike, output: str | os.PathLike | None = None) -> Path:
    """Write the report of findings folder ``folder`` to ``output`` (default: DIR/report.html)."""
    folder = Path(folder)
    if not folder.is_dir():
        raise UsageError(f"{folder} is not a findings folder (one holding {SUMMARY_FILE} and bug folders)")
    target = Path(output) if output is not None else folder / REPORT_FILE
    target.write_text(page(read_summary(folder), [record for record, _ in read_bugs(folder)], folder))
    return target
