"""``fuzzdce minify``: a program a user brings, reduced to the fewest statements that still fail the same way.

The minifier Thunder does not have, built of fuzzdce's parts: the ``Program`` IR (a user's function
read by ``core.program_source``), the shrink passes (``shrink_passes``), the compile paths
and oracles, a sandboxed worker with a time limit per candidate (``running.sandbox``), and a
failure's fault (``joining.same_failure``).

What "fails" means (``Failure``): by default the failure the original shows on its path under its
Thunder, with the same fault: ``joining.same_failure`` (the same exception at the same place in Thunder;
for a wrong value, the same *first differing op*: the evaluator localises every candidate's wrong
values as a campaign's, ``running.localise``, and the fault says where they first differ). A
bisected localisation (a long program's) may name a later op wrong too: where a candidate first
differs at another op, the original is localised once more by every prefix (``Minifier.recheck``),
and its exact first wrong op is the target's.
``Criterion`` names the others a user may ask for: any exception, a message pattern, a mismatch
with eager, a split.

First, each statement that nests calls of values is taken apart into one statement per call
(``program_source.take_apart``), so that the first wrong op is found inside a statement and the
statements around it can go. The steps are ``shrink_passes``' named passes, composed by name, in
the order that pays (as PyTorch's ``fx_minifier`` orders them), ``WHOLE_PROGRAM_PASSES`` once each:
every dead statement and unused input at once (``dead_and_unused``); each returned value alone
(``single_outputs``); the shortest failing prefix (``truncate``: a binary search, a failure present
in a prefix stays in longer ones); delta debugging over windows of statements (``ddmin``), each
removed value that a kept statement reads fed in as a fresh input of its shape and dtype, the
granularity halving from two windows to single statements; then ``shrink_passes.reduce``'s passes
(``PASSES`` and ``INPUT_PASSES``) to their fixed point, which leaves the result
1-minimal (no single statement, returned value or unread input can go with the same failure), and
reduces inside statements (a call giving way to an argument, a keyword to its default, an operand
to a constant) and shapes where the same failure allows. Every candidate runs once (``Minifier.fails`` caches verdicts
by source); Ctrl-C keeps the smallest failing program found so far.
"""

from __future__ import annotations

import dataclasses
import re
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum

from fuzzdce.core.errors import UsageError
from fuzzdce.core.faults import Raised, Split, WrongValue, identity
from fuzzdce.core.joining import same_failure
from fuzzdce.core.model import Placement, Violation
from fuzzdce.core.program import Program
from fuzzdce.core.program_source import take_apart
from fuzzdce.fuzzing import shrink_passes
from fuzzdce.oracles import ORACLES
from fuzzdce.running.evaluate import Evaluator
from fuzzdce.running.localise import AGAINST_EAGER, bisected, first_differs_at
from fuzzdce.running.paths import DEFAULT_PATHS
from fuzzdce.running.sandbox import SandboxedJobs

# A candidate's time limit when none is given: this many times the original's compile and calls,
# and never less than MIN_TIMEOUT seconds (a smaller program compiles faster than the original).
TIMEOUT_FACTOR = 4.0
MIN_TIMEOUT = 20.0
# How long after a candidate's limit its worker is killed: a hang in C never reaches the limit's
# safe points, and a minify has thousands of candidates to get through (a campaign waits 15 s).
GRACE_SECONDS = 5.0
# The whole-program passes minify runs first, once each, by name (``shrink_passes.NAMED_PASSES``),
# in the order that pays (PyTorch's ``fx_minifier``'s); then ``shrink_passes.reduce``'s passes.
WHOLE_PROGRAM_PASSES = ("dead_and_unused", "single_outputs", "truncate", "ddmin")


class Criterion(StrEnum):
    """What a candidate must show to count as failing."""

    SAME = "same"  # the original's failure, with its fault (default)
    EXCEPTION = "exception"  # Thunder raises, any exception
    MATCH = "match"  # a violation whose message matches a pattern
    MISMATCH = "mismatch"  # values differ from eager's (outputs, grads or mutations)
    SPLIT = "split"  # thunderfx splits a graph because Thunder raised


