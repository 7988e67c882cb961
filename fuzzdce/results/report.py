"""The one text report (``render``) of a ``records.RunSummary``: what ``fuzzdce run``, ``merge`` and
``report`` print, of a campaign, of merged runs, or of a findings folder.

A bug is the unit: the report leads with "N bugs (M findings)" and which Thunder is the reference
and which are under test, regressions not suppressed by the known-findings file first, one short
block each with its minimal program. The per placement x path x oracle table of findings is in
summary.json, and printed with ``--verbose``.
"""

from __future__ import annotations

import textwrap
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from fuzzdce.core.decisions import describe
from fuzzdce.core.findings import confirmation_words
from fuzzdce.core.vocabulary import Verdict
from fuzzdce.oracles import ORACLES
from fuzzdce.results.records import BugRecord, RunSummary, by_standing, gone_lines
from fuzzdce.results.slow import slow_lines
from fuzzdce.results.store import REPRO_FILE
from fuzzdce.running.coverage import activity_lines
from fuzzdce.running.grad_rules import coverage_line, family_lines
from fuzzdce.running.grad_rules import source_lines as grad_source_lines
from fuzzdce.running.path_running import GUARD_NOTE
from fuzzdce.strategies.model_blocks import dropped_lines, reached_part
from fuzzdce.strategies.opinfo import source_lines


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
    upstream = f"   {record.upstream}" if record.upstream is not None else ""
    lines = [
        f"--- bug {record.id} under {', '.join(record.placements)}{upstream}{known}",
        f"    {confirmation_words(record.confirmed)}",
        f"    {', '.join(record.oracles)} on {', '.join(record.paths)}: {plural(len(record.members), 'finding')}, "
        f"{plural(record.count, 'occurrence')}, smallest program {plural(record.n_ops, 'op')}",
        f"    {record.message[:300]}",
    ]
    if record.decision is not None:
        lines += ["    " + line for line in describe(record.decision, ORACLES)]
    lines += ["    " + line for line in gone_lines(record)]
    shown = shown_on(record)
    if shown:  # which Thunder (version, path, commit): merged runs may have fuzzed several
        lines.append(f"    shown on: {shown}")
    if record.needs_nonfinite:
        lines.append("    needs a NaN or infinite input: wrong values only where IEEE special values go in")
    if record.shrink:
        # One op is as few statements as a program that shows a bug holds: what time cut there is
        # Hypothesis's shrink of its shapes, values and dtypes.
        left = (
            "its shapes, values and dtypes may shrink further"
            if record.n_ops <= 1
            else "the program may hold more than the bug needs"
        )
        lines.append(f"    {record.shrink} ({left})")
    if verbose:
        for m in record.members:
            lines.append(f"      member {m.id}: {m.oracle} on {m.path} ({m.count}x): {m.why}")
    if record.verdict == Verdict.REGRESSION or verbose:
        lines += textwrap.indent(record.program, "    | ").rstrip().splitlines()
    if reproduce is not None:
        lines.append(f"    reproduce: {reproduce}")
    return lines


def shown_on(record: BugRecord) -> str:
    """Which Thunders showed the bug (version, path, commit), each once: placements patching the
    same Thunder are named together ("thunder 0.2.6 at ... (as stock, rdnp)")."""
    by_thunder: dict[str, list[str]] = {}
    for name in record.placements:
        if name in record.thunders:
            base = record.thunders[name].split(", patched by placement ", 1)[0]
            by_thunder.setdefault(base, []).append(name)
    return "; ".join(f"{thunder} (as {', '.join(names)})" for thunder, names in by_thunder.items())


def roles_lines(summary: RunSummary) -> list[str]:
    """Which Thunder is the reference and which are under test, one line each (version, path, commit)."""
    reference = summary.reference
    if reference is None:
        return ["reference: not one: the runs merged judged against different references"]
    thunders = summary.thunders
    lines = [f"reference: {reference} = {thunders.get(reference, 'not recorded')}"]
    lines += [f"under test: {name} = {thunders.get(name, 'not recorded')}" for name in summary.placements if name != reference]
    return lines


