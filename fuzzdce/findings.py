"""Findings: violations triaged against stock, deduplicated by signature, smallest program kept.

A finding's signature is (verdict, placements, path, oracle, exception type, normalised message,
Thunder frame). The verdict and placements come from one program evaluated under stock and every
chosen placement: for each violation, the placements whose run of that program shows the same
violation signature (same path and oracle, so a baseline failure elsewhere in the program masks
nothing). Stock among them makes it ``baseline``; otherwise it is ``placement-induced``.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from fuzzdce.oracles import Violation
from fuzzdce.program import Program

PLACEMENT_INDUCED = "placement-induced"
BASELINE = "baseline"
VERDICTS = (PLACEMENT_INDUCED, BASELINE)

_ADDRESS = re.compile(r"0x[0-9a-fA-F]+")
# Thunder and FX name values with a lowercase stem and a counter (t12, l_v0_, mul_3, subgraph 2, ...).
_COUNTED_NAME = re.compile(r"\b([A-Za-z_]*?[A-Za-z])_?\d+_?\b")
# Numbers, NaN and infinities included: which value a bug produced does not identify the bug.
_NUMBER = re.compile(r"(?<![A-Za-z_])[-+]?(\d+(\.\d+)?(e[-+]?\d+)?|nan\b|inf\b)")


def normalise(message: str) -> str:
    """The message with addresses, counted names and numbers abstracted away.

    Two occurrences of one bug differ only in which proxy it hit and in the numbers involved.
    """
    message = _ADDRESS.sub("<addr>", message)
    message = _COUNTED_NAME.sub(r"\1<n>", message)
    return _NUMBER.sub("<num>", message)


def signature(v: Violation) -> str:
    """The violation's identity: (path, oracle, exception type, normalised message, Thunder frame)."""
    return " | ".join((v.path, v.oracle, v.error_type, normalise(v.identity), v.frame))


def finding_signature(verdict: str, placements: Iterable[str], violation_signature: str) -> str:
    """A finding's identity: its verdict and the placements showing it, then the violation's."""
    return " | ".join((verdict, ",".join(placements), violation_signature))


def short_id(sig: str) -> str:
    return hashlib.sha1(sig.encode()).hexdigest()[:10]


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
        sig: (BASELINE if "stock" in names else PLACEMENT_INDUCED, tuple(names), example[sig])
        for sig, names in showing.items()
    }


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
        return "stock" if self.verdict == BASELINE else self.placements[0]

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
