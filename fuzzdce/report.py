"""The campaign's results: ``summary`` (what summary.json holds) and ``render`` (what is printed).

A bug is the unit: the report leads with "N bugs (M findings)", placement-induced bugs not
suppressed by the known-findings file first, one short block each with its minimal program. The
per placement x path x oracle table of findings is in summary.json, and printed with ``--verbose``.
"""

from __future__ import annotations

import textwrap
from collections import Counter
from typing import Any

from fuzzdce.coverage import activity_lines
from fuzzdce.findings import BASELINE, PLACEMENT_INDUCED, Bug
from fuzzdce.oracles import ORACLES
from fuzzdce.store import REPRO_FILE, bug_record
from fuzzdce.timeline import campaign_timeline
from fuzzdce.versions import versions

BUG_FIELDS = ("id", "key", "verdict", "placements", "paths", "oracles", "message", "count", "first_seen_seconds", "n_ops", "known", "confirmed")


MEMBER_FIELDS = ("id", "signature", "path", "oracle", "message", "count", "counts_by_run", "why")


def bug_entry(bug: Bug, folder=None) -> dict[str, Any]:
    """One bug in summary.json: its bug.json fields that identify it, its members, and its folder.
    Paste it into a known-findings file with a reason to suppress it (``signature`` is its key)."""
    record = bug_record(bug, folder.run_id if folder is not None else None)
    entry = {key: record[key] for key in BUG_FIELDS}
    entry["signature"] = bug.key
    entry["members"] = [{k: m[k] for k in MEMBER_FIELDS if k in m} for m in record["members"]]
    entry["folder"] = str(folder.folder(bug)) if folder is not None else None
    return entry


def distinct_counts(findings) -> Counter:
    """(placement, path, oracle) -> distinct findings shown under that placement."""
    counts = Counter()
    for f in findings:
        counts.update((p, f.violation.path, f.violation.oracle) for p in f.placements)
    return counts


def summary(campaign) -> dict[str, Any]:
    """Everything a campaign measured, as JSON-ready data."""
    s, store = campaign.stats, campaign.store
    distinct = distinct_counts(store)
    bugs = campaign.ledger.bugs()
    config = campaign.config
    return {
        "seed": campaign.seed,
        "campaign_seed": config.root_seed,
        "shard": config.shard_label,
        "run_id": config.run_id,  # what fuzzdce merge counts once: this shard of this campaign
        "placements": campaign.names,
        "paths": campaign.paths,
        "programs": s.programs,
        "invalid_programs": s.invalid,
        "evaluation_seconds": round(s.seconds, 3),
        "wall_seconds": round(s.wall_seconds, 3),
        "seconds_per_program": round(s.seconds / max(s.programs, 1), 4),
        "programs_per_minute": round(60 * s.programs / max(s.wall_seconds, 1e-9), 2),
        "unsupported_splits": s.unsupported_splits,
        "n_bugs": len(bugs),
        "n_findings": len(store),
        "bugs": {
            verdict: [bug_entry(b, campaign.folder) for b in bugs if b.verdict == verdict]
            for verdict in (PLACEMENT_INDUCED, BASELINE)
        },
        "new_placement_induced": sum(b.reportable for b in bugs),
        "counts": [
            {
                "placement": p,
                "path": path,
                "oracle": o,
                "findings": distinct[(p, path, o)],
                "occurrences": s.occurrences[(p, path, o)],
            }
            for p in campaign.names
            for path in campaign.paths
            for o in ORACLES
        ],
        "op_counts": dict(s.ops.most_common()),
        "dropped_steps": dict(s.dropped.most_common()),
        # Per placement: in how many programs it changed subsymbols against stock, and in which symbols.
        "dce_activity": s.dce.summary(campaign.names),
        # Why paths or calls were skipped, and in how many programs: a path skipped everywhere tested nothing.
        "notes": [{"path": path, "note": note, "programs": n} for (path, note), n in s.notes.most_common()],
        # Programs evaluated and distinct bugs over the campaign's time, lanes combined (timeline.py).
        "timeline": campaign_timeline(s.timeline, s.lane_timelines, [b.first_seen_seconds for b in bugs]),
        "findings_dir": str(campaign.folder.root) if campaign.folder is not None else None,
        # Resident MB of each process (driver, lanes, their workers across recycled children) and recyclings.
        "memory": campaign.memory().summary(),
        "versions": versions(),
    }


