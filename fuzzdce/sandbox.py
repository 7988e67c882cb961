"""Evaluation in a sandboxed child process, one (placement, path) job at a time.

The campaign's driver process runs Hypothesis; a ``Worker`` child does all of Thunder's work. Each
job is one program on one path under one placement, so a hang or a crash is pinned to exactly
that, becomes a ``timeout`` or ``crash`` violation like any other, and is triaged and shrunk like
any other. The child keeps the current program's eager reference and stock evaluations, so a
program's jobs compute each of those once.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from fuzzdce.evaluate import Evaluation, evaluate
from fuzzdce.execution import Call, Outcome, run_path
from fuzzdce.oracles import Violation
from fuzzdce.placements import PLACEMENTS, Placement, resolve
from fuzzdce.program import Program
from fuzzdce.workers import DEFAULT_MEMORY_LIMIT_MB, JobFailure, Worker

EAGER = "eager"
# The child enforces the per-path limit itself (SIGALRM); the parent's limit catches what that
# cannot interrupt (a hang in C++), so it is a little longer.
PARENT_GRACE_SECONDS = 15.0


@dataclass(frozen=True)
class Job:
    program: Program
    placement: str  # a name resolve() accepts; ignored for the eager job
    path: str  # "eager" or a compile path
    timeout: float | None


# --- child side --------------------------------------------------------------------------------

_cache: dict[str, Any] = {"program": None, "reference": None, "stock": {}}


def portable(evaluation: Evaluation, *, with_traces: bool = True) -> Evaluation:
    """The evaluation as the parent needs it (see ``_portable_outcome``)."""
    outcomes = {path: _portable_outcome(o, with_traces=with_traces) for path, o in evaluation.outcomes.items()}
    return dataclasses.replace(evaluation, outcomes=outcomes, reference=_portable_outcome(evaluation.reference))


def _portable_outcome(outcome: Outcome, *, with_traces: bool = True) -> Outcome:
    """Calls without their tensors (the oracles already ran here; the parent only triages and
    writes findings) and traces as text, or none: Thunder's trace objects do not cross processes,
    and printing them is worth it only for a finding's folder."""
    calls = {label: Call(label, error=call.error, stage=call.stage) for label, call in outcome.calls.items()}
    return dataclasses.replace(outcome, calls=calls, traces=trace_text(outcome) if with_traces else [])


def trace_text(outcome: Outcome) -> list[tuple[str, str]]:
    """The outcome's traces as (label, printed trace)."""
    return [(label, str(trace)) for label, trace in outcome.traces]


@dataclass
class PathResult:
    """One job's evaluation; when it has violations, stock's traces on the same path come along
    (a placement-induced finding's folder shows both)."""

    evaluation: Evaluation
    stock_traces: list[tuple[str, str]] | None = None


def run_job(job: Job) -> Outcome | PathResult:
    """Child entry point: eager's Outcome for the eager job, else one path's PathResult."""
    from fuzzdce.cli import quiet_library_warnings

    quiet_library_warnings()
    if _cache["program"] != job.program:
        _cache.update(program=job.program, reference=None, stock={})
    if _cache["reference"] is None:
        _cache["reference"] = run_path(EAGER, job.program, PLACEMENTS["stock"], timeout=job.timeout)
    reference = _cache["reference"]
    if job.path == EAGER:
        return _portable_outcome(reference)
    stock = _cache["stock"].get(job.path)
    if stock is None:
        stock = evaluate(job.program, PLACEMENTS["stock"], paths=[job.path], timeout=job.timeout, reference=reference)
        _cache["stock"][job.path] = stock
    placement = resolve(job.placement)
    if placement.is_stock:
        return PathResult(portable(stock, with_traces=bool(stock.violations)))
    evaluation = evaluate(
        job.program, placement, paths=[job.path], timeout=job.timeout, reference=reference, baseline=stock
    )
    if not evaluation.violations:
        return PathResult(portable(evaluation, with_traces=False))
    return PathResult(portable(evaluation), trace_text(stock.outcomes[job.path]))


# --- parent side -------------------------------------------------------------------------------


def failure_violation(failure: JobFailure, path: str) -> Violation:
    """A job that produced nothing: a ``timeout`` or ``crash`` violation on its path."""
    first_line = failure.message.strip().splitlines()[-1] if failure.message.strip() else failure.kind
    return Violation(failure.kind, path, f"{failure.kind}: {first_line}", failure.kind.capitalize(), key=failure.kind)


class SandboxedEvaluator:
    """``evaluate_all`` with every job run in a Worker child (see module docstring)."""

    def __init__(self, *, memory_limit_mb: int | None = DEFAULT_MEMORY_LIMIT_MB) -> None:
        self.worker = Worker(run_job, memory_limit_mb=memory_limit_mb)

    def _submit(self, job: Job) -> Any:
        limit = None if job.timeout is None else job.timeout + PARENT_GRACE_SECONDS
        return self.worker.submit(job, limit)

    def __call__(
        self, program: Program, placements: Sequence[Placement], *, paths: Sequence[str], timeout: float | None
    ) -> dict[str, Evaluation]:
        reference = self._submit(Job(program, "stock", EAGER, timeout))
        if isinstance(reference, JobFailure):
            # Eager itself hung or crashed: torch's problem, not Thunder's; the program is invalid.
            reference = Outcome(EAGER, "stock", error=_eager_failure(reference))
        names = ["stock", *(p.name for p in placements if not p.is_stock)]
        results = {name: Evaluation(program, name, reference) for name in names}
        if reference.error is not None:
            return results
        for name in names:
            for path in paths:
                result = self._submit(Job(program, name, path, timeout))
                evaluation = results[name]
                if isinstance(result, JobFailure):
                    evaluation.outcomes[path] = Outcome(path, name)
                    evaluation.violations.append(failure_violation(result, path))
                else:
                    evaluation.outcomes.update(result.evaluation.outcomes)
                    evaluation.violations += result.evaluation.violations
                    stock_outcome = results["stock"].outcomes.get(path)
                    if result.stock_traces and stock_outcome is not None and not stock_outcome.traces:
                        stock_outcome.traces = result.stock_traces
        return results

    def close(self) -> None:
        self.worker.close()


def _eager_failure(failure: JobFailure):
    from fuzzdce.execution import ErrorInfo

    return ErrorInfo(f"Eager{failure.kind.capitalize()}", failure.message[-300:], "", failure.message)
