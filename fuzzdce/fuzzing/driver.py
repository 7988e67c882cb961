"""The Hypothesis side of a campaign, in two phases: generation and shrinking.

**Generation.** Rounds of a ``@given`` test that never fails: every program Hypothesis draws is
handed to ``examine`` (evaluated in full, under every placement and path, whatever its size) with
its choice sequence, and Hypothesis goes on drawing until the round's programs are spent. A round
has a seed of its own, derived from the campaign's; rounds go on until the programs or the time
are spent, or a round draws no program not evaluated before (Hypothesis has nothing new to draw).
A finding's choices are saved to the example database under ``GENERATION_KEY``, so the first round
of a later campaign sharing that database replays them. Each program of a round is drawn afresh
from Hypothesis's own distributions (``INDEPENDENT_DRAWS``), not as a variant of the one before.

**Shrinking** (``shrink``): one Hypothesis run per cause, its database holding that cause's smallest
program's choices and its phases only ``reuse`` and ``shrink``. Its test fails only when a program
reproduces that cause's failure (``reproduces``, which evaluates only its path under the Thunders
that keep its verdict), so Hypothesis shrinks that cause and nothing else. Past its deadline the
run stops (``ShrinkStopped``), the cause's smallest program so far kept.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from enum import StrEnum
from typing import Protocol

from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis.control import current_build_context
from hypothesis.database import InMemoryExampleDatabase, choices_to_bytes
from hypothesis.internal.conjecture.providers import AVAILABLE_PROVIDERS, HypothesisProvider
from hypothesis.reporting import with_reporter

try:  # Hypothesis's internals (the pinned version's): see ``no_local_constants``
    from hypothesis.internal.conjecture import providers as _providers
except ImportError:  # pragma: no cover - another Hypothesis
    _providers = None


from fuzzdce.core.errors import HarnessError, harness_message, unexpected_exception
from fuzzdce.core.program import Program
from fuzzdce.core.signatures import short_id
from fuzzdce.fuzzing.config import DriverSettings, derive_seed
from fuzzdce.fuzzing.steering import ROUND, Steering
from fuzzdce.strategies import programs
from fuzzdce.strategies.model_blocks import programs_with_blocks
from fuzzdce.strategies.opinfo import source
from fuzzdce.strategies.programs import INPUT_DTYPES


class GenerationEnd(StrEnum):
    """Why generation ended (``HypothesisDriver.ended``; summary.json's ``generation_ended``, one per
    lane process)."""

    STOPPED = "stopped"  # ``stop()``: Ctrl-C, SIGTERM, or whoever drives the campaign
    RECYCLED = "recycled"  # the lane grew too large: a fresh process goes on
    TIME = "time"  # generation's time is spent: what is left is the work waiting (``time_plan.TimePlan``)
    PROGRAMS = "programs"  # ``--max-examples`` programs were evaluated
    NOTHING_NEW = "nothing new"  # a round drew no program not evaluated before


class FindingFailure(AssertionError):
    """Base of the per-signature exceptions raised to Hypothesis."""


_FAILURE_TYPES: dict[str, type[FindingFailure]] = {}


def failure_type(name: str) -> type[FindingFailure]:
    """One exception class per name: Hypothesis shrinks distinct classes separately."""
    if name not in _FAILURE_TYPES:
        _FAILURE_TYPES[name] = type(f"Finding_{short_id(name)}", (FindingFailure,), {"__module__": __name__})
    return _FAILURE_TYPES[name]


class RoundOver(BaseException):
    """Raised inside a generation round once its programs or the time are spent: the round ends."""


class ShrinkStopped(BaseException):
    """Raised inside a shrink run past its deadline: Hypothesis lets it through, the run ends."""


# Where generation saves its findings' choices in the example database (the first round replays them).
GENERATION_KEY = b"fuzzdce.generation"
SHRINK_KEY = b"fuzzdce.shrink"

Choices = tuple  # a program's Hypothesis choice sequence


class IndependentDraws(HypothesisProvider):
    """Hypothesis's own provider (its distributions, its constants, the run's seeded randomness),
    registered as a backend of its own name (``INDEPENDENT_DRAWS``): what a backend other than
    ``"hypothesis"`` changes is the generate phase, which then draws each example afresh.

    Under the ``"hypothesis"`` backend, generation follows each random example with up to five
    mutations of it (one span copied over another of the same label) and, early on, with its
    novel prefix extended by the simplest choices: near-copies of one program. A campaign of a few
    dozen programs then meets the same few OpInfos again and again, where examples drawn afresh
    meet a new one at nearly every step, and reaches few of Thunder's grad rules.
    The choices of each program are recorded as ever, so the database replays and shrinking
    (which runs on Hypothesis's own backend) are unchanged. What is given up: Hypothesis's
    hill-climbing of ``target()`` inside a round (``steering``'s targets are statistics now; its
    weights steer), and its stopping a round once every program was drawn (the driver's own
    "nothing new" check ends generation a round later)."""


# The backend generation rounds use (``IndependentDraws``), registered the way Hypothesis documents
# for alternative backends (``settings.backend``).
INDEPENDENT_DRAWS = "fuzzdce-independent"
AVAILABLE_PROVIDERS.setdefault(INDEPENDENT_DRAWS, f"{__name__}.IndependentDraws")


def current_choices() -> Choices | None:
    """Inside a ``@given`` test: the choices that drew its arguments (None outside one)."""
    try:
        return tuple(current_build_context().data.choices)
    except Exception:
        return None


@contextlib.contextmanager
def no_local_constants():
    """Hypothesis now and then draws a literal from the source of the "local" modules the process
    has loaded (``sys.modules``; fuzzdce itself when not installed in site-packages, the user's
    placement module, a script): so which modules a process imported changed the programs one seed
    draws (from the third program on, e.g. after importing ``fuzzdce.results.issue``). Inside this, that
    pool is empty: one seed, one sequence. Hypothesis's own constants are kept."""
    original = getattr(_providers, "_get_local_constants", None)
    pool = getattr(_providers, "_local_constants", None)
    if original is None or pool is None:
        yield
        return
    empty = type(pool)(**{name: type(values)(key=values.key) for name, values in vars(pool).items()})
    # Hypothesis also caches, per kind of choice, the local constants it once computed: a test that
    # drew earlier in this process (pytest runs many) left them there. Empty inside, as it was after.
    cache = getattr(_providers, "CONSTANTS_CACHE", None)
    if cache is not None:
        _providers.CONSTANTS_CACHE = type(cache)(cache.max_size)
    _providers._get_local_constants = lambda: empty
    try:
        yield
    finally:
        _providers._get_local_constants = original
        if cache is not None:
            _providers.CONSTANTS_CACHE = cache


@contextlib.contextmanager
def fuzzdce_fault_stops(where: str):
    """Inside a Hypothesis test: an exception out of fuzzdce's own work (an oracle, the ledger,
    the shrinker; what Thunder raises is recorded in the outcome, never raised) becomes a
    ``HarnessError``, which Hypothesis lets through: it never shrinks fuzzdce's fault as a failing
    example, and the campaign stops with exit 3."""
    try:
        yield
    except Exception as e:
        raise HarnessError(harness_message(where, unexpected_exception(e))) from e


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


class DriverHost(Protocol):
    """What the driver asks of whoever it generates for (``Campaign``)."""

    def examine(self, program: Program, choices: Choices | None, weights: object) -> object:
        """Evaluate and record one drawn program in full (a program seen before is not evaluated again)."""

    def evaluated(self) -> int:
        """Programs evaluated in full so far: what ``max_examples`` counts."""

    def distinct(self) -> int:
        """Distinct programs evaluated so far: a round that adds none has nothing new to draw."""

    def new_round(self) -> None:
        """A generation round begins."""

    def progress(self) -> None:
        """Report progress (asked every ``progress_every`` seconds of a round)."""

    def should_pause(self) -> bool:
        """Stop generating here, to go on in a fresh process (a lane grown too large)?"""

    def generation_over(self) -> bool:
        """Is generation's time over: is the time left no more than the work waiting after it?"""

    def log(self, line: str) -> None:
        """Tell the user ``line``."""


class HypothesisDriver:
    """Feeds Hypothesis's programs to ``host.examine`` until ``max_examples`` full evaluations
    (``host.evaluated()``) or the time budget are spent, or a round draws nothing new
    (``host.distinct()`` unchanged).

    ``run_round(round_number)`` runs one round (default: a real Hypothesis run, ``hypothesis_test``);
    tests hand in a stand-in. With ``options.steer``, ``steering`` weighs the catalog per round.
    ``host.should_pause()`` is asked after each program of a round (the first excepted) and after
    each round that would be followed by another: True stops the run there, with ``paused`` set (a
    lane grown too large hands over to a fresh process).
    """

    def __init__(self, host: DriverHost, options: DriverSettings, *, run_round: Callable[[int], None] | None = None) -> None:
        self.host = host
        self.options = options
        # Steering weighs OpInfo entries too where programs draw them (their source loaded once here).
        opinfos = source(INPUT_DTYPES) if options.steer and options.opinfo_rate > 0 else None
        self.steering = Steering(opinfos) if options.steer else None
        self.run_round = run_round or self.hypothesis_round
        self.deadline: float | None = None
        self.stopped = False
        self.paused = False
        self.rounds = 0  # rounds run
        self.ended: GenerationEnd | None = None  # set when ``run`` returns
        self.weights = None  # the current round's steering weights (None: unsteered)

    @property
    def settings(self) -> settings:
        """The Hypothesis settings rounds and shrinks start from."""
        return self.options.hypothesis

    def stop(self) -> None:
        """Generate nothing more (as if the time budget were spent); shrinking stops too."""
        self.stopped = True

    def strategy(self, weights=None):
        options = self.options
        if options.block_rate > 0:  # the block draw comes first: with none, programs draw as they always did
            return programs_with_blocks(
                block_rate=options.block_rate, catalog=options.catalog, weights=weights, opinfo_rate=options.opinfo_rate
            )
        return programs(catalog=options.catalog, weights=weights, opinfo_rate=options.opinfo_rate)

    def hypothesis_test(self, round_number: int = 0) -> Callable[[], None]:
        """The Hypothesis test of one generation round: the programs left to run, a seed of its own,
        and (after the first round) no replay of the database, whose entries the first round saw.
        It never fails, so Hypothesis draws until the round's programs are spent, and never shrinks.
        Without a seed the settings' own randomness (or derandomization) applies."""
        last_progress = [time.monotonic()]
        base = self.settings
        wanted = (Phase.explicit, Phase.generate, Phase.target) + ((Phase.reuse,) if round_number == 0 else ())
        phases = tuple(p for p in base.phases if p in wanted)
        chosen_seed = derived_seed(self.options.seed, round_number)
        overrides = dict(derandomize=False) if chosen_seed is not None else {}
        max_examples = self.options.max_examples
        left = max(max_examples - self.host.evaluated(), 1)
        self.weights = None
        if self.steering is not None:  # weights fixed for the round; rounds of ROUND programs
            self.weights, left = self.steering.weights(), min(left, ROUND)
        # Room for programs drawn again (each round starts from the simplest program; Hypothesis
        # draws a few twice), which are not evaluated again: the round ends when its programs are
        # spent (``RoundOver``), or when Hypothesis has drawn this many.
        spent_at_start = self.host.evaluated()
        round_end = spent_at_start + left
        left = 2 * left + 10
        weights = self.weights

        def fuzz(program: Program) -> None:
            if self.out_of_time() or self.host.evaluated() >= min(round_end, max_examples):
                raise RoundOver
            if self.host.evaluated() > spent_at_start and self.host.should_pause():  # grown too large: stop between programs
                self.paused = True
                raise RoundOver
            with fuzzdce_fault_stops("a generated program's evaluation"):
                self.host.examine(program, current_choices(), weights)
            if time.monotonic() - last_progress[0] > self.options.progress_every:
                last_progress[0] = time.monotonic()
                self.host.progress()

        test = given(self.strategy(weights))(fuzz)
        if chosen_seed is not None:
            # Before settings: ``seed`` drops the database from settings already applied.
            test = seed(chosen_seed)(test)
        test = settings(
            base,
            max_examples=left,
            phases=phases,
            deadline=None,
            suppress_health_check=list(HealthCheck),
            print_blob=False,
            backend=INDEPENDENT_DRAWS,
            **overrides,
        )(test)
        test._hypothesis_internal_database_key = GENERATION_KEY
        return test

    def save(self, choices: Choices | None) -> None:
        """Save a finding's choices in the example database, for later campaigns' first rounds."""
        database = self.settings.database
        if database is not None and choices is not None:
            try:
                database.save(GENERATION_KEY, choices_to_bytes(choices))
            except Exception as e:  # a database gone away loses a replay, not the campaign
                self.host.log(f"fuzzdce: could not save to the example database: {type(e).__name__}: {e}")

    def hypothesis_round(self, round_number: int) -> None:
        """One round, with what Hypothesis prints kept from the user: the findings are fuzzdce's to report."""
        with with_reporter(self.hypothesis_said), no_local_constants():
            try:
                self.hypothesis_test(round_number)()
            except RoundOver:
                pass

    def hypothesis_said(self, text: str) -> None:
        if "working to shrink" in str(text):
            self.host.log("fuzzdce: Hypothesis stopped shrinking a cause after five minutes of slow progress")

    def out_of_time(self) -> bool:
        """Past the time budget, when the host says generation's time is over, or stopped: nothing
        new is generated."""
        return self.stopped or (self.deadline is not None and time.monotonic() > self.deadline) or self.host.generation_over()

    def run(self) -> None:
        """Generation: rounds until the programs or the time are spent, or a round draws no new program.
        Run again (generation resumed after shrinking), it goes on from the next round, whose seed
        is its own."""
        if self.options.time_budget:
            self.deadline = time.monotonic() + self.options.time_budget
        round_number = self.rounds
        while True:
            distinct_before = self.host.distinct()
            self.host.new_round()
            try:
                self.run_round(round_number)
            except (FindingFailure, BaseExceptionGroup) as failure:  # a stand-in round may still raise
                if not only_findings(failure):
                    raise
            round_number += 1
            self.rounds = round_number
            if self.stopped:
                self.ended = GenerationEnd.STOPPED
                return
            if self.paused:
                self.ended = GenerationEnd.RECYCLED
                return
            if self.out_of_time():
                self.ended = GenerationEnd.TIME
                return
            if self.host.evaluated() >= self.options.max_examples:
                self.ended = GenerationEnd.PROGRAMS
                return
            if self.host.distinct() == distinct_before:
                self.ended = GenerationEnd.NOTHING_NEW  # Hypothesis has no new program to draw
                return
            if self.host.should_pause():  # between rounds only: nothing is lost but the next round's start
                self.paused = True
                self.ended = GenerationEnd.RECYCLED
                return

    # --- shrinking --------------------------------------------------------------------------------

    def shrink(
        self,
        choices: Choices,
        reproduces: Callable[[Program], bool],
        *,
        weights=None,
        deadline: float | None = None,
        seed_parts: tuple = (),
    ) -> bool:
        """Shrink one cause: a Hypothesis run whose database holds ``choices`` (the cause's smallest
        program) and whose test fails only when ``reproduces(program)``. Returns True when
        Hypothesis finished shrinking, False when the run stopped at ``deadline`` (or was stopped)."""
        database = InMemoryExampleDatabase()
        # Under the secondary key: an interesting entry under the primary one counts as shrunk already.
        database.save(SHRINK_KEY + b".secondary", choices_to_bytes(choices))
        seen: dict[Program, bool] = {}

        def check(program: Program) -> None:
            if program not in seen:
                if self.stopped or (deadline is not None and time.monotonic() > deadline):
                    raise ShrinkStopped
                with fuzzdce_fault_stops("a shrink step"):
                    seen[program] = reproduces(program)
            if seen[program]:
                raise failure_type("shrink")("reproduces")

        test = given(self.strategy(weights))(check)
        if self.options.seed is not None:
            test = seed(derive_seed(self.options.seed, "shrink", *seed_parts))(test)
        test = settings(
            self.settings,
            database=database,
            max_examples=1,
            phases=(Phase.reuse, Phase.shrink),
            deadline=None,
            suppress_health_check=list(HealthCheck),
            report_multiple_bugs=False,
            print_blob=False,
            derandomize=False,
        )(test)
        test._hypothesis_internal_database_key = SHRINK_KEY
        try:
            with with_reporter(lambda text: None), no_local_constants():
                test()
        except ShrinkStopped:
            return False
        except (FindingFailure, BaseExceptionGroup) as failure:
            if not only_findings(failure):
                raise
        return not self.stopped
