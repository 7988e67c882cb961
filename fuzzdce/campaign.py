"""A fuzzing campaign, in parts passed in: an ``Evaluator`` (where Thunder's work runs), a
``Ledger`` (findings, triage, what to shrink, confirmation) and a ``HypothesisDriver`` (rounds,
seeds, time budget), made from one ``CampaignConfig``.

Each example runs once in eager, once per path under stock Thunder, and once per path under each
other chosen placement; every oracle reads those results, and each violation is triaged on the
spot (which placements show it, stock among them or not). At the end, each finding's smallest
program is replayed to confirm it shows the same finding again.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable

from fuzzdce.config import CampaignConfig
from fuzzdce.driver import HypothesisDriver
from fuzzdce.evaluate import Evaluator
from fuzzdce.findings import Finding, FindingStore, triage
from fuzzdce.ledger import Ledger, Log
from fuzzdce.memory import MemoryReport, ProcessMemory
from fuzzdce.program import Program
from fuzzdce.report import summary
from fuzzdce.sandbox import SandboxedJobs
from fuzzdce.steering import Steering
from fuzzdce.store import FindingsFolder
from fuzzdce.timeline import sample


def stderr_log(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


class Campaign:
    """Fuzz ``config.placements`` x ``config.paths``.

    ``evaluator``: who evaluates programs (default: in this process, or in a sandboxed worker when
    ``config.sandbox``). ``run_round``: handed to the driver (tests give a stand-in Hypothesis run).
    ``process``: what summary.json's memory entry calls this process ("driver", "lane 0"); its
    worker is "<process> worker". ``recycle_rss_mb``: past this resident size, stop after the
    current round (``recycled`` is then set; a lane's parent starts a fresh process to go on).
    """

    def __init__(
        self,
        config: CampaignConfig,
        *,
        evaluator: Evaluator | None = None,
        log: Log = stderr_log,
        run_round: Callable[[int], None] | None = None,
        process: str = "driver",
        recycle_rss_mb: int | None = None,
    ) -> None:
        self.config = config
        self.own_memory = ProcessMemory(process)
        self.own_memory.observe_self()
        self.absorbed_memory = MemoryReport()  # the lanes' processes, when this is a merged campaign
        self.recycle_rss_mb = recycle_rss_mb
        self.placements = config.resolved_placements()
        self.paths = list(config.paths)
        self.seed = config.seed
        self.log = log
        if evaluator is None:
            evaluator = Evaluator(self.sandbox(config) if config.sandbox else None)
        self.evaluator = evaluator
        folder = FindingsFolder(config.findings_dir, config.run_id) if config.findings_dir is not None else None
        self.epoch = config.started_at or time.time()  # wall-clock start of the timeline's clock
        self.ledger = Ledger([p.name for p in self.placements], known=config.known, folder=folder, log=log, clock=self.clock)
        self.ledger.shrink_budget = config.time_budget
        self.ledger.shrink_baseline = config.shrink_baseline
        settings = config.settings()
        self.max_examples = config.examples(settings)
        self.full_evaluations = 0  # programs evaluated under every placement and path
        self.distinct_programs: set[Program] = set()  # those programs, each once
        self.driver = HypothesisDriver(
            self.observe,
            self.ledger,
            settings=settings,
            max_examples=self.max_examples,
            spent=lambda: self.full_evaluations,
            distinct=lambda: len(self.distinct_programs),
            seed=config.seed,
            time_budget=config.time_budget,
            progress=self.progress,
            progress_every=config.progress_every,
            run_round=run_round,
            catalog=config.catalog(),
            steering=Steering() if config.steer else None,
            pause=self.grown_too_large,
        )
        self.interrupted = False
        self.started = time.monotonic()

    def clock(self) -> float:
        """Seconds since the campaign started (``config.started_at`` when given)."""
        return time.time() - self.epoch

    def sandbox(self, config: CampaignConfig) -> SandboxedJobs:
        """A sandboxed worker with the configured limits, recycled as configured."""
        return SandboxedJobs(
            memory_limit_mb=config.memory_limit_mb,
            recycle_jobs=config.recycle_jobs,
            recycle_rss_mb=config.recycle_rss_mb,
            name=f"{self.own_memory.process} worker",
            log=self.log,
        )

    def memory(self) -> MemoryReport:
        """This process's memory, its worker's (if sandboxed) and any absorbed lanes'."""
        self.own_memory.observe_self()
        report = MemoryReport()
        report.add(self.own_memory)
        jobs = getattr(self.evaluator, "run_job", None)
        worker_memory = getattr(jobs, "memory", None)
        if worker_memory is not None and worker_memory.start_rss_mb is not None:
            report.add(worker_memory)
            report.recycled_workers += jobs.recycled
        report.merge(self.absorbed_memory)
        return report

    def grown_too_large(self) -> bool:
        """Asked between rounds: is this process past its recycling threshold?"""
        if not self.recycle_rss_mb:
            return False
        self.own_memory.observe_self()
        return self.own_memory.end_rss_mb > self.recycle_rss_mb

    @property
    def recycled(self) -> bool:
        """Did the campaign stop early, between rounds, because this process grew too large?"""
        return self.driver.paused

    @property
    def store(self) -> FindingStore:
        return self.ledger.store

    @property
    def stats(self):
        return self.ledger.stats

    @property
    def folder(self) -> FindingsFolder | None:
        return self.ledger.folder

    @property
    def names(self) -> list[str]:
        return self.ledger.names

    # --- one program ----------------------------------------------------------------------------

    def observe(self, program: Program) -> list[Finding]:
        """Evaluate under every placement, record every finding, return those that fail the test."""
        replayed = self.ledger.replayed(program)
        if replayed:
            return replayed
        shrink_step = self.reproduce_smaller(program)
        if shrink_step is not None:
            return shrink_step
        if self.full_evaluations >= self.max_examples:
            # Past max_examples Hypothesis only shrinks. A candidate that is not smaller than a
            # finding's program (by ``size``), or is smaller but does not reproduce it, cannot
            # improve any reproducer: not worth every placement's and path's compiles.
            return []
        evaluations = self.evaluator(program, self.placements, paths=self.paths, timeout=self.config.timeout)
        self.full_evaluations += 1
        self.distinct_programs.add(program)
        self.ledger.count(program, evaluations)
        if self.driver.steering is not None:
            self.driver.steering.observe(program, evaluations)
        return self.ledger.record(program, evaluations)

    def reproduce_smaller(self, program: Program) -> list[Finding] | None:
        """Check a program smaller than a finding's smallest one for that finding first, alone.

        Such a program is most likely one of Hypothesis's shrink steps; evaluating only the
        finding's own path under its own placements (and stock) makes a shrink step cost one
        path's compiles instead of every placement's and path's. Findings sharing placements and
        path share that evaluation. Returns the findings reproduced ([] if none), or None when
        no finding's program is larger.
        """
        groups: dict[tuple[tuple[str, ...], str], list[Finding]] = {}
        for finding in self.ledger.larger_than(program):
            groups.setdefault((finding.placements, finding.violation.path), []).append(finding)
        if not groups:
            return None
        for (names, path), findings in groups.items():
            showing = [p for p in self.placements if p.name in names and not p.is_stock]
            start = time.perf_counter()
            evaluations = self.evaluator(program, showing, paths=[path], timeout=self.config.timeout)
            for cause in {f.cause_key for f in findings}:
                self.ledger.shrink_seconds[cause] += time.perf_counter() - start
            triaged = triage(evaluations)
            reproduced = [f for f in findings if triaged.get(f.violation_signature, ())[:2] == (f.verdict, f.placements)]
            if reproduced:
                self.ledger.count(program, evaluations)
                # Only these findings: under a subset of placements, any other signature's triage
                # (which placements show it) would be wrong.
                return [
                    found for f in reproduced for found in self.ledger.record(program, evaluations, only=f.violation_signature)
                ]
        return []

    # --- the whole campaign ---------------------------------------------------------------------

    def progress(self) -> None:
        self.log(self.ledger.progress_line())
        self.sample()
        self.write_summary()

    def sample(self) -> None:
        """Add a point to the timeline: programs evaluated and distinct bugs, now."""
        self.stats.timeline.append(sample(self.clock(), self.stats.programs, len(self.ledger.bugs())))

    def write_summary(self) -> None:
        if self.folder is not None:
            self.stats.wall_seconds = time.monotonic() - self.started
            self.folder.write_summary(summary(self))

    def absorb(self, store: FindingStore, stats, interrupted: bool, memory: MemoryReport | None = None) -> None:
        """Fold in a lane's results (its findings, counts, whether it was interrupted, and its
        processes' memory)."""
        self.ledger.merge(store, stats)
        self.interrupted |= interrupted
        if memory is not None:
            self.absorbed_memory.merge(memory)

    def mark_interrupted(self) -> None:
        """Ctrl-C or SIGTERM reached whoever drives this campaign: finish without grouping or confirming."""
        self.interrupted = True

    def stop(self) -> None:
        """Generate nothing more; the campaign then confirms, writes and ends as usual."""
        self.driver.stop()

    def run(self) -> FindingStore:
        """Generate, shrink, confirm and write; Ctrl-C or SIGTERM stops it cleanly."""
        self.started = time.monotonic()
        self.epoch = self.config.started_at or time.time()
        ops = f"ops {', '.join(self.config.ops)}; " if self.config.ops else ""
        self.log(
            f"fuzzdce: placements {', '.join(p.name for p in self.placements)}; paths {', '.join(self.paths)}; "
            f"{ops}{self.max_examples} programs; {self.seed_line()}"
        )
        if self.folder is not None:
            if self.config.clear_findings:
                self.folder.clear()
            self.log(f"fuzzdce: writing findings to {self.folder.root}")
        try:
            self.driver.run()
            if self.recycled:
                self.log(
                    f"{self.ledger.progress_line()} -- recycled after round {self.driver.rounds}: "
                    f"{self.own_memory.end_rss_mb:.0f} MB resident (over {self.recycle_rss_mb} MB); a fresh process goes on"
                )
            else:
                self.log(self.ledger.progress_line() + " -- done")
        except KeyboardInterrupt:
            # Ctrl-C or SIGTERM: every finding is already on disk; record where we stopped.
            self.interrupted = True
            self.log(self.ledger.progress_line() + " -- interrupted")
        self.finish()
        return self.store

    def seed_line(self) -> str:
        """The seed, and for a shard which one: enough to rerun exactly this run."""
        c = self.config
        if c.shards == 1:
            return f"seed {self.seed} (rerun with --seed {self.seed})"
        return (
            f"shard {c.shard_label} of campaign seed {c.root_seed}, seed {self.seed} "
            f"(rerun with --seed {c.root_seed} --shard {c.shard_label})"
        )

    def finish(self) -> None:
        """Group the findings into bugs and confirm them (unless interrupted or configured not to:
        lanes leave both to the merged campaign), rewrite the bugs' folders and the summary, stop
        the evaluator."""
        try:
            if self.config.confirm and not self.interrupted:
                self.log(f"fuzzdce: grouping {len(self.ledger.bugs())} bugs: each minimal program on every path")
                self.ledger.group(self.evaluate_everywhere)
                self.ledger.confirm(self.replay)
            self.ledger.rewrite()
        except KeyboardInterrupt:
            self.interrupted = True
        finally:
            self.evaluator.close()
            self.stats.wall_seconds = time.monotonic() - self.started
            self.sample()
            self.write_summary()
        self.log(f"fuzzdce: {self.ledger.progress_line()}; finished in {self.stats.wall_seconds:.0f} s")

    def evaluate_everywhere(self, program: Program):
        """``program`` on every path under every placement."""
        return self.evaluator(program, self.placements, paths=self.paths, timeout=self.config.timeout)

    def replay(self, finding: Finding):
        """The finding's smallest program evaluated on its path under every placement."""
        return self.evaluator(finding.program, self.placements, paths=[finding.violation.path], timeout=self.config.timeout)
