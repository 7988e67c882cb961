"""A fuzzing campaign: Hypothesis drives programs through every placement and path.

Each example runs once in eager, once per path under stock Thunder, and once per path under each
other chosen placement; every oracle reads those results, and ``classify`` triages each violation
on the spot (which placements show it, stock among them or not). Every finding observed, during
generation and shrinking alike, goes into the ``FindingStore``, which keeps the smallest program
per signature, and into the findings folder as soon as it appears. Hypothesis is told about a
finding (by raising) only when it is placement-induced, so its shrinking is spent on what the
placements broke; when stock is the only placement, Thunder's own failures are the target and
every finding is raised.

Each signature raises its own exception class, so Hypothesis treats distinct findings as distinct
bugs and shrinks each separately. At the end, each finding's smallest program is replayed to
confirm it shows the same finding again (``confirmed``).
"""

from __future__ import annotations

import os
import random
import sys
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis.database import ExampleDatabase

from fuzzdce.evaluate import Evaluation, evaluate, evaluate_all
from fuzzdce.execution import DEFAULT_PATHS
from fuzzdce.findings import BASELINE, PLACEMENT_INDUCED, Finding, FindingStore, classify, short_id, size
from fuzzdce.placements import Placement
from fuzzdce.program import Program
from fuzzdce.store import FindingsFolder
from fuzzdce.strategies import programs


class FindingFailure(AssertionError):
    """Base of the per-signature exceptions raised to Hypothesis."""


_FAILURE_TYPES: dict[str, type[FindingFailure]] = {}


def failure_type(sig: str) -> type[FindingFailure]:
    """One exception class per signature: Hypothesis shrinks distinct classes separately."""
    if sig not in _FAILURE_TYPES:
        _FAILURE_TYPES[sig] = type(f"Finding_{short_id(sig)}", (FindingFailure,), {"__module__": __name__})
    return _FAILURE_TYPES[sig]


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

    def merge(self, other: Stats) -> None:
        """Add another lane's counts (wall time is the merged campaign's own)."""
        self.programs += other.programs
        self.invalid += other.invalid
        self.seconds += other.seconds
        self.ops.update(other.ops)
        self.unsupported_splits += other.unsupported_splits
        self.occurrences.update(other.occurrences)


def triage(evaluations: Mapping[str, Evaluation]):
    """Violation signature -> (verdict, placements, violation) for one program's evaluations."""
    return classify({name: evaluation.violations for name, evaluation in evaluations.items()})


