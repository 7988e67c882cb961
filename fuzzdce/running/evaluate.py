"""Evaluate one program: eager once, then each path under the reference, stock and each placement,
every oracle on each.

The work is cut into jobs, one (placement, path) each, and one ``Evaluator`` assembles their
results. Where a job runs is the only thing that varies: ``LocalJobs`` runs it in this process;
``sandbox.SandboxedJobs`` runs the same ``LocalJobs`` in a child process with time and memory
limits. The *reference* (stock, unless the campaign names another placement or build) is
evaluated alongside every other placement, before them: oracles that compare two Thunders
(``Oracle.needs_stock``: ``dce-sound``, ``split-set``) and DCE activity compare each placement with
the reference's outcome on the same path, and triage needs the reference's verdict anyway.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from fuzzdce.core.dce_activity import activity_of, raise_edits
from fuzzdce.core.errors import DeviceLost, HarnessError, OutOfTime, harness_message, unexpected_exception
from fuzzdce.core.faults import Identity, identity
from fuzzdce.core.model import EAGER, STOCK, Call, ErrorInfo, FailureKind, JobFailure, Oracle, Outcome, Placement, Violation
from fuzzdce.core.portable_trace import printed
from fuzzdce.core.program import Program
from fuzzdce.core.subsymbols import compare
from fuzzdce.oracles import ORACLES
from fuzzdce.oracles.exact import execution_differences
from fuzzdce.running.builds import BuildRequest, BuildWorker
from fuzzdce.running.compile_sharing import shared_outcome, shares_compiles
from fuzzdce.running.localise import judges_alike, localised, needs_localising, violations_or_none
from fuzzdce.running.path_running import run_path
from fuzzdce.running.paths import PATHS
from fuzzdce.running.placements import PLACEMENTS


@dataclass
class Evaluation:
    """One program under one placement: eager's outcome, each path's, and the violations."""

    program: Program
    placement: str
    reference: Outcome
    outcomes: dict[str, Outcome] = field(default_factory=dict)
    violations: list[Violation] = field(default_factory=list)

    @property
    def invalid(self) -> bool:
        """Eager itself rejected the program (or hung on it): no finding about its results (only
        a Thunder under test accepting it where the reference rejects it too, ``rejects``)."""
        return self.reference.error is not None


def violations_of(evaluations: Mapping[str, Evaluation]) -> dict[str, list[Violation]]:
    """Placement name -> the violations it showed: what ``findings.triage`` reads of a program's evaluations."""
    return {name: evaluation.violations for name, evaluation in evaluations.items()}


def check_outcome(
    outcome: Outcome, reference: Outcome, stock: Outcome | None, *, oracles: Sequence[Oracle] | None = None
) -> list[Violation]:
    """Every oracle's violations (or ``oracles``') on one path's outcome (``stock``: None for stock itself)."""
    return [v for oracle in (ORACLES.values() if oracles is None else oracles) for v in oracle(outcome, reference, stock)]


# What runs here on another build's outcome: the trace oracles ran in the build's own process.
ORACLES_WITHOUT_TRACES = tuple(o for o in ORACLES.values() if not o.reads_traces)


def judged(violations: list[Violation], eager: Outcome) -> list[Violation]:
    """``violations`` as they count for a program eager ran (all), or rejected (those of the oracles
    that judge it: ``Oracle.judges_where_eager_rejects``, whether a Thunder under test accepts what
    the reference rejects too)."""
    if eager.error is None:
        return violations
    return [v for v in violations if ORACLES[v.oracle].judges_where_eager_rejects]


@dataclass(frozen=True)
class Scope:
    """What a job that judges one call needs: the path's calls up to ``call``, judged by
    ``oracles`` alone (a localising prefix asks only whether that call is wrong alike,
    ``localise.judges_alike``). The reference runs beside it only where one of them compares with
    it; nothing else is observed."""

    call: str
    oracles: frozenset[str]

    @property
    def needs_reference(self) -> bool:
        return any(ORACLES[name].needs_stock for name in self.oracles)


