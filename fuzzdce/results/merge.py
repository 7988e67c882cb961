"""``fuzzdce merge OUT DIR...``: findings folders (shards of one campaign, separate runs, or folders
merged before) joined into one, from their JSON records alone (no Thunder compile).

The unit of accounting is the *run* (``run_id``: one shard of one campaign). Every summary keeps the
per-run summaries it covers (a run's own summary.json is one run; a merged one has ``runs``), and
every bug member its counts per run (``counts_by_run``). Merging takes the union of runs (one run
seen twice counts once: the copy with more programs, ties broken by content) and recomputes every
total from that union (``merged_summary``), so merging is idempotent and order-independent:
merge(A, B) == merge(B, A) == merge(merge(A, B), B).

Bugs are joined again from their members, exactly as the campaign joins its findings
(``joining.joined``): each member (``records.MemberRecord``) keeps what it is joined by as data
(its verdict, placements, fault, site, program and whether that is settled, its decision), one
finding in several inputs is one member, and the links between causes each run found
(``records.CauseLink``: a settled program showing another cause, kept in bug.json whether that
run's join followed them or not) link them here as the campaign's store links them: with another
run's findings, a link one run could not follow may be followed. That members shared an input's
bug joins nothing by itself: it followed from that evidence, which the merge holds. Of a finding's
copies, the one whose program ranks first (``findings.program_rank``) is kept, as a campaign keeps
one of its lanes' copies: merging runs joins what one campaign of their findings joins. Each bug
is known by ``joining.bug_key`` of its members, as the campaign's is, and keeps the folder
(reproducer, traces) of its smallest program.
"""

from __future__ import annotations

import shutil
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from fuzzdce.core.errors import UsageError
from fuzzdce.core.faults import Identity
from fuzzdce.core.findings import Masking, combined_confirmed, common_placements, confirmed_on_smallest, earliest
from fuzzdce.core.joining import bug_key, cause_key, joined
from fuzzdce.core.model import STOCK
from fuzzdce.core.signatures import identity_id
from fuzzdce.core.timeline import combine
from fuzzdce.results.records import BugRecord, CauseLink, MemberRecord, RunSummary, by_standing, canonical, upstream_of
from fuzzdce.results.report import plural
from fuzzdce.results.store import BUG_FILE, REPRO_FILE, SUMMARY_FILE, FindingsFolder, read_bugs, read_summary, write_bug
from fuzzdce.running.coverage import DceActivity


@dataclass
class Candidate:
    """One input's bug: its record (members with ``counts_by_run``) and its folder."""

    record: BugRecord
    folder: Path


@dataclass
class Source:
    """One input folder: its summary (None when it has none) and its bugs."""

    root: Path
    summary: RunSummary | None
    bugs: list[Candidate]


# --- reading ----------------------------------------------------------------------------------------


def read_source(path: str | Path) -> Source:
    """A findings folder; UsageError when it is none (no summary.json and no bug folders), or when
    its summary names no run (merge counts each run once by its id)."""
    root = Path(path).absolute()
    if not root.is_dir():
        raise UsageError(f"{path} is not a folder: merge takes findings folders (each with summary.json or bug folders)")
    summary = read_summary(root)
    bugs = read_bugs(root)
    if summary is None and not bugs:
        raise UsageError(f"{path} holds neither {SUMMARY_FILE} nor bug folders: is it a findings folder?")
    if summary is not None and summary.runs is None and summary.run_id is None:
        raise UsageError(f"{path}: its {SUMMARY_FILE} has no run id, which every campaign writes: rewrite it with this fuzzdce")
    return Source(root, summary, [Candidate(record, folder) for record, folder in bugs])


def runs_of(source: Source) -> dict[str, dict]:
    """The per-run summaries a folder covers: its ``runs`` if merged, else its own summary as one run."""
    if source.summary is None:
        return {}
    return source.summary.covered_runs()