@dataclass
class Failure:
    """What "fails" means for one minify: ``criterion``, and for ``SAME`` the original's violation
    (``target``)."""

    criterion: Criterion
    target: Violation | None = None
    pattern: re.Pattern | None = None

    @property
    def first_op(self) -> str | None:
        """For ``SAME`` and a wrong value, the op where the original's values first differ, as the
        evaluator localised it (``localise.first_differs_at``; None: not localised)."""
        return first_differs_at(self.target) if self.criterion == Criterion.SAME and self.target is not None else None

    def shown(self, violations: list[Violation]) -> Violation | None:
        """The first of ``violations`` (a program's) that keeps this failure, or None."""
        return next((v for v in violations if self.keeps(v)), None)

    def keeps(self, v: Violation) -> bool:
        """Does ``v``, a program's violation, keep this failure? The one rule of "the same failure"
        (``joining.same_failure``: whatever fault it defines, minify follows; a wrong value's
        says where it first differs, ``running.localise``)."""
        if self.criterion == Criterion.SAME:
            return same_failure(v, self.target)
        if self.criterion == Criterion.EXCEPTION:
            return isinstance(v.fault, Raised)
        if self.criterion == Criterion.MISMATCH:  # against eager (``exact`` compares with the reference)
            return isinstance(v.fault, WrongValue) and v.oracle in AGAINST_EAGER
        if self.criterion == Criterion.SPLIT:
            return isinstance(v.fault, Split)
        return self.pattern is not None and self.pattern.search(v.message) is not None

    def elsewhere(self, v: Violation) -> bool:
        """Is ``v`` the ``SAME`` target's wrong value, first differing at another op (or localised
        where the target is not, or the reverse)?"""
        if self.criterion != Criterion.SAME or self.target is None or not isinstance(self.target.fault, WrongValue):
            return False
        return identity(v, localised=False) == identity(self.target, localised=False) and not same_failure(v, self.target)

    def describe(self) -> str:
        if self.criterion == Criterion.SAME:
            op = f", first differing op {self.first_op}" if self.first_op else ""
            return f"the same failure as the original: [{self.target.oracle}] {self.target.message[:200]}{op}"
        if self.criterion == Criterion.MATCH:
            return f"a violation matching {self.pattern.pattern!r}"
        return {
            Criterion.EXCEPTION: "Thunder raises (any exception)",
            Criterion.MISMATCH: "values differ from eager's",
            Criterion.SPLIT: "thunderfx splits a graph because Thunder raised",
        }[self.criterion]


def priority(violation: Violation) -> float:
    """Its oracle's ``minify_priority`` (lower first; none: after every oracle that has one)."""
    oracle = ORACLES.get(violation.oracle)
    given = oracle.minify_priority if oracle is not None else None
    return float("inf") if given is None else given


def pick_target(violations: list[Violation]) -> Violation | None:
    """The violation the default criterion keeps, first found first among equals: by its oracle's
    ``minify_priority``, an exception before wrong values before anything else (the cheapest to
    keep and the clearest to report)."""
    return min(violations, key=priority, default=None)


@dataclass
class Result:
    """A minify's outcome: the smallest failing program, what it cost, how it ended."""

    original: Program
    program: Program
    failure: Failure
    path: str
    placement: str
    queries: int
    seconds: float
    violation: Violation | None
    interrupted: bool = False
    notes: list[str] = field(default_factory=list)
    taken: Counter = field(default_factory=Counter)  # steps kept by ``shrink_passes.reduce``, by pass

    @property
    def inside_statements(self) -> int:
        """How many of the kept steps were inside a statement (``shrink_passes.SUB_STATEMENT``)."""
        return sum(n for name, n in self.taken.items() if name in shrink_passes.SUB_STATEMENT)

    def line(self) -> str:
        """``N statements -> M in Q queries, S s``."""
        cut = " (interrupted: the smallest so far)" if self.interrupted else ""
        return f"{self.original.n_ops} statements -> {self.program.n_ops} in {self.queries} queries, {self.seconds:.1f} s{cut}"


Log = Callable[[str], None]