@dataclass(frozen=True)
class Job:
    """One unit of work: ``program`` on ``path`` ("eager" or a compile path) under ``placement``,
    compared with ``reference`` (None: stock) on the same path. ``device``: where an eager job
    runs (None: the CPU; a compile path's is its own, ``CompilePath.device``). ``scope``: only
    what judging one call needs (None: every call, every oracle)."""

    program: Program
    placement: Placement
    path: str
    timeout: float | None
    reference: Placement | None = None
    device: str | None = None
    scope: Scope | None = None
    # The placements evaluated beside it on the program: stock's compile probes them (``compile_sharing``),
    # and one that did as stock at every call takes stock's outcome instead of compiling.
    shares: tuple[Placement, ...] = ()
    # Its limit is the time left before the evaluator's deadline (``Evaluator.within_deadline``):
    # what it would find past that is never judged, so nothing waits for it long.
    cut: bool = False

    @property
    def is_reference(self) -> bool:
        """Is its placement the reference itself (never a gated run of it: ``Placement.gating``)?"""
        reference = self.reference.name if self.reference is not None else STOCK
        return self.placement.name == reference and self.placement.gating is None


@dataclass
class PathResult:
    """One (placement, path) job's outcome and violations. When it has violations and its outcome
    crossed processes, the reference's traces on the same path come along (a finding's folder shows
    both)."""

    outcome: Outcome
    violations: list[Violation]
    stock_traces: list[tuple[str, Any]] | None = None


def portable(outcome: Outcome, *, with_traces: bool) -> Outcome:
    """The outcome as another process needs it: calls without their tensors (the oracles already
    ran), traces as printed text or none (trace objects do not cross processes; printing them is
    worth it only for a finding's folder), and what the run printed likewise."""
    calls = {label: Call(label, error=call.error, stage=call.stage) for label, call in outcome.calls.items()}
    guard_calls = {
        label: Call(label, error=call.error, stage=call.stage, cache=call.cache) for label, call in outcome.guard_calls.items()
    }
    traces = trace_text(outcome) if with_traces else []
    printed = outcome.printed if with_traces else ""
    return dataclasses.replace(
        outcome,
        calls=calls,
        guard_calls=guard_calls,
        float64_calls={},
        traces=traces,
        compared_traces={},
        comparison=None,
        printed=printed,
    )


def trace_text(outcome: Outcome) -> list[tuple[str, str]]:
    """The outcome's traces as (label, printed trace); a trace that cannot print says why."""
    return [(label, printed(trace)) for label, trace in outcome.traces]


def stock_serves(stock: Outcome | None, placement: Placement) -> bool:
    """Is stock's outcome on a path (None: not run) ``placement``'s own: the probe saw it do as stock
    at every call there (``Outcome.unchanged_by``, by name), and it may share a compile at all
    (``probes.shares_compiles``: never a gated run, which has its placement's name)?"""
    return stock is not None and placement.name in stock.unchanged_by and shares_compiles(placement)