def union_runs(sources: Iterable[Source]) -> dict[str, dict]:
    """Every run once; of two copies of one run, the one with more programs (then by content)."""
    runs: dict[str, dict] = {}
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
    return (*record.size, record.program, record.key, canonical(record.to_json()))


@dataclass
class Copy:
    """One input's copy of a member, with the bug it came in."""

    member: MemberRecord
    candidate: Candidate

    @property
    def order(self) -> tuple:
        """Smaller program first (``findings.program_rank``, as a campaign's lanes' copies are
        ordered; then by content): the copy a merged member starts from."""
        return (self.member.rank, canonical(self.member.to_json()), program_order(self.candidate))


def members_and_links(candidates: Sequence[Candidate]) -> tuple[dict[Identity, list[Copy]], list[tuple[Identity, Identity]]]:
    """Each finding's copies (by its identity, first-ranked program first), and the links between
    causes the inputs' campaigns found (``BugRecord.links``: a settled program showing another
    cause, followed there or not). That an input's bug holds two members is no link of its own:
    it followed from the evidence its members and links keep, which may be another here (a copy
    with a smaller program settles elsewhere), as it is in one campaign of both."""
    copies: dict[Identity, list[Copy]] = {}
    links: list[tuple[Identity, Identity]] = []
    for candidate in candidates:
        for m in candidate.record.members:
            copies.setdefault(m.identity, []).append(Copy(m, candidate))
        links += [link.pair for link in candidate.record.links]
    return {identity: sorted(found, key=lambda c: c.order) for identity, found in copies.items()}, links


def first_known(reasons: Iterable[str | None]) -> str | None:
    """Known if any input says so; the same reason whatever the input order."""
    return min((r for r in reasons if r), default=None)


def merged_member(copies: Sequence[MemberRecord]) -> MemberRecord:
    """One finding as several inputs recorded it (``copies``, the first-ranked program's first):
    counts per run (one run counted once, its largest count), flags combined, settled if any copy
    of that program is, its decision the first bisected copy's of that program, even where that
    bisection named none (as the campaign's ``FindingStore.merge`` has them)."""
    by_run: dict[str, int] = {}
    for copy in copies:
        for run_id, n in copy.counts_by_run.items():
            by_run[run_id] = max(by_run.get(run_id, 0), n)
    first = copies[0]
    same_program = [c for c in copies if (c.program, c.inputs) == (first.program, first.inputs)]
    # A decision goes with the program it was bisected on (``decisions.Bisection.program``): a copy
    # of another program lends the kept one none, as in the campaign's ``FindingStore.merge``.
    decided = next(
        (c for c in same_program if c.bisected), next((c for c in same_program if c.decision_identity is not None), first)
    )
    return replace(
        first,
        counts_by_run=dict(sorted(by_run.items())),
        count=sum(by_run.values()),
        confirmed=combined_confirmed(c.confirmed for c in copies),
        known=first_known(c.known for c in copies),
        first_seen_seconds=earliest(c.first_seen_seconds for c in copies),
        shrunk=True if any(c.shrunk for c in same_program) else first.shrunk,
        decision_identity=decided.decision_identity,
        bisected=decided.bisected,
    )


def known_reason(record: BugRecord, known: Mapping[str, str]) -> str | None:
    """The known file's reason for a bug: by its own key or id, never by a member's."""
    return next((known[n] for n in (record.key, record.id) if n in known), None)


