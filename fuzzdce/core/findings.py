"""Findings and bugs: violations triaged against the reference Thunder, deduplicated, joined by root cause.

A finding is known by its identity: (verdict, placements, path, oracle, fault identity) (its
signature is that in words, for people). The verdict and placements come from one program evaluated under the campaign's
*reference* Thunder (stock, unless ``--against`` or ``--reference`` names another) and every
Thunder under test: for each violation, the placements whose run of that program shows the same
violation identity (same path, oracle and fault, however each words it; so a shared failure elsewhere in the program masks
nothing). Without the reference among them it is a ``regression``; the reference and a Thunder
under test make it ``shared``; the reference alone makes it ``fixed``, or ``masked`` where a Thunder
under test failed that path first in a way of its own that stops the run (``masked_or_gone``: the
bug names what masked it). A fixed failure whose path a Thunder under test still fails otherwise
is fixed only once a bisection the other way names the edit that made it go (``is_fixed``).

A **bug** is what a user files: findings (kept as its evidence) of one verdict and placements
joined into one fault. Whether two findings are one fault, and what keeps two bugs apart, is
``joining``'s to decide (it says why); this module gathers the evidence: findings by cause
(``joining.cause_key``), the links the shrinker found between causes whose settled programs each
show the other (``FindingStore.link``), and each finding's ``joining.join_keys``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from fuzzdce.core.decisions import identity_text
from fuzzdce.core.faults import Fault, Identity, fault_of, identity, signature
from fuzzdce.core.joining import bug_key, cause_key, causes_of, decision_identity, join_keys, joined, smallest_first
from fuzzdce.core.model import STOCK, Verdict, Violation
from fuzzdce.core.program import Domain, Program
from fuzzdce.core.signatures import finding_signature, identity_id
from fuzzdce.core.vocabulary import AddResult

VERDICTS = tuple(Verdict)  # in the order bugs are listed


def size_of(n_ops: int, n_inputs: int, source: str) -> tuple[int, int, int]:
    """Smaller is better: fewer ops, then fewer inputs, then less source. (Bug records, which hold
    a program's source and counts but not the program, are ordered by it too.)"""
    return (n_ops, n_inputs, len(source))


def size(program) -> tuple[int, int, int]:
    """``size_of`` a program."""
    return size_of(program.n_ops, len(program.inputs), program.source())


def program_rank(n_ops: int, n_inputs: int, source: str, inputs: str) -> tuple:
    """Which of two copies of one finding's program wins where copies meet (a lane's store folded
    into its parent's, ``fuzzdce merge``'s copies from its inputs): the smaller (``size_of``), then
    by text (source, inputs), so that the program kept, and with it the settled program it joins
    by, never depends on which copy came first."""
    return (*size_of(n_ops, n_inputs, source), source, inputs)


def program_text(program) -> str:
    """A program's text, its source and inputs: what a decision records it was bisected on
    (``decisions.Bisection.program``)."""
    return program.source() + program.inputs_source()


def earliest(times: Iterable[float | None]) -> float | None:
    """The smallest of ``times`` that are known (None when none is)."""
    return min((t for t in times if t is not None), default=None)


def combined_confirmed(states: Iterable[bool | None]) -> bool | None:
    """Whether findings (or copies of one) reproduced the same on replay, together: False if any
    says False, else None if any is unknown, else True."""
    states = list(states)
    return False if False in states else (None if None in states else True)


def confirmed_on_smallest(members: Iterable[tuple[bool, bool | None]]) -> bool | None:
    """A bug's confirmation, from (on its smallest program?, confirmed) per member: what the
    replays of its smallest program (``Shrinker.confirm`` replays that program only) said of the
    members there, together (``combined_confirmed``): True when each reproduced, False when one did
    not, None when one was not replayed. A member on another program was never replayed and says
    nothing of the bug's reproducer."""
    return combined_confirmed(confirmed for on_smallest, confirmed in members if on_smallest)


def confirmation_words(confirmed: bool | None) -> str:
    """A bug's ``confirmed`` said plainly (the report and the HTML page alike)."""
    if confirmed is None:
        return "NOT REPLAYED: its smallest program was not run again (not confirmed)"
    if confirmed:
        return "confirmed: its smallest program, replayed, showed the same"
    return "NOT CONFIRMED: its smallest program, replayed, did not show the same"


def replayed_together(first: bool | None, second: bool | None) -> bool | None:
    """Two replays of one program (two lanes confirmed the same finding): False if either did not
    reproduce it, True if both (or the one replayed) did, None if neither was replayed."""
    known = [s for s in (first, second) if s is not None]
    return None if not known else all(known)


def is_reportable(verdict: Verdict, known: str | None) -> bool:
    """A regression not suppressed by the known-findings file: what makes ``fuzzdce run`` exit 1."""
    return verdict == Verdict.REGRESSION and not known


def bug_order(bug) -> tuple:
    """How bugs are listed (a ``Bug`` or a ``records.BugRecord``: anything with a verdict, reportable
    and id): regressions and new first, wrong values that need a NaN or infinite input after
    the other bugs of their verdict, then by id."""
    return (VERDICTS.index(bug.verdict), not bug.reportable, bool(getattr(bug, "needs_nonfinite", False)), bug.id)


@dataclass(frozen=True)
class MaskedBy:
    """A failure of a Thunder's under test that masked the reference's on its path (``masked_or_gone``):
    its verdict, the placements showing it and one violation of it, as triaged on that program."""

    verdict: Verdict
    placements: tuple[str, ...]
    violation: Violation

    @property
    def finding(self) -> Identity:
        """Its finding's identity (``finding_identity``): what the store holds it by."""
        return finding_identity(self.verdict, self.placements, identity(self.violation))


@dataclass(frozen=True)
class Triaged:
    """One failure of a program (a violation identity), triaged: what the reference does with it,
    who shows it and one violation of it. Of a failure the reference alone shows, also what the
    Thunders under test did on its path instead (``masked_or_gone``): ``masked_by``, their own
    failures there that stop the run (it is then ``Verdict.MASKED``), and ``unclean``, those that
    still fail that path another way that stops nothing (the reference's other failures, a wrong
    value): gone there, fixed only once an edit of theirs is named for it."""

    verdict: Verdict
    placements: tuple[str, ...]  # the placements showing it, the reference first, the others in the order given
    violation: Violation  # one of them, as an example
    masked_by: tuple[MaskedBy, ...] = ()
    unclean: tuple[str, ...] = ()


def verdict_of(names: Sequence[str], reference: str, evaluated: int) -> Verdict:
    """The verdict of a violation shown under ``names``, against ``reference``, of ``evaluated``
    placements (the reference alone fixes nothing: a campaign of stock alone has nothing under test)."""
    if reference not in names:
        return Verdict.REGRESSION
    return Verdict.SHARED if len(names) > 1 or evaluated == 1 else Verdict.FIXED


def triage(violations_by_placement: Mapping[str, Iterable[Violation]], reference: str | None = None) -> dict[Identity, Triaged]:
    """Triage one program: violation identity (``faults.identity``: path, oracle, fault's identity)
    -> its ``Triaged`` (verdict, placements, a violation). Two placements showing one fault in other
    words (a message, a fault's text holding more than its identity) show one failure.

    ``violations_by_placement``: placement name -> the violations it showed (``evaluate.violations_of``
    a program's evaluations); it must include ``reference``, by default its first placement (the
    ``Evaluator`` lists the reference first). Placements keep the order given, the reference first.
    """
    reference = reference or next(iter(violations_by_placement), STOCK)
    showing: dict[Identity, list[str]] = {}
    example: dict[Identity, Violation] = {}
    for name in sorted(violations_by_placement, key=lambda name: name != reference):
        for v in violations_by_placement[name]:
            known_by = identity(v)
            example.setdefault(known_by, v)
            if name not in showing.setdefault(known_by, []):
                showing[known_by].append(name)
    triaged = {
        known_by: Triaged(verdict_of(names, reference, len(violations_by_placement)), tuple(names), example[known_by])
        for known_by, names in showing.items()
    }
    return masked_or_gone(triaged, violations_by_placement, reference)


def masked_or_gone(
    triaged: Mapping[Identity, Triaged], violations_by_placement: Mapping[str, Iterable[Violation]], reference: str
) -> dict[Identity, Triaged]:
    """``triaged`` (``triage``'s: violation identity -> its ``Triaged``), each failure of the reference alone
    (``Verdict.FIXED``) judged by what each Thunder under test did on its path instead: one that
    failed there in a way of its own (no failure of the reference's) that stops the run (a raise,
    a split: ``Fault.stops_the_run``) hid it, and it is ``Verdict.MASKED``, naming those failures'
    findings (``MaskedBy``); one that still failed there otherwise is ``unclean`` (the failure went,
    and only a named edit of its says why). A Thunder that ran the path with no violation fixed it."""
    violations = {name: list(vs) for name, vs in violations_by_placement.items()}
    reference_keys = {identity(v) for v in violations.get(reference, ())}
    judged = dict(triaged)
    for k, t in triaged.items():
        if t.verdict != Verdict.FIXED:
            continue
        path = t.violation.path
        masked_by: dict[Identity, MaskedBy] = {}  # by finding identity: one masking finding once
        unclean: list[str] = []
        for name, shown in violations.items():
            if name == reference:
                continue
            on_path = [v for v in shown if v.path == path]
            stopping = [v for v in on_path if identity(v) not in reference_keys and fault_of(v).stops_the_run]
            for v in stopping:
                own = triaged[identity(v)]
                masker = MaskedBy(own.verdict, own.placements, own.violation)
                masked_by.setdefault(masker.finding, masker)
            if on_path and not stopping:
                unclean.append(name)
        if masked_by:
            judged[k] = replace(t, verdict=Verdict.MASKED, masked_by=tuple(masked_by.values()))
        elif unclean:
            judged[k] = replace(t, unclean=tuple(unclean))
    return judged


@dataclass
class Finding:
    verdict: Verdict
    placements: tuple[str, ...]
    violation: Violation
    program: Program
    count: int = 0
    known_reason: str | None = None  # set when a known-findings file suppresses it
    # Did ``program`` show the same finding when replayed (``Shrinker.confirm``)? None: not replayed,
    # and so again whenever ``program`` is replaced by a smaller one.
    confirmed: bool | None = None
    # Seconds from the campaign's start (a lane's: its parent's) to this finding's first occurrence.
    first_seen_seconds: float | None = None
    # The Hypothesis choices (and steering weights, None unsteered) that drew ``program``: what its
    # shrink run starts from. None for a program not drawn by Hypothesis (tests hand some in).
    choices: tuple | None = None
    weights: object = None
    # Is ``program`` a finished shrink's result (True), where a shrink run stopped for time (False),
    # or not shrunk (None)?
    shrunk: bool | None = None
    # The bisection of its cause's failure to the placement's decision that breaks
    # (``core.decisions.Bisection``, made by ``running.decisions``), once made: what the bug is known
    # by. Always made on ``program``: dropped when a smaller program replaces it (``FindingStore.add``).
    decision: Any = None
    # Of a failure the reference alone shows (``Triaged``, as triaged on ``program``): the Thunders'
    # under test own failures that masked it (``MaskedBy``; ``Verdict.MASKED``), the
    # Thunders under test that still failed its path otherwise, and, for each patch placement under
    # test, the bisection naming its edit without which the failure comes back (``Bisection.fixes``).
    masked_by: tuple[MaskedBy, ...] = ()
    unclean: tuple[str, ...] = ()
    fixed_by: tuple = ()

    @property
    def violation_signature(self) -> str:
        return signature(self.violation)

    @property
    def signature(self) -> str:
        """Its identity in words (display, and a known-findings entry may name it by it)."""
        return finding_signature(self.verdict, self.placements, self.violation_signature)

    @property
    def identity(self) -> Identity:
        """What it is known by: ``finding_identity``."""
        return finding_identity(self.verdict, self.placements, identity(self.violation))

    @property
    def id(self) -> str:
        return identity_id(self.identity)

    # What ``joining`` joins a finding by (a bug record's member answers alike).
    @property
    def fault(self) -> Fault:
        return fault_of(self.violation)

    @property
    def site(self) -> str:
        return self.violation.site

    @property
    def settled(self) -> str | None:
        """Its program's text, once a finished shrink's result (``shrunk``), else None."""
        return program_text(self.program) if self.shrunk else None

    @property
    def decision_identity(self) -> Identity | None:
        return self.decision.identity if self.decision is not None else None

    @property
    def size(self) -> tuple[int, int, int]:
        return size(self.program)

    @property
    def rank(self) -> tuple:
        """``program_rank`` of its program."""
        program = self.program
        return program_rank(program.n_ops, len(program.inputs), program.source(), program.inputs_source())

    @property
    def cause_key(self) -> Identity:
        """The finding's cause (``joining.cause_key``): what joins findings with no further evidence."""
        return cause_key(self.verdict, self.placements, self.fault)

    @property
    def placement(self) -> str:
        """The placement its reproducer applies: the first showing it (the reference, unless a regression)."""
        return self.placements[0]

    @property
    def reportable(self) -> bool:
        """A regression not suppressed: what makes ``fuzzdce run`` exit 1."""
        return is_reportable(self.verdict, self.known_reason)


def is_fixed(unclean: Sequence[str], fixed_by: Sequence[Any]) -> bool:
    """Is a failure the reference alone shows fixed: does each Thunder under test that still failed
    its path otherwise (``unclean``) have a bisection (``fixed_by``) naming the edit without which
    it comes back? One that ran the path cleanly needs none; a build, which cannot be gated, has none."""
    named = {b.placement for b in fixed_by if b.names_an_edit}
    return all(name in named for name in unclean)


@dataclass(frozen=True)
class Masking:
    """What masked a bug's failure: the bug of a Thunder's under test own failure on its path that
    stops the run (its id; empty when that finding is in no bug of this run), who shows it, and its
    signature (display)."""

    bug: str
    placements: tuple[str, ...]
    failure: str
    finding: str = ""  # the masking finding's id: ``fuzzdce merge`` finds its bug again by it

    def __str__(self) -> str:
        return f"masked by bug {self.bug or '(not among these)'} under {', '.join(self.placements)}: {self.failure}"

    def to_json(self) -> dict[str, Any]:
        return {"bug": self.bug, "placements": list(self.placements), "failure": self.failure, "finding": self.finding}

    @staticmethod
    def from_json(data: Mapping[str, Any]) -> Masking:
        return Masking(data["bug"], tuple(data["placements"]), data["failure"], data.get("finding", ""))


def common_placements(members: Sequence[Any]) -> tuple[str, ...]:
    """The Thunders showing every member of a bug (``joining.connected`` keeps one in common), in
    the order its smallest program's finding lists them: a member that another faulty placement
    shows too does not make the bug that placement's."""
    first = tuple(members[0].placements)
    common = tuple(p for p in first if all(p in f.placements for f in members))
    return common or first


def finding_identity(verdict: Verdict, placements: Sequence[str], failure: Identity) -> Identity:
    """A finding's identity: its verdict, the placements showing it and its failure's identity
    (``faults.failure_identity``: path, oracle, fault). Its id hashes it (``identity_id``)."""
    return (str(verdict), tuple(placements), failure)


@dataclass
class Bug:
    """Findings of one root cause: ``identity`` is what it is known by (``joining.bug_key``; its
    id hashes it, stable across runs while the cause is), ``key`` that in words, ``members`` its
    findings, ``why`` says for each member (by signature) why it belongs."""

    identity: Identity
    key: str
    members: list[Finding]
    why: dict[str, str]
    known_reason: str | None = None
    # What masked its failure (a ``MASKED`` bug's): the bugs its members name (``FindingStore.bugs``).
    masked_by: tuple[Masking, ...] = ()
    # The links (``FindingStore.link``: cause key pair -> why) that touch a member's cause, followed
    # or not: evidence a bug record keeps for ``fuzzdce merge`` to join by, as the campaign does.
    links: dict[tuple[Identity, Identity], str] = field(default_factory=dict)

    @property
    def id(self) -> str:
        return identity_id(self.identity)

    @property
    def unclean(self) -> tuple[str, ...]:
        """The Thunders under test that still failed its smallest program's path otherwise."""
        return self.smallest.unclean

    @property
    def fixed_by(self) -> tuple:
        """The bisections naming what made its smallest program's failure go (``Finding.fixed_by``)."""
        return self.smallest.fixed_by

    @property
    def smallest(self) -> Finding:
        """The member with the smallest program: the bug's reproducer runs that program."""
        return smallest_first(self.members)[0]

    @property
    def program(self) -> Program:
        return self.smallest.program

    @property
    def verdict(self) -> Verdict:
        return self.members[0].verdict

    @property
    def placements(self) -> tuple[str, ...]:
        return common_placements(self.members)

    @property
    def placement(self) -> str:
        """The placement its reproducer applies: the first showing every member."""
        return self.placements[0]

    @property
    def count(self) -> int:
        return sum(f.count for f in self.members)

    @property
    def decision(self):
        """The bisection that names the bug's decision (``core.decisions.Bisection``): the smallest
        program's where its search found one (what the reproducer runs), else a member's whose
        search found one, else any member's (it says why none), else None."""
        made = [f.decision for f in smallest_first(self.members) if f.decision is not None]
        return next((d for d in made if d.identity is not None), made[0] if made else None)

    @property
    def shrink_note(self) -> str | None:
        """Said when the bug's program is not known to be at its minimum."""
        smallest = self.smallest
        if smallest.shrunk is False:
            n = self.program.n_ops
            return f"shrinking stopped at {n} op{'' if n == 1 else 's'}: time"
        return None

    @property
    def needs_nonfinite(self) -> bool:
        """Wrong values (a forward divergence) whose shrunk program still draws an input among NaN
        and infinities: the shrinker tried it with finite inputs (``shrinking``) and it passed."""
        smallest = self.smallest
        return (
            bool(smallest.shrunk)
            and fault_of(smallest.violation).is_value
            and any(i.domain == Domain.NONFINITE for i in smallest.program.inputs)
        )

    @property
    def confirmed(self) -> bool | None:
        """Whether the findings on the bug's smallest program (its reproducer's) were replayed and
        reproduced (``confirmed_on_smallest``); a member on another program says nothing of it."""
        smallest = self.smallest.program
        return confirmed_on_smallest([(f.program == smallest, f.confirmed) for f in self.members])

    @property
    def reportable(self) -> bool:
        return is_reportable(self.verdict, self.known_reason)

    @property
    def first_seen_seconds(self) -> float | None:
        """When its first member was first seen (None when no member has a time)."""
        return earliest(f.first_seen_seconds for f in self.members)

    def paths(self) -> list[str]:
        return sorted({f.violation.path for f in self.members})

    def oracles(self) -> list[str]:
        return sorted({f.violation.oracle for f in self.members})


class FindingStore:
    """Findings by identity; keeps the smallest program seen for each and counts occurrences;
    joins them into bugs."""

    def __init__(self, known: Mapping[str, str] | None = None) -> None:
        self.findings: dict[Identity, Finding] = {}
        # Known bug ids, finding signatures or ids -> reason they are suppressed.
        self.known = dict(known or {})
        # (cause key, cause key) pairs joined by their shrunk minimal programs -> why.
        self.links: dict[tuple[Identity, Identity], str] = {}

    def add(
        self,
        verdict: Verdict,
        placements: tuple[str, ...],
        violation: Violation,
        program,
        seconds: float | None = None,
        choices: tuple | None = None,
        weights: object = None,
        masked_by: Sequence[MaskedBy] = (),
        unclean: Sequence[str] = (),
    ) -> tuple[Finding, AddResult]:
        """Record one occurrence, ``seconds`` into the campaign (with what masked it, or where it
        went unclean: ``Triaged``); returns the finding and what the occurrence is to it."""
        known_by = finding_identity(verdict, placements, identity(violation))
        finding = self.findings.get(known_by)
        if finding is None:
            finding = self.findings[known_by] = Finding(
                verdict,
                placements,
                violation,
                program,
                first_seen_seconds=seconds,
                choices=choices,
                weights=weights,
                masked_by=tuple(masked_by),
                unclean=tuple(unclean),
            )
            finding.known_reason = self.known.get(finding.signature, self.known.get(finding.id))
            change = AddResult.NEW
        elif size(program) < size(finding.program):
            finding.program, finding.violation = program, violation
            finding.choices, finding.weights, finding.shrunk, finding.confirmed = choices, weights, None, None
            finding.masked_by, finding.unclean, finding.fixed_by = tuple(masked_by), tuple(unclean), ()
            # Its calls and statements were the old program's: the cause is decided again on this one
            # (``shrinking.Shrinker.decide_found``).
            finding.decision = None
            change = AddResult.SMALLER
        else:
            if finding.choices is None and program == finding.program:
                finding.choices, finding.weights = choices, weights
            change = AddResult.SEEN
        finding.count += 1
        return finding, change

    def causes(self) -> dict[Identity, list[Finding]]:
        """The findings by cause (``joining.causes_of``), each cause's smallest program first."""
        return causes_of(self.findings.values())

    def link(self, first: Finding, second: Finding, why: str = "each one's shrunk minimal program shows the other") -> None:
        """Record that the causes of ``first`` and ``second`` are one bug (never two verdicts)."""
        a, b = sorted((first.cause_key, second.cause_key), key=identity_id)
        if a != b and first.verdict == second.verdict:
            self.links[(a, b)] = why

    def bugs(self) -> list[Bug]:
        """The findings joined into bugs (``joining.joined``), regressions and new first."""
        bugs = [self._bug(members) for members in joined(self.findings.values(), self.links)]
        of_finding = {f.identity: bug for bug in bugs for f in bug.members}
        for bug in bugs:
            masking = {}
            for f in bug.members:
                for masker in f.masked_by:
                    known_by, shown = masker.finding, masker.violation
                    by = of_finding.get(known_by)
                    failure = (
                        f"{shown.oracle} on {shown.path}: {shown.message.splitlines()[0][:200]}"
                        if shown.message
                        else identity_text(known_by)[:200]
                    )
                    masking.setdefault(
                        known_by, Masking(by.id if by is not None else "", masker.placements, failure, identity_id(known_by))
                    )
            bug.masked_by = tuple(masking.values())
        return sorted(bugs, key=bug_order)

    def _bug(self, members: list[Finding]) -> Bug:
        identity_, key = bug_key(members)
        decided = decision_identity(next((f for f in members if decision_identity(f)), members[0]))
        first_keys = set(join_keys(members[0]))
        why = {}
        for f in members:
            if f is members[0]:
                why[f.signature] = "the finding of the bug's smallest program"
            elif decided is not None and decision_identity(f) == decided:
                why[f.signature] = f"same decision: {identity_text(decided)[:200]}"
            elif f.cause_key == members[0].cause_key:
                why[f.signature] = f"same fault: {str(f.fault)[:200]}"
            elif set(join_keys(f)) & first_keys:
                why[f.signature] = "the same minimal program, or the same op in other words on another path"
            else:
                reason = self.links.get(tuple(sorted((members[0].cause_key, f.cause_key), key=identity_id)))
                why[f.signature] = reason or "joined through another member: each one's shrunk minimal program shows the other's"
        # Known by its own key (or id), never because a member is: a member's
        # finding once filed must not make every bug it later joins known.
        known = self.known.get(key) or self.known.get(identity_id(identity_))
        causes = {f.cause_key for f in members}
        links = {pair: reason for pair, reason in self.links.items() if causes & set(pair)}
        return Bug(identity_, key, members, why, known, links=links)

    def merge(self, other: FindingStore) -> None:
        """Fold in another store (another lane's): counts add up, the smaller program (``program_rank``,
        with its choices, shrink state and replay) and the earlier first sighting win; two replays of
        one program combine (``replayed_together``)."""
        self.links.update(other.links)
        for known_by, theirs in other.findings.items():
            mine = self.findings.get(known_by)
            if mine is None:
                self.findings[known_by] = theirs
                continue
            mine.count += theirs.count
            mine.first_seen_seconds = earliest((mine.first_seen_seconds, theirs.first_seen_seconds))
            if theirs.rank < mine.rank:
                mine.program, mine.violation = theirs.program, theirs.violation
                mine.choices, mine.weights, mine.shrunk = theirs.choices, theirs.weights, theirs.shrunk
                mine.confirmed = theirs.confirmed
                mine.masked_by, mine.unclean, mine.fixed_by = theirs.masked_by, theirs.unclean, theirs.fixed_by
                # A decision goes with the program it was bisected on (None: theirs was not decided yet).
                mine.decision = theirs.decision
            elif theirs.program == mine.program:
                if theirs.shrunk and not mine.shrunk:
                    mine.shrunk = True
                mine.confirmed = replayed_together(mine.confirmed, theirs.confirmed)
                if mine.decision is None:
                    mine.decision = theirs.decision
                if not mine.fixed_by:
                    mine.fixed_by = theirs.fixed_by

    def __iter__(self):
        return iter(
            sorted(
                self.findings.values(),
                key=lambda f: (VERDICTS.index(f.verdict), f.known_reason is not None, f.violation.path, f.violation.oracle, f.id),
            )
        )

    def __len__(self) -> int:
        return len(self.findings)
