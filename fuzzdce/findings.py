"""Findings: violations triaged against stock, deduplicated by signature, smallest program kept.

A finding's signature is (verdict, placements, path, oracle, exception type, normalised message,
Thunder frame). The verdict and placements come from one program evaluated under stock and every
chosen placement: for each violation, the placements whose run of that program shows the same
violation signature (same path and oracle, so a baseline failure elsewhere in the program masks
nothing). Stock among them makes it ``baseline``; otherwise it is ``placement-induced``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from fuzzdce.model import STOCK, Violation
from fuzzdce.program import Program
from fuzzdce.signatures import finding_signature, short_id, signature

PLACEMENT_INDUCED = "placement-induced"
BASELINE = "baseline"
VERDICTS = (PLACEMENT_INDUCED, BASELINE)


def size(program) -> tuple[int, int, int]:
    """Smaller is better: fewer ops, then fewer inputs, then less source."""
    return (program.n_ops, len(program.inputs), len(program.source()))


def classify(violations_by_placement: Mapping[str, Iterable[Violation]]) -> dict[str, tuple[str, tuple[str, ...], Violation]]:
    """Triage one program: violation signature -> (verdict, placements showing it, a violation).

    ``violations_by_placement`` must include ``"stock"``. Placements keep the order given.
    """
    showing: dict[str, list[str]] = {}
    example: dict[str, Violation] = {}
    for name, violations in violations_by_placement.items():
        for v in violations:
            sig = signature(v)
            example.setdefault(sig, v)
            if name not in showing.setdefault(sig, []):
                showing[sig].append(name)
    return {
        sig: (BASELINE if STOCK in names else PLACEMENT_INDUCED, tuple(names), example[sig])
        for sig, names in showing.items()
    }


def triage(evaluations: Mapping[str, object]) -> dict[str, tuple[str, tuple[str, ...], Violation]]:
    """``classify`` for one program's evaluations (placement name -> ``evaluate.Evaluation``)."""
    return classify({name: evaluation.violations for name, evaluation in evaluations.items()})


@dataclass
class Finding:
    verdict: str
    placements: tuple[str, ...]
    violation: Violation
    program: Program
    count: int = 0
    known_reason: str | None = None  # set when a known-findings file suppresses it
    # Set by the final triage: did the smallest program show the same finding when replayed?
    confirmed: bool | None = None

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
    def placement(self) -> str:
        """The placement its reproducer applies: stock for a baseline finding, else the first showing it."""
        return STOCK if self.verdict == BASELINE else self.placements[0]

    @property
    def reportable(self) -> bool:
        """Placement-induced and not suppressed: what makes ``fuzzdce run`` exit 1."""
        return self.verdict == PLACEMENT_INDUCED and self.known_reason is None


class FindingStore:
    """Findings by signature; keeps the smallest program seen for each and counts occurrences."""

    def __init__(self, known: Mapping[str, str] | None = None) -> None:
        self.findings: dict[str, Finding] = {}
        # Known signatures (full or short id) -> reason they are suppressed.
        self.known = dict(known or {})

    def add(self, verdict: str, placements: tuple[str, ...], violation: Violation, program) -> tuple[Finding, str]:
        """Record one occurrence; returns the finding and "new", "smaller" or "seen"."""
        sig = finding_signature(verdict, placements, signature(violation))
        finding = self.findings.get(sig)
        if finding is None:
            finding = self.findings[sig] = Finding(verdict, placements, violation, program)
            finding.known_reason = self.known.get(sig, self.known.get(finding.id))
            change = "new"
        elif size(program) < size(finding.program):
            finding.program, finding.violation = program, violation
            change = "smaller"
        else:
            change = "seen"
        finding.count += 1
        return finding, change

    def merge(self, other: FindingStore) -> None:
        """Fold in another store (another lane's): counts add up, the smaller program wins."""
        for sig, theirs in other.findings.items():
            mine = self.findings.get(sig)
            if mine is None:
                self.findings[sig] = theirs
                continue
            mine.count += theirs.count
            if size(theirs.program) < size(mine.program):
                mine.program, mine.violation = theirs.program, theirs.violation

    def by_verdict(self, verdict: str) -> list[Finding]:
        return [f for f in self if f.verdict == verdict]

    def __iter__(self):
        return iter(
            sorted(
                self.findings.values(),
                key=lambda f: (VERDICTS.index(f.verdict), f.known_reason is not None, f.violation.path, f.violation.oracle, f.id),
            )
        )

    def __len__(self) -> int:
        return len(self.findings)
