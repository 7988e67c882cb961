"""Findings and bugs: violations triaged against the reference Thunder, deduplicated, joined by root cause.

A finding's signature is (verdict, placements, path, oracle, exception type, normalised message,
Thunder frame). The verdict and placements come from one program evaluated under the campaign's
*reference* Thunder (stock, unless ``--against`` or ``--reference`` names another) and every
Thunder under test: for each violation, the placements whose run of that program shows the same
violation signature (same path and oracle, so a shared failure elsewhere in the program masks
nothing). Without the reference among them it is a ``regression``; the reference and a Thunder
under test make it ``shared``; the reference alone makes it ``fixed``.

A **bug** is what a user files: findings (kept as its evidence) of one verdict and placements
joined into one fault. Whether two findings are one fault, and what keeps two bugs apart, is
``joining``'s to decide (it says why); this module gathers the evidence: findings by cause
(``joining.cause_key``), the links the shrinker found between causes whose settled programs each
show the other (``FindingStore.link``), and each finding's ``joining.join_keys``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from fuzzdce.core.decisions import identity_text
from fuzzdce.core.faults import fault_of, signature
from fuzzdce.core.joining import cause_key, connected, decision_identity, findings_kept_apart, join_keys
from fuzzdce.core.model import STOCK, Verdict, Violation
from fuzzdce.core.program import Domain, Program
from fuzzdce.core.signatures import finding_signature, short_id
from fuzzdce.core.vocabulary import AddResult

VERDICTS = tuple(Verdict)  # in the order bugs are listed


def size_of(n_ops: int, n_inputs: int, source: str) -> tuple[int, int, int]:
    """Smaller is better: fewer ops, then fewer inputs, then less source. (Bug records, which hold
    a program's source and counts but not the program, are ordered by it too.)"""
    return (n_ops, n_inputs, len(source))


def size(program) -> tuple[int, int, int]:
    """``size_of`` a program."""
    return size_of(program.n_ops, len(program.inputs), program.source())


def earliest(times: Iterable[float | None]) -> float | None:
    """The smallest of ``times`` that are known (None when none is)."""
    return min((t for t in times if t is not None), default=None)


def combined_confirmed(states: Iterable[bool | None]) -> bool | None:
    """Whether findings (or copies of one) reproduced the same on replay, together: False if any
    says False, else None if any is unknown, else True."""
    states = list(states)
    return False if False in states else (None if None in states else True)


def is_reportable(verdict: Verdict, known: str | None) -> bool:
    """A regression not suppressed by the known-findings file: what makes ``fuzzdce run`` exit 1."""
    return verdict == Verdict.REGRESSION and not known


def bug_order(bug) -> tuple:
    """How bugs are listed (a ``Bug`` or a ``records.BugRecord``: anything with a verdict, reportable
    and id): regressions and new first, wrong values that need a NaN or infinite input after
    the other bugs of their verdict, then by id."""
    return (VERDICTS.index(bug.verdict), not bug.reportable, bool(getattr(bug, "needs_nonfinite", False)), bug.id)


class Triaged(NamedTuple):
    """One violation signature of a program, triaged: what the reference does with it and who shows it."""

    verdict: Verdict
    placements: tuple[str, ...]  # the placements showing it, the reference first, the others in the order given
    violation: Violation  # one of them, as an example


def verdict_of(names: Sequence[str], reference: str, evaluated: int) -> Verdict:
    """The verdict of a violation shown under ``names``, against ``reference``, of ``evaluated``
    placements (the reference alone fixes nothing: a campaign of stock alone has nothing under test)."""
    if reference not in names:
        return Verdict.REGRESSION
    return Verdict.SHARED if len(names) > 1 or evaluated == 1 else Verdict.FIXED


def triage(violations_by_placement: Mapping[str, Iterable[Violation]], reference: str | None = None) -> dict[str, Triaged]:
    """Triage one program: violation signature -> its ``Triaged`` (verdict, placements, a violation).

    ``violations_by_placement``: placement name -> the violations it showed (``evaluate.violations_of``
    a program's evaluations); it must include ``reference``, by default its first placement (the
    ``Evaluator`` lists the reference first). Placements keep the order given, the reference first.
    """
    reference = reference or next(iter(violations_by_placement), STOCK)
    showing: dict[str, list[str]] = {}
    example: dict[str, Violation] = {}
    for name in sorted(violations_by_placement, key=lambda name: name != reference):
        for v in violations_by_placement[name]:
            sig = signature(v)
            example.setdefault(sig, v)
            if name not in showing.setdefault(sig, []):
                showing[sig].append(name)
    return {
        sig: Triaged(verdict_of(names, reference, len(violations_by_placement)), tuple(names), example[sig])
        for sig, names in showing.items()
    }


@dataclass
class Finding:
    verdict: Verdict
    placements: tuple[str, ...]
    violation: Violation
    program: Program
    count: int = 0
    known_reason: str | None = None  # set when a known-findings file suppresses it
    # Set by the final triage: did the smallest program show the same finding when replayed?
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
    # (``core.decisions.Bisection``, made by ``running.decisions``), once made: what the bug is known by.
    decision: Any = None

    @property
    def violation_signature(self) -> str:
        return signature(self.violation)

    @property
    def signature(self) -> str:
        return finding_signature(self.verdict, self.placements, self.violation_signature)

    @property
    def id(self) -> str:
        return short_id(self.signature)

    @property
    def cause_key(self) -> str:
        """The finding's cause (``joining.cause_key``): what joins findings with no further evidence."""
        return cause_key(self.verdict, self.placements, self.violation)

    @property
    def placement(self) -> str:
        """The placement its reproducer applies: the first showing it (the reference, unless a regression)."""
        return self.placements[0]

    @property
    def reportable(self) -> bool:
        """A regression not suppressed: what makes ``fuzzdce run`` exit 1."""
        return is_reportable(self.verdict, self.known_reason)


@dataclass
class Bug:
    """Findings of one root cause: ``key`` names it (its id is stable across runs while the cause
    is), ``members`` are its findings, ``why`` says for each member (by signature) why it belongs."""

    key: str
    members: list[Finding]
    why: dict[str, str]
    known_reason: str | None = None

    @property
    def id(self) -> str:
        return short_id(self.key)

    @property
    def smallest(self) -> Finding:
        """The member with the smallest program: the bug's reproducer runs that program."""
        return min(self.members, key=lambda f: (size(f.program), f.signature))

    @property
    def program(self) -> Program:
        return self.smallest.program

    @property
    def verdict(self) -> Verdict:
        return self.members[0].verdict

    @property
    def placements(self) -> tuple[str, ...]:
        """The Thunders showing every member (``connected`` keeps one in common), in the order its
        smallest program's finding lists them: a member that another faulty placement shows too
        does not make the bug that placement's."""
        first = self.members[0].placements
        common = tuple(p for p in first if all(p in f.placements for f in self.members))
        return common or first

    @property
    def placement(self) -> str:
        """The placement its reproducer applies: the first showing every member."""
        return self.placements[0]

    @property
    def count(self) -> int:
        return sum(f.count for f in self.members)

    @property
    def decision(self):
        """The bisection that names the bug's decision (``core.decisions.Bisection``): a member's
        whose search found one, else any member's (it says why none), else None."""
        made = [f.decision for f in self.members if f.decision is not None]
        return next((d for d in made if d.identity is not None), made[0] if made else None)

    @property
    def shrink_note(self) -> str | None:
        """Said when the bug's program is not known to be at its minimum."""
        smallest = self.smallest
        if smallest.shrunk is False:
            return f"shrinking stopped at {self.program.n_ops} ops: time"
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
        """False when a member did not reproduce the same on its smallest program."""
        return combined_confirmed(f.confirmed for f in self.members)

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
    """Findings by signature; keeps the smallest program seen for each and counts occurrences;
    joins them into bugs."""

    def __init__(self, known: Mapping[str, str] | None = None) -> None:
        self.findings: dict[str, Finding] = {}
        # Known bug ids, finding signatures or ids -> reason they are suppressed.
        self.known = dict(known or {})
        # (cause key, cause key) pairs joined by their shrunk minimal programs -> why.
        self.links: dict[tuple[str, str], str] = {}

    def add(
        self,
        verdict: Verdict,
        placements: tuple[str, ...],
        violation: Violation,
        program,
        seconds: float | None = None,
        choices: tuple | None = None,
        weights: object = None,
    ) -> tuple[Finding, AddResult]:
        """Record one occurrence, ``seconds`` into the campaign; returns the finding and what the
        occurrence is to it."""
        sig = finding_signature(verdict, placements, signature(violation))
        finding = self.findings.get(sig)
        if finding is None:
            finding = self.findings[sig] = Finding(
                verdict, placements, violation, program, first_seen_seconds=seconds, choices=choices, weights=weights
            )
            finding.known_reason = self.known.get(sig, self.known.get(finding.id))
            change = AddResult.NEW
        elif size(program) < size(finding.program):
            finding.program, finding.violation = program, violation
            finding.choices, finding.weights, finding.shrunk = choices, weights, None
            change = AddResult.SMALLER
        else:
            if finding.choices is None and program == finding.program:
                finding.choices, finding.weights = choices, weights
            change = AddResult.SEEN
        finding.count += 1
        return finding, change

    def causes(self) -> dict[str, list[Finding]]:
        """The findings by cause (``cause_key``), each cause's smallest program first."""
        causes: dict[str, list[Finding]] = {}
        for finding in self.findings.values():
            causes.setdefault(finding.cause_key, []).append(finding)
        return {key: sorted(members, key=lambda f: (size(f.program), f.signature)) for key, members in sorted(causes.items())}

    def link(self, first: Finding, second: Finding, why: str = "each one's shrunk minimal program shows the other") -> None:
        """Record that the causes of ``first`` and ``second`` are one bug (never two verdicts)."""
        a, b = sorted((first.cause_key, second.cause_key))
        if a != b and first.verdict == second.verdict:
            self.links[(a, b)] = why

    def bugs(self) -> list[Bug]:
        """The findings joined into bugs (see the module docstring), regressions and new first."""
        causes = self.causes()
        # A link joins two causes: a name the two share and no other cause has.
        links: dict[str, list[tuple[str, str]]] = {}
        for a, b in sorted(self.links):
            if a in causes and b in causes:
                links.setdefault(a, []).append((a, b))
                links.setdefault(b, []).append((a, b))
        joined = connected(
            list(causes),
            lambda key: [key, *links.get(key, ()), *(k for f in causes[key] for k in join_keys(f))],
            kept_apart=lambda key: findings_kept_apart(causes[key]),
            shown_under=lambda key: causes[key][0].placements,  # a cause's findings share their placements
        )
        bugs = [self._bug([f for key in keys for f in causes[key]]) for keys in joined]
        return sorted(bugs, key=bug_order)

    def _bug(self, members: list[Finding]) -> Bug:
        members = sorted(members, key=lambda f: (size(f.program), f.signature))
        key = members[0].cause_key  # the cause of the smallest program's finding names the bug
        decided = decision_identity(next((f for f in members if decision_identity(f)), members[0]))
        if decided is not None:  # unless its decision does: it is known by that, whatever it shows
            key = finding_signature(members[0].verdict, members[0].placements, f"decision | {identity_text(decided)}")
        why = {}
        for f in members:
            if f is members[0]:
                why[f.signature] = "the finding of the bug's smallest program"
            elif decided is not None and decision_identity(f) == decided:
                why[f.signature] = f"same decision: {identity_text(decided)[:200]}"
            elif f.cause_key == key:
                why[f.signature] = f"same fault: {str(fault_of(f.violation))[:200]}"
            elif set(join_keys(f)) & set(join_keys(members[0])):
                why[f.signature] = "the same minimal program, or the same op in other words on another path"
            else:
                reason = self.links.get(tuple(sorted((key, f.cause_key))))
                why[f.signature] = reason or "joined through another member: each one's shrunk minimal program shows the other's"
        # Known by its own key (or id), never because a member is: a member's
        # finding once filed must not make every bug it later joins known.
        known = self.known.get(key) or self.known.get(short_id(key))
        return Bug(key, members, why, known)

    def merge(self, other: FindingStore) -> None:
        """Fold in another store (another lane's): counts add up, the smaller program (with its
        choices and shrink state) and the earlier first sighting win."""
        self.links.update(other.links)
        for sig, theirs in other.findings.items():
            mine = self.findings.get(sig)
            if mine is None:
                self.findings[sig] = theirs
                continue
            mine.count += theirs.count
            mine.first_seen_seconds = earliest((mine.first_seen_seconds, theirs.first_seen_seconds))
            if size(theirs.program) < size(mine.program):
                mine.program, mine.violation = theirs.program, theirs.violation
                mine.choices, mine.weights, mine.shrunk = theirs.choices, theirs.weights, theirs.shrunk
            elif theirs.program == mine.program and theirs.shrunk and not mine.shrunk:
                mine.shrunk = True
            if mine.decision is None:
                mine.decision = theirs.decision

    def __iter__(self):
        return iter(
            sorted(
                self.findings.values(),
                key=lambda f: (VERDICTS.index(f.verdict), f.known_reason is not None, f.violation.path, f.violation.oracle, f.id),
            )
        )

    def __len__(self) -> int:
        return len(self.findings)
