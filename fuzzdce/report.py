"""The campaign's results: ``summary`` (what summary.json holds) and ``render`` (what is printed).

Findings are grouped by verdict; placement-induced ones not suppressed by the known-findings
file come first, with their reproducer printed in full, since they are what a run is for.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from fuzzdce.coverage import activity_lines
from fuzzdce.findings import BASELINE, PLACEMENT_INDUCED, Finding
from fuzzdce.oracles import ORACLES
from fuzzdce.repro import script
from fuzzdce.store import finding_record
from fuzzdce.versions import versions


SUMMARY_FIELDS = ("id", "signature", "placements", "path", "oracle", "message", "count", "n_ops", "known", "confirmed")


def finding_entry(finding: Finding, folder=None) -> dict[str, Any]:
    """One finding in summary.json (paste it into a known-findings file with a reason to suppress it):
    the fields of its finding.json that identify it, and where its folder is."""
    record = finding_record(finding)
    entry = {key: record[key] for key in SUMMARY_FIELDS}
    entry["folder"] = str(folder.folder(finding)) if folder is not None else None
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
    names = campaign.names  # stock first
    distinct = distinct_counts(store)
    return {
        "seed": campaign.seed,
        "placements": names,
        "paths": campaign.paths,
        "programs": s.programs,
        "invalid_programs": s.invalid,
        "evaluation_seconds": round(s.seconds, 3),
        "wall_seconds": round(s.wall_seconds, 3),
        "seconds_per_program": round(s.seconds / max(s.programs, 1), 4),
        "programs_per_minute": round(60 * s.programs / max(s.wall_seconds, 1e-9), 2),
        "unsupported_splits": s.unsupported_splits,
        "counts": [
            {
                "placement": p,
                "path": path,
                "oracle": o,
                "findings": distinct[(p, path, o)],
                "occurrences": s.occurrences[(p, path, o)],
            }
            for p in names
            for path in campaign.paths
            for o in ORACLES
        ],
        "findings": {
            verdict: [finding_entry(f, campaign.folder) for f in store.by_verdict(verdict)]
            for verdict in (PLACEMENT_INDUCED, BASELINE)
        },
        "new_placement_induced": sum(f.reportable for f in store),
        "op_counts": dict(s.ops.most_common()),
        "dropped_steps": dict(s.dropped.most_common()),
        # Per placement: in how many programs it changed subsymbols against stock, and in which symbols.
        "dce_activity": s.dce.summary(names),
        # Why paths or calls were skipped, and in how many programs: a path skipped everywhere tested nothing.
        "notes": [{"path": path, "note": note, "programs": n} for (path, note), n in s.notes.most_common()],
        "findings_dir": str(campaign.folder.root) if campaign.folder is not None else None,
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


def finding_lines(f: Finding, folder=None) -> list[str]:
    v = f.violation
    known = f"   known: {f.known_reason}" if f.known_reason else ""
    confirmed = "" if f.confirmed is not False else "   (did not reproduce the same on replay)"
    lines = [
        f"--- {f.id} [{f.verdict}] under {', '.join(f.placements)}{known}{confirmed}",
        f"    {v.oracle} on {v.path}, {f.count} occurrences, smallest program {f.program.n_ops} ops",
        f"    {v.message[:300]}",
    ]
    if folder is not None:
        lines.append(f"    {folder.folder(f)}")
    return lines


def render(campaign) -> str:
    """The printed report."""
    data = summary(campaign)
    store = campaign.store
    out = [
        "",
        f"== fuzzdce: {data['programs']} programs ({data['invalid_programs']} invalid) in {data['wall_seconds']:.0f} s, "
        f"{data['seconds_per_program']:.2f} s/program, {data['programs_per_minute']:.1f} programs/min; seed {data['seed']} ==",
        "",
        "distinct findings (occurrences) per placement x path and oracle:",
        table(data),
        "",
    ]
    groups = [
        ("placement-induced, new", [f for f in store if f.reportable]),
        ("placement-induced, known", [f for f in store if f.verdict == PLACEMENT_INDUCED and not f.reportable]),
        ("baseline (stock Thunder fails the same way)", store.by_verdict(BASELINE)),
    ]
    for title, findings in groups:
        out.append(f"== {title}: {len(findings)} ==")
        for f in findings:
            out += finding_lines(f, campaign.folder)
        out.append("")
    for f in groups[0][1]:
        out += [f"== reproducer of {f.id} ==", script(f)]
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
        out.append(f"findings folder: {data['findings_dir']} (summary.json, one folder per finding; fuzzdce replay DIR reruns them)")
    return "\n".join(out)
