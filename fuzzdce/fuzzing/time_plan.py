"""A campaign's time plan: its phases, when each must end, and how long each took.

``--time-budget S`` is the campaign's wall time (``TimePlan``), counted from the process's start
(``process_started_at``: a command's imports count too). Generation ends when the time left is no
more than the work waiting after it (``Campaign.generation_over``: ``Shrinker.waiting_seconds``,
``cause_seconds`` per shrink waiting, counted per decision (``shrinking.shrink_unit``: the causes
of one decision are one bug, shrunk once; an undecided cause, per program), one full evaluation and
its shrink steps' compiles; the bugs' replays, ``Shrinker.confirm_reserve``, likewise per decision;
and the budget after
``SHRINK_END``), within ``LEFT_AFTER_GENERATION`` of the budget, and resumes if shrinking ends with
its time left (``Campaign.generation_resumes``); shrinking ends at ``SHRINK_END`` less the
confirming reserve (at most ``CONFIRM_MOST``), joining at ``JOIN_END``; confirming and writing the
findings folder have the rest. ``PhaseClock.timed(phase)`` counts each phase's seconds. Within
shrinking, Hypothesis's shrink of a cause has its share of the time the waiting causes' passes leave
(``hypothesis_seconds``), and each lane takes a share of the causes first (``lane_share``).
"""

from __future__ import annotations

import contextlib
import os
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from fuzzdce.core.signatures import identity_id


class Phase(StrEnum):
    """A campaign's phases, in order: what ``summary.json``'s ``phases`` counts seconds of."""

    GENERATION = "generation"  # new programs, each evaluated in full
    SHRINKING = "shrinking"  # each cause shrunk against its failing configuration
    JOINING = "joining"  # minimal programs evaluated everywhere, causes joined into bugs
    CONFIRMING = "confirming"  # each bug's smallest program replayed once
    WRITING = "writing"  # the findings folder rewritten: every bug's folder, summary.json
    # Each regression cause bisected to its decision (``Shrinker.decide``): timed inside the phase
    # that asks for it (generation decides as found), and counted apart from it.
    DECIDING = "deciding"


# The least and the most of the time budget that generation leaves to the phases after it. Within
# these, what it leaves is the work waiting: a fixed share cuts causes short when many wait, and
# leaves time to nothing when none do. The most is generous, since a campaign finding many faults
# needs it to shrink them, and one with few causes waiting never reaches it.
LEFT_AFTER_GENERATION = (0.10, 0.40)
# The work a program whose causes wait to be shrunk leaves after generation: its smallest program
# settled (once on every path under every Thunder: one full evaluation, generation's mean), and its
# shrink steps, each of which compiles one path under one or two Thunders (``shrinking.Configuration``)
# however many Thunders the campaign evaluates, so they are counted in compiles (generation's mean
# seconds per compile): ``PASS_STEP_COMPILES`` for a cause's statement-level passes, a wrong
# value's localising prefixes, settling and confirming, and ``SHRINK_STEP_COMPILES`` with
# Hypothesis's shrink of shapes, values and dtypes besides, both what a stock campaign's causes
# compiled. Counted in full evaluations instead, a campaign of many Thunders would reserve several
# times what its causes' steps compile, and end generation early.
PASS_STEP_COMPILES = 18
SHRINK_STEP_COMPILES = 30


def cause_seconds(evaluation_seconds: float, compile_seconds: float, step_compiles: int = SHRINK_STEP_COMPILES) -> float:
    """The seconds one cause's work after generation takes: one full evaluation of
    ``evaluation_seconds`` (settling) and ``step_compiles`` compiles of ``compile_seconds``."""
    return evaluation_seconds + step_compiles * compile_seconds


# The most of the time budget shrinking leaves before its end to replay the bugs found so far
# (``Shrinker.confirm_reserve``: one full evaluation per program to replay). A lane replays its own
# there, on its warm worker: the merged campaign's last share alone is too short to replay a
# campaign's bugs, and a replay of a bug's paths costs seconds.
CONFIRM_MOST = 0.10
# Of the time budget, from the campaign's start: shrinking ends, then joining (the lanes' settling,
# then the merged campaign's); confirming and writing have the rest.
SHRINK_END = 0.95
JOIN_END = 0.975


