"""A fuzzing campaign, in parts passed in: an ``Evaluator`` (where Thunder's work runs), a
``Ledger`` (findings, triage, what to shrink, confirmation) and a ``HypothesisDriver`` (rounds,
seeds, time budget), made from one ``CampaignConfig``.

Three phases. **Generation**: each program Hypothesis draws runs once in eager, once per path under
stock Thunder, and once per path under each other chosen placement, whatever its size; every oracle
reads those results, and each violation is triaged on the spot (which placements show it, stock
among them or not). **Shrinking**: each group of findings (one cause) is shrunk in a Hypothesis run
of its own that evaluates only the group's paths under its placements and stock, within an equal
share of what is left of the shrinking budget. **Grouping**: each group's minimal program runs on
every path under every placement; two groups whose finished minimal programs each show the other
are one bug. At the end, each finding's smallest program is replayed to confirm it shows the same
finding again.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterable

from fuzzdce.core.findings import FIXED, REGRESSION, Finding, FindingStore, Triaged, cause_key, triage
from fuzzdce.core.model import Placement
from fuzzdce.core.program import Program
from fuzzdce.core.timeline import sample
from fuzzdce.fuzzing.config import CampaignConfig
from fuzzdce.fuzzing.driver import DriverSettings, HypothesisDriver, current_choices
from fuzzdce.fuzzing.ledger import Ledger, Log, shown_traces
from fuzzdce.results.records import campaign_summary
from fuzzdce.results.store import FindingsFolder
from fuzzdce.running.builds import build_specs, describe_thunder
from fuzzdce.running.evaluate import Evaluator
from fuzzdce.running.memory import MemoryReport, ProcessMemory
from fuzzdce.running.sandbox import SandboxedJobs

SHRINK_SHARE = 0.5  # of the time budget, for shrinking (and grouping's shrinks) after generation


# The least fraction of the shrinking time left that the group shrunk next gets. Equal shares among
# many groups leave each less than a shrink step (a campaign with a planted fault had 260 groups a
# lane); a group shrunk to its end and evaluated everywhere settles every group its program shows,
# which then need no shrink of their own. Hypothesis returns what a shrink does not use.
SHARE_FLOOR = 0.15


def share(members: list[Finding], waiting: list[list[Finding]]) -> float:
    """The fraction of the shrinking time left that the group ``members`` gets, among the groups
    ``waiting`` to be shrunk (itself among them): an equal share, and at least ``SHARE_FLOOR``.
    (Shares in proportion to ops were tried: one-op groups then got less than one shrink step, and
    a group whose shrink is cut short joins nothing.)"""
    return max(SHARE_FLOOR, 1.0 / max(1, len(waiting)))


def mark(verdict: str, placements: tuple[str, ...], violation) -> str:
    """What a minimal program must show for a finding to join its bug: the finding's cause when it
    has an exception; else its verdict, placements, path and oracle (wrong values differ in their
    message from program to program, one fault's alike)."""
    if violation.cause:
        return cause_key(verdict, placements, violation)
    return "|".join((verdict, ",".join(placements), violation.path, violation.oracle))


def marks(found: Iterable[Finding | Triaged]) -> set[str]:
    """The ``mark`` of each finding (or triaged violation of one program) in ``found``."""
    return {mark(f.verdict, f.placements, f.violation) for f in found}


def stderr_log(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


class Campaign:
    """Fuzz ``config.scope.placements`` x ``config.scope.paths``; the driver's host (``DriverHost``).

    ``evaluator``: who evaluates programs (default: in this process, or in a sandboxed worker when
    ``config.workers.sandbox``). ``run_round``: handed to the driver (tests give a stand-in Hypothesis run).
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
        self.reference = config.resolved_reference(self.placements)  # what every verdict is relative to
        self.paths = list(config.scope.paths)
        self.seed = config.budget.seed
        self.log = log
        if evaluator is None:
            evaluator = Evaluator(self.sandbox(config) if config.workers.sandbox else None)
        self.evaluator = evaluator
        output, time_budget = config.output, config.budget.time_budget
        builds = build_specs(self.placements)  # what the records and reproducers select a build by
        folder = None
        if output.findings_dir is not None:
            thunders = {p.name: describe_thunder(p) for p in [self.reference, *self.placements]}
            folder = FindingsFolder(output.findings_dir, config.run_id, builds, self.reference.name, thunders)
        self.epoch = config.budget.started_at or time.time()  # wall-clock start of the timeline's clock
        self.ledger = Ledger(
            [p.name for p in self.placements],
            known=output.known,
            folder=folder,
            log=log,
            clock=self.clock,
            reference=self.reference.name,
        )
        # Shrinking and grouping after generation: half the time budget again (README, "Rounds").
        self.ledger.shrink_budget = SHRINK_SHARE * time_budget if time_budget else None
        self.ledger.shrink_baseline = config.scope.shrink_baseline
        settings = config.settings()
        self.max_examples = config.examples(settings)
        self.full_evaluations = 0  # programs evaluated under every placement and path
        self.distinct_programs: set[Program] = set()  # those programs, each once
        self.driver = HypothesisDriver(self, self.driver_settings(settings), run_round=run_round)
        self.interrupted = False
        self.started = time.monotonic()
        self._shrink_deadline: float | None = None
        # Settled minimal programs evaluated everywhere -> the marks of what each shows (``group``).
        self.shown: dict[Program, set[str]] = {}

    def driver_settings(self, settings) -> DriverSettings:
        """What the driver generates, from the configuration and the Hypothesis ``settings``."""
        config = self.config
        return DriverSettings(
            hypothesis=settings,
            max_examples=self.max_examples,
            seed=config.budget.seed,
            time_budget=config.budget.time_budget,
            progress_every=config.output.progress_every,
            catalog=config.catalog(),
            steer=config.scope.steer,
        )

    def clock(self) -> float:
        """Seconds since the campaign started (``config.budget.started_at`` when given)."""
        return time.time() - self.epoch

    def sandbox(self, config: CampaignConfig) -> SandboxedJobs:
        """A sandboxed worker with the configured limits, recycled as configured."""
        workers = config.workers
        return SandboxedJobs(
            memory_limit_mb=workers.memory_limit_mb,
            recycle_jobs=workers.recycle_jobs,
            recycle_rss_mb=workers.recycle_rss_mb,
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

    # --- the driver's host (driver.DriverHost) ----------------------------------------------------

    def examine(self, program: Program, choices: tuple | None, weights: object) -> list[Finding]:
        """A program the driver drew: observed, its time counted as generation's evaluation time."""
        start = time.perf_counter()
        changed = self.observe(program, choices, weights)
        self.stats.seconds += time.perf_counter() - start
        return changed

    def evaluated(self) -> int:
        return self.full_evaluations

    def distinct(self) -> int:
        return len(self.distinct_programs)

    def new_round(self) -> None:
        self.ledger.new_round()

    def should_pause(self) -> bool:
        """Asked between programs and rounds: is this process past its recycling threshold?"""
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

    def observe(self, program: Program, choices: tuple | None = None, weights: object = None) -> list[Finding]:
        """Evaluate ``program`` under every placement and path, record every finding (with the
        choices that drew it); return the findings it is new or smaller for. A program evaluated
        before is not evaluated again (programs are deterministic)."""
        if program in self.distinct_programs or self.full_evaluations >= self.max_examples:
            return []
        evaluations = self.evaluate_everywhere(program)
        self.full_evaluations += 1
        self.distinct_programs.add(program)
        self.ledger.count(program, evaluations)
        if self.driver.steering is not None:
            self.driver.steering.observe(program, evaluations)
        changed = self.ledger.record(program, evaluations, choices=choices, weights=weights)
        if changed:
            self.driver.save(choices)
        return changed

    # --- shrinking and grouping -----------------------------------------------------------------

    def shrink_deadline(self) -> float | None:
        """When shrinking (and grouping's shrinks) must end: ``shrink_budget`` seconds after
        generation ended, set once (None: no time budget)."""
        if self._shrink_deadline is None and self.ledger.shrink_budget:
            self._shrink_deadline = time.monotonic() + self.ledger.shrink_budget
        return self._shrink_deadline

    def to_shrink(self, key: str, members: list[Finding]) -> bool:
        """Is this group shrunk: a verdict that fails, choices to start from, not shrunk yet?"""
        smallest = members[0]
        return self.ledger.fails(smallest.verdict) and smallest.choices is not None and smallest.shrunk is None

    def shrink_bugs(self) -> None:
        """The shrinking phase: each group of findings with choices and not yet shrunk, shrunk in
        turn (placement-induced first, then by first sighting), each within an equal share of the
        time left."""
        start = time.perf_counter()
        covered: set[str] = set()
        try:
            while not self.driver.stopped:
                todo = [(k, m) for k, m in self.ordered_groups() if self.to_shrink(k, m) and k not in covered]
                if not todo:
                    return
                key, members = todo[0]
                if self.shown_by_a_settled_program(members):
                    covered.add(key)  # it joins that program's bug when grouped: no shrink of its own
                    continue
                if self.shrink_group(key, share(members, [m for _, m in todo])):
                    self.settle(self.store.groups()[key][0])
        finally:
            self.stats.phases["shrinking"] += time.perf_counter() - start

    def shown_by_a_settled_program(self, members: list[Finding]) -> bool:
        """Does a settled minimal program (a finished shrink's, evaluated everywhere) show this
        group, with its verdict and placements (``mark``)?"""
        wanted = marks(members)
        return any(wanted & shown for shown in self.shown.values())

    def settle(self, smallest: Finding) -> None:
        """Evaluate a finished shrink's program on every path under every placement, once: what it
        shows is recorded (its findings may now have it as their smallest program) and marked."""
        if smallest.program in self.shown:
            return
        evaluations = self.evaluate_everywhere(smallest.program)
        self.ledger.record(smallest.program, evaluations, choices=smallest.choices, weights=smallest.weights)
        self.shown[smallest.program] = marks(triage(evaluations).values())
        if self.folder is not None:
            self.folder.write(self.ledger.bug_of(smallest), shown_traces(smallest, evaluations, self.reference.name))

    def ordered_groups(self) -> list[tuple[str, list[Finding]]]:
        groups = self.store.groups()
        return sorted(
            groups.items(),
            key=lambda kv: (kv[1][0].verdict != REGRESSION, kv[1][0].first_seen_seconds or 0.0, kv[0]),
        )

    def shrink_group(self, key: str, fraction: float = 1.0) -> bool:
        """Shrink one group (cause ``key``) in a Hypothesis run of its own, from its smallest
        program's choices, within ``fraction`` of the shrinking time left. A shrink step
        evaluates only the group's paths under its placements (and the reference and stock; every
        placement for a fixed group, which no Thunder under test may show), and fails when it shows
        a finding of this cause with the group's verdict and placements; only those are recorded.
        Marks the group's findings shrunk (True) or stopped for time (False); returns which."""
        members = self.store.groups()[key]
        smallest = members[0]
        verdict, names = smallest.verdict, smallest.placements
        paths = [p for p in self.paths if p in {f.violation.path for f in members}]
        showing = [p for p in self.placements if p.name in names or verdict == FIXED]
        deadline = self.shrink_deadline()
        if deadline is not None:
            deadline = time.monotonic() + max(0.0, deadline - time.monotonic()) * fraction

        def reproduces(program: Program) -> bool:
            started = time.perf_counter()
            evaluations = self.evaluate(program, showing, paths)
            self.ledger.shrink_seconds[key] += time.perf_counter() - started
            hits = {
                sig
                for sig, t in triage(evaluations).items()
                if (t.verdict, t.placements) == (verdict, names) and cause_key(t.verdict, t.placements, t.violation) == key
            }
            if hits:
                self.ledger.record(program, evaluations, only=hits, choices=current_choices(), weights=smallest.weights)
            return bool(hits)

        done = self.driver.shrink(smallest.choices, reproduces, weights=smallest.weights, deadline=deadline, seed_parts=(key,))
        members = self.store.groups()[key]
        for f in members:
            f.shrunk = done
        if not done:
            self.log(
                f"fuzzdce: shrinking of bug {members[0].id} stopped at {members[0].program.n_ops} ops: time"
                f" ({self.ledger.shrink_seconds[key]:.0f} s)"
            )
        elif self.folder is not None:
            self.folder.write_record(self.ledger.bug_of(members[0]))
        self.driver.save(members[0].choices)
        return done

    def group(self) -> None:
        """The grouping phase. Each group's minimal program runs on every path under every
        placement (once per program); what it shows is recorded, and groups it shows for the first
        time are shrunk in turn (from that program) and evaluated the same way; a group a settled
        program already shows is not shrunk on its own. Then a group joins
        another of its verdict and placements when that group's minimal program is *settled* (a
        finished shrink's result, or another group's settled program) and shows it (``mark``: the
        same exception, or for a finding without one a finding on the same path and oracle).
        Co-occurring on a program Hypothesis did not finish shrinking joins nothing, so no join is
        transitive through a large program: two bugs rather than one that hides another."""
        start = time.perf_counter()
        handled: set[str] = set()
        try:
            while True:
                todo = [(k, m) for k, m in self.ordered_groups() if k not in handled]
                if not todo or self.driver.stopped:
                    break
                for i, (key, _) in enumerate(todo):
                    handled.add(key)
                    members = self.store.groups()[key]
                    if self.to_shrink(key, members) and not self.shown_by_a_settled_program(members):
                        shrink_start = time.perf_counter()
                        groups = self.store.groups()
                        waiting = [groups[k] for k, _ in todo[i:] if self.to_shrink(k, groups[k])]
                        self.shrink_group(key, share(members, waiting))
                        self.stats.phases["shrinking"] += time.perf_counter() - shrink_start
                        start += time.perf_counter() - shrink_start  # not grouping's time
                        members = self.store.groups()[key]
                    if self.settled(members[0]):
                        self.settle(members[0])
            groups = self.store.groups()
            marks_of = {key: marks(members) for key, members in groups.items()}
            for a, members in groups.items():
                fa = members[0]
                if fa.program not in self.shown:  # only settled programs are evaluated everywhere
                    continue
                for b, others in groups.items():
                    if b != a and (others[0].verdict, others[0].placements) == (fa.verdict, fa.placements):
                        if self.shown[fa.program] & marks_of[b]:
                            self.store.link(
                                fa, others[0], f"shown by the shrunk minimal program of finding {fa.id}, on the same placements"
                            )
        finally:
            self.stats.phases["grouping"] += time.perf_counter() - start

    def settled(self, finding: Finding) -> bool:
        """Is the finding's program a finished shrink's result, or another group's settled program?"""
        return bool(finding.shrunk) or finding.program in self.shown

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
            self.folder.write_summary(campaign_summary(self))

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
        self.epoch = self.config.budget.started_at or time.time()
        chosen_ops = self.config.scope.ops
        ops = f"ops {', '.join(chosen_ops)}; " if chosen_ops else ""
        self.log(
            f"fuzzdce: placements {', '.join(p.name for p in self.placements)}; paths {', '.join(self.paths)}; "
            f"{ops}{self.max_examples} programs; {self.seed_line()}"
        )
        if self.folder is not None:
            if self.config.output.clear_findings:
                self.folder.clear()
            self.log(f"fuzzdce: writing findings to {self.folder.root}")
        try:
            generation_start = time.perf_counter()
            self.driver.run()
            self.stats.phases["generation"] += time.perf_counter() - generation_start
            self.stats.generation_ended.append(self.driver.ended)
            if not self.recycled:
                # Shrinking only: evaluating minimal programs everywhere (grouping) would spend the
                # shrinking budget on full evaluations, and lanes' grouping is redone when merged.
                self.log(
                    f"{self.ledger.progress_line()} -- generation ended ({self.driver.ended}); shrinking {len(self.store.groups())} groups"
                )
                self.shrink_bugs()
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
        if c.budget.shards == 1:
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
            if self.config.output.confirm and not self.interrupted:
                self.log(f"fuzzdce: grouping {len(self.store.groups())} groups: each minimal program on every path")
                self.group()
                confirm_start = time.perf_counter()
                self.ledger.confirm(self.replay)
                self.stats.phases["confirming"] += time.perf_counter() - confirm_start
            self.ledger.rewrite()
        except KeyboardInterrupt:
            self.interrupted = True
        finally:
            self.evaluator.close()
            self.stats.wall_seconds = time.monotonic() - self.started
            self.sample()
            self.write_summary()
        self.log(f"fuzzdce: {self.ledger.progress_line()}; finished in {self.stats.wall_seconds:.0f} s")

    def evaluate(self, program: Program, placements: list[Placement], paths: list[str]):
        """``program`` on ``paths`` under ``placements`` and the reference. (The reference is passed
        only when it is not stock: an evaluator that takes none, a test's stand-in, serves the rest.)"""
        against = {} if self.reference.is_stock else {"reference": self.reference}
        return self.evaluator(program, placements, paths=paths, timeout=self.config.workers.timeout, **against)

    def evaluate_everywhere(self, program: Program):
        """``program`` on every path under every placement."""
        return self.evaluate(program, self.placements, self.paths)

    def replay(self, finding: Finding):
        """The finding's smallest program evaluated on its path under every placement."""
        return self.evaluate(finding.program, self.placements, [finding.violation.path])
