"""The Hypothesis side of a campaign: the ``@given`` test, rounds with seeds of their own, the time
budget, progress lines.

Each signature raises its own exception class, so Hypothesis treats distinct findings as distinct
bugs and shrinks each separately. Hypothesis stops generating about ten seconds after a run's first
failure, to shrink it; a campaign therefore goes on in rounds, each a new Hypothesis run with a seed
derived from the campaign's, in which findings already seen fail no more (unless on a smaller
program), until the programs or the time are spent, or a round finds nothing and evaluates no
program it had not evaluated before. (A round that finds nothing may still leave programs to run:
programs smaller than a finding's are checked for that finding alone, as shrink steps, and do not
count.)
"""

from __future__ import annotations

import time
from collections.abc import Callable

from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis.reporting import with_reporter


from fuzzdce.config import derive_seed
from fuzzdce.findings import Finding
from fuzzdce.ledger import Ledger
from fuzzdce.program import Program
from fuzzdce.signatures import short_id
from fuzzdce.steering import ROUND, Steering
from fuzzdce.strategies import CATALOG, OpSpec, programs


class FindingFailure(AssertionError):
    """Base of the per-signature exceptions raised to Hypothesis."""


_FAILURE_TYPES: dict[str, type[FindingFailure]] = {}


def failure_type(sig: str) -> type[FindingFailure]:
    """One exception class per signature: Hypothesis shrinks distinct classes separately."""
    if sig not in _FAILURE_TYPES:
        _FAILURE_TYPES[sig] = type(f"Finding_{short_id(sig)}", (FindingFailure,), {"__module__": __name__})
    return _FAILURE_TYPES[sig]


def only_findings(failure: BaseException) -> bool:
    """Is ``failure`` (or every exception of a group) a finding raised on purpose?"""
    if isinstance(failure, BaseExceptionGroup):
        return all(only_findings(e) for e in failure.exceptions)
    return isinstance(failure, FindingFailure)


def derived_seed(campaign_seed: int | None, round_number: int) -> int | None:
    """The campaign's seed for the first round; for later ones a seed derived from it (lanes have
    consecutive seeds, so "seed + round" would repeat another lane's programs)."""
    if campaign_seed is None or round_number == 0:
        return campaign_seed
    return derive_seed(campaign_seed, round_number)