class LocalJobs:
    """Runs jobs in this process. Keeps the current program's eager, stock and reference outcomes,
    so a program's jobs compute each of those once. ``portable``: results leave this process.

    A job under another Thunder build runs in that build's ``BuildWorker`` (one per build, kept);
    its outcome comes back with its tensors and is checked here against eager's and the reference's.
    """

    def __init__(self, *, portable: bool = False) -> None:
        self.portable = portable
        self.program: Program | None = None
        self.eager: dict[str | None, Outcome] = {}  # eager's outcome, by device
        self.stock: dict[str, Outcome] = {}
        self.base: dict[str, Outcome] = {}  # the reference's outcomes, when it is not stock, by path
        # Stock's violations by path, as its own job judged them: what a placement sharing stock's
        # outcome shows too, but for the oracles that compare with the reference (``shared_violations``).
        self.stock_checked: dict[str, list[Violation]] = {}
        self.builds: dict[str, BuildWorker] = {}

    def __call__(self, job: Job) -> Outcome | PathResult:
        if self.program != job.program:
            self.program, self.eager, self.stock, self.base, self.stock_checked = job.program, {}, {}, {}, {}
        if job.path == EAGER:
            eager = self.eager_on(job.device, job)
            return portable(eager, with_traces=False) if self.portable else eager
        eager = self.eager_on(PATHS[job.path].device, job)
        if job.scope is not None and job.placement.build is None:
            return self.scoped(job, eager)
        base = None if job.is_reference else self.reference_outcome(job)
        if job.placement.is_stock:
            outcome = self.stock_outcome(job)
            if base is not None:
                note_dce_activity(outcome, base)
            violations = check_outcome(outcome, eager, base)
            self.stock_checked[job.path] = violations
        elif job.placement.build is not None:
            outcome, violations = self.run_build(job, base, eager)
            if job.is_reference:
                self.base[job.path] = outcome
        else:
            stock = self.stock.get(job.path)
            if stock_serves(stock, job.placement):
                outcome = shared_outcome(stock, job.placement.name)
                if base is not None:
                    note_dce_activity(outcome, base)
                violations = self.shared_violations(outcome, eager, base)
            else:
                outcome = run_path(job.path, job.program, job.placement, timeout=job.timeout)
                if base is not None:
                    note_dce_activity(outcome, base)
                violations = check_outcome(outcome, eager, base)
            if job.is_reference:
                self.base[job.path] = outcome
        violations = judged(violations, eager)
        if not self.portable:
            return PathResult(outcome, violations)
        result = PathResult(portable(outcome, with_traces=bool(violations)), violations)
        if violations and base is not None:
            result.stock_traces = trace_text(base)
        return result

    def scoped(self, job: Job, eager: Outcome) -> Outcome | PathResult:
        """A scoped job (``Scope``): its calls only, its oracles only, the reference's run alike
        where an oracle compares with it (kept apart from the program's full outcomes)."""
        scope = job.scope
        outcome = run_path(job.path, job.program, job.placement, timeout=job.timeout, through=scope.call)
        base = None
        if scope.needs_reference and not job.is_reference:
            reference = job.reference or PLACEMENTS[STOCK]
            base = run_path(job.path, job.program, reference, timeout=job.timeout, through=scope.call)
            note_dce_activity(outcome, base)
        oracles = [ORACLES[name] for name in sorted(scope.oracles)]
        violations = judged(check_outcome(outcome, eager, base, oracles=oracles), eager)
        if not self.portable:
            return PathResult(outcome, violations)
        return PathResult(portable(outcome, with_traces=False), violations)

    def eager_on(self, device: str | None, job: Job) -> Outcome:
        """Eager's outcome on ``device``, run once per program and device: what a path on that
        device is judged against (a CUDA path against eager on CUDA, never on the CPU)."""
        eager = self.eager.get(device)
        if eager is None:
            eager = self.eager[device] = run_path(EAGER, job.program, PLACEMENTS[STOCK], timeout=job.timeout, device=device)
        return eager

    def stock_outcome(self, job: Job) -> Outcome:
        """Stock's outcome on the job's path, run once per program and path, probing the
        placements evaluated beside it (``Job.shares``)."""
        stock = self.stock.get(job.path)
        if stock is None:
            stock = self.stock[job.path] = run_path(
                job.path, job.program, PLACEMENTS[STOCK], timeout=job.timeout, shadows=job.shares
            )
        return stock

    def shared_violations(self, outcome: Outcome, eager: Outcome, base: Outcome | None) -> list[Violation]:
        """The violations of a placement's outcome that is stock's (``compile_sharing.shared_outcome``):
        stock's own where its job judged them here (the same outcome, the same eager), but for the
        oracles that compare with the reference, which judge this one again."""
        checked = self.stock_checked.get(outcome.path)
        if checked is None:
            return check_outcome(outcome, eager, base)
        again = [o for o in ORACLES.values() if o.needs_stock]
        return [v for v in checked if not ORACLES[v.oracle].needs_stock] + check_outcome(outcome, eager, base, oracles=again)

    def reference_outcome(self, job: Job) -> Outcome:
        """The reference's outcome on the job's path (its job's, or run now for the comparison alone)."""
        if job.reference is None or job.reference.is_stock:
            return self.stock_outcome(job)
        base = self.base.get(job.path)
        if base is None:
            reference_job = dataclasses.replace(job, placement=job.reference)
            if job.reference.build is not None:
                base, _ = self.run_build(reference_job, None, self.eager_on(PATHS[job.path].device, job))
            else:
                base = run_path(job.path, job.program, job.reference, timeout=job.timeout)
            self.base[job.path] = base
        return base

    def run_build(self, job: Job, base: Outcome | None, eager: Outcome) -> tuple[Outcome, list[Violation]]:
        """The job in its build's process; the trace oracles' violations from there, the others' here
        (``base``: the reference's outcome, None for the reference itself; ``eager``: eager's on the
        job's device)."""
        worker = self.builds.get(job.placement.name)
        if worker is None:
            worker = self.builds[job.placement.name] = BuildWorker(job.placement.build)
        reference = portable(eager, with_traces=False)
        result = worker.run(BuildRequest(job.program, job.path, job.placement.name, job.timeout, reference))
        # The build's traces came back portable: aligned with the reference's here, as a patch placement's are.
        outcome = result.outcome
        outcome.build = job.placement.name
        if base is not None:
            note_dce_activity(outcome, base)
        here = check_outcome(outcome, eager, base, oracles=ORACLES_WITHOUT_TRACES)
        return outcome, result.trace_violations + here

    def close(self) -> None:
        """Stop the builds' worker processes."""
        for worker in self.builds.values():
            worker.close()
        self.builds.clear()


