"""The ledger of a campaign: every program's triaged violations recorded as findings, joined into
bugs, which verdicts are shrunk, and the findings folder kept in step.

Every finding observed, during generation, shrinking and joining alike, goes into the
``FindingStore`` (which keeps the smallest program per signature, with its Hypothesis choices) and
its bug's folder as soon as it appears.
"""

from __future__ import annotations

import re
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from fuzzdce.core.faults import Identity
from fuzzdce.core.findings import Bug, Finding, FindingStore, triage
from fuzzdce.core.model import EAGER, STOCK
from fuzzdce.core.program import Program
from fuzzdce.core.timeline import Sample
from fuzzdce.core.vocabulary import AddResult, Verdict
from fuzzdce.fuzzing.driver import GenerationEnd
from fuzzdce.results.slow import SlowProgram, SlowPrograms
from fuzzdce.results.store import FindingsFolder
from fuzzdce.running.coverage import DceActivity
from fuzzdce.running.evaluate import Evaluation, violations_of
from fuzzdce.strategies.sources import source_of

Log = Callable[[str], None]


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
    # Seconds per phase (``time_plan.Phase``: generation, shrinking, joining, confirming, writing),
    # every lane's added up.
    phases: Counter = field(default_factory=Counter)
    # Why each generation (each lane's process) ended.
    generation_ended: list[GenerationEnd] = field(default_factory=list)
    # (who, path, what) -> times a check could not be made (an exception swallowed: ``Outcome.not_checked``),
    # under every placement.
    not_checked: Counter = field(default_factory=Counter)
    # Thunder's grad rule -> programs in which some path under stock ran it (``running.grad_rules``).
    grad_rules: Counter = field(default_factory=Counter)
    # Source (``strategies.sources``: catalog programs, OpInfo programs, model blocks) -> programs,
    # and (source, grad rule) -> programs of that source in which some path under stock ran it.
    sources: Counter = field(default_factory=Counter)
    source_rules: Counter = field(default_factory=Counter)
    # What the OpInfo source drawn from was (``opinfo.describe_source``): None when none was on.
    opinfo: dict | None = None
    # (placement, whether stock's compile served it) -> paths (``running.compile_sharing``).
    compiles: Counter = field(default_factory=Counter)
    # Compiles the evaluations made, stock's included (each path under each Thunder not served by
    # stock's compile): what a shrink step's cost is counted in (``time_plan.cause_seconds``).
    compiled: int = 0
    # Programs past their limit, their remaining jobs not run (``program_cost``): no finding, said in the report.
    slow_programs: SlowPrograms = field(default_factory=SlowPrograms)

    @property
    def seconds_per_program(self) -> float:
        """The mean seconds of a full evaluation (0 before the first)."""
        return self.seconds / max(self.programs, 1)

    @property
    def seconds_per_compile(self) -> float:
        """The mean seconds of evaluation per compile (a full evaluation's before any is counted)."""
        return self.seconds / self.compiled if self.compiled else self.seconds_per_program

    def merge(self, other: Stats, *, same_lane: bool = False) -> None:
        """Add another lane's counts (wall time is the merged campaign's own); keep its timeline
        apart, to combine with the others' (timeline.combine). ``same_lane``: they are this lane's
        earlier process's, whose timeline this one's continues (its samples count from them)."""
        self.programs += other.programs
        self.invalid += other.invalid
        self.seconds += other.seconds
        self.ops.update(other.ops)
        self.unsupported_splits += other.unsupported_splits
        self.occurrences.update(other.occurrences)
        self.notes.update(other.notes)
        self.dropped.update(other.dropped)
        self.dce.merge(other.dce)
        if same_lane:
            self.timeline[:0] = other.timeline
            self.lane_timelines.extend(other.lane_timelines)
        else:
            self.lane_timelines.append(list(other.timeline))
        self.phases.update(other.phases)
        self.generation_ended += other.generation_ended
        self.not_checked.update(other.not_checked)
        self.grad_rules.update(other.grad_rules)
        self.sources.update(other.sources)
        self.source_rules.update(other.source_rules)
        self.opinfo = self.opinfo or other.opinfo
        self.compiles.update(other.compiles)
        self.compiled += other.compiled
        self.slow_programs.merge(other.slow_programs)


