"""The one schema of a campaign's results on disk: ``BugRecord`` (bug.json), its ``MemberRecord``s,
and ``RunSummary`` (summary.json).

``fuzzdce run`` writes them (``BugRecord.of`` a campaign's ``findings.Bug``, ``Campaign.summary``);
``merge``, ``replay``, ``issue``, ``report`` and ``html_report`` read them back with ``from_json``
and use their attributes. What a bug *is* (confirmed, reportable, its order, its size) comes from
``findings``, the same code the campaign's ``Bug`` uses.

Each record's JSON carries ``schema_version`` (``SCHEMA_VERSION``) and every field: a reader derives
nothing. ``store`` refuses a folder written under another version (``check_schema``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from fuzzdce.core.decisions import Bisection, describe
from fuzzdce.core.errors import UsageError
from fuzzdce.core.faults import Fault, Identity, failure_identity, fault_of
from fuzzdce.core.findings import Masking, bug_order, finding_identity, is_fixed, is_reportable, program_rank, size_of
from fuzzdce.core.model import STOCK
from fuzzdce.core.signatures import as_identity, identity_id
from fuzzdce.core.versions import versions
from fuzzdce.core.vocabulary import Standing, Verdict
from fuzzdce.oracles import ORACLES

# 3: each member carries what it is joined by (``joining``): its verdict, its own placements, its
# fault as data (``fault_data``) and site, its program and whether that is settled (``shrunk``),
# and its decision's identity; ids hash identities (``signatures.identity_id``), not text
# 4: each bug carries the links between causes its campaign found (``links``: a shrink's settled
# program showing another cause), followed or not, which ``fuzzdce merge`` joins by; and each
# member whether its cause was bisected (``bisected``)
SCHEMA_VERSION = 4
SCHEMA_FIELD = "schema_version"


def canonical(data: Any) -> str:
    """JSON text that two equal values share whatever their key order: a total order's last resort."""
    return json.dumps(data, sort_keys=True, default=str)


def check_schema(data: Mapping[str, Any], path: Path | str) -> None:
    """UsageError unless ``data`` (the JSON of record file ``path``) is of the schema this fuzzdce reads."""
    version = data.get(SCHEMA_FIELD) if isinstance(data, Mapping) else None
    if version != SCHEMA_VERSION:
        written = "no schema version" if version is None else f"schema version {version}"
        raise UsageError(
            f"{path}: written with {written}; this fuzzdce reads schema version {SCHEMA_VERSION} only: "
            "rewrite the findings folder with this fuzzdce (run the campaign again)"
        )


# --- upstream references ------------------------------------------------------------------------------

UPSTREAM_REPO = "Lightning-AI/lightning-thunder"


@dataclass(frozen=True)
class Upstream:
    """An issue or pull request of Thunder's tracker that a known bug is (a known-findings entry's
    ``upstream``): what the report, bug.json and the HTML page show next to the bug."""

    number: int
    title: str = ""
    repo: str = UPSTREAM_REPO
    kind: str = "issue"  # or "pull"

    def __str__(self) -> str:
        return f"known upstream: {self.repo}#{self.number}" + (f" ({self.title})" if self.title else "")

    @property
    def url(self) -> str:
        return f"https://github.com/{self.repo}/{'pull' if self.kind == 'pull' else 'issues'}/{self.number}"

    def to_json(self) -> dict[str, Any]:
        return {"repo": self.repo, "number": self.number, "title": self.title, "kind": self.kind}

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | None) -> Upstream | None:
        return None if not data else cls(**known_fields(cls, data))


class KnownReason(str):
    """A known-findings entry's reason, with the entry's upstream reference (or None) riding along:
    triage matches and carries the reason as the text it is, and the record of the bug it lands on
    reads ``upstream`` from it (``upstream_of``)."""

    upstream: Upstream | None

    def __new__(cls, reason: str, upstream: Upstream | None = None) -> KnownReason:
        made = super().__new__(cls, reason)
        made.upstream = upstream
        return made

    def __reduce__(self):  # lanes receive the known file pickled
        return KnownReason, (str(self), self.upstream)


def upstream_of(reason: str | None) -> Upstream | None:
    """The upstream reference a known reason carries (None for a plain reason, or none)."""
    return getattr(reason, "upstream", None)


# --- bugs -------------------------------------------------------------------------------------------


