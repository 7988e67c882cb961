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

BUG_FIELDS = (
    "id",
    "key",
    "verdict",
    "placements",
    "paths",
    "oracles",
    "message",
    "count",
    "first_seen_seconds",
    "n_ops",
    "known",
    "confirmed",
)


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
        # Seconds per phase, every lane's added up (lanes run at once: these are machine seconds),
        # and why each lane's generation ended ("programs", "time", "nothing new", ...).
        "phases": {phase: round(seconds, 3) for phase, seconds in sorted(s.phases.items())},
        "generation_ended": list(s.generation_ended),
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


# The report's groups of bugs, read from bug records (bug.json's ``bug_record``), as ``fuzzdce run``,
# ``fuzzdce merge`` and the HTML report list them: new placement-induced bugs first.
BUG_GROUPS = (
    ("placement-induced, new", lambda r: r.get("verdict") == PLACEMENT_INDUCED and not r.get("known")),
    ("placement-induced, known", lambda r: r.get("verdict") == PLACEMENT_INDUCED and bool(r.get("known"))),
    ("baseline (stock Thunder fails the same way)", lambda r: r.get("verdict") == BASELINE),
)


def grouped(records) -> list[tuple[str, list[dict[str, Any]]]]:
    """``BUG_GROUPS``' titles, each with its bug records (any iterable: read once)."""
    records = list(records)
    return [(title, [r for r in records if belongs(r)]) for title, belongs in BUG_GROUPS]


def bug_lines(record: dict[str, Any], reproduce: str | None = None, *, verbose: bool = False) -> list[str]:
    """One short block from a bug record: what, where, how often, the message, the minimal program,
    and ``reproduce`` (how to rerun it) when given."""
    known = f"   known: {record['known']}" if record.get("known") else ""
    confirmed = "" if record.get("confirmed") is not False else "   (a member did not reproduce the same on replay)"
    lines = [
        f"--- bug {record['id']} under {', '.join(record['placements'])}{known}{confirmed}",
        f"    {', '.join(record['oracles'])} on {', '.join(record['paths'])}: {plural(len(record['members']), 'finding')}, "
        f"{plural(record['count'], 'occurrence')}, smallest program {plural(record['n_ops'], 'op')}",
        f"    {record['message'][:300]}",
    ]
    if record.get("shrink"):
        lines.append(f"    {record['shrink']} (the program may hold more than the bug needs)")
    if verbose:
        for m in record["members"]:
            lines.append(f"      member {m['id']}: {m['oracle']} on {m['path']} ({m['count']}x): {m['why']}")
    if record["verdict"] == PLACEMENT_INDUCED or verbose:
        lines += textwrap.indent(record["program"], "    | ").rstrip().splitlines()
    if reproduce is not None:
        lines.append(f"    reproduce: {reproduce}")
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
    for title, records in grouped([bug_record(b) for b in bugs]):
        out.append(f"== {title}: {plural(len(records), 'bug')} ==")
        for record in records:
            reproduce = None
            if campaign.folder is not None:
                reproduce = (
                    f"python {campaign.folder.root / record['id'] / REPRO_FILE}   issue text: fuzzdce issue {record['id']}"
                )
            out += bug_lines(record, reproduce, verbose=verbose)
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
