"""The ledger of a campaign: every program's triaged violations recorded as findings, grouped into
bugs, the choice of what Hypothesis should shrink, the final confirmation, and the findings folder
kept in step.

Every finding observed, during generation and shrinking alike, goes into the ``FindingStore``
(which keeps the smallest program per signature) and its bug's folder as soon as it appears. Every
bug is shrunk, placement-induced ones first: a program showing several findings fails the
Hypothesis test with a placement-induced one when it has one. Past the time budget each bug gets
an equal share of the shrinking grace.
"""

from __future__ import annotations

import re
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from fuzzdce.coverage import DceActivity
from fuzzdce.evaluate import Evaluation
from fuzzdce.findings import PLACEMENT_INDUCED, Bug, Finding, FindingStore, size, triage
from fuzzdce.model import STOCK
from fuzzdce.program import Program
from fuzzdce.signatures import finding_signature as finding_signature_of
from fuzzdce.store import FindingsFolder
from fuzzdce.timeline import Sample

Log = Callable[[str], None]
CHANGES = ("new", "smaller", "seen")  # what a program is to a finding (FindingStore.add)


def note_kind(note: str) -> str:
    """A note without the specifics (shapes, numbers) that differ from program to program."""
    return re.sub(r"\d+", "N", note.split(":", 1)[0] if ": " in note else note)[:120]


def seconds_since(start: float) -> Callable[[], float]:
    """A clock: seconds since wall-clock time ``start`` (``time.time()``; lanes share their parent's)."""
    return lambda: time.time() - start


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
    timeline: list[Sample] = field(default_factory=list)  # this campaign's samples (timeline.sample)
    lane_timelines: list[list[Sample]] = field(default_factory=list)  # each merged lane's timeline

    def merge(self, other: Stats) -> None:
        """Add another lane's counts (wall time is the merged campaign's own); keep its timeline
        apart, to combine with the others' (timeline.combine)."""
        self.programs += other.programs
        self.invalid += other.invalid
        self.seconds += other.seconds
        self.ops.update(other.ops)
        self.unsupported_splits += other.unsupported_splits
        self.occurrences.update(other.occurrences)
        self.notes.update(other.notes)
        self.dropped.update(other.dropped)
        self.dce.merge(other.dce)
        self.lane_timelines.append(list(other.timeline))