# The standings in the order the reports list them, with their titles.
STANDING_TITLES = {
    Standing.NEW: "regressions (the reference passes), new",
    Standing.KNOWN: "regressions, known",
    Standing.FIXED: "fixed (the reference fails; each Thunder under test runs that path cleanly, or a named edit makes it go)",
    Standing.UNEXPLAINED: "gone, unexplained (the reference fails; a Thunder under test does not, yet fails that path otherwise)",
    Standing.MASKED: "masked (the reference fails; a Thunder under test fails that path first its own way, which hides it)",
    Standing.SHARED: "shared (the reference fails the same way)",
}


@dataclass(frozen=True)
class MemberRecord:
    """One finding of a bug: where it showed, how, how often (in all, and by run: ``fuzzdce merge``
    counts each run once), why it belongs to the bug, and what ``joining`` joins it by, as data:
    ``fuzzdce merge`` joins members as the campaign joins findings (``joining.joined``)."""

    id: str
    signature: str
    path: str = ""
    oracle: str = ""
    message: str = ""
    count: int = 0
    n_ops: int = 0  # summary.json's entries leave it out
    violation_signature: str = ""
    error_type: str | None = None
    frame: str | None = None
    counts_by_run: dict[str, int] = field(default_factory=dict)
    confirmed: bool | None = None
    known: str | None = None
    why: str = ""
    first_seen_seconds: float | None = None
    # Its fault (``faults``: where Thunder fails) as text and as data (``Fault.to_json``; summary.json's
    # entries leave the data out), and the op it is about (``Violation.site``).
    fault_text: str = ""
    fault_data: dict[str, Any] | None = None
    site: str = ""
    # What it is joined by besides (bug.json only): its verdict, the placements showing it, its
    # smallest program, whether that is a finished shrink's result, its decision's identity.
    verdict: str = ""
    placements: tuple[str, ...] = ()
    program: str = ""
    inputs: str = ""
    n_inputs: int = 0
    shrunk: bool | None = None
    decision_identity: Identity | None = None
    # Was its cause bisected on its program (``findings.Finding.decision`` set), whether or not the
    # bisection named a decision? A campaign folding two copies keeps the smaller's bisection, even
    # one that names none (``FindingStore.merge``), and so does ``fuzzdce merge``.
    bisected: bool = False

    # The fields summary.json lists of each member.
    SUMMARY_FIELDS = ("id", "signature", "path", "oracle", "message", "count", "counts_by_run", "why", "fault_text")

    @classmethod
    def of(cls, finding, why: str = "", run_id: str | None = None) -> MemberRecord:
        """The record of a campaign's ``findings.Finding``; ``run_id`` keys its ``counts_by_run``."""
        v = finding.violation
        fault = fault_of(v)
        return cls(
            id=finding.id,
            signature=finding.signature,
            violation_signature=finding.violation_signature,
            path=v.path,
            oracle=v.oracle,
            error_type=v.error_type,
            frame=v.frame,
            message=v.message,
            count=finding.count,
            counts_by_run={run_id: finding.count} if run_id is not None else {},
            n_ops=finding.program.n_ops,
            confirmed=finding.confirmed,
            known=finding.known_reason,
            why=why,
            first_seen_seconds=finding.first_seen_seconds,
            fault_text=str(fault),
            fault_data=fault.to_json(),
            site=v.site,
            verdict=str(finding.verdict),
            placements=tuple(finding.placements),
            program=finding.program.source(),
            inputs=finding.program.inputs_source(),
            n_inputs=len(finding.program.inputs),
            shrunk=finding.shrunk,
            decision_identity=finding.decision_identity,
            bisected=finding.decision is not None,
        )

    def to_json(self) -> dict[str, Any]:
        """bug.json's member entry."""
        return {
            "id": self.id,
            "signature": self.signature,
            "violation_signature": self.violation_signature,
            "path": self.path,
            "oracle": self.oracle,
            "error_type": self.error_type,
            "frame": self.frame,
            "message": self.message,
            "count": self.count,
            "counts_by_run": dict(self.counts_by_run),
            "n_ops": self.n_ops,
            "confirmed": self.confirmed,
            "known": self.known,
            "why": self.why,
            "first_seen_seconds": self.first_seen_seconds,
            "fault_text": self.fault_text,
            "fault_data": self.fault_data,
            "site": self.site,
            "verdict": self.verdict,
            "placements": list(self.placements),
            "program": self.program,
            "inputs": self.inputs,
            "n_inputs": self.n_inputs,
            "shrunk": self.shrunk,
            "decision_identity": self.decision_identity,
            "bisected": self.bisected,
        }

    def fault_and_site(self) -> tuple[Fault, str]:
        """Its fault as a value and its site: a member of bug.json has them (summary.json's entries
        leave them out)."""
        return self.fault, self.site

    # What ``joining`` joins a member by, as it joins a campaign's ``findings.Finding``.
    @property
    def fault(self) -> Fault:
        if self.fault_data is None:
            raise ValueError(f"member {self.id} holds no fault: read it from bug.json, not summary.json")
        return Fault.from_json(self.fault_data)

    @property
    def settled(self) -> str | None:
        return self.program + self.inputs if self.shrunk else None

    @property
    def size(self) -> tuple[int, int, int]:
        return size_of(self.n_ops, self.n_inputs, self.program)

    @property
    def rank(self) -> tuple:
        """``findings.program_rank`` of its program: which copy of it ``fuzzdce merge`` keeps, as a
        campaign keeps one of its lanes' copies."""
        return program_rank(self.n_ops, self.n_inputs, self.program, self.inputs)

    @property
    def identity(self) -> Identity:
        """The finding's identity (``findings.finding_identity``), from its stored fields."""
        return finding_identity(self.verdict, self.placements, failure_identity(self.path, self.oracle, self.fault))

    def unlocalised_identity(self) -> Identity:
        """Its failure's identity wherever a wrong value first differs (``faults.failure_identity``'s
        ``localised=False``): what a replay of the bug's script compares."""
        return failure_identity(self.path, self.oracle, self.fault, localised=False)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> MemberRecord:
        """A member as bug.json (or, its ``SUMMARY_FIELDS``, summary.json's bug entries) holds it."""
        values = known_fields(cls, data)
        values["placements"] = tuple(values.get("placements", ()))
        values["decision_identity"] = as_identity(values.get("decision_identity"))
        return cls(**values)

    def summary_entry(self) -> dict[str, Any]:
        """The member as summary.json lists it."""
        data = self.to_json()
        return {k: data[k] for k in self.SUMMARY_FIELDS}