def process_started_at() -> float:
    """When this process started (``time.time()``'s clock), so that a command's imports count
    against its time budget too: from /proc where there is one, else now."""
    try:
        ticks = int(Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()[19])
        boot = next(float(line.split()[1]) for line in Path("/proc/stat").read_text().splitlines() if line.startswith("btime"))
        started = boot + ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, StopIteration):
        return time.time()
    return started if started <= time.time() else time.time()


@dataclass(frozen=True)
class TimePlan:
    """When each phase must end: ``budget`` seconds of wall time from ``start`` (``time.time()``;
    lanes share their parent's), None for no budget."""

    budget: float | None
    start: float

    def end(self, phase: Phase) -> float | None:
        """The wall-clock time ``phase`` must end by at the latest (None: no budget); generation
        may end earlier (``generation_over``)."""
        if not self.budget:
            return None
        share = {Phase.GENERATION: 1.0 - min(LEFT_AFTER_GENERATION), Phase.SHRINKING: SHRINK_END, Phase.JOINING: JOIN_END}.get(
            phase, 1.0
        )
        return self.start + share * self.budget

    def generation_over(self, waiting: float) -> bool:
        """Is generation's time over, with ``waiting`` seconds of work waiting after it: is the time
        left no more than that work, held within ``LEFT_AFTER_GENERATION`` of the budget?"""
        if not self.budget:
            return False
        least, most = LEFT_AFTER_GENERATION
        left_after = min(max(waiting, least * self.budget), most * self.budget)
        return time.time() >= self.start + self.budget - left_after

    def left(self, phase: Phase, reserve: float = 0.0) -> float | None:
        """Seconds left until ``phase`` must end, ``reserve`` seconds before its end (never below 0;
        None: no budget)."""
        end = self.end(phase)
        return None if end is None else max(0.0, end - reserve - time.time())

    def over(self, phase: Phase, reserve: float = 0.0) -> bool:
        left = self.left(phase, reserve)
        return left is not None and left <= 0


class PhaseClock:
    """Seconds per phase, added to ``seconds`` (``Stats.phases``); a phase timed inside another is
    not counted for the outer one. ``current`` names the phase running (the progress line's)."""

    def __init__(self, seconds: Counter) -> None:
        self.seconds = seconds
        self.current: Phase | None = None
        self._since = time.perf_counter()

    @contextlib.contextmanager
    def timed(self, phase: Phase) -> Iterator[None]:
        outer, now = self.current, time.perf_counter()
        if outer is not None:
            self.seconds[outer] += now - self._since
        self.current, self._since = phase, now
        try:
            yield
        finally:
            now = time.perf_counter()
            self.seconds[phase] += now - self._since
            self.current, self._since = outer, now


def hypothesis_seconds(left: float, waiting: int, passes_each: float) -> float:
    """The seconds Hypothesis's shrink of one cause gets, with ``left`` seconds of shrinking left
    and ``waiting`` causes to shrink after it, whose statement-level passes take ``passes_each``
    seconds each: an equal share of the time their passes do not need. The passes come first
    whatever is left (they make a bug's program minimal): an equal share of all the time left for
    each Hypothesis shrink spends it on the first causes and leaves the rest unshrunk. Hypothesis
    returns what a shrink does not use, to the causes after it."""
    return max(0.0, left - waiting * passes_each) / (waiting + 1)


def lane_share(cause: tuple, lanes: int) -> int:
    """Which of ``lanes`` lanes shrinks the cause ``cause`` first: lanes find many of the same
    causes (each starts from Hypothesis's simplest programs) and know nothing of each other's, so
    each takes a share of its own first, by a hash every process computes alike."""
    return int(identity_id(cause), 16) % max(1, lanes)
