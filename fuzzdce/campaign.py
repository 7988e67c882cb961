"""A fuzzing campaign: Hypothesis drives programs through every placement and path.

Each example runs once in eager, once per path under stock Thunder, and once per path under each
other chosen placement; every oracle reads those results. Every violation observed, during
generation and shrinking alike, goes into the ``FindingStore``, which keeps the smallest program
per signature. Hypothesis is told about a violation (by raising) only when it is placement-induced
(stock does not show the same signature on the same program), so its shrinking is spent on what
the placements broke; when stock is the only placement, Thunder's own failures are the target and
every violation is raised.

Each signature raises its own exception class, so Hypothesis treats distinct findings as distinct
bugs and shrinks each separately.
"""

from __future__ import annotations

import random
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from hypothesis import HealthCheck, Phase, given, seed, settings

from fuzzdce.evaluate import Evaluation, evaluate, evaluate_all
from fuzzdce.execution import DEFAULT_PATHS
from fuzzdce.findings import Finding, FindingStore, signature, short_id
from fuzzdce.oracles import ORACLES, Violation
from fuzzdce.placements import Placement
from fuzzdce.program import Program
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
    seconds: float = 0.0
    ops: Counter = field(default_factory=Counter)
    unsupported_splits: int = 0


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
        log: Callable[[str], None] = lambda line: print(line, file=sys.stderr, flush=True),
        progress_every: float = 10.0,
    ) -> None:
        self.placements = list(placements)
        self.paths = list(paths)
        self.max_examples = max_examples
        self.seed = random.randrange(2**32) if seed is None else seed
        self.timeout = timeout
        self.time_budget = time_budget
        self.log = log
        self.progress_every = progress_every
        self.names = [p.name for p in self.placements]
        self.stock_only = self.names == ["stock"]
        self.store = FindingStore()
        self.stats = Stats()
        self._deadline: float | None = None

    # --- evaluation with triage ----------------------------------------------------------------

    def observe(self, program: Program) -> list:
        """Evaluate under every placement, record every violation, return those to shrink."""
        evaluations = evaluate_all(program, self.placements, paths=self.paths, timeout=self.timeout)
        stock = evaluations["stock"]
        self.stats.programs += 1
        self.stats.invalid += stock.invalid
        self.stats.ops.update(program.ops)
        self.stats.unsupported_splits += sum(
            1 for o in stock.outcomes.values() for r in o.split_reasons if not r.reason_type.name.startswith("EXCEPTION")
        )
        baseline = {signature(v) for v in stock.violations}
        to_shrink = []
        for name, evaluation in evaluations.items():
            if name == "stock" and not self.stock_only and "stock" not in self.names:
                continue
            for v in evaluation.violations:
                finding, is_new = self.store.add(v, program, name)
                if is_new:
                    self.log(f"[{name}] new finding {finding.id}: {str(v).splitlines()[0][:300]}")
                if self.stock_only or (name != "stock" and signature(v) not in baseline):
                    to_shrink.append(v)
        return to_shrink

    # --- the Hypothesis run --------------------------------------------------------------------

    def hypothesis_test(self):
        last_progress = [time.monotonic()]

        @settings(
            max_examples=self.max_examples,
            database=None,
            deadline=None,
            derandomize=False,
            suppress_health_check=list(HealthCheck),
            report_multiple_bugs=True,
            phases=(Phase.generate, Phase.target, Phase.shrink),
            print_blob=False,
        )
        @seed(self.seed)
        @given(programs())
        def fuzz(program: Program) -> None:
            if self._deadline is not None and time.monotonic() > self._deadline:
                return  # out of time: let Hypothesis finish quickly
            start = time.perf_counter()
            to_shrink = self.observe(program)
            self.stats.seconds += time.perf_counter() - start
            if time.monotonic() - last_progress[0] > self.progress_every:
                last_progress[0] = time.monotonic()
                self.log(self.progress_line())
            if to_shrink:
                raise failure_type(signature(to_shrink[0]))(str(to_shrink[0])) from None

        return fuzz

    def progress_line(self) -> str:
        s = self.stats
        rate = s.seconds / max(s.programs, 1)
        return f"{s.programs} programs ({s.invalid} invalid), {len(self.store)} findings so far, {rate:.2f} s/program"

    def run(self) -> FindingStore:
        start = time.monotonic()
        if self.time_budget:
            self._deadline = start + self.time_budget
        self.log(
            f"fuzzdce: placements {', '.join(p.name for p in self.placements)}; paths {', '.join(self.paths)}; "
            f"{self.max_examples} programs; seed {self.seed} (rerun with --seed {self.seed})"
        )
        try:
            self.hypothesis_test()()
        except (FindingFailure, BaseExceptionGroup) as failure:  # findings are in the store
            if not _only_findings(failure):
                raise
        self.log(self.progress_line() + " -- done")
        self.triage()
        self.log(f"fuzzdce: finished in {time.monotonic() - start:.0f} s")
        return self.store

    # --- triage --------------------------------------------------------------------------------

    def triage(self) -> None:
        """Replay each finding's smallest program under stock and every placement to name its owners."""
        for finding in self.store:
            evaluations = evaluate_all(
                finding.program, self.placements, paths=[finding.violation.path], timeout=self.timeout
            )
            finding.placements = [
                name
                for name, evaluation in evaluations.items()
                if any(signature(v) == finding.signature for v in evaluation.violations)
            ]
            if "stock" in finding.placements:
                finding.verdict = "baseline"
            elif finding.placements:
                finding.verdict = "placement-induced"
            else:
                finding.verdict = "flaky"  # did not reproduce on its smallest program


def _only_findings(failure: BaseException) -> bool:
    if isinstance(failure, BaseExceptionGroup):
        return all(_only_findings(e) for e in failure.exceptions)
    return isinstance(failure, FindingFailure)


__all__ = ["Campaign", "Evaluation", "Finding", "evaluate", "evaluate_all"]