class Ledger:
    """Findings by signature for placements ``names`` (stock among them), judged against
    ``reference``, written to ``folder``; ``clock`` says how many seconds the campaign has run (each
    finding's first sighting)."""

    def __init__(
        self,
        names: Sequence[str],
        *,
        known: Mapping[str, str] | None = None,
        folder: FindingsFolder | None = None,
        log: Log,
        clock: Callable[[], float] | None = None,
        reference: str = STOCK,
    ) -> None:
        self.names = [STOCK, *(n for n in names if n != STOCK)]
        self.reference = reference
        self.stock_only = self.names == [STOCK]
        self.store = FindingStore(known)
        self.folder = folder
        self.stats = Stats()
        self.stats.dce.reference = reference
        self.log = log
        self.clock = clock or seconds_since(time.time())
        # Shared bugs fail the Hypothesis test too, so they are shrunk (a campaign); a fuzz test in
        # someone's suite fails only on regressions (unless stock is all it runs).
        self.shrink_baseline = True

    def new_round(self) -> None:
        """A generation round begins (nothing to reset: every program is evaluated in full)."""

    def fails(self, verdict: Verdict) -> bool:
        """Are findings of this verdict shrunk (a fuzz test fails on them)?"""
        return verdict == Verdict.REGRESSION or self.shrink_baseline or self.stock_only

    def bugs(self) -> list[Bug]:
        return self.store.bugs()

    def bugs_by_finding(self) -> dict[int, Bug]:
        """Each finding's bug, by the finding's ``id()``: one join of the store for many findings
        (joining costs the more findings and causes there are, and a program records dozens)."""
        return {id(f): bug for bug in self.bugs() for f in bug.members}

    def record(
        self,
        program: Program,
        evaluations: Mapping[str, Evaluation],
        only: set[Identity] | None = None,
        choices: tuple | None = None,
        weights: object = None,
    ) -> list[Finding]:
        """Add every finding of ``evaluations`` (or only those whose violation identity,
        ``faults.identity``, is in ``only``) to the store and folder, with the choices that drew
        ``program``; return those this program is new or smaller for."""
        changed, recorded = [], []
        for known_by, triaged in triage(violations_of(evaluations)).items():
            if only is not None and known_by not in only:
                continue
            finding, change = self.store.add(
                triaged.verdict,
                triaged.placements,
                triaged.violation,
                program,
                seconds=self.clock(),
                choices=choices,
                weights=weights,
                masked_by=triaged.masked_by,
                unclean=triaged.unclean,
            )
            if change == AddResult.NEW:
                known = f" (known: {finding.known_reason})" if finding.known_reason else ""
                first_line = str(triaged.violation).splitlines()[0][:300]
                self.log(
                    f"[{finding.verdict}] new finding {finding.id} under {', '.join(triaged.placements)}{known}: {first_line}"
                )
            recorded.append((finding, change))
            if change != AddResult.SEEN:
                changed.append(finding)
        self.save(recorded, evaluations)
        return changed

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
        self.stats.notes.update((EAGER, note_kind(n)) for n in stock.reference.notes)
        for outcome in stock.outcomes.values():
            self.stats.notes.update((outcome.path, note_kind(n)) for n in outcome.notes)
            if outcome.skipped:
                self.stats.notes[(outcome.path, f"skipped: {outcome.skipped}")] += 1
        self.stats.dce.add(evaluations)
        rules = set().union(*(o.grad_rules for o in stock.outcomes.values()))
        self.stats.grad_rules.update(rules)
        source = source_of(program.ops)
        self.stats.sources[source] += 1
        self.stats.source_rules.update((source, rule) for rule in rules)
        for name, evaluation in evaluations.items():
            self.stats.occurrences.update((name, v.path, v.oracle) for v in evaluation.violations)
            for outcome in evaluation.outcomes.values():
                self.stats.not_checked.update((who, outcome.path, what) for who, what in outcome.not_checked)
                if outcome.path != EAGER and not outcome.shared_from and not outcome.skipped:
                    self.stats.compiled += 1
                if name != STOCK and outcome.failure is None and not outcome.skipped:
                    self.stats.compiles[(name, bool(outcome.shared_from))] += 1

    def save(self, recorded: list[tuple[Finding, AddResult]], evaluations: Mapping[str, Evaluation]) -> None:
        """Write the bug of each finding just ``recorded`` to the folder, once per bug, after the
        whole program is recorded: all of it when this program became the bug's smallest, else
        its record (counts, members)."""
        if self.folder is None or not recorded:
            return
        bug_of, written = self.bugs_by_finding(), set()
        for finding, change in recorded:
            bug = bug_of[id(finding)]
            if change != AddResult.SEEN and bug.smallest is finding:
                self.folder.write(bug, shown_traces(finding, evaluations, self.reference))
                written.add(bug.id)
        for finding, _ in recorded:
            bug = bug_of[id(finding)]
            if bug.id not in written:
                self.folder.write_record(bug)
                written.add(bug.id)

    def slow(self, record: SlowProgram) -> None:
        """A program ran past its limit (``program_cost``): said, kept for summary.json and the
        report, and written to the findings folder with a script that runs it again. No finding."""
        if not self.stats.slow_programs.add(record):
            return
        longest = record.longest
        longest_text = (
            "" if longest is None else f"; longest: {longest['placement']} on {longest['path']} {longest['seconds']:.1f} s"
        )
        stopped = f", {len(record.not_run)} jobs not run" if record.not_run else ""
        where = ""
        if self.folder is not None:
            where = f"; rerun: python {self.folder.write_slow(record)}"
        self.log(
            f"[slow] program {record.id} ({record.n_ops} ops) took {record.seconds:.1f} s, past its limit of "
            f"{record.limit:.1f} s{stopped}{longest_text}{where}"
        )

    def merge(self, store: FindingStore, stats: Stats, *, same_lane: bool = False) -> None:
        """Fold in another lane's findings and counts (``same_lane``: ``Stats.merge``'s)."""
        self.store.merge(store)
        self.stats.merge(stats, same_lane=same_lane)

    def rewrite(self, *, remove_others: bool = True) -> None:
        """Rewrite every bug's reproducer and record and, with ``remove_others``, drop the folders
        of bugs not among them (merged into others, or an earlier run's)."""
        if self.folder is not None:
            self.folder.sync(self.bugs(), remove_others=remove_others)

    def progress_line(self) -> str:
        s = self.stats
        rate = s.seconds_per_program
        bugs = len(self.bugs())
        findings = len(self.store)
        return (
            f"{s.programs} programs ({s.invalid} invalid), {bugs} bug{'s' * (bugs != 1)} "
            f"({findings} finding{'s' * (findings != 1)}) so far, {rate:.2f} s/program"
        )


def shown_traces(finding: Finding, evaluations: Mapping[str, Evaluation], reference: str = STOCK) -> dict[str, list]:
    """The traces a finding's folder shows: on its path, under each placement showing it, and
    under the reference too when it does not show it (to compare); each with what the path printed."""
    path = finding.violation.path
    shown = list(finding.placements) + ([reference] if finding.verdict == Verdict.REGRESSION else [])
    return {
        name: with_printed(evaluations[name].outcomes[path])
        for name in shown
        if name in evaluations and path in evaluations[name].outcomes
    }


# The label of what a path printed while it ran, shown after its traces (``Outcome.printed``).
PRINTED = "printed while it ran"


def with_printed(outcome) -> list:
    """The outcome's traces, then what the path printed while it ran, if anything: Thunder's own
    words about a failure (the program it could not compile) belong to the finding, not the report."""
    return list(outcome.traces) + ([(PRINTED, outcome.printed)] if outcome.printed else [])
