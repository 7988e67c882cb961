"""A fuzzing campaign, in parts passed in: an ``Evaluator`` (where Thunder's work runs), a
``Ledger`` (findings, triage, what to shrink, confirmation) and a ``HypothesisDriver`` (rounds,
seeds, time budget), made from one ``CampaignConfig``, read once into what each phase needs
(``config.PhaseSettings``).

Its phases (``time_plan.Phase``), within one wall-time plan (``time_plan.TimePlan``).
**Generation**: each program Hypothesis draws runs once in eager, once per path under stock
Thunder, and once per path under each other chosen placement, whatever its size; every oracle reads
those results, and each violation is triaged on the spot (which placements show it, stock among
them or not). **Shrinking**, **joining** and **confirming** are the ``shrinking.Shrinker``'s: each
cause shrunk against its failing configuration alone, its result evaluated everywhere and joined
with what it shows, each bug's smallest program replayed once. Where shrinking is done before
generation's time is (``Campaign.generation_resumes``), generation goes on and shrinking follows
again. Evaluations are cached: no (program, inputs, path, placement) runs twice in a campaign.
"""

from __future__ import annotations

import dataclasses
import sys
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterable

from fuzzdce.core.errors import HarnessError, OutOfTime, harness_message, unexpected_exception
from fuzzdce.core.findings import Finding, FindingStore
from fuzzdce.core.model import STOCK, Placement
from fuzzdce.core.program import Program
from fuzzdce.core.timeline import campaign_timeline, sample
from fuzzdce.core.versions import versions
from fuzzdce.fuzzing.config import CampaignConfig
from fuzzdce.fuzzing.driver import GenerationEnd, HypothesisDriver
from fuzzdce.fuzzing.ledger import Ledger, Log
from fuzzdce.fuzzing.program_cost import ProgramCost, ProgramProgress
from fuzzdce.fuzzing.shrinking import Shrinker
from fuzzdce.fuzzing.time_plan import SHRINK_END, Phase, PhaseClock, TimePlan
from fuzzdce.oracles import ORACLES
from fuzzdce.results.records import BugRecord, RunSummary
from fuzzdce.results.slow import slow_program
from fuzzdce.results.store import FindingsFolder
from fuzzdce.running.builds import build_specs, describe_thunder
from fuzzdce.running.evaluate import Evaluator
from fuzzdce.running.grad_rules import grad_rule_ids, rule_families
from fuzzdce.running.memory import CampaignMemory, ProcessMemory
from fuzzdce.running.paths import PATHS
from fuzzdce.running.placements import resolve
from fuzzdce.running.sandbox import SandboxedJobs
from fuzzdce.strategies.opinfo import describe_source
from fuzzdce.strategies.programs import INPUT_DTYPES


