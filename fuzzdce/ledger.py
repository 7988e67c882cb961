"""The ledger of a campaign: every program's triaged violations recorded as findings, the choice of
what Hypothesis should shrink, the final confirmation, and the findings folder kept in step.

Every finding observed, during generation and shrinking alike, goes into the ``FindingStore``
(which keeps the smallest program per signature) and into the findings folder as soon as it
appears. Which findings fail the Hypothesis test, and so get shrunk: placement-induced ones; every
one when stock is the only placement (Thunder's own failures are then the target).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from fuzzdce.coverage import DceActivity
from fuzzdce.evaluate import Evaluation
from fuzzdce.findings import PLACEMENT_INDUCED, Finding, FindingStore, size, triage
from fuzzdce.model import STOCK
from fuzzdce.program import Program
from fuzzdce.store import FindingsFolder

Log = Callable[[str], None]


def note_kind(note: str) -> str:
    """A note without the specifics (shapes, numbers) that differ from program to program."""
    return re.sub(r"\d+", "N", note.split(":", 1)[0] if ": " in note else note)[:120]


@dataclass
class Stats:
    programs: int = 0
    invalid: int = 0
    seconds: float = 0.0  # spent evaluating programs
    wall_seconds: float = 0.0  # the whole campaign, triage included
    ops: Counter = field(default_factory=Counter)
    unsupported_splits: int = 0
    # (placement, path, oracle) -> violations observed, every program counted.
    occurrences: Counter = field(default_factory=Counter)
    # (path, note) -> programs: why a path or a call was skipped (no CUDA, no resizable shape, ...).
    notes: Counter = field(default_factory=Counter)
    dropped: Counter = field(default_factory=Counter)  # op -> steps the generator drew but dropped
    dce: DceActivity = field(default_factory=DceActivity)  # each placement's subsymbol changes against stock

    def merge(self, other: Stats) -> None:
        """Add another lane's counts (wall time is the merged campaign's own)."""
        self.programs += other.programs
        self.invalid += other.invalid
        self.seconds += other.seconds
        self.ops.update(other.ops)
        self.unsupported_splits += other.unsupported_splits
        self.occurrences.update(other.occurrences)
        self.notes.update(other.notes)
        self.dropped.update(other.dropped)
        self.dce.merge(other.dce)


class Ledger:
    """Findings by signature for placements ``names`` (stock among them), written to ``folder``."""

    def __init__(
        self, names: Sequence[str], *, known: Mapping[str, str] | None = None, folder: FindingsFolder | None = None, log: Log
    ) -> None:
        self.names = [STOCK, *(n for n in names if n != STOCK)]
        self.stock_only = self.names == [STOCK]
        self.store = FindingStore(known)
        self.folder = folder
        self.stats = Stats()
        self.log = log
        self.found_this_round: set[str] = set()  # signatures of the findings the current round found

    def new_round(self) -> None:
        self.found_this_round = set()

    def shrinks(self, verdict: str) -> bool:
        """Are findings of this verdict shrunk? Placement-induced ones; every one when only stock runs."""
        return self.stock_only or verdict == PLACEMENT_INDUCED

    def larger_than(self, program: Program) -> list[Finding]:
        """The findings to shrink whose smallest program is larger than ``program``."""
        smaller = size(program)
        return [f for f in self.store if self.shrinks(f.verdict) and smaller < size(f.program)]

    def record(self, program: Program, evaluations: Mapping[str, Evaluation], only: str | None = None) -> list[Finding]:
        """Add every finding of ``evaluations`` (or only the one with violation signature ``only``)
        to the store and folder; return those that should fail the Hypothesis test."""
        to_shrink = []
        for sig, (verdict, placements, violation) in triage(evaluations).items():
            if only is not None and sig != only:
                continue
            finding, change = self.store.add(verdict, placements, violation, program)
            if change == "new":
                known = f" (known: {finding.known_reason})" if finding.known_reason else ""
                first_line = str(violation).splitlines()[0][:300]
                self.log(f"[{finding.verdict}] new finding {finding.id} under {', '.join(placements)}{known}: {first_line}")
                self.found_this_round.add(finding.signature)
            self.save(finding, change, evaluations)
            if self.shrinks(verdict) and (change != "seen" or finding.signature in self.found_this_round):
                to_shrink.append((change == "seen", finding))
        # A finding fails the test when this program is new or smaller for it, or when this round
        # found it (Hypothesis's shrinker may pass through programs no smaller by ``size``); one
        # from an earlier round does not, so it cannot end a later round's generation. The
        # finding this program is new or smaller for comes first: that steers shrinking.
        return [finding for _, finding in sorted(to_shrink, key=lambda pair: pair[0])]

    def count(self, program: Program, evaluations: Mapping[str, Evaluation]) -> None:
        """Add one evaluated program to the statistics."""
        stock = evaluations[STOCK]
        self.stats.programs += 1
        self.stats.invalid += stock.invalid
        self.stats.ops.update(program.ops)
        self.stats.dropped.update(program.dropped)
        self.stats.unsupported_splits += sum(
            1 for o in stock.outcomes.values() for r in o.split_reasons if not r.reason_type.name.startswith("EXCEPTION")
        )
        self.stats.notes.update(("eager", note_kind(n)) for n in stock.reference.notes)
        for outcome in stock.outcomes.values():
            self.stats.notes.update((outcome.path, note_kind(n)) for n in outcome.notes)
            if outcome.skipped:
                self.stats.notes[(outcome.path, f"skipped: {outcome.skipped}")] += 1
        self.stats.dce.add(evaluations)
        for name, evaluation in evaluations.items():
            self.stats.occurrences.update((name, v.path, v.oracle) for v in evaluation.violations)

    def save(self, finding: Finding, change: str, evaluations: Mapping[str, Evaluation]) -> None:
        """Write the finding to the folder: all of it when its program changed, else its count."""
        if self.folder is None:
            return
        if change == "seen":
            self.folder.write_record(finding)
            return
        path = finding.violation.path
        shown = list(finding.placements) + ([STOCK] if finding.verdict == PLACEMENT_INDUCED else [])
        traces = {
            name: evaluations[name].outcomes[path].traces
            for name in shown
            if name in evaluations and path in evaluations[name].outcomes
        }
        self.folder.write(finding, traces)

    def confirm(self, evaluate: Callable[[Finding], Mapping[str, Evaluation]]) -> None:
        """Replay each finding's smallest program (``evaluate`` runs it on the finding's path under
        every placement): does it show the same finding (verdict, placements) again?"""
        for finding in self.store:
            triaged = triage(evaluate(finding)).get(finding.violation_signature)
            finding.confirmed = triaged is not None and triaged[:2] == (finding.verdict, finding.placements)
            if not finding.confirmed:
                now = f"{triaged[0]} under {', '.join(triaged[1])}" if triaged else "not at all"
                self.log(f"finding {finding.id} did not reproduce the same on its smallest program (now: {now})")
            if self.folder is not None:
                self.folder.write_record(finding)

    def merge(self, store: FindingStore, stats: Stats) -> None:
        """Fold in another lane's findings and counts."""
        self.store.merge(store)
        self.stats.merge(stats)

    def rewrite(self) -> None:
        """Rewrite every finding's reproducer and record (after merging lanes; traces stay on disk)."""
        if self.folder is not None:
            for finding in self.store:
                self.folder.rewrite(finding)

    def progress_line(self) -> str:
        s = self.stats
        rate = s.seconds / max(s.programs, 1)
        return f"{s.programs} programs ({s.invalid} invalid), {len(self.store)} findings so far, {rate:.2f} s/program"