def merged_bug(members: Sequence[MemberRecord], copies: Mapping[Identity, Sequence[Copy]], known: Mapping[str, str]) -> Candidate:
    """One bug of joined ``members`` (smallest program first): known by ``joining.bug_key`` as the
    campaign's bug is; its program, reproducer and traces those of the input bug whose smallest
    program is its smallest member's; counts summed; its decision a bisection naming it."""
    identity, key = bug_key(members)
    smallest = members[0]
    groups = [c.candidate for m in members for c in copies[m.identity]]
    home = min(
        (c for c in groups if (c.record.program, c.record.inputs) == (smallest.program, smallest.inputs)),
        key=program_order,
        default=min(groups, key=program_order),
    )
    named = next((m.decision_identity for m in members if m.decision_identity is not None), None)
    decided = next(
        (c.record.decision for c in groups if c.record.decision is not None and c.record.decision.identity == named),
        home.record.decision,
    )
    first_seen = earliest([*(c.record.first_seen_seconds for c in groups), *(m.first_seen_seconds for m in members)])
    placements = common_placements(members)
    causes = {cause_key(m.verdict, m.placements, m.fault) for m in members}
    links = {link.pair: link for c in sorted(groups, key=program_order) for link in c.record.links if causes & set(link.pair)}
    record = replace(
        home.record,
        key=key,
        id=identity_id(identity),
        decision=decided,
        placements=placements,
        placement=placements[0],
        members=tuple(members),
        count=sum(m.count for m in members),
        paths=tuple(sorted({m.path for m in members})),
        oracles=tuple(sorted({m.oracle for m in members})),
        confirmed=confirmed_on_smallest(
            [((m.program, m.inputs) == (smallest.program, smallest.inputs), m.confirmed) for m in members]
        ),
        first_seen_seconds=first_seen,
        links=tuple(sorted(links.values(), key=CauseLink.order)),
    )
    reason = known_reason(record, known) or first_known(c.record.known for c in groups)
    upstream = upstream_of(known_reason(record, known)) or next((c.record.upstream for c in groups if c.record.upstream), None)
    return Candidate(replace(record, known=reason, upstream=upstream), home.folder)


def merged_bugs(sources: Sequence[Source], known: Mapping[str, str]) -> list[tuple[BugRecord, Path]]:
    """(merged bug record, folder whose reproducer and traces it keeps), in report order."""
    copies, links = members_and_links([c for source in sources for c in source.bugs])
    members = [merged_member([c.member for c in found]) for found in copies.values()]
    bugs = [merged_bug(group, copies, known) for group in joined(members, links)]
    of_finding = {m.id: b.record.id for b in bugs for m in b.record.members}
    # A masking bug's id as the merge joined it (the run's may be another bug's now).
    bugs = [
        replace(b, record=replace(b.record, masked_by=remasked(b.record.masked_by, of_finding))) if b.record.masked_by else b
        for b in bugs
    ]
    return sorted(((b.record, b.folder) for b in bugs), key=lambda item: item[0].order)


def remasked(masked_by: Sequence[Masking], of_finding: Mapping[str, str]) -> tuple[Masking, ...]:
    """``masked_by`` naming the merged bug of each masking finding (by its finding id)."""
    return tuple(dict.fromkeys(replace(m, bug=of_finding.get(m.finding, m.bug)) for m in masked_by))


# --- the merged summary: runs' measurements combined ------------------------------------------------


def merged_summary(runs: Mapping[str, Mapping[str, Any]], bugs: Sequence[BugRecord], findings_dir: str) -> RunSummary:
    """The summary of merged runs (each run's ``RunSummary.run_part``) and their merged bugs:
    ``fuzzdce run``'s totals over the whole campaign, plus ``runs``."""
    each = list(runs.values())
    campaign_seed = the_one(r["campaign_seed"] for r in each)
    return RunSummary(
        seed=campaign_seed,
        campaign_seed=campaign_seed,
        shards=tuple(r.get("shard") for r in each),
        placements=tuple(first_seen_order(r.get("placements", []) for r in each)),
        paths=tuple(first_seen_order(r.get("paths", []) for r in each)[1:]),
        reference=the_one(r["reference"] for r in each),
        thunders={name: text for r in each for name, text in r["thunders"].items()},
        programs=sum(r.get("programs", 0) for r in each),
        invalid_programs=sum(r.get("invalid_programs", 0) for r in each),
        evaluation_seconds=sum(r.get("evaluation_seconds", 0.0) for r in each),
        wall_seconds=max((r.get("wall_seconds", 0.0) for r in each), default=0.0),  # shards run side by side
        machine_seconds=sum(r.get("wall_seconds", 0.0) for r in each),
        unsupported_splits=sum(r.get("unsupported_splits", 0) for r in each),
        bugs=tuple(bugs),
        counts=tuple(merged_counts(each, bugs)),
        op_counts=summed(each, "op_counts"),
        grad_rules=merged_grad_rules(each),
        opinfo=next((r["opinfo"] for r in each if r.get("opinfo")), None),
        compiles=merged_compiles(each),
        dropped_steps=summed(each, "dropped_steps"),
        dce_activity=merged_activity(each),
        notes=tuple(merged_notes(each)),
        not_checked=tuple(merged_not_checked(each)),
        timeline=tuple(merged_timeline(each, bugs)) if any(r.get("timeline") for r in each) else None,
        findings_dir=findings_dir,
        memory=merged_memory(runs) if any(r.get("memory") for r in each) else None,
        versions=next((r["versions"] for r in each if r.get("versions")), {}),
        runs={run_id: dict(run) for run_id, run in runs.items()},
    )