def stderr_log(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def distinct_counts(findings: Iterable[Finding]) -> Counter:
    """(placement, path, oracle) -> distinct findings shown under that placement."""
    counts = Counter()
    for f in findings:
        counts.update((p, f.violation.path, f.violation.oracle) for p in f.placements)
    return counts


def compiles_summary(counts) -> dict[str, dict[str, int]] | None:
    """Placement -> {"compiled": paths, "as_stock": paths} (``Stats.compiles``); None when none ran."""
    out: dict[str, dict[str, int]] = {}
    for (placement, as_stock), n in sorted(counts.items()):
        out.setdefault(placement, {"compiled": 0, "as_stock": 0})["as_stock" if as_stock else "compiled"] += n
    return out or None


class Campaign:
    """Fuzz ``config``'s placements x its paths; the driver's host (``DriverHost``).

    ``evaluator``: who evaluates programs (default: in this process, or in a sandboxed worker when
    ``config.workers.sandbox``). ``run_round``: handed to the driver (tests give a stand-in Hypothesis run).
    ``process``: what summary.json's memory entry calls this process ("driver", "lane 0"); its
    worker is "<process> worker". ``recycle_growth_mb``: once this process has grown so many MB
    resident since it started, stop after the current program (``recycled`` is then set; a lane's
    parent starts a fresh process to go on, from this one's results: ``carry_on``).
    """

    def __init__(
        self,
        config: CampaignConfig,
        *,
        evaluator: Evaluator | None = None,
        log: Log = stderr_log,
        run_round: Callable[[int], None] | None = None,
        process: str = "driver",
        recycle_growth_mb: int | None = None,
    ) -> None:
        self.settings = settings = config.phases()
        self.own_memory = ProcessMemory(process)
        self.own_memory.observe_self()
        # The lanes' processes, when this is a merged campaign; a lane's earlier ones, when it goes on from them.
        self.absorbed_memory = CampaignMemory()
        self.recycle_growth_mb = recycle_growth_mb
        self.placements = [resolve(name) for name in settings.placements]
        # What every verdict is relative to: the reference among the placements, or stock.
        self.reference = next((p for p in self.placements if p.name == settings.reference), resolve(STOCK))
        self.paths = list(settings.paths)
        self.seed = settings.run.seed
        self.log = log
        # Inside a long program a lane says so (which job, how long); each program is bounded (program_cost).
        self.watch = ProgramProgress(log, settings.output.progress_every)
        self.costs = ProgramCost()
        if evaluator is None:
            evaluation = settings.evaluation
            evaluator = Evaluator(
                self.sandbox() if evaluation.sandbox else None, cache=True, share_compiles=evaluation.share_compiles
            )
        if isinstance(evaluator, Evaluator):
            evaluator.watch = self.watch
        self.evaluator = evaluator
        output = settings.output
        self.builds = build_specs(self.placements)  # what the records and reproducers select a build by
        # NAME -> which Thunder it is: the records and the report's roles lines say it
        self.thunders = {p.name: describe_thunder(p) for p in [self.reference, *self.placements]}
        # What fuzzdce merge counts once: this shard of this campaign; a campaign without a seed (a
        # fuzz test's) cannot be rerun the same, so its run is one of a kind.
        self.run_id = settings.run.run_id or f"unseeded:{uuid.uuid4().hex[:12]}"
        folder = None
        if output.findings_dir is not None:
            folder = FindingsFolder(output.findings_dir, self.run_id, self.builds, self.reference.name, self.thunders)
        self.epoch = settings.started_at or time.time()  # wall-clock start of the timeline's clock
        self.ledger = Ledger(
            [p.name for p in self.placements],
            known=output.known,
            folder=folder,
            log=log,
            clock=self.clock,
            reference=self.reference.name,
        )
        # --time-budget is the campaign's wall time, split among its phases (time_plan.TimePlan).
        self.plan = TimePlan(settings.time_budget, self.epoch)
        # No job runs past the budget's end: phases end between jobs, and a job started near one's
        # end would run up to its own limit past the whole budget. (A stand-in evaluator ignores it.)
        self.evaluator.deadline = self.plan.end(Phase.WRITING)
        self.phases = PhaseClock(self.ledger.stats.phases)
        self.ledger.shrink_baseline = settings.shrinking.shrink_baseline
        self.max_examples = settings.generation.max_examples
        self.full_evaluations = 0  # programs evaluated under every placement and path
        self.distinct_programs: set[Program] = set()  # those programs, each once
        self.driver = HypothesisDriver(self, settings.generation, run_round=run_round)
        self.interrupted = False
        self.spent = False  # a job was cut at the time budget's end (``OutOfTime``): nothing more runs
        self.started = time.monotonic()
        self.shrinker = Shrinker(self)

    def clock(self) -> float:
        """Seconds since the campaign started (``PhaseSettings.started_at`` when given)."""
        return time.time() - self.epoch

    def sandbox(self) -> SandboxedJobs:
        """A sandboxed worker with the configured limits, recycled as configured."""
        workers = self.settings.evaluation
        return SandboxedJobs(
            memory_limit_mb=workers.memory_limit_mb,
            recycle_jobs=workers.recycle_jobs,
            recycle_rss_mb=workers.recycle_rss_mb,
            name=f"{self.own_memory.process} worker",
            log=self.log,
            uses_device=any(PATHS[p].device is not None for p in self.paths),
            waiting=self.watch.tick,
        )

    def start_worker_ahead(self) -> None:
        """Start the sandboxed worker's child now, if this campaign has one, so that its imports are
        done by the first job (the merged campaign's, once its lanes end)."""
        start = getattr(getattr(self.evaluator, "run_job", None), "start_ahead", None)
        if start is not None:
            start()

    def memory(self) -> CampaignMemory:
        """This process's memory, its worker's (if sandboxed) and any absorbed lanes'."""
        self.own_memory.observe_self()
        report = CampaignMemory()
        report.merge(self.absorbed_memory)  # first: a lane's earlier processes keep their start
        report.add(self.own_memory)
        jobs = getattr(self.evaluator, "run_job", None)
        worker_memory = getattr(jobs, "memory", None)
        if worker_memory is not None and worker_memory.start_rss_mb is not None:
            report.add(worker_memory)
            report.recycled_workers += jobs.recycled
        return report

    # --- the driver's host (driver.DriverHost) ----------------------------------------------------

    def examine(self, program: Program, choices: tuple | None, weights: object) -> list[Finding]:
        """A program the driver drew: observed, its time counted as generation's evaluation time;
        then, before generation goes on, the regression causes it shows first (or on a smaller
        program) are decided on it (``Shrinker.decide_found``), outside that time: a shrink step's
        cost is counted from a full evaluation's."""
        start = time.perf_counter()
        changed = self.observe(program, choices, weights)
        self.stats.seconds += time.perf_counter() - start
        try:
            self.shrinker.decide_found(changed)
        except OutOfTime as e:  # generation's time is over: what is undecided is decided later, or says why
            self.out_of_time(e)
        return changed

    def evaluated(self) -> int:
        return self.full_evaluations

    def distinct(self) -> int:
        return len(self.distinct_programs)

    def new_round(self) -> None:
        self.ledger.new_round()

    def generation_over(self) -> bool:
        """Is the time left no more than the work waiting after generation (``TimePlan.generation_over``):
        the causes' shrinking and the bugs' replays (``Shrinker.waiting_seconds`` and
        ``Shrinker.confirm_reserve``, counted per decision: its causes are one shrink and one
        replay), both due by
        shrinking's end, before the budget's last ``1 - SHRINK_END`` (joining, the merged
        campaign's confirming, writing)? The replays count too: they are due by shrinking's end,
        and time generation takes from them is taken from confirming."""
        shrinker, plan = self.shrinker, self.plan
        waiting = shrinker.waiting_seconds(self.stats.seconds_per_program, self.stats.seconds_per_compile)
        after_shrinking = (1 - SHRINK_END) * plan.budget if plan.budget else 0.0
        return plan.generation_over(waiting + shrinker.confirm_reserve() + after_shrinking)

    def should_pause(self) -> bool:
        """Asked between programs and rounds: has this process grown past its recycling threshold?
        Growth, not size: what a process holds at its start (torch, Thunder, its OpInfos) is no
        leak, and grows as fuzzdce learns more of Thunder; a fixed size that start drifts towards
        would recycle every lane after each round."""
        if not self.recycle_growth_mb:
            return False
        self.own_memory.observe_self()
        return self.own_memory.end_rss_mb - self.own_memory.start_rss_mb > self.recycle_growth_mb

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
        try:
            evaluations = self.evaluate_bounded(program)
        except OutOfTime as e:  # not counted: generation's time is over, and the driver ends it
            self.out_of_time(e)
            return []
        self.full_evaluations += 1
        self.distinct_programs.add(program)
        self.ledger.count(program, evaluations)
        if self.driver.steering is not None:
            self.driver.steering.observe(program, evaluations)
        changed = self.ledger.record(program, evaluations, choices=choices, weights=weights)
        if changed:
            self.driver.save(choices)
        return changed

    def evaluate_bounded(self, program: Program):
        """``program`` everywhere, within its limit (``program_cost.ProgramCost.limit``): past it,
        its remaining jobs are not run, what ran is judged as usual, and it is recorded as a slow program."""
        limit = self.costs.limit(self.plan.budget, self.settings.evaluation.timeout)
        self.evaluator.program_limit = limit
        self.watch.program_started(f"program {self.full_evaluations + 1} ({program.n_ops} ops)")
        start = time.monotonic()
        try:
            evaluations = self.evaluate_everywhere(program)
        finally:
            self.evaluator.program_limit = None
            self.watch.program_ended()
        # Less the jobs that waited for a fresh worker's imports (``Evaluator.uncounted``): not the program's cost.
        seconds = time.monotonic() - start - getattr(self.evaluator, "uncounted", 0.0)
        self.costs.observe(seconds)
        if limit is not None and seconds > limit:
            jobs = getattr(self.evaluator, "job_times", ())
            record = slow_program(
                program, jobs, seconds=seconds, limit=limit, placements=list(evaluations), paths=self.paths,
                first_seen_seconds=self.clock(), process=self.own_memory.process, number=self.full_evaluations + 1,
            )  # fmt: skip
            self.ledger.slow(record)
        return evaluations

    # --- shrinking and joining (``shrinking.Shrinker``) ----------------------------------------------

    def shrink_causes(self) -> None:
        """The shrinking phase: each cause not shrunk yet, in turn (``Shrinker.shrink_all``)."""
        with self.phases.timed(Phase.SHRINKING):
            self.shrinker.shrink_all()

    def join(self) -> None:
        """The joining phase (``Shrinker.join``)."""
        with self.phases.timed(Phase.JOINING):
            self.shrinker.join()

    # --- the whole campaign ---------------------------------------------------------------------

    def progress_line(self) -> str:
        """The ledger's counts, the phase running and the time left of the budget."""
        phase = self.phases.current
        left = self.plan.left(Phase.WRITING)
        when = "" if phase is None else f" -- {phase}" + ("" if left is None else f", {left:.0f} s left")
        return self.ledger.progress_line() + when

    def progress(self) -> None:
        self.log(self.progress_line())
        self.watch.said()
        self.sample()
        self.write_summary()

    def sample(self) -> None:
        """Add a point to the timeline: programs evaluated and distinct bugs, now."""
        self.stats.timeline.append(sample(self.clock(), self.stats.programs, len(self.ledger.bugs())))

    def write_summary(self) -> None:
        if self.folder is not None:
            self.stats.wall_seconds = time.monotonic() - self.started
            self.folder.write_summary(self.summary())

    def summary(self) -> RunSummary:
        """Everything the campaign measured, and its bugs: summary.json, and what the report prints."""
        s, run, folder = self.stats, self.settings.run, self.folder
        distinct = distinct_counts(self.store)
        bugs = self.ledger.bugs()
        return RunSummary(
            seed=self.seed,
            campaign_seed=run.campaign_seed,
            shard=run.shard_label,
            run_id=self.run_id,
            placements=tuple(self.names),
            paths=tuple(self.paths),
            reference=self.reference.name,
            thunders=dict(self.thunders),
            programs=s.programs,
            invalid_programs=s.invalid,
            evaluation_seconds=s.seconds,
            wall_seconds=s.wall_seconds,
            unsupported_splits=s.unsupported_splits,
            phases=dict(s.phases),
            generation_ended=tuple(s.generation_ended),
            bugs=tuple(BugRecord.of(b, self.run_id, self.builds, self.reference.name, self.thunders) for b in bugs),
            counts=tuple(
                {
                    "placement": p,
                    "path": path,
                    "oracle": o,
                    "findings": distinct[(p, path, o)],
                    "occurrences": s.occurrences[(p, path, o)],
                }
                for p in self.names
                for path in self.paths
                for o in ORACLES
            ),
            op_counts=dict(s.ops.most_common()),
            # Thunder's grad rules the programs ran under stock, of every one this Thunder registers.
            grad_rules={
                "total": len(grad_rule_ids()),
                "reached": dict(s.grad_rules.most_common()),
                "families": rule_families(),
                # Per source of the programs (``strategies.sources``): programs, and rules they reached.
                "by_source": {
                    source: {
                        "programs": n,
                        "reached": {rule: k for (src, rule), k in s.source_rules.most_common() if src == source},
                    }
                    for source, n in s.sources.items()
                },
            },
            # The OpInfo source programs drew steps from (ops reached by source: ``report.source_lines``).
            opinfo=s.opinfo,
            # Per placement, the paths it compiled on and those where stock's compile served it.
            compiles=compiles_summary(s.compiles),
            dropped_steps=dict(s.dropped.most_common()),
            # Per placement: in how many programs it changed subsymbols against the reference, and in which symbols.
            dce_activity=s.dce.summary(self.names),
            # Why paths or calls were skipped, and in how many programs: a path skipped everywhere tested nothing.
            notes=tuple({"path": path, "note": note, "programs": n} for (path, note), n in s.notes.most_common()),
            # Checks that could not be made (an exception swallowed), by who and path: a check switched off shows here.
            not_checked=tuple(
                {"oracle": who, "path": path, "what": what, "times": n} for (who, path, what), n in s.not_checked.most_common()
            ),
            # Programs past their limit, their remaining jobs not run (``program_cost``, ``results.slow``).
            slow_programs=s.slow_programs.summary(),
            # Programs evaluated and distinct bugs over the campaign's time, lanes combined (timeline.py).
            timeline=tuple(campaign_timeline(s.timeline, s.lane_timelines, [b.first_seen_seconds for b in bugs])),
            findings_dir=str(folder.root) if folder is not None else None,
            # Resident MB of each process (driver, lanes, their workers across recycled children) and recyclings.
            memory=self.memory().summary(),
            versions=versions(),
        )

    def absorb(
        self,
        store: FindingStore,
        stats,
        interrupted: bool,
        memory: CampaignMemory | None = None,
        shrinker: Shrinker | None = None,
        *,
        same_lane: bool = False,
    ) -> None:
        """Fold in a lane's results (its findings, counts, whether it was interrupted, its
        processes' memory, and its settled programs). ``same_lane``: they are this lane's earlier
        process's (``carry_on``), whose timeline this one continues."""
        self.ledger.merge(store, stats, same_lane=same_lane)
        if shrinker is not None:
            self.shrinker.absorb(shrinker)
        self.interrupted |= interrupted
        if memory is not None:
            self.absorbed_memory.merge(memory)

    def carry_on(self, store: FindingStore, stats, memory: CampaignMemory, shrinker: Shrinker | None) -> None:
        """Go on from this lane's earlier process, recycled: its findings, counts, timeline, memory
        and settled programs become this campaign's, so the causes it left wait here to be shrunk
        and the time plan counts them (``Shrinker.waiting_seconds``)."""
        self.absorb(store, stats, False, memory, shrinker, same_lane=True)

    def mark_interrupted(self) -> None:
        """Ctrl-C or SIGTERM reached whoever drives this campaign, or fuzzdce's own error stopped it:
        finish without joining or confirming (nothing more is run)."""
        self.interrupted = True

    def stop(self) -> None:
        """Generate nothing more; the campaign then confirms, writes and ends as usual."""
        self.driver.stop()

    def run(self) -> FindingStore:
        """Generate, shrink, confirm and write; Ctrl-C or SIGTERM stops it cleanly."""
        self.started = time.monotonic()
        self.epoch = self.settings.started_at or time.time()
        self.plan = TimePlan(self.settings.time_budget, self.epoch)
        self.evaluator.deadline = self.plan.end(Phase.WRITING)
        chosen_ops = self.settings.ops
        ops = f"ops {', '.join(chosen_ops)}; " if chosen_ops else ""
        self.log(
            f"fuzzdce: placements {', '.join(p.name for p in self.placements)}; paths {', '.join(self.paths)}; "
            f"{ops}{self.max_examples} programs; {self.settings.run.seed_line()}"
        )
        if self.folder is not None:
            if self.settings.output.clear_findings:
                self.folder.clear()
            self.log(f"fuzzdce: writing findings to {self.folder.root}")
        try:
            self.generate()
            self.stats.opinfo = self.stats.opinfo or describe_source(self.driver.options.opinfo_rate, INPUT_DTYPES)
            try:
                while not self.recycled:
                    # Shrinking only: evaluating minimal programs everywhere (joining) would spend the
                    # shrinking budget on full evaluations, and lanes' joining is redone when merged.
                    self.log(
                        f"{self.progress_line()} -- generation ended ({self.driver.ended}); shrinking {len(self.store.causes())} causes"
                    )
                    self.shrink_causes()
                    with self.phases.timed(Phase.JOINING):  # from the cache, mostly: lanes hand them on
                        self.shrinker.settle_rest()
                    if self.settings.output.confirm and self.settings.output.joined_elsewhere:
                        # A lane confirms its own bugs in what shrinking's time it did not use, on its
                        # warm worker, beside the other lanes: the merged campaign, whose worker starts
                        # cold once every lane has ended, then replays only what no lane did (a bug
                        # whose smallest program came from another lane, or was not reached). Before
                        # generation may resume: the replays' reserve is then spent, not waiting.
                        with self.phases.timed(Phase.CONFIRMING):
                            self.shrinker.confirm(self.ledger.bugs(), until=Phase.SHRINKING)
                    if not self.generation_resumes():
                        break
                    self.log(f"{self.progress_line()} -- shrinking done with generation's time left: generation resumes")
                    if not self.generate():
                        break
            except OutOfTime as e:
                self.out_of_time(e)
                self.shrinker.mark_cut_short()
            self.stats.generation_ended.append(self.driver.ended)
            if self.recycled:
                self.log(
                    f"{self.ledger.progress_line()} -- recycled after round {self.driver.rounds}: "
                    f"{self.own_memory.end_rss_mb:.0f} MB resident, grown over {self.recycle_growth_mb} MB; a fresh process goes on"
                )
            else:
                self.log(self.ledger.progress_line() + " -- done")
        except KeyboardInterrupt:
            # Ctrl-C or SIGTERM: every finding is already on disk; record where we stopped.
            self.interrupted = True
            self.log(self.ledger.progress_line() + " -- interrupted")
        except HarnessError:
            self.evaluator.close()
            raise
        except Exception as e:  # fuzzdce's own code failed (the shrinker, the ledger): exit 3, nothing filed as Thunder's
            self.evaluator.close()
            raise HarnessError(harness_message("the campaign", unexpected_exception(e))) from e
        self.finish()
        return self.store

    def generate(self) -> int:
        """Generation (``HypothesisDriver.run``), within generation's most of the wall time from the
        campaign's start (it may end sooner); returns the programs it evaluated in full."""
        left = self.plan.left(Phase.GENERATION)
        if left is not None:
            self.driver.options = dataclasses.replace(self.driver.options, time_budget=max(left, 1e-9))
        before = self.full_evaluations
        with self.phases.timed(Phase.GENERATION):
            self.driver.run()
        return self.full_evaluations - before

    def generation_resumes(self) -> bool:
        """After shrinking: did generation end for time alone (the work waiting, ``generation_over``),
        and is there time for it again now that work is done? A lane whose causes shrank fast
        would otherwise sit idle until the budget's end. A lane asks after confirming its bugs:
        asked before, the replays' reserve still counts as work waiting, and the lane ends early."""
        driver = self.driver
        return (
            driver.ended == GenerationEnd.TIME
            and not driver.stopped
            and not self.spent
            and not self.plan.over(Phase.GENERATION)
            and not self.generation_over()
        )

    def finish(self) -> None:
        """Join the findings into bugs and confirm them (unless interrupted or configured not to:
        lanes leave both to the merged campaign), rewrite the bugs' folders and the summary, stop
        the evaluator."""
        try:
            output = self.settings.output
            if output.confirm and not output.joined_elsewhere and not self.interrupted and not self.spent:
                self.log(f"fuzzdce: joining {len(self.store.causes())} causes: each minimal program on every path")
                try:
                    self.join()
                    with self.phases.timed(Phase.CONFIRMING):
                        self.shrinker.confirm(self.ledger.bugs())
                except OutOfTime as e:
                    self.out_of_time(e)
            with self.phases.timed(Phase.WRITING):
                self.ledger.rewrite(remove_others=self.settings.output.owns_findings)
        except KeyboardInterrupt:
            self.interrupted = True
        except Exception as e:  # joining, confirming or writing failed in fuzzdce's own code: exit 3
            raise HarnessError(harness_message("the campaign's end", unexpected_exception(e))) from e
        finally:
            self.evaluator.close()
            self.stats.wall_seconds = time.monotonic() - self.started
            self.sample()
            self.write_summary()
        self.log(f"fuzzdce: {self.ledger.progress_line()}; finished in {self.stats.wall_seconds:.0f} s")

    def out_of_time(self, cut: OutOfTime) -> None:
        """A job was cut at the time budget's end: no more jobs run, and what was found is written."""
        if not self.spent:
            self.log(f"fuzzdce: out of time: {cut}; nothing more is run, and what was found is written")
        self.spent = True

    def evaluate(
        self, program: Program, placements: list[Placement], paths: list[str], *, timeout: float | None = None, **options
    ):
        """``program`` on ``paths`` under ``placements`` and the reference (``options``: the
        ``Evaluator``'s ``alone``, ``cache``, ``localise`` and ``timeout``, the campaign's by default). (The reference is passed only when it is not stock:
        an evaluator that takes none, a test's stand-in, serves the rest.)"""
        against = {} if self.reference.is_stock else {"reference": self.reference}
        timeout = self.settings.evaluation.timeout if timeout is None else timeout
        return self.evaluator(program, placements, paths=paths, timeout=timeout, **against, **options)

    def evaluate_everywhere(self, program: Program):
        """``program`` on every path under every placement."""
        return self.evaluate(program, self.placements, self.paths)
