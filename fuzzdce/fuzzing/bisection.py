"""A failing program's decision, found by bisection: what a campaign's shrinker and ``fuzzdce bisect``
both call (``running.decisions`` gates the calls; this module runs the gated placement through an
evaluator and says whether the failure still shows).

A failure is matched unlocalised (``faults.identity(..., localised=False)``): the same path,
oracle and fault, a wrong value wherever it first differs, since localising runs prefixes of the
program, whose calls a gating numbered for the whole program would not fit.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Sequence

from fuzzdce.core.decisions import Bisection
from fuzzdce.core.faults import identity
from fuzzdce.core.findings import program_text
from fuzzdce.core.model import JobFailure, Placement, Violation
from fuzzdce.running import decisions

# evaluate(program, placements, paths, alone=..., cache=..., localise=...) -> {name: Evaluation}
Evaluate = Callable[..., dict]


# A gated run after the recording run is cut at this many times the recording run's seconds, and
# never below GATED_RUN_LEAST: the recording run shadows every call, the slowest run a bisection
# makes, so a gated run far past it is stuck in a mix of the placement's calls and unpatched
# Thunder's that no Thunder runs, not slow. Cut only at its job's own limit, such a run held a lane
# for that whole limit on each program showing the failure.
GATED_RUN_TIMES_RECORDING = 4
GATED_RUN_LEAST = 10.0


def gated_run_limit(recording_seconds: float) -> float:
    """The time limit of a bisection's gated runs after a recording run of ``recording_seconds``."""
    return max(GATED_RUN_LEAST, GATED_RUN_TIMES_RECORDING * recording_seconds)


class Unfinished(Exception):
    """A gated run that produced no result (``JobFailure``: past its time limit, or its worker
    died): whether the failure goes without a call cannot be told from it."""

    def __init__(self, failure: JobFailure, runs: int) -> None:
        super().__init__(failure.message)
        self.failure, self.runs = failure, runs


def bisect_failure(evaluate: Evaluate, program, placement: Placement, target: Violation, shared: dict | None = None) -> Bisection:
    """Bisect ``placement``'s calls on ``program`` to the one without which ``target`` (a failure it
    shows on ``target.path``) goes; the result records the program and path (``Bisection.made_on``).
    A gated run that does not finish (a hang cut at its job's limit, or after the recording run at
    ``gated_run_limit``) ends the search with a note: read as "the failure goes", it would name a
    culprit the program never showed.

    ``shared``: gated runs already made, by (program, placement, path) and gating, for the other
    failures of one program (``Shrinker.decide_found``): a gated run shows every failure of its
    path, so the causes a program shows on one path under one placement share their runs.
    ``Bisection.runs`` counts the runs the search asked for, shared or not."""
    path = target.path
    wanted = identity(target, localised=False)
    runs = [0]
    # The evaluate of the later runs: within ``gated_run_limit`` once the recording run has taken its time.
    bounded: list[Evaluate] = []
    gated_runs = {} if shared is None else shared.setdefault((program, placement.name, path), {})

    def run(gating: decisions.Gating):
        under = decisions.gated(placement, gating)
        if gating not in gated_runs:
            run_with = bounded[0] if bounded else evaluate
            gated_runs[gating] = run_with(program, [under], [path], alone=True, cache=False, localise=False)[under.name]
        evaluation = gated_runs[gating]
        runs[0] += 1
        outcome = evaluation.outcomes.get(path)
        if outcome is not None and not bounded and outcome.failure is None:
            bounded.append(functools.partial(evaluate, timeout=gated_run_limit(outcome.seconds)))
        shown = any(identity(v, localised=False) == wanted for v in evaluation.violations)
        if not shown and outcome is not None and outcome.failure is not None:
            raise Unfinished(outcome.failure, runs[0])
        return shown, list(outcome.edits) if outcome is not None else [], outcome.gated_calls if outcome is not None else 0

    try:
        found = decisions.bisect(placement, run, path=path, oracle=target.oracle)
    except Unfinished as e:
        note = f"a gated run on {path} did not finish ({e.failure.kind}: {e.failure.message})"
        found = Bisection(placement.name, runs=e.runs, note=note, path=path, oracle=target.oracle, finished=False)
    return dataclasses.replace(found, program=program_text(program))


def bisect_fix(evaluate: Evaluate, program, placement: Placement, target: Violation) -> Bisection:
    """Bisect ``placement``'s calls on ``program`` the other way: ``target`` is the reference's
    failure on ``target.path``, which ``placement`` does not show; find the edit with which it goes,
    without which it comes back (``decisions.bisect(..., fixes=True)``)."""
    path = target.path
    wanted = identity(target, localised=False)

    def run(gating: decisions.Gating):
        under = decisions.gated(placement, gating)
        evaluation = evaluate(program, [under], [path], alone=True, cache=False, localise=False)[under.name]
        outcome = evaluation.outcomes.get(path)
        shown = any(identity(v, localised=False) == wanted for v in evaluation.violations)
        return shown, list(outcome.edits) if outcome is not None else [], outcome.gated_calls if outcome is not None else 0

    return decisions.bisect(placement, run, path=path, oracle=target.oracle, fixes=True)


def regressions(evaluate: Evaluate, program, placement: Placement, reference: Placement, paths: Sequence[str]) -> list[Violation]:
    """The failures ``placement`` shows on ``program`` that ``reference`` does not, one per path and
    fault (what a bisection explains)."""
    evaluations = evaluate(program, [reference, placement], list(paths), alone=True)
    passed = {identity(v) for v in evaluations[reference.name].violations}
    found: dict[tuple, Violation] = {}
    for v in evaluations[placement.name].violations:
        if identity(v) not in passed:
            found.setdefault(identity(v, localised=False), v)
    return list(found.values())