# Who ``note_dce_activity`` counts its swallowed exceptions under (``Outcome.not_checked``).
DCE_ACTIVITY = "dce-activity"


def note_dce_activity(outcome: Outcome, base: Outcome) -> None:
    """Set the outcome's subsymbol changes against the reference's outcome ``base``, where it raised
    and ``base`` returned (or the reverse), the traces left
    out of the comparison and the symbols the two decompose otherwise (nothing when a trace could
    not be walked), and the last traces that ran otherwise than ``base``'s (``exact`` compared no bits there)."""
    outcome.execution_differs = execution_differences(outcome, base)
    outcome.dce_raise_edits = raise_edits(outcome, base)
    try:
        comparison = compare(outcome, base)
    except Exception as e:  # a malformed trace is the names oracle's finding, not a reason to lose the job
        outcome.could_not_check(DCE_ACTIVITY, "could not compare traces with the reference's", e)
        return
    outcome.dce_activity = activity_of(comparison.changes)
    outcome.dce_not_compared = comparison.not_compared
    outcome.dce_decomposition_differs = comparison.decomposition_differs


def stop_on_harness_error(result) -> None:
    """A job that failed in fuzzdce's own code stops the campaign: it is no finding about Thunder."""
    failure = result if isinstance(result, JobFailure) else getattr(getattr(result, "outcome", result), "failure", None)
    if failure is not None and failure.kind == FailureKind.HARNESS:
        raise HarnessError(failure.message)


def unjudged_on(path: str, results: Mapping[str, Evaluation], reference: str) -> None:
    """A program stopped at its limit part way through ``path``, the reference run there and some
    of the others not: what the reference shows there cannot be judged (whether the Thunders not
    run show it too decides shared or fixed), so it and whatever shows the same are left out. What
    only a Thunder under test shows there, the reference passing, is a regression whoever else
    shows it, and stays."""
    shown = {identity(v) for v in results[reference].violations if v.path == path} if reference in results else set()
    for evaluation in results.values():
        evaluation.violations = [
            v
            for v in evaluation.violations
            if not (v.path == path and (evaluation.placement == reference or identity(v) in shown))
        ]


RunJob = Callable[[Job], "Outcome | PathResult | JobFailure"]


def job_key(job: Job) -> str:
    """A canonical hash of a job: the program's source and its inputs' (seed included), the
    placement (a gated run's gating with its name: ``Placement.gating``), the path and the reference
    it is compared with. Two jobs with one key compute the same thing."""
    against = job.reference.name if job.reference is not None else STOCK
    parts = (job.program.source(), job.program.inputs_source(), job.placement.name, job.path, against)
    gated = (f"gated {job.placement.gating!r}",) if job.placement.gating is not None else ()
    scope = (f"{job.scope.call} by {','.join(sorted(job.scope.oracles))}",) if job.scope is not None else ()
    text = "\n".join(parts + gated + ((job.device,) if job.device else ()) + scope)
    return hashlib.sha1(text.encode()).hexdigest()