class Ledger:
    """Findings by signature for placements ``names`` (stock among them), written to ``folder``;
    ``clock`` says how many seconds the campaign has run (each finding's first sighting)."""

    def __init__(
        self,
        names: Sequence[str],
        *,
        known: Mapping[str, str] | None = None,
        folder: FindingsFolder | None = None,
        log: Log,
        clock: Callable[[], float] | None = None,
    ) -> None:
        self.names = [STOCK, *(n for n in names if n != STOCK)]
        self.stock_only = self.names == [STOCK]
        self.store = FindingStore(known)
        self.folder = folder
        self.stats = Stats()
        self.log = log
        self.clock = clock or seconds_since(time.time())
        self.found_this_round: set[str] = set()  # signatures of the findings the current round found
        self.shrink_seconds: Counter = Counter()  # bug (cause key) -> seconds spent on its shrink steps
        self.shrink_budget: float | None = None  # seconds of shrinking all bugs may take, shared equally
        # Baseline bugs fail the Hypothesis test too, so they are shrunk (a campaign); a fuzz test in
        # someone's suite fails only on placement-induced ones (unless stock is all it runs).
        self.shrink_baseline = True

    def new_round(self) -> None:
        self.found_this_round = set()

    def fails(self, verdict: str) -> bool:
        """Do findings of this verdict fail the Hypothesis test (and so get shrunk)?"""
        return verdict == PLACEMENT_INDUCED or self.shrink_baseline or self.stock_only

    def larger_than(self, program: Program) -> list[Finding]:
        """The findings whose smallest program is larger than ``program`` and whose bug has shrinking
        time left: what a smaller program might shrink."""
        smaller = size(program)
        larger = [f for f in self.store if self.fails(f.verdict) and smaller < size(f.program)]
        if self.shrink_budget is None or not larger:
            return larger
        share = self.shrink_budget / max(1, len(self.bugs()))
        return [f for f in larger if self.shrink_seconds[f.cause_key] < share]

    def replayed(self, program: Program) -> list[Finding]:
        """The findings this round found whose smallest program is ``program``, placement-induced
        first: Hypothesis replays the smallest failing program at the end of a round and expects it
        to fail again, with no new evaluation needed (programs are deterministic)."""
        same = [
            f
            for f in self.store
            if f.signature in self.found_this_round and f.program == program
        ]
        return sorted(same, key=lambda f: f.verdict != PLACEMENT_INDUCED)

    def bugs(self) -> list[Bug]:
        return self.store.bugs()

    def bug_of(self, finding: Finding) -> Bug:
        return next(b for b in self.bugs() if finding in b.members)

    def record(self, program: Program, evaluations: Mapping[str, Evaluation], only: str | None = None) -> list[Finding]:
        """Add every finding of ``evaluations`` (or only the one with violation signature ``only``)
        to the store and folder; return those that should fail the Hypothesis test."""
        to_shrink = []
        for sig, (verdict, placements, violation) in triage(evaluations).items():
            if only is not None and sig != only:
                continue
            finding, change = self.store.add(verdict, placements, violation, program, seconds=self.clock())
            if change == "new":
                known = f" (known: {finding.known_reason})" if finding.known_reason else ""
                first_line = str(violation).splitlines()[0][:300]
                self.log(f"[{finding.verdict}] new finding {finding.id} under {', '.join(placements)}{known}: {first_line}")
                self.found_this_round.add(finding.signature)
            self.save(finding, change, evaluations)
            if self.fails(verdict) and (change != "seen" or finding.signature in self.found_this_round):
                to_shrink.append(((finding.verdict != PLACEMENT_INDUCED, CHANGES.index(change)), finding))
        # A finding fails the test when this program is new or smaller for it, or when this round
        # found it (Hypothesis's shrinker may pass through programs no smaller by ``size``); one
        # from an earlier round does not, so it cannot end a later round's generation.
        # Placement-induced findings come first, then one this program is new for (Hypothesis then
        # shrinks it too), then one it is smaller for: that steers shrinking.
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
        """Write the finding's bug to the folder: all of it when this program became the bug's
        smallest, else its record (counts, members)."""
        if self.folder is None:
            return
        bug = self.bug_of(finding)
        if change == "seen" or bug.smallest is not finding:
            self.folder.write_record(bug)
            return
        self.folder.write(bug, shown_traces(finding, evaluations))

    def confirm(self, evaluate: Callable[[Finding], Mapping[str, Evaluation]]) -> None:
        """Replay each finding's smallest program (``evaluate`` runs it on the finding's path under
        every placement): does it show the same finding (verdict, placements) again?"""
        for finding in self.store:
            triaged = triage(evaluate(finding)).get(finding.violation_signature)
            finding.confirmed = triaged is not None and triaged[:2] == (finding.verdict, finding.placements)
            if not finding.confirmed:
                now = f"{triaged[0]} under {', '.join(triaged[1])}" if triaged else "not at all"
                self.log(f"finding {finding.id} did not reproduce the same on its smallest program (now: {now})")


    def group(self, evaluate: Callable[[Program], Mapping[str, Evaluation]]) -> None:
        """Evaluate each bug's minimal program on every path (``evaluate``), placement-induced bugs
        first, record what it shows, and join into the bug every finding it shows with the bug's
        verdict and placements: one program, one cause. (A program Hypothesis could not shrink
        further within the budget may hold two causes; the members' reasons say which program
        joined them.)"""
        evaluated = set()
        for bug in self.bugs():
            program, smallest = bug.program, bug.smallest
            if program in evaluated:
                continue  # an earlier bug's program, evaluated already
            evaluated.add(program)
            evaluations = evaluate(program)
            self.record(program, evaluations)
            for sig, (verdict, placements, violation) in triage(evaluations).items():
                shown = self.store.findings.get(finding_signature_of(verdict, placements, sig))
                if shown is not None and (verdict, placements) == (bug.verdict, bug.placements):
                    self.store.link(smallest, shown, bug.id)
            if self.folder is not None:
                self.folder.write(self.bug_of(smallest), shown_traces(smallest, evaluations))

    def merge(self, store: FindingStore, stats: Stats) -> None:
        """Fold in another lane's findings and counts."""
        self.store.merge(store)
        self.stats.merge(stats)

    def rewrite(self) -> None:
        """Rewrite every bug's reproducer and record, and drop folders of bugs merged into others
        (traces stay on disk)."""
        if self.folder is not None:
            self.folder.sync(self.bugs())

    def progress_line(self) -> str:
        s = self.stats
        rate = s.seconds / max(s.programs, 1)
        bugs = len(self.bugs())
        findings = len(self.store)
        return (
            f"{s.programs} programs ({s.invalid} invalid), {bugs} bug{'s' * (bugs != 1)} "
            f"({findings} finding{'s' * (findings != 1)}) so far, {rate:.2f} s/program"
        )


def shown_traces(finding: Finding, evaluations: Mapping[str, Evaluation]) -> dict[str, list]:
    """The traces a finding's folder shows: on its path, under each placement showing it, and
    under stock too when stock does not show it (to compare)."""
    path = finding.violation.path
    shown = list(finding.placements) + ([STOCK] if finding.verdict == PLACEMENT_INDUCED else [])
    return {
        name: evaluations[name].outcomes[path].traces
        for name in shown
        if name in evaluations and path in evaluations[name].outcomes
    }
