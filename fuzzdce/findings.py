"""Findings: violations grouped by signature, each keeping its smallest program."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field

from fuzzdce.oracles import Violation
from fuzzdce.program import Program

_ADDRESS = re.compile(r"0x[0-9a-fA-F]+")
# Thunder and FX name values with a lowercase stem and a counter (t12, l_v0_, mul_3, subgraph 2, ...).
_COUNTED_NAME = re.compile(r"\b([A-Za-z_]*?[A-Za-z])_?\d+_?\b")
_NUMBER = re.compile(r"(?<![A-Za-z_])[-+]?\d+(\.\d+)?(e[-+]?\d+)?")


def normalise(message: str) -> str:
    """The message with addresses, counted names and numbers abstracted away.

    Two occurrences of one bug differ only in which proxy it hit and in the numbers involved.
    """
    message = _ADDRESS.sub("<addr>", message)
    message = _COUNTED_NAME.sub(r"\1<n>", message)
    return _NUMBER.sub("<num>", message)


def signature(v: Violation) -> str:
    """(path, oracle, exception type, normalised message, Thunder frame) as one string."""
    return " | ".join((v.path, v.oracle, v.error_type, normalise(v.identity), v.frame))


def short_id(sig: str) -> str:
    return hashlib.sha1(sig.encode()).hexdigest()[:10]


def size(program: Program) -> tuple[int, int, int]:
    """Smaller is better: fewer ops, then fewer inputs, then less source."""
    return (program.n_ops, len(program.inputs), len(program.source()))


@dataclass
class Finding:
    signature: str
    violation: Violation
    program: Program
    count: int = 0
    seen_under: set[str] = field(default_factory=set)
    # Filled by triage: the placements whose run of the smallest program shows this signature.
    placements: list[str] = field(default_factory=list)
    verdict: str = "untriaged"  # placement-induced | baseline | untriaged

    @property
    def id(self) -> str:
        return short_id(self.signature)


class FindingStore:
    """Violations by signature; keeps the smallest program seen for each."""

    def __init__(self) -> None:
        self.findings: dict[str, Finding] = {}

    def add(self, violation: Violation, program: Program, placement: str) -> tuple[Finding, bool]:
        sig = signature(violation)
        finding = self.findings.get(sig)
        is_new = finding is None
        if is_new:
            finding = self.findings[sig] = Finding(sig, violation, program)
        elif size(program) < size(finding.program):
            finding.program, finding.violation = program, violation
        finding.count += 1
        finding.seen_under.add(placement)
        return finding, is_new

    def __iter__(self):
        return iter(sorted(self.findings.values(), key=lambda f: (f.verdict, f.violation.path, f.violation.oracle)))

    def __len__(self) -> int:
        return len(self.findings)