class Minifier:
    """Reduces programs against one ``Failure`` on one path under one Thunder; every candidate
    evaluated once, by ``evaluator`` (a sandboxed worker: a candidate that hangs is cut there)."""

    def __init__(
        self,
        evaluator: Evaluator,
        placement: Placement,
        path: str,
        *,
        timeout: float | None,
        log: Log = lambda line: None,
        progress_every: float = 5.0,
    ) -> None:
        self.evaluator = evaluator
        self.placement = placement
        self.path = path
        self.timeout = timeout
        self.log = log
        self.progress_every = progress_every
        self.failure: Failure | None = None
        self.original: Program | None = None  # the program ``establish`` read the failure from
        self.rechecked = False  # whether the original's wrong value was localised by every prefix (``recheck``)
        self.verdicts: dict[str, bool] = {}
        self.queries = 0
        self.taken: Counter = Counter()
        self.best: Program | None = None
        self.started = time.monotonic()
        self.last_progress = 0.0

    # --- one candidate ------------------------------------------------------------------------------

    def violations(self, program: Program) -> tuple[list[Violation], float] | None:
        """``program``'s violations on the path under the Thunder, and the path's seconds; None
        when eager rejects it (no candidate: a program eager cannot run fails nothing)."""
        evaluation = self.evaluator(program, [self.placement], paths=[self.path], timeout=self.timeout, alone=True, cache=False)[
            self.placement.name
        ]
        if evaluation.invalid:
            return None
        outcome = evaluation.outcomes.get(self.path)
        return evaluation.violations, (outcome.seconds if outcome is not None else 0.0)

    def fails(self, program: Program) -> bool:
        """Does ``program`` show the failure? Asked once per program (by source and inputs)."""
        key = program.source() + program.inputs_source()
        if key not in self.verdicts:
            self.queries += 1
            shown = self.violations(program)
            kept = shown is not None and self.failure.shown(shown[0]) is not None
            if not kept and shown is not None and any(self.failure.elsewhere(v) for v in shown[0]) and self.recheck():
                kept = self.failure.shown(shown[0]) is not None
            self.verdicts[key] = kept
            if self.verdicts[key] and (self.best is None or shrink_passes.smaller(program, self.best)):
                self.best = program
            self.progress()
        return self.verdicts[key]

    def recheck(self) -> bool:
        """A candidate shows the target's wrong value first differing at another op. Where the
        original's was localised by bisection (``localise.bisected``), which may name a later op
        wrong too, the original is localised again by every prefix in order (once per minify):
        where its first wrong op is not the target's, that is the original's fault, and the target
        becomes the original's violation so localised. The candidate keeps the failure only if it
        first differs there too: an op the original does not show wrong first is another failure,
        as before. True when the target changed."""
        if self.rechecked or self.original is None or not bisected(self.original):
            return False
        self.rechecked = True
        self.queries += 1
        evaluation = self.evaluator(
            self.original, [self.placement], paths=[self.path], timeout=self.timeout, alone=True, cache=False, exhaustive=True
        )[self.placement.name]
        exact = next((v for v in evaluation.violations if self.failure.elsewhere(v)), None)
        if exact is None:
            return False
        self.failure = dataclasses.replace(self.failure, target=exact)
        # A candidate turned down for the old target may keep the new one: asked again if asked.
        self.verdicts = {key: kept for key, kept in self.verdicts.items() if kept}
        self.log(f"fuzzdce minify: the original first differs at {first_differs_at(exact)}, by every prefix: keeping that")
        return True

    def progress(self, force: bool = False) -> None:
        now = time.monotonic() - self.started
        if force or now - self.last_progress >= self.progress_every:
            self.last_progress = now
            best = f"{self.best.n_ops} statements" if self.best is not None else "none yet"
            self.log(f"fuzzdce minify: {self.queries} queries, {now:.0f} s, smallest failing: {best}")

    # --- the whole minify ---------------------------------------------------------------------------

    def establish(self, program: Program, failure: Failure) -> Failure:
        """``failure`` completed from the original: for ``SAME``, its violation (``pick_target``;
        a wrong value's, localised by the evaluator, says where it first differs). A ``UsageError``
        when the original shows nothing to keep."""
        shown = self.violations(program)
        self.queries += 1
        if shown is None:
            raise UsageError("eager PyTorch rejects the program as read (with fuzzdce's inputs): nothing to minify")
        violations, seconds = shown
        if self.timeout is None:
            self.timeout = max(MIN_TIMEOUT, TIMEOUT_FACTOR * seconds)
        if failure.criterion == Criterion.SAME:
            chosen = failure.target
            if chosen is not None:  # a findings bug names its failure: the original's violation of that kind
                chosen = next((v for v in violations if same_failure(v, chosen)), None) or next(
                    (v for v in violations if v.oracle == chosen.oracle), None
                )
            else:
                chosen = pick_target(violations)
            failure = dataclasses.replace(failure, target=chosen)
        self.failure = failure
        # The original keeps its own failure by definition (its target is one of its violations).
        if failure.criterion == Criterion.SAME:
            fails = failure.target is not None
        else:
            fails = failure.shown(violations) is not None
        if not fails:
            found = "; ".join(str(v)[:200] for v in violations) or "no violation"
            wanted = failure.describe() if failure.criterion != Criterion.SAME else "any failure"
            raise UsageError(f"the program as read does not fail on {self.path} under {self.placement.name} ({wanted}): {found}")
        self.verdicts[program.source() + program.inputs_source()] = True
        self.best = program
        self.original = program
        return failure

    def minify(self, program: Program, failure: Failure) -> Result:
        """``program`` reduced against ``failure`` (completed by ``establish``)."""
        self.started = time.monotonic()
        original, program = program, take_apart(program)  # one call of a value per statement
        try:
            failure = self.establish(program, failure)
        except UsageError:
            if program == original:
                raise
            program = original  # taken apart it does not fail the same way: minified as written
            failure = self.establish(program, failure)
        self.taken["take_apart"] = program.n_ops - original.n_ops
        self.log(
            f"fuzzdce minify: {program.n_ops} statements on {self.path} under {self.placement.name}; keeping {failure.describe()}"
        )
        interrupted = False
        try:
            current = program
            for name in WHOLE_PROGRAM_PASSES:
                current = shrink_passes.apply(name, current, self.fails, self.taken)
                self.log(f"fuzzdce minify: after {name}: {current.n_ops} statements, {self.queries} queries")
            passes = shrink_passes.PASSES + shrink_passes.INPUT_PASSES
            current, _ = shrink_passes.reduce(current, self.fails, taken=self.taken, passes=passes)
        except KeyboardInterrupt:
            interrupted = True
        best, failure = self.best, self.failure  # the target as ``recheck`` left it
        self.progress(force=True)
        shown = self.violations(best) if not interrupted else None
        violation = failure.shown(shown[0]) if shown is not None else None
        return Result(
            original,
            best,
            failure,
            self.path,
            self.placement.name,
            self.queries,
            time.monotonic() - self.started,
            violation or failure.target,
            interrupted,
            taken=self.taken,
        )