@dataclass(frozen=True)
class JobTime:
    """One job an evaluation ran (not answered from the cache): under which Thunder, on which path
    ("eager" too), for how long, and whether it ran past its own time limit (the ``timeout``
    oracle's, not a cut at the time budget's end)."""

    placement: str
    path: str
    seconds: float
    timed_out: bool = False


class ProgramWatch(Protocol):
    """Who hears, from an ``Evaluator``, which job of a program runs (a campaign's ``program_cost.ProgramProgress``)."""

    def job_started(self, placement: str, path: str) -> None: ...
    def job_ended(self) -> None: ...


def timed_out(result) -> bool:
    """Did a job's result (a ``JobFailure``, or an outcome carrying one) run past its time limit?"""
    outcome = result.outcome if isinstance(result, PathResult) else result
    failure = outcome if isinstance(outcome, JobFailure) else getattr(outcome, "failure", None)
    return failure is not None and failure.kind == FailureKind.TIMEOUT


def cached_copy(result):
    """What the cache keeps of a job's result: outcomes without tensors, traces printed only when
    there are violations (``portable``)."""
    if isinstance(result, PathResult):
        return PathResult(portable(result.outcome, with_traces=bool(result.violations)), result.violations, result.stock_traces)
    if isinstance(result, Outcome):
        return portable(result, with_traces=False)
    return result


