"""Which DCE decision breaks a failing program, found by bisection: the guide to the feature, with
``core.decisions`` (the data: ``Edit``, ``Bisection``, a bug known by its decision, the words).

LLVM's ``-opt-bisect-limit``, GCC's debug counters and torch's ``CompilerBisector`` answer "which
application of this pass breaks the program?" by numbering the applications and applying only the
first N. Here the pass is a placement, and its applications are its calls:

- A **call** is one call of what the placement replaced in Thunder (found by comparing Thunder's
  module and class attributes before and after entering it: ``interception.replaced_by``),
  numbered in the order the run makes them. Each is done either as the placement does it or as
  unpatched Thunder does (the attribute's original).
- An **edit** (``core.decisions.Edit``) is a call whose outcome differs from the original's at that
  point: a decomposition with subsymbols removed or changed, a different value returned, or a raise
  where the original returns (and the reverse). An observed call finds its edit: its original runs
  first as a shadow on a snapshot of the trace being recorded, then the placement's version, and
  ``running.decisions.edit_between`` compares what each produced.
- A **gated run** (``running.decisions.Gating``, one constructor per kind) runs the failing program
  on the failing path with some calls done as the placement does them and the rest as unpatched
  Thunder does: ``Gating.recording()`` every call, each observed (the run that finds every edit);
  ``Gating.first(n)`` the first ``n``, so a prefix is well defined however later calls change;
  ``Gating.only_call(i)`` and ``Gating.all_but(i)`` one call alone or undone;
  ``Gating.narrowed(i, where)`` one removal of several tried alone. ``running.decisions.gated``
  makes it a placement a campaign's evaluator runs like any other: of the placement's name, its
  gating as data (``Placement.gating``), evaluated alone and never from a cache.

The search (``bisect``), over the indices of the edits the recording run found, for the first
without which the failure goes: ``log2(edits)`` runs, and its checks, one run each:

- no edit applied (``first(0)``) passes: else the failure is not the placement's;
- the culprit alone (``only_call``) fails: else it needs earlier edits too, and no single decision
  is the bug's (``Bisection.alone``; the other edits do not matter when it does);
- everything but the culprit (``all_but``) passes: else later calls make the same decision, or
  another edit causes the failure too (``Bisection.without``);
- a culprit that removed several subsymbols is narrowed to the removal that alone fails
  (``narrowed``, at most ``MAX_NARROWING_RUNS`` runs).

A decision already known (``known``: the identities earlier causes of the campaign were bisected
to) is tried first: after the recording run, each call making a known decision (up to
``MAX_KNOWN_TRIES``) is run alone, and where the failure shows the search ends there
(``Bisection.known``): a few runs, not the whole search, and the cause joins that decision's bug at
once. Else the search runs as above.

``bisect_failure`` runs it for a failure the placement shows (what the campaign's shrinker and
``fuzzdce bisect`` call); ``bisect_fix`` the other way, for the reference's failure that a
placement does not show (the edit with which it goes). A failure is matched unlocalised
(``faults.identity(..., localised=False)``): the same path, oracle and fault, a wrong value wherever
it first differs, since localising runs prefixes of the program, whose calls a gating numbered for
the whole program would not fit. A placement that is another Thunder build, or stock, or whose
replaced functions never ran, is not bisectable (``Bisection.note`` says why), and its bug keeps its
failure's identity.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Collection, Sequence

from fuzzdce.core.decisions import Bisection, Check, Edit
from fuzzdce.core.faults import identity
from fuzzdce.core.findings import program_text
from fuzzdce.core.model import JobFailure, Placement, Violation
from fuzzdce.running.decisions import Gating, gated, not_bisectable

# evaluate(program, placements, paths, alone=..., cache=..., localise=...) -> {name: Evaluation}
Evaluate = Callable[..., dict]

# run(gating) -> (whether the failure shows, the edits observed, the calls made)
RunGated = Callable[[Gating], tuple[bool, list[Edit], int]]

# The most single removals tried, to narrow a culprit that removed several (one run each, one per
# kind of removal: the same symbol removed for the same reason is one decision).
MAX_NARROWING_RUNS = 6
# The most calls making a known decision tried alone before the whole search (one run each).
MAX_KNOWN_TRIES = 4


# --- the search ----------------------------------------------------------------------------------


def bisect(
    placement: Placement,
    run: RunGated,
    *,
    path: str = "",
    oracle: str = "",
    fixes: bool = False,
    known: Collection[tuple] = frozenset(),
) -> Bisection:
    """Bisect ``placement``'s edits to the first without which a failure goes. ``run(gating)`` runs
    the failing program on the failing path under ``gated(placement, gating)`` and says whether the
    failure shows, the edits observed and the calls made. ``known``: decisions (``Bisection.identity``)
    to try first, each edit making one run alone, before the search.

    ``fixes``: the other way, for a failure of the reference's (unpatched Thunder's) that the
    placement does not show: the first edit with which it goes, without which it comes back. The
    same search, with "fails" read as "the failure is gone"."""
    result = functools.partial(Bisection, placement.name, path=path, oracle=oracle, fixes=fixes)
    why = not_bisectable(placement)
    if why:
        return result(note=why)
    runs = 0

    def fails(gating: Gating) -> tuple[bool, list[Edit]]:
        nonlocal runs
        runs += 1
        shown, edits, _ = run(gating)
        return shown != fixes, edits

    runs += 1
    shown, edits, calls = run(Gating.recording())
    shown = shown != fixes
    edits = sorted(edits, key=lambda e: e.index)
    if not calls:
        note = (
            "no call of anything it replaced in Thunder's modules and classes ran (a patch of a dict's entries cannot be gated)"
        )
        return result(runs=runs, note=note)
    if not shown:
        flaky = "the failure showed under it" if fixes else "the failure did not show"
        return result(runs=runs, note=f"{flaky} with every call observed (a flaky failure)")
    if not edits:
        return result(runs=runs, note="no call of what the placement replaced did otherwise than unpatched Thunder")
    # A check of a culprit whose run does not finish leaves that answer unknown (None) and says so,
    # and the culprit stands: these runs mix the placement's calls with unpatched Thunder's in
    # orders no prefix makes (the placement's call in a compile, unpatched Thunder's in the check
    # thunderfx's splitter made before it), and Thunder can be far slower there than on any prefix.
    unanswered: dict[Check, str] = {}

    def checked(check: Check, gating: Gating) -> tuple[bool | None, list[Edit]]:
        try:
            return fails(gating)
        except Unfinished as e:
            unanswered[check] = f"{e.failure.kind}: {e.failure.message}"
            return None, []

    def fails_alone(edit: Edit) -> bool | None:
        """Does the failure show with ``edit``'s call alone done as the placement does it (None:
        not known, the run did not finish or did not make that edit)?"""
        shown, alone_edits = checked(Check.ALONE, Gating.only_call(edit.index))
        same_call = any(e.index == edit.index and e.before == edit.before for e in alone_edits)
        return shown if same_call else None

    # Several calls may make a known decision, and the failure may need a later one (the split
    # at the op whose call raised, not at the first op that raised): each is tried, up to a few.
    making_known = [e for e in edits if not fixes and e.decisions == 1 and (placement.name, *e.key()) in known]
    for edit in making_known[:MAX_KNOWN_TRIES]:
        if fails_alone(edit):
            return result(tuple(edits), edit, alone=True, runs=runs, known=True)
    unanswered.clear()  # the search below asks again of its own culprit
    if fails(Gating.first(0))[0]:
        note = (
            "the failure is gone with no edit applied: unpatched Thunder does not show it here"
            if fixes
            else "the failure shows with no edit applied: it is not the placement's"
        )
        return result(tuple(edits), runs=runs, note=note)
    # The first j whose prefix (edits 0..j) fails: j = len - 1 fails (the recording run).
    low, high = -1, len(edits) - 1
    observed: dict[int, Edit] = {}
    while high - low > 1:
        middle = (low + high) // 2
        edit = edits[middle]
        shown, found = fails(Gating.first(edit.index + 1, observe=edit.index))
        if shown:
            high = middle
            observed.update((e.index, e) for e in found)
        else:
            low = middle
    culprit = observed.get(edits[high].index, edits[high])
    alone = fails_alone(culprit)
    without = True
    if len(edits) > 1:
        still_shown = checked(Check.WITHOUT, Gating.all_but(culprit.index))[0]
        without = None if still_shown is None else not still_shown
    narrowed = None
    if alone and len({r.head for r in culprit.removed}) > 1:
        # Live removals first: removing a dead one alone can break what the live one fed.
        kinds = {r.key(): r for r in sorted(culprit.removed, key=lambda r: not r.reasons) if r.where}
        for removed in list(kinds.values())[:MAX_NARROWING_RUNS]:
            if checked(Check.NARROWED, Gating.narrowed(culprit.index, removed.where))[0]:
                narrowed = removed
                break
    return result(
        tuple(edits), culprit, alone=alone, without=without, runs=runs, narrowed=narrowed, unanswered=tuple(unanswered.items())
    )


# --- a failing program's gated runs, through an evaluator ------------------------------------------


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


def gated_run(evaluate: Evaluate, program, placement: Placement, target: Violation, gating: Gating):
    """``program`` on ``target.path`` under ``placement`` gated by ``gating``, alone and never from
    a cache: (whether ``target``'s failure shows, unlocalised; the edits observed; the calls made;
    the job's failure where it produced no result; its seconds)."""
    path = target.path
    under = gated(placement, gating)
    evaluation = evaluate(program, [under], [path], alone=True, cache=False, localise=False)[under.name]
    outcome = evaluation.outcomes.get(path)
    wanted = identity(target, localised=False)
    shown = any(identity(v, localised=False) == wanted for v in evaluation.violations)
    if outcome is None:
        return shown, [], 0, None, 0.0
    return shown, list(outcome.edits), outcome.gated_calls, outcome.failure, outcome.seconds


def bisect_failure(
    evaluate: Evaluate,
    program,
    placement: Placement,
    target: Violation,
    shared: dict | None = None,
    known: Collection[tuple] = frozenset(),
) -> Bisection:
    """Bisect ``placement``'s calls on ``program`` to the one without which ``target`` (a failure it
    shows on ``target.path``) goes; the result records the program and path (``Bisection.made_on``).
    A gated run that does not finish (a hang cut at its job's limit, or after the recording run at
    ``gated_run_limit``) ends the search with a note: read as "the failure goes", it would name a
    culprit the program never showed.

    ``shared``: gated runs already made, by (program, placement, path) and gating, for the other
    failures of one program (``Shrinker.decide_found``): a gated run shows every failure of its
    path, so the causes a program shows on one path under one placement share their runs.
    ``Bisection.runs`` counts the runs the search asked for, shared or not. ``known``: decisions
    to try first (``bisect``)."""
    path = target.path
    runs = [0]
    # The evaluate of the later runs: within ``gated_run_limit`` once the recording run has taken its time.
    bounded: list[Evaluate] = []
    gated_runs = {} if shared is None else shared.setdefault((program, placement.name, path), {})

    def evaluate_once(program, placements, paths, **options):
        (under,) = placements
        if under.gating not in gated_runs:
            gated_runs[under.gating] = (bounded[0] if bounded else evaluate)(program, placements, paths, **options)
        return gated_runs[under.gating]

    def run(gating: Gating):
        shown, edits, calls, failure, seconds = gated_run(evaluate_once, program, placement, target, gating)
        runs[0] += 1
        if not bounded and failure is None:
            bounded.append(functools.partial(evaluate, timeout=gated_run_limit(seconds)))
        if not shown and failure is not None:
            raise Unfinished(failure, runs[0])
        return shown, edits, calls

    try:
        found = bisect(placement, run, path=path, oracle=target.oracle, known=known)
    except Unfinished as e:
        note = f"a gated run on {path} did not finish ({e.failure.kind}: {e.failure.message})"
        found = Bisection(placement.name, runs=e.runs, note=note, path=path, oracle=target.oracle, finished=False)
    return dataclasses.replace(found, program=program_text(program))


def bisect_fix(evaluate: Evaluate, program, placement: Placement, target: Violation) -> Bisection:
    """Bisect ``placement``'s calls on ``program`` the other way: ``target`` is the reference's
    failure on ``target.path``, which ``placement`` does not show; find the edit with which it goes,
    without which it comes back (``bisect(..., fixes=True)``)."""

    def run(gating: Gating):
        return gated_run(evaluate, program, placement, target, gating)[:3]

    return bisect(placement, run, path=target.path, oracle=target.oracle, fixes=True)


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
