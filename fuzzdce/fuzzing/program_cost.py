"""What one generated program may cost a lane: a limit from what the campaign has measured.

One program on every path under every placement is a few seconds; one in a hundred takes minutes
(a path recompiling for each call, a large block under seven placements), and a lane inside it
stops finding anything else. So each program gets a limit (``ProgramCost.limit``): past it,
checked between jobs, its remaining (placement, path) jobs are not run, what ran is judged as usual
(``Evaluator.program_limit``), and it is recorded as a slow program (``results.slow``). Slowness is
no Thunder bug: only a job past its own time limit is (the ``timeout`` oracle's finding).
"""

from __future__ import annotations

import statistics
import time

# A program this many times the campaign's median program is an outlier worth stopping: programs'
# costs spread over about an order of magnitude with their ops and paths (benchmarks/slow_programs.py),
# so a smaller multiple would stop ordinary large programs, and a larger one let one program take
# what a dozen ordinary ones would have used.
MEDIAN_MULTIPLE = 5.0
# No program may take more than this share of the time budget: one program holding a lane for a
# tenth of a campaign cost more than everything it could show (a 900-s lane lost 755 s to one).
BUDGET_SHARE = 0.05
# The median counts once this many programs were measured; before, the budget's share alone bounds a program.
MEASURED_PROGRAMS = 5


class ProgramCost:
    """The running median of the programs' seconds, and from it each next program's limit."""

    def __init__(self) -> None:
        self.seconds: list[float] = []  # every program's

    def observe(self, seconds: float) -> None:
        self.seconds.append(seconds)

    @property
    def median(self) -> float | None:
        return statistics.median(self.seconds) if len(self.seconds) >= MEASURED_PROGRAMS else None

    def limit(self, time_budget: float | None, job_limit: float | None) -> float | None:
        """Seconds the next program may take: ``MEDIAN_MULTIPLE`` times the median, at most
        ``BUDGET_SHARE`` of ``time_budget``, never below ``job_limit`` (one job's own time limit:
        a program is always given the time of one job that runs to its limit, so a hung compile is
        the ``timeout`` finding it is). None: nothing bounds it yet (no budget, too few programs)."""
        share = BUDGET_SHARE * time_budget if time_budget else None
        median = self.median
        measured = MEDIAN_MULTIPLE * median if median is not None else None
        bounds = [b for b in (measured, share) if b is not None]
        if not bounds:
            return None
        return max(min(bounds), job_limit or 0.0)


class ProgramProgress:
    """A lane's word on the program it is inside, at least every ``every`` seconds: which program,
    which (placement, path) job, for how long. Between programs the campaign's own progress line
    says how it goes (``said``); inside a long one, nothing else would: a lane was silent for 755 s.
    ``tick`` is called between jobs and, while a sandboxed job runs, by its worker as it waits
    (``workers.ChildWorker.waiting``)."""

    def __init__(self, log, every: float = 10.0, clock=None) -> None:
        self.log = log
        self.every = every
        self.clock = clock or time.monotonic
        self.last_said = self.clock()
        self.program: str | None = None  # what the campaign calls the program it is inside
        self.program_since = 0.0
        self.job: tuple[str, str] | None = None  # (placement, path)
        self.job_since = 0.0
        self.jobs = 0  # jobs started in this program

    def said(self) -> None:
        """The campaign just printed a progress line."""
        self.last_said = self.clock()

    def program_started(self, label: str) -> None:
        self.program, self.program_since, self.job, self.jobs = label, self.clock(), None, 0

    def program_ended(self) -> None:
        self.program, self.job = None, None

    def job_started(self, placement: str, path: str) -> None:
        self.job, self.job_since = (placement, path), self.clock()
        self.jobs += 1
        self.tick()

    def job_ended(self) -> None:
        self.job = None

    def tick(self) -> None:
        """Say where the lane is if nothing was said for ``every`` seconds: the program it is inside
        and its job, or outside one (a shrink step, a replay) the job running."""
        now = self.clock()
        if now - self.last_said < self.every:
            return
        job = None if self.job is None else f"job {self.job[0]} on {self.job[1]} for {now - self.job_since:.0f} s"
        if self.program is not None:
            self.log(
                f"fuzzdce: inside {self.program} for {now - self.program_since:.0f} s ({self.jobs} jobs)"
                + (f": {job}" if job else "")
            )
        elif job is not None:
            self.log(f"fuzzdce: running {job}")
        else:
            return
        self.last_said = now