class HypothesisDriver:
    """Feeds Hypothesis's programs to ``examine`` (evaluate and record one program, return the
    findings it should fail on) until ``max_examples`` full evaluations (counted by ``spent``)
    or the time budget are spent.

    ``run_round(round_number)`` runs one round (default: a real Hypothesis run, ``hypothesis_test``);
    tests hand in a stand-in. ``progress()`` is called every ``progress_every`` seconds. ``strategy``
    entries ``catalog`` programs are drawn from (default: all); ``steering`` weighs them per round.
    ``pause()`` is asked after each round that would be followed by another: True stops the run
    there, with ``paused`` set (a lane grown too large hands over to a fresh process).
    """

    def __init__(
        self,
        examine: Callable[[Program], list[Finding]],
        ledger: Ledger,
        *,
        settings: settings,
        max_examples: int,
        spent: Callable[[], int],
        distinct: Callable[[], int] = lambda: 0,
        seed: int | None = None,
        time_budget: float | None = None,
        progress: Callable[[], None] = lambda: None,
        progress_every: float = 10.0,
        run_round: Callable[[int], None] | None = None,
        catalog: tuple[OpSpec, ...] = CATALOG,
        steering: Steering | None = None,
        pause: Callable[[], bool] = lambda: False,
    ) -> None:
        self.examine = examine
        self.catalog = catalog
        self.ledger = ledger
        self.settings = settings
        self.max_examples = max_examples
        self.spent = spent
        self.distinct = distinct
        self.seed = seed
        self.time_budget = time_budget
        self.progress = progress
        self.progress_every = progress_every
        self.steering = steering
        self.run_round = run_round or self.hypothesis_round
        self.deadline: float | None = None
        self.stopped = False
        self.pause = pause
        self.paused = False
        self.rounds = 0  # rounds run

    def stop(self) -> None:
        """Generate nothing more (as if the time budget were spent); shrinking stops too."""
        self.stopped = True

    def hypothesis_test(self, round_number: int = 0) -> Callable[[], None]:
        """The Hypothesis test of one round: the programs left to run, a seed of its own, and
        (after the first round) no replay of the database, whose failures the first round saw.
        Without a seed the settings' own randomness (or derandomization) applies."""
        last_progress = [time.monotonic()]
        base = self.settings
        phases = base.phases if round_number == 0 else tuple(p for p in base.phases if p is not Phase.reuse)
        chosen_seed = derived_seed(self.seed, round_number)
        overrides = dict(derandomize=False) if chosen_seed is not None else {}

        def fuzz(program: Program) -> None:
            if self.out_of_time(program):
                return  # passing quickly lets Hypothesis finish
            start = time.perf_counter()
            to_shrink = self.examine(program)
            self.ledger.stats.seconds += time.perf_counter() - start
            if time.monotonic() - last_progress[0] > self.progress_every:
                last_progress[0] = time.monotonic()
                self.progress()
            if to_shrink:
                # One exception class per bug (cause): Hypothesis shrinks each bug once, not once per path.
                raise failure_type(to_shrink[0].cause_key)(str(to_shrink[0].violation)) from None

        left = max(self.max_examples - self.spent(), 1)
        if self.steering is not None:  # weights fixed for the round; rounds of ROUND programs
            test, left = given(programs(catalog=self.catalog, weights=self.steering.weights()))(fuzz), min(left, ROUND)
        else:
            test = given(programs(catalog=self.catalog))(fuzz)
        if chosen_seed is not None:
            # Before settings: ``seed`` drops the database from settings already applied.
            test = seed(chosen_seed)(test)
        test = settings(
            base,
            max_examples=left,
            phases=phases,
            deadline=None,
            suppress_health_check=list(HealthCheck),
            report_multiple_bugs=True,
            print_blob=False,
            **overrides,
        )(test)
        return test

    def hypothesis_round(self, round_number: int) -> None:
        """One round, with what Hypothesis prints (falsifying examples, its slow-shrinking warning)
        kept from the user: the findings are fuzzdce's to report."""
        with with_reporter(self.hypothesis_said):
            self.hypothesis_test(round_number)()

    def hypothesis_said(self, text: str) -> None:
        if "working to shrink" in str(text):
            self.ledger.log("fuzzdce: Hypothesis stopped shrinking a bug after five minutes of slow progress")

    def out_of_time(self, program: Program) -> bool:
        """Past the time budget nothing new is generated, but for a grace period (half the budget)
        programs smaller than a finding's smallest one still run: those are shrink steps, and an
        unshrunk reproducer is worth little."""
        if self.stopped:
            return True
        now = time.monotonic()
        if self.deadline is None or now <= self.deadline:
            return False
        if now > self.deadline + 0.5 * (self.time_budget or 0):
            return True
        return not self.ledger.larger_than(program)

    def run(self) -> None:
        """Rounds until the programs or the time are spent, or a round finds nothing and evaluates no
        new program (``distinct`` counts the programs evaluated so far, each once)."""
        if self.time_budget:
            self.deadline = time.monotonic() + self.time_budget
        round_number = 0
        while True:
            before, distinct_before, found = self.spent(), self.distinct(), False
            self.ledger.new_round()
            try:
                self.run_round(round_number)
            except (FindingFailure, BaseExceptionGroup) as failure:  # findings are in the ledger
                if not only_findings(failure):
                    raise
                found = True
            round_number += 1
            self.rounds = round_number
            past_deadline = self.stopped or (self.deadline is not None and time.monotonic() > self.deadline)
            if self.spent() == before or self.spent() >= self.max_examples or past_deadline:
                return
            if not found and self.distinct() == distinct_before:
                return  # a quiet round of programs run before: Hypothesis has no new ones to draw
            if self.pause():  # between rounds only: nothing is lost but the next round's start
                self.paused = True
                return
            if not found:
                continue
            self.ledger.log(f"{self.ledger.progress_line()} -- round {round_number + 1}")