# --- finding a path -------------------------------------------------------------------------------------


def first_failing_path(
    evaluator: Evaluator, placement: Placement, program: Program, failure: Failure, timeout: float | None, paths=DEFAULT_PATHS
) -> str:
    """The first of ``paths`` on which ``program`` fails under ``placement`` (any violation for
    ``SAME``); a ``UsageError`` when none does."""
    for path in paths:
        evaluation = evaluator(program, [placement], paths=[path], timeout=timeout, alone=True, cache=False)[placement.name]
        if evaluation.invalid:
            raise UsageError("eager PyTorch rejects the program as read (with fuzzdce's inputs): nothing to minify")
        if failure.criterion == Criterion.SAME:
            if evaluation.violations:
                return path
        elif failure.shown(evaluation.violations) is not None:
            return path
    raise UsageError(f"the program fails on none of the paths {', '.join(paths)} under {placement.name}")


def run_minify(
    program: Program,
    failure: Failure,
    placement: Placement,
    *,
    path: str | None = None,
    timeout: float | None = None,
    grace: float = GRACE_SECONDS,
    log: Log = lambda line: None,
) -> Result:
    """Minify ``program`` against ``failure`` under ``placement`` on ``path`` (None: the first
    failing path), each candidate in one sandboxed worker (``grace`` after its time limit, it is
    killed and the candidate does not fail), the worker stopped at the end."""
    evaluator = Evaluator(SandboxedJobs(grace=grace, name="minify worker"))
    try:
        if path is None:
            path = first_failing_path(evaluator, placement, program, failure, timeout or MIN_TIMEOUT * 3)
        return Minifier(evaluator, placement, path, timeout=timeout, log=log).minify(program, failure)
    finally:
        evaluator.close()