def merged_compiles(runs: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, int]] | None:
    """Per placement, the runs' paths compiled and shared with stock, summed."""
    out: dict[str, dict[str, int]] = {}
    for run in runs:
        for placement, counts in (run.get("compiles") or {}).items():
            mine = out.setdefault(placement, {"compiled": 0, "as_stock": 0})
            for kind, n in counts.items():
                mine[kind] = mine.get(kind, 0) + n
    return out or None


def merged_grad_rules(runs: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """The runs' grad rules reached, programs summed per rule, of the most rules any run's Thunder has."""
    known = [r["grad_rules"] for r in runs if r.get("grad_rules")]
    if not known:
        return None
    reached: Counter = Counter()
    families: dict[str, set[str]] = {}
    programs: Counter = Counter()
    by_source: dict[str, Counter] = {}
    for entry in known:
        reached.update(entry.get("reached", {}))
        for family, rules in entry.get("families", {}).items():
            families.setdefault(family, set()).update(rules)
        for source, part in entry.get("by_source", {}).items():
            programs[source] += part.get("programs", 0)
            by_source.setdefault(source, Counter()).update(part.get("reached", {}))
    merged = {"total": max(e.get("total", 0) for e in known), "reached": dict(reached.most_common())}
    if families:
        merged["families"] = {family: sorted(rules) for family, rules in sorted(families.items())}
    if programs:
        merged["by_source"] = {
            source: {"programs": n, "reached": dict(by_source[source].most_common())} for source, n in programs.items()
        }
    return merged


def the_one(values: Iterable[Any]) -> Any:
    """The value every run agrees on, else None."""
    distinct = {canonical(v): v for v in values}
    return next(iter(distinct.values())) if len(distinct) == 1 else None


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


def merged_not_checked(runs: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The runs' checks not made, summed by who, path and what."""
    total: Counter = Counter()
    for run in runs:
        total.update({(n["oracle"], n["path"], n["what"]): n["times"] for n in run.get("not_checked", [])})
    return [
        {"oracle": who, "path": path, "what": what, "times": n}
        for (who, path, what), n in sorted(total.items(), key=lambda kv: (-kv[1], kv[0]))
    ]


def merged_counts(runs: Sequence[Mapping[str, Any]], bugs: Sequence[BugRecord]) -> list[dict[str, Any]]:
    """Occurrences per placement x path x oracle summed over runs; distinct findings from the merged bugs."""
    occurrences: dict[tuple[str, str, str], int] = {}
    for run in runs:
        for c in run.get("counts", []):
            cell = (c["placement"], c["path"], c["oracle"])
            occurrences[cell] = occurrences.get(cell, 0) + c["occurrences"]
    distinct: Counter = Counter()
    for bug in bugs:
        for m in bug.members:
            distinct.update((p, m.path, m.oracle) for p in bug.placements)
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
    total = DceActivity(reference="")  # every entry of a run's summary is a Thunder under test
    for run in runs:
        total.merge(DceActivity.from_summary(run.get("dce_activity") or {}))
    return total.summary(total.programs)


def merged_timeline(runs: Sequence[Mapping[str, Any]], bugs: Sequence[BugRecord]) -> list[dict[str, Any]]:
    """The runs' timelines combined as a lanes run combines its lanes' (``timeline.combine``): bugs are
    the merged bugs first seen by each time."""
    return combine([run["timeline"] for run in runs if run.get("timeline")], [b.first_seen_seconds for b in bugs])


def merged_memory(runs: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """Every run's processes, each named after its run; recycling counters summed."""
    processes, recycled = [], Counter()
    for run_id, run in runs.items():
        memory = run.get("memory") or {}
        processes += [{**p, "process": f"{run_id} {p['process']}"} for p in memory.get("processes", [])]
        recycled.update(memory.get("recycled", {}))
    return {"processes": processes, "recycled": dict(sorted(recycled.items()))}


# --- writing ----------------------------------------------------------------------------------------


def check_out(out: Path, sources: Sequence[Source]) -> None:
    for source in sources:
        if source.root == out:
            raise UsageError(f"the merged folder {out} is also an input: merge into a new folder")
        if any(c.folder.parent == out for c in source.bugs):
            raise UsageError(f"input {source.root} keeps bugs in {out}, which merging clears: merge into another folder")


def copy_bug(record: BugRecord, source: Path, target: Path) -> None:
    """The winning folder's reproducer, traces and trace diff, then the merged bug.json (last: a
    bug.json means the folder is complete)."""
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(source, target, ignore=shutil.ignore_patterns(BUG_FILE))
    write_bug(target, record)


@dataclass
class Merged:
    """What ``merge`` wrote: the merged summary (its bugs included), and where."""

    out: Path
    summary: RunSummary

    @property
    def bugs(self) -> tuple[BugRecord, ...]:
        return self.summary.bugs

    @property
    def exit_code(self) -> int:
        return self.summary.exit_code


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
        copy_bug(record, source, out / record.id)
    summary = merged_summary(runs, [record for record, _ in bugs], str(out))
    folder.write_summary(summary)
    return Merged(out, summary)


# --- Markdown ----------------------------------------------------------------------------------------


def markdown(merged: Merged) -> str:
    """A Markdown summary for CI (``$GITHUB_STEP_SUMMARY``): new regressions in full, known,
    fixed and shared bugs briefly, then the campaign's size."""
    s = merged.summary
    folder = Path(s.findings_dir).name
    (new_title, new), *others = by_standing(merged.bugs)
    lines = [f"# fuzzdce: {plural(len(new), 'new regression')}", ""]
    for b in new:
        lines += [
            f"## {b.id} under {b.placement}",
            "",
            f"- placements: {', '.join(b.placements)}",
            f"- paths: {', '.join(b.paths)}",
            f"- oracles: {', '.join(b.oracles)}",
            f"- count: {plural(b.count, 'occurrence')}, {plural(len(b.members), 'finding')}",
            f"- message: `{b.message.splitlines()[0][:200] if b.message else ''}`",
            "",
            "```python",
            b.program.rstrip(),
            "```",
            "",
            f"Reproduce: `python {folder}/{b.id}/{REPRO_FILE}`; issue text: `fuzzdce issue {b.id} --findings {folder}`",
            "",
        ]
    for title, bugs in others:
        lines += [f"## {title}: {plural(len(bugs), 'bug')}", ""]
        lines += [
            f"- {b.id} under {', '.join(b.placements)}: {', '.join(b.oracles)} on {', '.join(b.paths)} ({b.count}x)" for b in bugs
        ]
        lines += [""] if bugs else []
    lines += [
        "## Campaign",
        "",
        f"{s.programs} programs ({s.invalid_programs} invalid), {s.wall_seconds:.0f} s wall "
        f"({s.machine_seconds:.0f} s on all machines), {s.programs_per_minute:.1f} programs/minute, "
        f"{plural(len(s.runs), 'shard')}: {', '.join(s.runs)}",
    ]
    return "\n".join(lines) + "\n"