class Evaluator:
    """Evaluates a program under the reference, stock and each placement on each path, its jobs run
    by ``run_job`` (default: in this process). With ``cache``, no job (program, inputs, placement,
    path, reference) runs twice: a campaign's shrink steps, settled programs and generation share
    one cache."""

    def __init__(self, run_job: RunJob | None = None, *, cache: bool = False, share_compiles: bool = True) -> None:
        self.run_job = run_job if run_job is not None else LocalJobs()
        self.share_compiles = share_compiles  # stock's compile serves a placement that changes nothing (``compile_sharing``)
        self.cache: dict[str, object] | None = {} if cache else None
        self.jobs_run = 0  # jobs run, not answered from the cache
        # ``time.time()`` past which no job runs (a campaign's time budget's end; None: none): a job
        # is given no more than the time left, and one cut short by it raises ``OutOfTime``, where
        # its own limit would have made it a ``timeout`` finding.
        self.deadline: float | None = None
        # Seconds one call (a program's evaluation) may spend on its jobs (None: no limit): past
        # it, checked between jobs, the call's remaining jobs are not run (``stopped``) and what
        # ran is judged (a campaign bounds each generated program's cost: ``program_cost``).
        self.program_limit: float | None = None
        self.stopped = False  # the last call passed ``program_limit`` with jobs left, which did not run
        self.job_times: list[JobTime] = []  # the jobs the last call ran, in order
        # Seconds of the last call's jobs that waited for a fresh worker's imports (after a crash, a
        # recycling, at the start): fuzzdce's cost, not the program's, so not counted against its limit.
        self.uncounted = 0.0
        self.watch: ProgramWatch | None = None  # hears of each job as it starts (a lane's progress lines)

    def run_cached(self, job: Job, use_cache: bool):
        """``run_job(job)``, or its cached result; a harness error stops the campaign either way."""
        key = job_key(job) if self.cache is not None and use_cache else None
        if key is not None and key in self.cache:
            return self.cache[key]
        job = self.within_deadline(job)
        if self.watch is not None:
            self.watch.job_started(job.placement.display_name, job.path)
        fresh = getattr(self.run_job, "starts_fresh", None)
        fresh = fresh() if fresh is not None else False
        started = time.monotonic()
        try:
            result = self.run_job(job)
            if self.watch is not None:
                self.watch.job_ended()
        except DeviceLost as e:
            # In this process (no worker to replace): nothing after it could use the device.
            raise HarnessError(
                f"{e}: this process cannot use the device any more; run jobs in a worker (a campaign's lanes "
                f"do), where losing the device is the job's crash finding and a fresh worker goes on"
            ) from None
        except Exception as e:
            # A job records what Thunder raises: what escapes it (an oracle, the comparison with the
            # reference) is fuzzdce's own error, here as in a worker (``workers.reply_to``).
            where = f"{job.path} under {job.placement.display_name}"
            raise HarnessError(harness_message(where, unexpected_exception(e))) from e
        self.jobs_run += 1
        if fresh:
            self.uncounted += time.monotonic() - started
        self.job_times.append(
            JobTime(job.placement.name, job.path, time.monotonic() - started, timed_out(result) and not job.cut)
        )
        stop_on_harness_error(result)
        if job.cut and timed_out(result):
            where = f"{job.path} under {job.placement.display_name}"
            raise OutOfTime(f"{where} was cut at the time budget's end, after {job.timeout:.1f} s")
        # A job asked again without probing is not kept. One given less time than its own limit is,
        # once it finished (one cut raised above): the eager, stock and reference outcomes it was
        # judged against are each a job of its own, cut alike. Not kept, a short campaign's settling
        # would run again every job generation ran with less than its own limit.
        if key is not None and not (job.shares and isinstance(result, JobFailure)):
            self.cache[key] = cached_copy(result)
        return result

    def within_deadline(self, job: Job) -> Job:
        """``job``, its time limit cut to the time left before ``deadline`` (``Job.cut``) where its
        own ends later; ``OutOfTime`` where no time is left."""
        if self.deadline is None:
            return job
        left = self.deadline - time.time()
        if left <= 0:
            raise OutOfTime("the time budget is spent")
        if job.timeout is not None and job.timeout <= left:
            return job
        return dataclasses.replace(job, timeout=left, cut=True)

    def __call__(
        self,
        program: Program,
        placements: Sequence[Placement],
        *,
        paths: Sequence[str],
        timeout: float | None = 60.0,
        reference: Placement | None = None,
        alone: bool = False,
        cache: bool = True,
        localise: bool = True,
        exhaustive: bool = False,
    ) -> dict[str, Evaluation]:
        """Placement name -> its evaluation, the reference's first (``reference``, None: stock), then
        stock's; eager runs once, stock compiles once per path. ``alone`` evaluates ``placements``
        only, not the reference and stock beside them (a shrink step asks one Thunder first, the
        others only of a candidate that still fails); ``cache=False`` runs every job again
        (confirming replays); ``localise=False`` leaves wrong values where they are (a bisection
        compares them unlocalised: its gated runs of a prefix would gate other calls);
        ``exhaustive`` localises by every prefix in order, however long the program (``localise.first_wrong``:
        minify's check of a bisected localisation). A program eager rejects is still run by the reference, and by the
        others where the reference rejects it too (``judged_where_eager_rejects``): accepting it
        then is the ``rejects`` finding; a program eager hangs or crashes on is run by none. A gated
        run (``Placement.gating``) is evaluated alone: it has its placement's name, which keys its
        evaluation."""
        if any(p.gating is not None for p in placements) and not (alone and len(placements) == 1):
            raise ValueError("a gated run is evaluated alone: its evaluation is keyed by its placement's name")
        stock = PLACEMENTS[STOCK]
        base = reference if reference is not None else stock
        against = None if base.is_stock else base
        # Eager on the CPU decides whether the program is valid at all; a path on a device is judged
        # against eager on that device.
        self.stopped, self.job_times, self.uncounted, started = False, [], 0.0, time.monotonic()
        eager = self.eager_outcome(program, None, timeout, cache)
        chosen = list({p.name: p for p in ([] if alone else [base, stock]) + list(placements)}.values())
        results = {p.name: Evaluation(program, p.name, eager) for p in chosen}
        shares = tuple(p for p in chosen if shares_compiles(p)) if self.share_compiles else ()
        if eager.failure is not None:
            return results
        eager_on = {None: eager}
        # The reference's wrong values as localised, by their identity unlocalised (``faults.identity``:
        # path, oracle and fault, its call and direction), never by their words.
        reference_localised: dict[Identity, Violation] = {}
        for device in dict.fromkeys(PATHS[path].device for path in paths if PATHS[path].device is not None):
            eager_on[device] = self.eager_outcome(program, device, timeout, cache)
        # Path by path, the reference first on each: a program stopped at its limit
        # (``program_limit``) leaves whole paths unrun, each path that ran judged as usual.
        for path in paths:
            if self.stopped:
                break
            for placement in chosen:
                if self.program_limit is not None and time.monotonic() - started - self.uncounted > self.program_limit:
                    self.stopped = True
                    unjudged_on(path, results, base.name)
                    break
                evaluation = results[placement.name]
                reference_eager = eager_on[PATHS[path].device]
                if reference_eager.failure is not None:
                    continue  # eager itself hung or crashed on the path's device: no reference there
                job = Job(program, placement, path, timeout, against, shares=shares)
                if reference_eager.error is not None and not self.judged_where_eager_rejects(
                    placement, base, job, results, cache
                ):
                    continue
                result = self.run_cached(job, cache)
                if isinstance(result, JobFailure) and job.shares:
                    # The job hung or died in its process, maybe in a placement's shadow (``compile_sharing``):
                    # asked again without probing, which this program does no more.
                    shares = ()
                    job = dataclasses.replace(job, shares=shares)
                    result = self.run_cached(job, cache)
                shown_against = results.get(base.name) if not job.is_reference else None
                stock_outcome = shown_against.outcomes.get(path) if shown_against is not None else None
                if isinstance(result, JobFailure):
                    outcome = Outcome(path, placement.name, failure=result)
                    result = PathResult(outcome, judged(check_outcome(outcome, reference_eager, stock_outcome), reference_eager))
                evaluation.outcomes[path] = result.outcome

                def run_prefix(prefix: Program, scope: Scope, placement=placement, path=path):
                    return violations_or_none(self.run_cached(Job(prefix, placement, path, timeout, against, scope=scope), cache))

                # A program given as a script (a reproducer's) has no statements to take prefixes of.
                localisable = isinstance(program, Program) and localise
                for v in result.violations:
                    if not (localisable and needs_localising(v)):
                        evaluation.violations.append(v)
                        continue
                    seen = identity(v)
                    # Where this Thunder ran the reference's execution traces, its wrong value is
                    # the reference's bit for bit, and first differs where the reference's does.
                    shared = reference_localised.get(seen) if not result.outcome.execution_differs else None
                    if shared is None:
                        run = functools.partial(run_prefix, scope=Scope(v.call, judges_alike(v)))
                        shared = localised(program, v, run, exhaustive=exhaustive)
                    if job.is_reference:
                        reference_localised[seen] = shared
                    evaluation.violations.append(shared)
                if result.stock_traces and stock_outcome is not None and not stock_outcome.traces:
                    stock_outcome.traces = result.stock_traces
        return results

    def eager_outcome(self, program: Program, device: str | None, timeout: float | None, cache: bool) -> Outcome:
        """Eager's outcome on ``device``; where eager itself hung or crashed (torch's problem, not
        Thunder's), an outcome carrying that failure and an error: the program is invalid there."""
        eager = self.run_cached(Job(program, PLACEMENTS[STOCK], EAGER, timeout, device=device), cache)
        if not isinstance(eager, JobFailure):
            return eager
        error = ErrorInfo(f"Eager{eager.kind.capitalize()}", eager.message[-300:], "", eager.message)
        return Outcome(EAGER, STOCK, error=error, failure=eager, device=device)

    def judged_where_eager_rejects(self, placement: Placement, base: Placement, job: Job, results, cache: bool) -> bool:
        """For a program eager rejects: run ``placement`` on the job's path at all? The reference
        always (whether it rejects the program too is what the others are judged by: ``rejects``);
        another only where the reference raised on that path (asked here when the reference is not
        evaluated beside it: a shrink step asks one Thunder alone)."""
        if job.is_reference:
            return True
        evaluation = results.get(base.name)
        outcome = evaluation.outcomes.get(job.path) if evaluation is not None else None
        if evaluation is None:
            result = self.run_cached(dataclasses.replace(job, placement=base), cache)
            outcome = result.outcome if isinstance(result, PathResult) else None
        return outcome is not None and outcome.error is not None

    def close(self) -> None:
        """Stop whatever runs the jobs (a sandboxed worker), if anything."""
        close = getattr(self.run_job, "close", None)
        if close is not None:
            close()