def headline(summary: RunSummary) -> str:
    """How many bugs in how many programs, in how long; a merge's also from how many runs, on how
    many machine seconds; a campaign's, its seed."""
    found = (
        f"{plural(summary.n_bugs, 'bug')} ({plural(summary.n_findings, 'finding')}) in {summary.programs} programs "
        f"({summary.invalid_programs} invalid)"
    )
    if summary.runs is not None:
        return (
            f"{found} from {plural(len(summary.runs), 'run')}, {summary.wall_seconds:.0f} s wall "
            f"({summary.machine_seconds:.0f} s on all machines), {summary.programs_per_minute:.1f} programs/minute"
        )
    return f"{found}, {summary.wall_seconds:.0f} s, {summary.seconds_per_program:.2f} s/program; seed {summary.seed}"


def reproduce_line(record: BugRecord, folder: Path) -> str:
    """How to rerun a bug saved in findings folder ``folder``, and print its issue text."""
    return f"python {folder / record.id / REPRO_FILE}   issue text: fuzzdce issue {record.id} --findings {folder}"


def not_checked_lines(not_checked: Iterable[Mapping[str, Any]]) -> list[str]:
    """The checks that could not be made (an exception fuzzdce swallowed), one line each: a check
    switched off makes a run cleaner than it is, so it is said, never left silent."""
    entries = list(not_checked)
    if not entries:
        return []
    lines = ["NOT CHECKED (an exception swallowed; a clean result there is no pass):"]
    lines += [f"  {n['oracle']} {n['what']} on {n['path']}: {plural(n['times'], 'time')}" for n in entries]
    return lines


def render(summary: RunSummary, folder: Path | str | None, *, verbose: bool = False) -> str:
    """The printed report of ``summary``; ``folder``: the findings folder its bugs are saved in
    (None: not saved, no reproduce lines)."""
    folder = Path(folder).absolute() if folder is not None else None
    out = ["", f"== fuzzdce: {headline(summary)} ==", *roles_lines(summary), ""]
    if verbose:
        out += ["distinct findings (occurrences) per placement x path and oracle:", table(summary.counts), ""]
    for title, records in by_standing(summary.bugs):
        out.append(f"== {title}: {plural(len(records), 'bug')} ==")
        for record in records:
            out += bug_lines(record, reproduce_line(record, folder) if folder is not None else None, verbose=verbose)
        out.append("")
    out += slow_lines(summary.slow_programs, folder)
    if summary.dce_activity:
        against = summary.reference or "the reference"
        out += [f"DCE activity against {against} (its edits: subsymbols removed per symbol, raises; every path):"]
        out += [f"  {line}" for line in activity_lines(summary.dce_activity, reference=against)]
    if summary.op_counts is not None:
        ops = ", ".join(f"{op} {n}" for op, n in summary.op_counts.items())
        out += [f"op coverage ({len(summary.op_counts)} ops): {ops}"]
        by_source = source_lines(summary.op_counts, summary.opinfo, summary.dropped_steps)
        by_source[0] += reached_part(summary.op_counts)
        out += by_source + dropped_lines(summary.dropped_steps)
    if summary.compiles:  # where stock's compile served a placement that changed nothing (running.compile_sharing)
        out.append(
            "compiles shared with stock (paths where the placement did as stock at every call): "
            + ", ".join(f"{p} {c['as_stock']} of {c['as_stock'] + c['compiled']}" for p, c in summary.compiles.items())
        )
    grad_line = coverage_line(summary.grad_rules)
    if grad_line:
        out += [grad_line, *family_lines(summary.grad_rules)]
        out += grad_source_lines(summary.grad_rules, (b.ops for b in summary.bugs))
    if summary.dropped_steps:
        out.append(f"steps drawn but dropped (no operand fitted, or torch rejected them): {sum(summary.dropped_steps.values())}")
    varied = [n for n in summary.notes if n["note"].startswith(GUARD_NOTE)]
    skipped = [n for n in summary.notes if not n["note"].startswith(GUARD_NOTE)]
    if varied:  # per path: programs whose guard call varied each property, and hit or missed the cache
        out.append(
            "guarded properties varied (programs): "
            + "; ".join(f"{n['path']}: {n['note'].removeprefix(GUARD_NOTE)} ({n['programs']})" for n in varied)
        )
    if skipped:
        out.append("skipped (programs): " + "; ".join(f"{n['path']}: {n['note']} ({n['programs']})" for n in skipped))
    out += not_checked_lines(summary.not_checked)
    if folder is not None:
        runs = f"; runs: {', '.join(summary.runs)}" if summary.runs is not None else ""
        out.append(f"findings folder: {folder} (summary.json, one folder per bug; fuzzdce replay DIR reruns them{runs})")
    return "\n".join(out)
