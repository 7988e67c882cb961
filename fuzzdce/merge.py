"""``fuzzdce merge OUT DIR...``: findings folders (shards of one campaign, separate runs, or folders
merged before) joined into one, from their JSON records alone (no Thunder compile).

The unit of accounting is the *run* (``run_id``: one shard of one campaign). Every summary keeps the
per-run summaries it covers (a run's own summary.json is one run; a merged one has ``runs``), and
every bug member its counts per run (``counts_by_run``). Merging takes the union of runs (one run
seen twice counts once: the copy with more programs, ties broken by content) and recomputes every
total from that union, so merging is idempotent and order-independent:
merge(A, B) == merge(B, A) == merge(merge(A, B), B).

Bugs are joined when they share a key or any member finding signature (union-find); the joined
bug keeps the smallest program (fewest ops, then inputs, then source length, then source and key:
``Bug.smallest``'s order, made total), that bug's key and id, and its folder's reproducer and traces.
"""

from __future__ import annotations

import json
import shutil
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fuzzdce.coverage import DceActivity
from fuzzdce.errors import UsageError
from fuzzdce.findings import BASELINE, PLACEMENT_INDUCED, VERDICTS
from fuzzdce.model import STOCK
from fuzzdce.report import BUG_FIELDS, MEMBER_FIELDS, bug_lines, grouped, plural
from fuzzdce.signatures import short_id
from fuzzdce.store import BUG_FILE, REPRO_FILE, SUMMARY_FILE, FindingsFolder, write_atomically
from fuzzdce.timeline import combine

# What one run's summary.json says about that run alone: kept per run, summed or joined on merging.
RUN_FIELDS = (
    "seed", "campaign_seed", "shard", "placements", "paths", "programs", "invalid_programs", "evaluation_seconds",
    "wall_seconds", "unsupported_splits", "counts", "op_counts", "dropped_steps", "dce_activity", "notes",
    "versions", "timeline", "memory",
)  # fmt: skip


@dataclass
class Candidate:
    """One input's bug: its bug.json record (members with ``counts_by_run``) and its folder."""

    record: dict[str, Any]
    folder: Path


@dataclass
class Source:
    """One input folder: its summary (None when it has none) and its bugs."""

    root: Path
    summary: dict[str, Any] | None
    bugs: list[Candidate]


# --- reading ----------------------------------------------------------------------------------------


def read_json(path: Path) -> dict[str, Any]:
    try:
        return json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as e:
        raise UsageError(f"{path}: cannot read it as JSON ({e})") from None


def fallback_run_id(root: Path, summary: Mapping[str, Any] | None) -> str:
    """A run id for folders written before runs had one: the seed and the folder's name."""
    if summary and summary.get("run_id"):
        return summary["run_id"]
    return f"{(summary or {}).get('seed')}:{root.name}"


def with_run_counts(record: dict[str, Any], run_id: str) -> dict[str, Any]:
    """``record`` with every member's ``counts_by_run`` (derived from ``count`` where absent)."""
    members = [{**m, "counts_by_run": m.get("counts_by_run") or {run_id: m["count"]}} for m in record["members"]]
    return {**record, "members": members}


def read_source(path: str | Path) -> Source:
    """A findings folder; UsageError when it is none (no summary.json and no bug folders)."""
    root = Path(path).absolute()
    if not root.is_dir():
        raise UsageError(f"{path} is not a folder: merge takes findings folders (each with summary.json or bug folders)")
    summary = read_json(root / SUMMARY_FILE) if (root / SUMMARY_FILE).is_file() else None
    folders = sorted(p.parent for p in root.glob(f"*/{BUG_FILE}"))
    if summary is None and not folders:
        raise UsageError(f"{path} holds neither {SUMMARY_FILE} nor bug folders: is it a findings folder?")
    run_id = fallback_run_id(root, summary)
    return Source(root, summary, [Candidate(with_run_counts(read_json(f / BUG_FILE), run_id), f) for f in folders])


def runs_of(source: Source) -> dict[str, dict[str, Any]]:
    """The per-run summaries a folder covers: its ``runs`` if merged, else its own summary as one run."""
    summary = source.summary
    if summary is None:
        return {}
    if "runs" in summary:
        return summary["runs"]
    return {fallback_run_id(source.root, summary): {k: summary[k] for k in RUN_FIELDS if k in summary}}