def table(data: dict[str, Any]) -> str:
    """Distinct findings (and occurrences) per placement x path (rows) and oracle (columns)."""
    oracles = list(ORACLES)
    rows = {}
    for c in data["counts"]:
        rows.setdefault(f"{c['placement']} / {c['path']}", {})[c["oracle"]] = f"{c['findings']} ({c['occurrences']})"
    width = max([len("placement / path"), *map(len, rows)]) + 2
    lines = ["placement / path".ljust(width) + "".join(o.rjust(14) for o in oracles)]
    for row, cells in rows.items():
        lines.append(row.ljust(width) + "".join(cells.get(o, "0 (0)").rjust(14) for o in oracles))
    return "\n".join(lines)


def plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def bug_lines(bug: Bug, folder=None, *, verbose: bool = False) -> list[str]:
    """One short block: what, where, how often, the message, the minimal program, how to reproduce."""
    known = f"   known: {bug.known_reason}" if bug.known_reason else ""
    confirmed = "" if bug.confirmed is not False else "   (a member did not reproduce the same on replay)"
    lines = [
        f"--- bug {bug.id} under {', '.join(bug.placements)}{known}{confirmed}",
        f"    {', '.join(bug.oracles())} on {', '.join(bug.paths())}: {plural(len(bug.members), 'finding')}, "
        f"{plural(bug.count, 'occurrence')}, smallest program {plural(bug.program.n_ops, 'op')}",
        f"    {bug.smallest.violation.message[:300]}",
    ]
    if verbose:
        for f in bug.members:
            lines.append(f"      member {f.id}: {f.violation.oracle} on {f.violation.path} ({f.count}x): {bug.why[f.signature]}")
    if bug.verdict == PLACEMENT_INDUCED or verbose:
        lines += textwrap.indent(bug.program.source(), "    | ").rstrip().splitlines()
    if folder is not None:
        lines.append(f"    reproduce: python {folder.folder(bug) / REPRO_FILE}   issue text: fuzzdce issue {bug.id}")
    return lines


def render(campaign, *, verbose: bool = False) -> str:
    """The printed report."""
    data = summary(campaign)
    bugs = campaign.ledger.bugs()
    out = [
        "",
        f"== fuzzdce: {plural(data['n_bugs'], 'bug')} ({plural(data['n_findings'], 'finding')}) in {data['programs']} programs "
        f"({data['invalid_programs']} invalid), {data['wall_seconds']:.0f} s, {data['seconds_per_program']:.2f} s/program; "
        f"seed {data['seed']} ==",
        "",
    ]
    if verbose:
        out += ["distinct findings (occurrences) per placement x path and oracle:", table(data), ""]
    groups = [
        ("placement-induced, new", [b for b in bugs if b.reportable]),
        ("placement-induced, known", [b for b in bugs if b.verdict == PLACEMENT_INDUCED and not b.reportable]),
        ("baseline (stock Thunder fails the same way)", [b for b in bugs if b.verdict == BASELINE]),
    ]
    for title, members in groups:
        out.append(f"== {title}: {plural(len(members), 'bug')} ==")
        for bug in members:
            out += bug_lines(bug, campaign.folder, verbose=verbose)
        out.append("")
    if data["dce_activity"]:
        out += ["DCE activity against stock (subsymbols removed per symbol, every path):"]
        out += [f"  {line}" for line in activity_lines(data["dce_activity"])]
    ops = ", ".join(f"{op} {n}" for op, n in data["op_counts"].items())
    out += [f"op coverage ({len(data['op_counts'])} ops): {ops}"]
    if data["dropped_steps"]:
        out.append(f"steps drawn but dropped (no operand fitted, or torch rejected them): {sum(data['dropped_steps'].values())}")
    if data["notes"]:
        out.append("skipped (programs): " + "; ".join(f"{n['path']}: {n['note']} ({n['programs']})" for n in data["notes"]))
    if data["findings_dir"]:
        out.append(f"findings folder: {data['findings_dir']} (summary.json, one folder per bug; fuzzdce replay DIR reruns them)")
    return "\n".join(out)
