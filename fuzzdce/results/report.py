"""The campaign's results: ``summary`` (what summary.json holds) and ``render`` (what is printed).

A bug is the unit: the report leads with "N bugs (M findings)" and which Thunder is the reference
and which are under test, regressions not suppressed by the known-findings file first, one short block each with its minimal program. The
per placement x path x oracle table of findings is in summary.json, and printed with ``--verbose``.
"""

from __future__ import annotations

import textwrap
from collections.abc import Iterable, Mapping
from typing import Any

from fuzzdce.core.vocabulary import Verdict
from fuzzdce.oracles import ORACLES
from fuzzdce.results.records import BugRecord, campaign_summary, grouped
from fuzzdce.results.store import REPRO_FILE
from fuzzdce.running.builds import describe_thunder
from fuzzdce.running.coverage import activity_lines
from fuzzdce.running.execution import GUARD_NOTE


def summary(campaign) -> dict[str, Any]:
    """Everything a campaign measured, as JSON-ready data: summary.json (``records.campaign_summary``)."""
    return campaign_summary(campaign).to_json()


def table(counts: Iterable[Mapping[str, Any]]) -> str:
    """Distinct findings (and occurrences) per placement x path (rows) and oracle (columns), from
    summary.json's ``counts``."""
    oracles = list(ORACLES)
    rows = {}
    for c in counts:
        rows.setdefault(f"{c['placement']} / {c['path']}", {})[c["oracle"]] = f"{c['findings']} ({c['occurrences']})"
    width = max([len("placement / path"), *map(len, rows)]) + 2
    lines = ["placement / path".ljust(width) + "".join(o.rjust(14) for o in oracles)]
    for row, cells in rows.items():
        lines.append(row.ljust(width) + "".join(cells.get(o, "0 (0)").rjust(14) for o in oracles))
    return "\n".join(lines)


def plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def bug_lines(record: BugRecord, reproduce: str | None = None, *, verbose: bool = False) -> list[str]:
    """One short block from a bug record: what, where, how often, the message, the minimal program,
    and ``reproduce`` (how to rerun it) when given."""
    known = f"   known: {record.known}" if record.known else ""
    confirmed = "" if record.confirmed is not False else "   (a member did not reproduce the same on replay)"
    lines = [
        f"--- bug {record.id} under {', '.join(record.placements)}{known}{confirmed}",
        f"    {', '.join(record.oracles)} on {', '.join(record.paths)}: {plural(len(record.members), 'finding')}, "
        f"{plural(record.count, 'occurrence')}, smallest program {plural(record.n_ops, 'op')}",
        f"    {record.message[:300]}",
    ]
    if record.needs_nonfinite:
        lines.append("    needs a NaN or infinite input: wrong values only where IEEE special values go in")
    if record.shrink:
        lines.append(f"    {record.shrink} (the program may hold more than the bug needs)")
    if verbose:
        for m in record.members:
            lines.append(f"      member {m.id}: {m.oracle} on {m.path} ({m.count}x): {m.why}")
    if record.verdict == Verdict.REGRESSION or verbose:
        lines += textwrap.indent(record.program, "    | ").rstrip().splitlines()
    if reproduce is not None:
        lines.append(f"    reproduce: {reproduce}")
    return lines


def roles_lines(campaign) -> list[str]:
    """Which Thunder is the reference and which are under test, one line each (version, path, commit)."""
    reference = campaign.reference
    lines = [f"reference: {reference.name} = {describe_thunder(reference)}"]
    lines += [f"under test: {p.name} = {describe_thunder(p)}" for p in campaign.placements if p.name != reference.name]
    return lines


def render(campaign, *, verbose: bool = False) -> str:
    """The printed report."""
    run = campaign_summary(campaign)
    out = [
        "",
        f"== fuzzdce: {plural(run.n_bugs, 'bug')} ({plural(run.n_findings, 'finding')}) in {run.programs} programs "
        f"({run.invalid_programs} invalid), {run.wall_seconds:.0f} s, {run.seconds_per_program:.2f} s/program; "
        f"seed {run.seed} ==",
        *roles_lines(campaign),
        "",
    ]
    if verbose:
        out += ["distinct findings (occurrences) per placement x path and oracle:", table(run.counts), ""]
    for title, records in grouped(run.bugs):
        out.append(f"== {title}: {plural(len(records), 'bug')} ==")
        for record in records:
            reproduce = None
            if campaign.folder is not None:
                reproduce = f"python {campaign.folder.root / record.id / REPRO_FILE}   issue text: fuzzdce issue {record.id}"
            out += bug_lines(record, reproduce, verbose=verbose)
        out.append("")
    if run.dce_activity:
        reference = campaign.reference.name
        out += [f"DCE activity against {reference} (subsymbols removed per symbol, every path):"]
        out += [f"  {line}" for line in activity_lines(run.dce_activity, reference=reference)]
    ops = ", ".join(f"{op} {n}" for op, n in run.op_counts.items())
    out += [f"op coverage ({len(run.op_counts)} ops): {ops}"]
    if run.dropped_steps:
        out.append(f"steps drawn but dropped (no operand fitted, or torch rejected them): {sum(run.dropped_steps.values())}")
    varied = [n for n in run.notes if n["note"].startswith(GUARD_NOTE)]
    skipped = [n for n in run.notes if not n["note"].startswith(GUARD_NOTE)]
    if varied:  # per path: programs whose guard call varied each property, and hit or missed the cache
        out.append(
            "guarded properties varied (programs): "
            + "; ".join(f"{n['path']}: {n['note'].removeprefix(GUARD_NOTE)} ({n['programs']})" for n in varied)
        )
    if skipped:
        out.append("skipped (programs): " + "; ".join(f"{n['path']}: {n['note']} ({n['programs']})" for n in skipped))
    if run.findings_dir:
        out.append(f"findings folder: {run.findings_dir} (summary.json, one folder per bug; fuzzdce replay DIR reruns them)")
    return "\n".join(out)