def canonical(data: Any) -> str:
    return json.dumps(data, sort_keys=True, default=str)


def union_runs(sources: Iterable[Source]) -> dict[str, dict[str, Any]]:
    """Every run once; of two copies of one run, the one with more programs (then by content)."""
    runs: dict[str, dict[str, Any]] = {}
    for source in sources:
        for run_id, run in runs_of(source).items():
            held = runs.get(run_id)
            if held is None or (run.get("programs", 0), canonical(run)) > (held.get("programs", 0), canonical(held)):
                runs[run_id] = run
    return dict(sorted(runs.items()))


# --- bugs -------------------------------------------------------------------------------------------


def program_order(candidate: Candidate) -> tuple:
    """Smaller first, as ``findings.size`` orders programs (ops, inputs, source length), then
    source text, key and the whole record, so that the choice never depends on input order."""
    record = candidate.record
    header = record["program"].split("\n", 1)[0]
    inputs = len([p for p in header[header.find("(") + 1 : header.rfind(")")].split(",") if p.strip()])
    return (record["n_ops"], inputs, len(record["program"]), record["program"], record["key"], canonical(record))


def joined(candidates: Sequence[Candidate]) -> list[list[Candidate]]:
    """Candidates joined by a shared key or member signature (union-find), each group sorted."""
    parent = list(range(len(candidates)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    owner: dict[str, int] = {}
    for i, candidate in enumerate(candidates):
        names = [f"key {candidate.record['key']}", *(f"member {m['signature']}" for m in candidate.record["members"])]
        for name in names:
            j = owner.setdefault(name, i)
            parent[root(i)] = root(j)
    groups: dict[int, list[Candidate]] = {}
    for i, candidate in enumerate(candidates):
        groups.setdefault(root(i), []).append(candidate)
    return [sorted(group, key=program_order) for group in groups.values()]


def combined_confirmed(states: Iterable[bool | None]) -> bool | None:
    """``Bug.confirmed``'s rule: False if any says False, else None if any is unknown, else True."""
    states = list(states)
    return False if False in states else (None if None in states else True)


def first_known(reasons: Iterable[str | None]) -> str | None:
    """Known if any input says so; the same reason whatever the input order."""
    return min((r for r in reasons if r), default=None)


def earliest(values: Iterable[float | None]) -> float | None:
    return min((v for v in values if v is not None), default=None)


def merged_member(copies: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """One finding as several inputs recorded it (``copies``, the winning bug's first): counts per
    run (one run counted once, its largest count), the smallest program's size, flags combined."""
    by_run: dict[str, int] = {}
    for copy in copies:
        for run_id, n in copy["counts_by_run"].items():
            by_run[run_id] = max(by_run.get(run_id, 0), n)
    member = dict(copies[0])
    member.update(
        counts_by_run=dict(sorted(by_run.items())),
        count=sum(by_run.values()),
        n_ops=min(c["n_ops"] for c in copies),
        confirmed=combined_confirmed(c.get("confirmed") for c in copies),
        known=first_known(c.get("known") for c in copies),
    )
    first_seen = earliest(c.get("first_seen_seconds") for c in copies)
    if first_seen is not None:
        member["first_seen_seconds"] = first_seen
    return member


def known_reason(record: Mapping[str, Any], known: Mapping[str, str]) -> str | None:
    """The known file's reason for a bug: by its key or id, or any member's signature or id."""
    names = [record["key"], record["id"], *(n for m in record["members"] for n in (m["signature"], m["id"]))]
    return next((known[n] for n in names if n in known), None)


def merged_bug(group: Sequence[Candidate], known: Mapping[str, str]) -> dict[str, Any]:
    """One bug from the group's records: the smallest program's record, every member, counts summed."""
    winner = group[0].record
    copies: dict[str, list[dict[str, Any]]] = {}
    for candidate in group:
        for m in candidate.record["members"]:
            copies.setdefault(m["signature"], []).append(m)
    members = sorted((merged_member(c) for c in copies.values()), key=lambda m: (m["n_ops"], m["signature"]))
    record = dict(winner)
    record.update(
        id=short_id(winner["key"]),
        members=members,
        count=sum(m["count"] for m in members),
        paths=sorted({m["path"] for m in members}),
        oracles=sorted({m["oracle"] for m in members}),
        confirmed=combined_confirmed([*(m["confirmed"] for m in members), *(c.record.get("confirmed") for c in group)]),
    )
    record["known"] = known_reason(record, known) or first_known(
        [*(c.record.get("known") for c in group), *(m["known"] for m in members)]
    )
    first_seen = earliest([*(c.record.get("first_seen_seconds") for c in group), *(m.get("first_seen_seconds") for m in members)])
    if first_seen is not None:
        record["first_seen_seconds"] = first_seen
    return record


def reportable(record: Mapping[str, Any]) -> bool:
    return record["verdict"] == PLACEMENT_INDUCED and not record.get("known")


def bug_order(record: Mapping[str, Any]) -> tuple:
    """As ``FindingStore.bugs`` orders them: placement-induced and new first, then by id."""
    return (VERDICTS.index(record["verdict"]), not reportable(record), record["id"])


def merged_bugs(sources: Sequence[Source], known: Mapping[str, str]) -> list[tuple[dict[str, Any], Path]]:
    """(merged bug.json record, folder whose reproducer and traces it keeps), in report order."""
    candidates = [c for source in sources for c in source.bugs]
    bugs = [(merged_bug(group, known), group[0].folder) for group in joined(candidates)]
    return sorted(bugs, key=lambda item: bug_order(item[0]))


# --- the summary ------------------------------------------------------------------------------------


def first_seen_order(lists: Iterable[Iterable[str]]) -> list[str]:
    """Every name once, stock first, the rest in order of first appearance."""
    names = {STOCK: None}
    for names_of_run in lists:
        names.update(dict.fromkeys(names_of_run))
    return list(names)


def summed(runs: Iterable[Mapping[str, Any]], key: str) -> dict[str, int]:
    total: Counter = Counter()
    for run in runs:
        total.update(run.get(key, {}))
    return dict(total.most_common())


def merged_notes(runs: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    total: Counter = Counter()
    for run in runs:
        total.update({(n["path"], n["note"]): n["programs"] for n in run.get("notes", [])})
    return [
        {"path": path, "note": note, "programs": n} for (path, note), n in sorted(total.items(), key=lambda kv: (-kv[1], kv[0]))
    ]


def merged_counts(runs: Sequence[Mapping[str, Any]], bugs: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Occurrences per placement x path x oracle summed over runs; distinct findings from the merged bugs."""
    occurrences: dict[tuple[str, str, str], int] = {}
    for run in runs:
        for c in run.get("counts", []):
            cell = (c["placement"], c["path"], c["oracle"])
            occurrences[cell] = occurrences.get(cell, 0) + c["occurrences"]
    distinct: Counter = Counter()
    for bug in bugs:
        for m in bug["members"]:
            distinct.update((p, m["path"], m["oracle"]) for p in bug["placements"])
    cells = list(occurrences) + [cell for cell in distinct if cell not in occurrences]
    return [
        {
            "placement": p,
            "path": path,
            "oracle": o,
            "findings": distinct[(p, path, o)],
            "occurrences": occurrences.get((p, path, o), 0),
        }
        for (p, path, o) in cells
    ]


def merged_activity(runs: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """``coverage.DceActivity.summary``'s format, its counters summed over runs."""
    total = DceActivity()
    for run in runs:
        total.merge(DceActivity.from_summary(run.get("dce_activity", {})))
    return total.summary(total.programs)


def bugs_by_then(timeline: Sequence[Mapping[str, Any]], t: float) -> int:
    """A run's own count of bugs at ``t``: its last sample at or before then."""
    earlier = [s["bugs"] for s in timeline if s["seconds"] <= t]
    return earlier[-1] if earlier else 0


def merged_timeline(runs: Sequence[Mapping[str, Any]], bugs: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The runs' timelines combined as a lanes run combines its lanes' (``timeline.combine``): bugs are
    the merged bugs first seen by each time, or, for folders written before first-seen times, the
    runs' own counts summed."""
    timelines = [run["timeline"] for run in runs if run.get("timeline")]
    combined = combine(timelines, [b.get("first_seen_seconds") for b in bugs])
    if all("first_seen_seconds" in b for b in bugs):
        return combined
    return [{**s, "bugs": sum(bugs_by_then(timeline, s["seconds"]) for timeline in timelines)} for s in combined]


def merged_memory(runs: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """Every run's processes, each named after its run; recycling counters summed."""
    processes, recycled = [], Counter()
    for run_id, run in runs.items():
        memory = run.get("memory") or {}
        processes += [{**p, "process": f"{run_id} {p['process']}"} for p in memory.get("processes", [])]
        recycled.update(memory.get("recycled", {}))
    return {"processes": processes, "recycled": dict(sorted(recycled.items()))}


def the_one(values: Iterable[Any]) -> Any:
    """The value every run agrees on, else None."""
    distinct = {canonical(v): v for v in values}
    return next(iter(distinct.values())) if len(distinct) == 1 else None


def bug_summary_entry(record: Mapping[str, Any], folder: Path) -> dict[str, Any]:
    """A merged bug as summary.json lists it (``report.bug_entry``'s fields)."""
    entry = {key: record.get(key) for key in BUG_FIELDS}  # older folders lack the newer fields
    entry["signature"] = record["key"]
    entry["members"] = [{k: m[k] for k in MEMBER_FIELDS if k in m} for m in record["members"]]
    entry["folder"] = str(folder)
    return entry


def merged_summary(runs: Mapping[str, Mapping[str, Any]], bugs: Sequence[Mapping[str, Any]], out: Path) -> dict[str, Any]:
    """summary.json of the merged folder: ``fuzzdce run``'s keys over the whole campaign, plus ``runs``."""
    each = list(runs.values())
    programs = sum(r.get("programs", 0) for r in each)
    evaluation = sum(r.get("evaluation_seconds", 0.0) for r in each)
    wall = max((r.get("wall_seconds", 0.0) for r in each), default=0.0)  # shards run side by side
    campaign_seed = the_one(r.get("campaign_seed", r.get("seed")) for r in each)
    data: dict[str, Any] = {
        "seed": campaign_seed,
        "campaign_seed": campaign_seed,
        "shard": None,
        "run_id": None,
        "shards": [r.get("shard") for r in each],
        "placements": first_seen_order(r.get("placements", []) for r in each),
        "paths": first_seen_order(r.get("paths", []) for r in each)[1:],
        "programs": programs,
        "invalid_programs": sum(r.get("invalid_programs", 0) for r in each),
        "evaluation_seconds": round(evaluation, 3),
        "wall_seconds": round(wall, 3),
        "machine_seconds": round(sum(r.get("wall_seconds", 0.0) for r in each), 3),
        "seconds_per_program": round(evaluation / max(programs, 1), 4),
        "programs_per_minute": round(60 * programs / max(wall, 1e-9), 2),
        "unsupported_splits": sum(r.get("unsupported_splits", 0) for r in each),
        "n_bugs": len(bugs),
        "n_findings": len({m["signature"] for b in bugs for m in b["members"]}),
        "bugs": {
            v: [bug_summary_entry(b, out / b["id"]) for b in bugs if b["verdict"] == v] for v in (PLACEMENT_INDUCED, BASELINE)
        },
        "new_placement_induced": sum(reportable(b) for b in bugs),
        "counts": merged_counts(each, bugs),
        "op_counts": summed(each, "op_counts"),
        "dropped_steps": summed(each, "dropped_steps"),
        "dce_activity": merged_activity(each),
        "notes": merged_notes(each),
        "findings_dir": str(out),
        "versions": next((r["versions"] for r in each if r.get("versions")), {}),
    }
    if any(r.get("timeline") for r in each):
        data["timeline"] = merged_timeline(each, bugs)
    if any(r.get("memory") for r in each):
        data["memory"] = merged_memory(runs)
    data["runs"] = {run_id: dict(run) for run_id, run in runs.items()}
    return data


# --- writing ----------------------------------------------------------------------------------------


def check_out(out: Path, sources: Sequence[Source]) -> None:
    for source in sources:
        if source.root == out:
            raise UsageError(f"the merged folder {out} is also an input: merge into a new folder")
        if any(c.folder.parent == out for c in source.bugs):
            raise UsageError(f"input {source.root} keeps bugs in {out}, which merging clears: merge into another folder")


def copy_bug(record: Mapping[str, Any], source: Path, target: Path) -> None:
    """The winning folder's reproducer, traces and trace diff, then the merged bug.json (last: a
    bug.json means the folder is complete)."""
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(source, target, ignore=shutil.ignore_patterns(BUG_FILE))
    write_atomically(target / BUG_FILE, json.dumps(record, indent=2) + "\n")


@dataclass
class Merged:
    """What ``merge`` wrote: the merged summary and bug records, and where."""

    out: Path
    summary: dict[str, Any]
    bugs: list[dict[str, Any]]

    @property
    def exit_code(self) -> int:
        """``fuzzdce run``'s rule: 1 on any new placement-induced bug, else 0."""
        return 1 if self.summary["new_placement_induced"] else 0


def merge(out: str | Path, inputs: Sequence[str | Path], known: Mapping[str, str] | None = None) -> Merged:
    """Merge findings folders ``inputs`` into ``out`` (its earlier bugs and summary replaced)."""
    if not inputs:
        raise UsageError("merge needs at least one findings folder to read")
    sources = [read_source(path) for path in inputs]
    out = Path(out).absolute()
    check_out(out, sources)
    runs = union_runs(sources)
    bugs = merged_bugs(sources, known or {})
    folder = FindingsFolder(out)
    folder.clear()
    for record, source in bugs:
        copy_bug(record, source, out / record["id"])
    records = [record for record, _ in bugs]
    data = merged_summary(runs, records, out)
    folder.write_summary(data)
    return Merged(out, data, records)


# --- rendering --------------------------------------------------------------------------------------


def headline(merged: Merged) -> str:
    s = merged.summary
    return (
        f"{plural(s['n_bugs'], 'bug')} ({plural(s['n_findings'], 'finding')}) in {s['programs']} programs "
        f"({s['invalid_programs']} invalid) from {plural(len(s['runs']), 'run')}, {s['wall_seconds']:.0f} s wall "
        f"({s['machine_seconds']:.0f} s on all machines), {s['programs_per_minute']:.1f} programs/minute"
    )


def render(merged: Merged) -> str:
    """The printed report of a merge: ``report.render``'s bug blocks, from the records."""
    out = ["", f"== fuzzdce merge: {headline(merged)} ==", ""]
    for title, bugs in grouped(merged.bugs):
        out.append(f"== {title}: {plural(len(bugs), 'bug')} ==")
        for b in bugs:
            reproduce = (
                f"python {merged.out / b['id'] / REPRO_FILE}   issue text: fuzzdce issue {b['id']} --findings {merged.out}"
            )
            out += bug_lines(b, reproduce)
        out.append("")
    out.append(f"merged folder: {merged.out} (runs: {', '.join(merged.summary['runs'])})")
    return "\n".join(out)


def markdown(merged: Merged) -> str:
    """A Markdown summary for CI (``$GITHUB_STEP_SUMMARY``): new placement-induced bugs in full,
    known and baseline ones briefly, then the campaign's size."""
    s = merged.summary
    (new_title, new), (known_title, known), (baseline_title, baseline) = grouped(merged.bugs)
    lines = [f"# fuzzdce: {plural(len(new), 'new placement-induced bug')}", ""]
    for b in new:
        lines += [
            f"## {b['id']} under {b['placement']}",
            "",
            f"- placements: {', '.join(b['placements'])}",
            f"- paths: {', '.join(b['paths'])}",
            f"- oracles: {', '.join(b['oracles'])}",
            f"- count: {plural(b['count'], 'occurrence')}, {plural(len(b['members']), 'finding')}",
            f"- message: `{b['message'].splitlines()[0][:200] if b['message'] else ''}`",
            "",
            "```python",
            b["program"].rstrip(),
            "```",
            "",
            f"Reproduce: `python {Path(s['findings_dir']).name}/{b['id']}/{REPRO_FILE}`; issue text: "
            f"`fuzzdce issue {b['id']} --findings {Path(s['findings_dir']).name}`",
            "",
        ]
    for title, bugs in ((known_title, known), (baseline_title, baseline)):
        lines += [f"## {title}: {plural(len(bugs), 'bug')}", ""]
        lines += [
            f"- {b['id']} under {', '.join(b['placements'])}: {', '.join(b['oracles'])} on {', '.join(b['paths'])} ({b['count']}x)"
            for b in bugs
        ]
        lines += [""] if bugs else []
    lines += [
        "## Campaign",
        "",
        f"{s['programs']} programs ({s['invalid_programs']} invalid), {s['wall_seconds']:.0f} s wall "
        f"({s['machine_seconds']:.0f} s on all machines), {s['programs_per_minute']:.1f} programs/minute, "
        f"{plural(len(s['runs']), 'shard')}: {', '.join(s['runs'])}",
    ]
    return "\n".join(lines) + "\n"