@dataclass(frozen=True)
class CauseLink:
    """Two causes (``joining.cause_key``s) that a campaign found to be one bug, and why: a settled
    program of one showing the other's fault (``joining.settled_links``, ``FindingStore.link``)."""

    first: Identity
    second: Identity
    why: str = ""

    @property
    def pair(self) -> tuple[Identity, Identity]:
        return self.first, self.second

    def order(self) -> tuple:
        """Links are listed by their causes' ids (identities mix types, which do not compare)."""
        return identity_id(self.first), identity_id(self.second), self.why

    def to_json(self) -> dict[str, Any]:
        return {"causes": [self.first, self.second], "why": self.why}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> CauseLink:
        first, second = (as_identity(cause) for cause in data["causes"])
        return cls(first, second, data.get("why", ""))


@dataclass(frozen=True)
class BugRecord:
    """What bug.json holds: a bug's verdict, placements, members, smallest program and counts."""

    id: str
    key: str
    verdict: Verdict
    placements: tuple[str, ...]
    members: tuple[MemberRecord, ...]
    message: str = ""
    count: int = 0
    paths: tuple[str, ...] = ()
    oracles: tuple[str, ...] = ()
    placement: str = ""  # the placement its reproducer applies (see ``findings.Bug.placement``)
    builds: dict[str, str] = field(default_factory=dict)  # NAME -> NAME=TARGET, for placements that are builds
    reference: str = STOCK  # the placement its verdict is relative to
    # NAME -> which Thunder it is (version, path, commit: ``builds.describe_thunder``), the reference's
    # and its placements'
    thunders: dict[str, str] = field(default_factory=dict)
    first_seen_seconds: float | None = None  # seconds from the campaign's start, earliest member
    n_ops: int = 0
    n_inputs: int = 0
    ops: tuple[str, ...] = ()
    program: str = ""
    inputs: str = ""
    known: str | None = None
    confirmed: bool | None = None
    shrink: str | None = None  # set when the program is not known to be at its minimum
    versions: dict[str, str] = field(default_factory=dict)
    needs_nonfinite: bool = False  # wrong values that need a NaN or infinite input (``findings.Bug``)
    upstream: Upstream | None = None  # the tracker's issue or pull request, from the known-findings entry
    # The placement's decision that breaks, as bisection found it (``core.decisions.Bisection``),
    # or why it found none; None where no bisection ran (a shared bug, a build, stock).
    decision: Bisection | None = None
    # Of a failure the reference alone shows (``findings.Bug``): what masked it (a masked bug's), the
    # Thunders under test that still failed its path otherwise, and the bisections naming the edit of
    # each such patch without which it comes back (``Bisection.fixes``): what ``standing`` reads.
    masked_by: tuple[Masking, ...] = ()
    unclean: tuple[str, ...] = ()
    fixed_by: tuple[Bisection, ...] = ()
    # The links between causes (``CauseLink``) that touch a member's cause, as the campaign found
    # them (``findings.FindingStore.link``), whether its join followed them or not: another run's
    # findings may let ``fuzzdce merge`` follow one that this run's kept apart, as one campaign would.
    links: tuple[CauseLink, ...] = ()

    # The fields summary.json lists of each bug (besides its members, signature and folder).
    SUMMARY_FIELDS = (
        "id", "key", "verdict", "placements", "placement", "paths", "oracles", "message", "count",
        "first_seen_seconds", "n_ops", "n_inputs", "ops", "known", "upstream", "confirmed",
        "masked_by", "unclean", "fixed_by",
    )  # fmt: skip

    @classmethod
    def of(
        cls,
        bug,
        run_id: str | None = None,
        builds: Mapping[str, str] | None = None,
        reference: str = STOCK,
        thunders: Mapping[str, str] | None = None,
    ) -> BugRecord:
        """The record of a campaign's ``findings.Bug``; ``run_id`` (the run writing it) keys each
        member's ``counts_by_run``; ``builds``: NAME -> NAME=TARGET of the campaign's builds
        (``builds.build_specs``), of which the record keeps its placements' and the reference's;
        ``thunders``: NAME -> which Thunder it is, likewise kept."""
        program = bug.program
        named = {reference, *bug.placements}
        if bug.verdict in (Verdict.FIXED, Verdict.MASKED):  # what it says of each Thunder under test names them all
            named |= set(thunders or {}) | set(builds or {})
        return cls(
            id=bug.id,
            key=bug.key,
            verdict=Verdict(bug.verdict),
            placements=tuple(bug.placements),
            placement=bug.placement,
            builds={name: spec for name, spec in (builds or {}).items() if name in named},
            reference=reference,
            thunders={name: text for name, text in (thunders or {}).items() if name in named},
            paths=tuple(bug.paths()),
            oracles=tuple(bug.oracles()),
            message=bug.smallest.violation.message,
            count=bug.count,
            first_seen_seconds=bug.first_seen_seconds,
            n_ops=program.n_ops,
            n_inputs=len(program.inputs),
            ops=tuple(program.ops),
            program=program.source(),
            inputs=program.inputs_source(),
            known=bug.known_reason,
            upstream=upstream_of(bug.known_reason),
            confirmed=bug.confirmed,
            shrink=bug.shrink_note,
            needs_nonfinite=bug.needs_nonfinite,
            decision=bug.decision,
            masked_by=tuple(bug.masked_by),
            unclean=tuple(bug.unclean),
            fixed_by=tuple(bug.fixed_by),
            members=tuple(MemberRecord.of(f, bug.why.get(f.signature, ""), run_id) for f in bug.members),
            versions=versions(),
            links=tuple(sorted((CauseLink(a, b, why) for (a, b), why in bug.links.items()), key=CauseLink.order)),
        )

    def to_json(self) -> dict[str, Any]:
        """bug.json."""
        return {
            SCHEMA_FIELD: SCHEMA_VERSION,
            "id": self.id,
            "key": self.key,
            "verdict": str(self.verdict),
            "placements": list(self.placements),
            "placement": self.placement,
            "builds": dict(self.builds),
            "reference": self.reference,
            "thunders": dict(self.thunders),
            "paths": list(self.paths),
            "oracles": list(self.oracles),
            "message": self.message,
            "count": self.count,
            "first_seen_seconds": self.first_seen_seconds,
            "n_ops": self.n_ops,
            "n_inputs": self.n_inputs,
            "ops": list(self.ops),
            "program": self.program,
            "inputs": self.inputs,
            "known": self.known,
            "upstream": None if self.upstream is None else self.upstream.to_json(),
            "confirmed": self.confirmed,
            "shrink": self.shrink,
            "needs_nonfinite": self.needs_nonfinite,
            "decision": None if self.decision is None else self.decision.to_json(),
            "standing": str(self.standing),
            "masked_by": [m.to_json() for m in self.masked_by],
            "unclean": list(self.unclean),
            "fixed_by": [b.to_json() for b in self.fixed_by],
            "members": [m.to_json() for m in self.members],
            "versions": dict(self.versions),
            "links": [link.to_json() for link in self.links],
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> BugRecord:
        """A bug as bug.json (or, its ``SUMMARY_FIELDS``, summary.json's bug entries) holds it."""
        values = known_fields(cls, data)
        values["verdict"] = Verdict(values["verdict"])
        for name in ("placements", "paths", "oracles", "ops"):
            if name in values:
                values[name] = tuple(values[name])
        values["members"] = tuple(MemberRecord.from_json(m) for m in data.get("members", ()))
        values["upstream"] = Upstream.from_json(values.get("upstream"))
        values["decision"] = Bisection.from_json(values["decision"]) if values.get("decision") else None
        values["masked_by"] = tuple(Masking.from_json(m) for m in values.get("masked_by", ()))
        values["unclean"] = tuple(values.get("unclean", ()))
        values["fixed_by"] = tuple(Bisection.from_json(b) for b in values.get("fixed_by", ()))
        values["links"] = tuple(CauseLink.from_json(link) for link in values.get("links", ()))
        return cls(**values)

    def summary_entry(self, folder: str | None) -> dict[str, Any]:
        """The bug as summary.json lists it: the fields that identify it, its members, its folder.
        Paste it into a known-findings file with a reason to suppress it (``signature`` is its key)."""
        data = self.to_json()
        entry = {key: data[key] for key in self.SUMMARY_FIELDS}
        entry["signature"] = self.key
        entry["standing"] = str(self.standing)
        entry["members"] = [m.summary_entry() for m in self.members]
        entry["folder"] = folder
        return entry

    @property
    def reportable(self) -> bool:
        """A regression not known: what makes ``fuzzdce run`` exit 1."""
        return is_reportable(self.verdict, self.known)

    @property
    def standing(self) -> Standing:
        """Which list of the report holds it."""
        if self.verdict == Verdict.SHARED:
            return Standing.SHARED
        if self.verdict == Verdict.MASKED:
            return Standing.MASKED
        if self.verdict == Verdict.FIXED:
            return Standing.FIXED if is_fixed(self.unclean, self.fixed_by) else Standing.UNEXPLAINED
        return Standing.KNOWN if self.known else Standing.NEW

    @property
    def placements_under_test(self) -> tuple[str, ...]:
        """The Thunders under test the record names (its ``thunders``, the reference left out)."""
        return tuple(name for name in self.thunders if name != self.reference)

    @property
    def order(self) -> tuple:
        """Where it is listed among bugs: ``findings.bug_order``, as the campaign lists its bugs."""
        return bug_order(self)

    @property
    def size(self) -> tuple[int, int, int]:
        """Its smallest program's size, as ``findings.size`` orders programs."""
        return size_of(self.n_ops, self.n_inputs, self.program)


def gone_lines(record: BugRecord) -> list[str]:
    """What became of the reference's failure under the Thunders under test, in words (the report,
    the HTML page and ``fuzzdce issue`` alike): what masked it, or what made it go (each bisection
    the other way, ``core.decisions.describe``), or why it is not counted fixed. Empty for a
    regression or a shared bug."""
    standing = record.standing
    if standing == Standing.MASKED:
        return [
            "masked: a Thunder under test failed this program and path first in a way of its own, which hides the "
            "reference's failure (not fixed)",
            *(str(m) for m in record.masked_by),
        ]
    if record.verdict != Verdict.FIXED:
        return []
    lines = []
    clean = [p for p in record.placements_under_test if p not in record.unclean]
    if clean:
        lines.append(f"fixed: {', '.join(clean)} run{'s' if len(clean) == 1 else ''} that path with no violation")
    for bisection in record.fixed_by:
        lines += describe(bisection, ORACLES)
    named = {b.placement for b in record.fixed_by if b.names_an_edit}
    for name in record.unclean:
        if name not in named:
            why = "another Thunder build: its edits cannot be gated" if name in record.builds else "no edit of its named"
            lines.append(f"not counted fixed: {name} does not show it but still fails that path otherwise, and {why}")
    return lines


def known_fields(cls, data: Mapping[str, Any]) -> dict[str, Any]:
    """The keys of ``data`` that are fields of ``cls`` (a record may hold more, or fewer)."""
    names = {f.name for f in fields(cls)}
    return {k: v for k, v in data.items() if k in names}


def by_standing(records: Iterable[BugRecord]) -> list[tuple[str, list[BugRecord]]]:
    """Each standing's title with its bugs, in ``STANDING_TITLES``' order."""
    records = list(records)
    return [(title, [r for r in records if r.standing == standing]) for standing, title in STANDING_TITLES.items()]


# --- summaries ------------------------------------------------------------------------------------

# What one run's summary.json says about that run alone: kept per run, summed or joined on merging.
RUN_FIELDS = (
    "seed", "campaign_seed", "shard", "placements", "paths", "reference", "thunders", "programs", "invalid_programs",
    "evaluation_seconds", "wall_seconds", "unsupported_splits", "counts", "op_counts", "grad_rules", "dropped_steps",
    "dce_activity", "notes", "not_checked", "versions", "timeline", "memory", "opinfo", "compiles",
)  # fmt: skip


@dataclass(frozen=True)
class RunSummary:
    """What summary.json holds: what a campaign (or the runs a merge covers) measured, and its bugs.

    Totals that follow from the rest (rates, bug counts, new regressions) are computed
    here once, for ``fuzzdce run``, ``merge`` and ``report`` alike. None marks what the writer does
    not record (a merge has no phases; a campaign, no runs)."""

    seed: int | None = None
    campaign_seed: int | None = None
    shard: str | None = None
    run_id: str | None = None  # what fuzzdce merge counts once: this shard of this campaign
    placements: tuple[str, ...] = ()
    paths: tuple[str, ...] = ()
    reference: str | None = STOCK  # the placement every verdict is relative to (a merge's: None where runs differ)
    # NAME -> which Thunder it is (version, path, commit: ``builds.describe_thunder``), the reference's
    # and each placement's: what the report's roles lines say
    thunders: dict[str, str] = field(default_factory=dict)
    programs: int = 0
    invalid_programs: int = 0
    evaluation_seconds: float = 0.0
    wall_seconds: float = 0.0
    unsupported_splits: int = 0
    bugs: tuple[BugRecord, ...] = ()
    counts: tuple[dict[str, Any], ...] = ()
    op_counts: dict[str, int] | None = None
    # Thunder's grad rules reached under stock: {"total": rules registered, "reached": {rule: programs}}.
    grad_rules: dict[str, Any] | None = None
    # The OpInfo source programs drew steps from (``strategies.opinfo.OpInfoSource.describe``): its
    # rate, the OpInfos that draw, those skipped and why, those calling an op no catalog entry calls.
    opinfo: dict[str, Any] | None = None
    # Placement -> {"compiled": paths, "as_stock": paths}: where stock's compile served it (``running.compile_sharing``).
    compiles: dict[str, dict[str, int]] | None = None
    dropped_steps: dict[str, int] = field(default_factory=dict)
    dce_activity: dict[str, Any] | None = None
    notes: tuple[dict[str, Any], ...] = ()
    # Checks that could not be made, an exception swallowed: {"oracle", "path", "what", "times"} each.
    not_checked: tuple[dict[str, Any], ...] = ()
    # Programs past their limit (``results.slow.SlowProgram.to_json``), their remaining jobs not run: no bug.
    slow_programs: tuple[dict[str, Any], ...] = ()
    timeline: tuple[dict[str, Any], ...] | None = None
    findings_dir: str | None = None
    memory: dict[str, Any] | None = None
    versions: dict[str, str] = field(default_factory=dict)
    # A campaign's: seconds per phase (machine seconds, lanes added up) and why each lane's generation ended.
    phases: dict[str, float] | None = None
    generation_ended: tuple[str, ...] | None = None
    # A merge's: the shards, every run's wall seconds added up, and each run's own summary (RUN_FIELDS).
    shards: tuple[str | None, ...] | None = None
    machine_seconds: float | None = None
    runs: dict[str, dict[str, Any]] | None = None

    @property
    def seconds_per_program(self) -> float:
        return round(self.evaluation_seconds / max(self.programs, 1), 4)

    @property
    def programs_per_minute(self) -> float:
        return round(60 * self.programs / max(self.wall_seconds, 1e-9), 2)

    @property
    def n_bugs(self) -> int:
        return len(self.bugs)

    @property
    def n_findings(self) -> int:
        """Distinct findings: each is a member of one bug."""
        return len({m.id for b in self.bugs for m in b.members})

    @property
    def new_regressions(self) -> int:
        return sum(b.reportable for b in self.bugs)

    @property
    def exit_code(self) -> int:
        """``fuzzdce run``'s rule: 1 on any new regression, else 0."""
        return 1 if self.new_regressions else 0

    def bug_folder(self, bug: BugRecord) -> str | None:
        return str(Path(self.findings_dir) / bug.id) if self.findings_dir is not None else None

    def to_json(self) -> dict[str, Any]:
        """summary.json (what was not recorded left out)."""
        data: dict[str, Any] = {
            SCHEMA_FIELD: SCHEMA_VERSION,
            "seed": self.seed,
            "campaign_seed": self.campaign_seed,
            "shard": self.shard,
            "run_id": self.run_id,
            "shards": None if self.shards is None else list(self.shards),
            "placements": list(self.placements),
            "paths": list(self.paths),
            "reference": self.reference,
            "thunders": dict(self.thunders),
            "programs": self.programs,
            "invalid_programs": self.invalid_programs,
            "evaluation_seconds": round(self.evaluation_seconds, 3),
            "wall_seconds": round(self.wall_seconds, 3),
            "machine_seconds": None if self.machine_seconds is None else round(self.machine_seconds, 3),
            "seconds_per_program": self.seconds_per_program,
            "programs_per_minute": self.programs_per_minute,
            "unsupported_splits": self.unsupported_splits,
            "phases": None if self.phases is None else {p: round(s, 3) for p, s in sorted(self.phases.items())},
            "generation_ended": None if self.generation_ended is None else list(self.generation_ended),
            "n_bugs": self.n_bugs,
            "n_findings": self.n_findings,
            "bugs": {
                verdict.value: [b.summary_entry(self.bug_folder(b)) for b in self.bugs if b.verdict == verdict]
                for verdict in Verdict
            },
            "new_regressions": self.new_regressions,
            "counts": [dict(c) for c in self.counts],
            "op_counts": self.op_counts,
            "grad_rules": self.grad_rules,
            "opinfo": self.opinfo,
            "compiles": self.compiles,
            "dropped_steps": dict(self.dropped_steps),
            "dce_activity": self.dce_activity,
            "notes": [dict(n) for n in self.notes],
            "not_checked": [dict(n) for n in self.not_checked],
            "slow_programs": [dict(p) for p in self.slow_programs],
            "timeline": None if self.timeline is None else [dict(s) for s in self.timeline],
            "findings_dir": self.findings_dir,
            "memory": self.memory,
            "versions": dict(self.versions),
            "runs": self.runs,
        }
        optional = ("shards", "machine_seconds", "phases", "generation_ended", "op_counts", "grad_rules", "opinfo", "compiles")
        optional += ("dce_activity", "timeline", "memory", "runs")
        return {k: v for k, v in data.items() if not (k in optional and v is None)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RunSummary:
        """A summary as summary.json holds it (its bug entries: ``BugRecord.SUMMARY_FIELDS``)."""
        values = known_fields(cls, data)
        values.pop("bugs", None)
        for name in ("placements", "paths", "counts", "notes", "not_checked", "timeline", "generation_ended", "shards"):
            if values.get(name) is not None:
                values[name] = tuple(values[name])
        values["slow_programs"] = tuple(values.get("slow_programs") or ())
        entries = [e for listed in data["bugs"].values() for e in listed]  # keyed by verdict
        return cls(bugs=tuple(BugRecord.from_json(e) for e in entries), **values)

    def run_part(self) -> dict[str, Any]:
        """What this summary says about its run alone (``RUN_FIELDS``), as summary.json holds it."""
        data = self.to_json()
        return {k: data[k] for k in RUN_FIELDS if k in data}

    def covered_runs(self) -> dict[str, dict[str, Any]]:
        """The per-run summaries it covers: its ``runs`` if merged, else itself as one run."""
        if self.runs is not None:
            return self.runs
        return {self.run_id: self.run_part()}