class Campaign:
    """Fuzz ``placements`` x ``paths`` on ``max_examples`` programs."""

    def __init__(
        self,
        placements: Sequence[Placement],
        *,
        paths: Sequence[str] = DEFAULT_PATHS,
        max_examples: int = 60,
        seed: int | None = None,
        timeout: float | None = 60.0,
        time_budget: float | None = None,
        findings_dir: str | os.PathLike | None = None,
        known: Mapping[str, str] | None = None,
        log: Callable[[str], None] = lambda line: print(line, file=sys.stderr, flush=True),
        progress_every: float = 10.0,
        profile: settings | None = None,
        database: ExampleDatabase | None = None,
        sandbox: bool = False,
        memory_limit_mb: int | None = None,
        clear_findings: bool = True,
    ) -> None:
        """``profile`` is the Hypothesis settings to start from (a fuzz profile); ``database`` the
        example database (shared by lanes and machines; None: none); ``sandbox`` runs Thunder's
        work in a child process with ``timeout`` and ``memory_limit_mb`` enforced per job."""
        self.placements = list(placements)
        self.paths = list(paths)
        self.max_examples = max_examples
        self.seed = random.randrange(2**32) if seed is None else seed
        self.timeout = timeout
        self.time_budget = time_budget
        self.log = log
        self.progress_every = progress_every
        self.names = [p.name for p in self.placements]
        self.stock_only = all(p.is_stock for p in self.placements)
        self.store = FindingStore(known)
        self.folder = FindingsFolder(findings_dir) if findings_dir is not None else None
        self.stats = Stats()
        self.profile = profile if profile is not None else settings()
        self.database = database
        self.clear_findings = clear_findings
        self.interrupted = False
        self.full_evaluations = 0  # programs evaluated under every placement and path
        self.found_this_round: set[str] = set()  # signatures of the findings the current round found
        if sandbox:
            from fuzzdce.sandbox import SandboxedEvaluator
            from fuzzdce.workers import DEFAULT_MEMORY_LIMIT_MB

            self.evaluator = SandboxedEvaluator(memory_limit_mb=memory_limit_mb or DEFAULT_MEMORY_LIMIT_MB)
        else:
            self.evaluator = evaluate_all
        self._deadline: float | None = None
        self._started = time.monotonic()

    # --- evaluation with triage ----------------------------------------------------------------

    def observe(self, program: Program) -> list[Finding]:
        """Evaluate under every placement, record every finding, return those to shrink."""
        shrink_step = self.reproduce_smaller(program)
        if shrink_step:
            return shrink_step
        if self.full_evaluations >= self.max_examples:
            # Past max_examples Hypothesis only shrinks. A candidate that is not smaller than a
            # finding's program (by ``size``), or is smaller but does not reproduce it, cannot
            # improve any reproducer: not worth every placement's and path's compiles.
            return []
        evaluations = self.evaluator(program, self.placements, paths=self.paths, timeout=self.timeout)
        self.full_evaluations += 1
        self.count(program, evaluations)
        return self.record(program, evaluations)

    def reproduce_smaller(self, program: Program) -> list[Finding] | None:
        """Check a program smaller than a finding's smallest one for that finding first, alone.

        Such a program is most likely one of Hypothesis's shrink steps; evaluating only the
        finding's own path under its own placements (and stock) makes a shrink step cost one
        path's compiles instead of every placement's and path's. Findings sharing placements and
        path share that evaluation. Returns the findings reproduced ([] if none), or None when
        no finding's program is larger.
        """
        groups: dict[tuple[tuple[str, ...], str], list[Finding]] = {}
        for finding in self.larger_than(program):
            groups.setdefault((finding.placements, finding.violation.path), []).append(finding)
        if not groups:
            return None
        for (names, path), findings in groups.items():
            showing = [p for p in self.placements if p.name in names and not p.is_stock]
            evaluations = self.evaluator(program, showing, paths=[path], timeout=self.timeout)
            triaged = triage(evaluations)
            reproduced = [f for f in findings if triaged.get(f.violation_signature, ())[:2] == (f.verdict, f.placements)]
            if reproduced:
                self.count(program, evaluations)
                # Only these findings: under a subset of placements, any other signature's triage
                # (which placements show it) would be wrong.
                return [found for f in reproduced for found in self.record(program, evaluations, only=f.violation_signature)]
        return []

    def shrinks(self, verdict: str) -> bool:
        """Are findings of this verdict shrunk? Placement-induced ones; every one when only stock runs."""
        return self.stock_only or verdict == PLACEMENT_INDUCED

    def larger_than(self, program: Program) -> list[Finding]:
        """The findings to shrink whose smallest program is larger than ``program``."""
        smaller = size(program)
        return [f for f in self.store if self.shrinks(f.verdict) and smaller < size(f.program)]

    def record(self, program: Program, evaluations: Mapping[str, Evaluation], only: str | None = None) -> list[Finding]:
        """Add every finding of ``evaluations`` (or only the one with violation signature ``only``)
        to the store and folder; return those to shrink."""
        to_shrink = []
        for sig, (verdict, placements, violation) in triage(evaluations).items():
            if only is not None and sig != only:
                continue
            finding, change = self.store.add(verdict, placements, violation, program)
            if change == "new":
                known = f" (known: {finding.known_reason})" if finding.known_reason else ""
                self.log(f"[{finding.verdict}] new finding {finding.id} under {', '.join(placements)}{known}: {str(violation).splitlines()[0][:300]}")
            self.save(finding, change, evaluations)
            if change == "new":
                self.found_this_round.add(finding.signature)
            if self.shrinks(verdict) and (change != "seen" or finding.signature in self.found_this_round):
                to_shrink.append((change == "seen", finding))
        # A finding fails the test when this program is new or smaller for it, or when this round
        # found it (Hypothesis's shrinker may pass through programs no smaller by ``size``); one
        # from an earlier round does not, so it cannot end a later round's generation. The
        # finding this program is new or smaller for comes first: that steers shrinking.
        return [finding for _, finding in sorted(to_shrink, key=lambda pair: pair[0])]

    def count(self, program: Program, evaluations: Mapping[str, Evaluation]) -> None:
        stock = evaluations["stock"]
        self.stats.programs += 1
        self.stats.invalid += stock.invalid
        self.stats.ops.update(program.ops)
        self.stats.unsupported_splits += sum(
            1 for o in stock.outcomes.values() for r in o.split_reasons if not r.reason_type.name.startswith("EXCEPTION")
        )
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
        shown = list(finding.placements) + (["stock"] if finding.verdict == PLACEMENT_INDUCED else [])
        traces = {
            name: evaluations[name].outcomes[path].traces
            for name in shown
            if name in evaluations and path in evaluations[name].outcomes
        }
        self.folder.write(finding, traces)

    # --- the Hypothesis run --------------------------------------------------------------------

    def hypothesis_test(self, round_number: int = 0):
        """The Hypothesis test of one round: the programs left to run, a seed of its own, and
        (after the first round) no replay of the database, whose failures the first round saw."""
        last_progress = [time.monotonic()]
        phases = self.profile.phases if round_number == 0 else tuple(p for p in self.profile.phases if p is not Phase.reuse)

        @settings(
            self.profile,
            max_examples=max(self.max_examples - self.full_evaluations, 1),
            phases=phases,
            database=self.database,
            deadline=None,
            derandomize=False,
            suppress_health_check=list(HealthCheck),
            report_multiple_bugs=True,
            print_blob=False,
        )
        @seed(self.round_seed(round_number))
        @given(programs())
        def fuzz(program: Program) -> None:
            if self.out_of_time(program):
                return  # passing quickly lets Hypothesis finish
            start = time.perf_counter()
            to_shrink = self.observe(program)
            self.stats.seconds += time.perf_counter() - start
            if time.monotonic() - last_progress[0] > self.progress_every:
                last_progress[0] = time.monotonic()
                self.log(self.progress_line())
                self.write_summary()
            if to_shrink:
                raise failure_type(to_shrink[0].signature)(str(to_shrink[0].violation)) from None

        return fuzz

    def out_of_time(self, program: Program) -> bool:
        """Past the time budget nothing new is generated, but for a grace period (half the budget)
        programs smaller than a finding's smallest one still run: those are shrink steps, and an
        unshrunk reproducer is worth little."""
        now = time.monotonic()
        if self._deadline is None or now <= self._deadline:
            return False
        if now > self._deadline + 0.5 * (self.time_budget or 0):
            return True
        return not self.larger_than(program)

    def progress_line(self) -> str:
        s = self.stats
        rate = s.seconds / max(s.programs, 1)
        return f"{s.programs} programs ({s.invalid} invalid), {len(self.store)} findings so far, {rate:.2f} s/program"

    def write_summary(self) -> None:
        if self.folder is not None:
            from fuzzdce.report import summary

            self.stats.wall_seconds = time.monotonic() - self._started
            self.folder.write_summary(summary(self))

    def run(self) -> FindingStore:
        self._started = start = time.monotonic()
        if self.time_budget:
            self._deadline = start + self.time_budget
        self.log(
            f"fuzzdce: placements {', '.join(p.name for p in self.placements)}; paths {', '.join(self.paths)}; "
            f"{self.max_examples} programs; seed {self.seed} (rerun with --seed {self.seed})"
        )
        if self.folder is not None:
            if self.clear_findings:
                self.folder.clear()
            self.log(f"fuzzdce: writing findings to {self.folder.root}")
        try:
            self.run_rounds()
            self.log(self.progress_line() + " -- done")
            self.confirm()
        except KeyboardInterrupt:
            # Ctrl-C or SIGTERM: every finding is already on disk; record where we stopped.
            self.interrupted = True
            self.log(self.progress_line() + " -- interrupted")
        finally:
            self.close()
            self.stats.wall_seconds = time.monotonic() - start
            self.write_summary()
        self.log(f"fuzzdce: finished in {self.stats.wall_seconds:.0f} s")
        return self.store

    def round_seed(self, round_number: int) -> int | None:
        """The campaign's seed for the first round; for later ones a seed derived from it (lanes
        have consecutive seeds, so "seed + round" would repeat another lane's programs)."""
        if self.seed is None or round_number == 0:
            return self.seed
        return random.Random(f"{self.seed}/{round_number}").getrandbits(32)

    def run_rounds(self) -> None:
        """Hypothesis stops generating about ten seconds after a run's first failure, to shrink it.
        A campaign goes on in rounds, each a Hypothesis run with a seed of its own, in which findings
        already seen fail no more (unless on a smaller program), until the programs or the time
        are spent or a round finds nothing new."""
        round_number = 0
        while True:
            before, found = self.full_evaluations, False
            self.found_this_round = set()
            try:
                self.hypothesis_test(round_number)()
            except (FindingFailure, BaseExceptionGroup) as failure:  # findings are in the store
                if not _only_findings(failure):
                    raise
                found = True
            round_number += 1
            past_deadline = self._deadline is not None and time.monotonic() > self._deadline
            if not found or self.full_evaluations == before or self.full_evaluations >= self.max_examples or past_deadline:
                return
            self.log(f"{self.progress_line()} -- round {round_number + 1}")

    def finish(self) -> None:
        """After a Hypothesis run driven from outside (parallel lanes merged into this campaign, or
        a pytest fuzz test): confirm the findings, rewrite them and the summary, stop the sandbox."""
        try:
            if not self.interrupted:
                self.confirm()
            if self.folder is not None:
                for finding in self.store:
                    self.folder.rewrite(finding)
        except KeyboardInterrupt:
            self.interrupted = True
        finally:
            self.close()
            self.stats.wall_seconds = time.monotonic() - self._started
            self.write_summary()
        self.log(f"fuzzdce: {self.progress_line()}; finished in {self.stats.wall_seconds:.0f} s")

    def close(self) -> None:
        """Stop the sandbox child, if any."""
        close = getattr(self.evaluator, "close", None)
        if close is not None:
            close()

    # --- confirmation --------------------------------------------------------------------------

    def confirm(self) -> None:
        """Replay each finding's smallest program: does it show the same finding (verdict, placements)?"""
        for finding in self.store:
            evaluations = self.evaluator(
                finding.program, self.placements, paths=[finding.violation.path], timeout=self.timeout
            )
            triaged = triage(evaluations).get(finding.violation_signature)
            finding.confirmed = triaged is not None and triaged[:2] == (finding.verdict, finding.placements)
            if not finding.confirmed:
                now = f"{triaged[0]} under {', '.join(triaged[1])}" if triaged else "not at all"
                self.log(f"finding {finding.id} did not reproduce the same on its smallest program (now: {now})")
            if self.folder is not None:
                self.folder.write_record(finding)


def _only_findings(failure: BaseException) -> bool:
    if isinstance(failure, BaseExceptionGroup):
        return all(_only_findings(e) for e in failure.exceptions)
    return isinstance(failure, FindingFailure)


__all__ = ["BASELINE", "PLACEMENT_INDUCED", "Campaign", "Evaluation", "Finding", "evaluate", "evaluate_all", "triage"]
