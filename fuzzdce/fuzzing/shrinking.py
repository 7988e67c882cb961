"""After generation: each cause shrunk against its failing configuration, causes joined into bugs, each
bug confirmed once, within the campaign's time plan. This module holds that state; ``Campaign`` only calls it.

- **The time plan** (``time_plan``): when each phase must end, and the share of it each cause gets.
- **Shrinking** (``Shrinker.shrink``): a shrink step evaluates the cause's first path and the fewest
  Thunders that keep its verdict (``Configuration``): a shared cause, the reference alone; a
  regression, its first placement, and the reference only on a candidate that still fails there; a
  fixed cause, the reference, and the Thunders under test only on a candidate that still fails there. A candidate keeps the cause's
  failure when it shows a violation of the same path, oracle and fault (``joining.same_failure``). The statement-level passes (``shrink_passes``) run first, to their
  end; then Hypothesis's shrinker, from the cause's choices (it reduces shapes, values and dtypes
  as well as ops), within its share of the time the waiting causes' passes leave
  (``hypothesis_seconds``), its result, when smaller, reduced by the passes again. The final program is
  evaluated once on every path under every placement (``settle``): triaged there, recorded, and
  what it shows joins its cause. Causes are taken in turn (``Shrinker.ordered_causes``): one per
  bug the findings make so far before a second of any, a lane's own share (``lane_share``) first:
  two lanes find many causes alike and share no cache.
- **Joining** (``Shrinker.join``): every cause's smallest program is settled (the unshrunk ones
  too), and a cause joins another when a settled program of one shows the other's failure with the
  same verdict and a placement in common (``joining.placed_marks``); ``joining``'s kept-apart labels keep two
  causes apart when one program merely shows both.
- **Deciding** (``Shrinker.decide_found``): each regression cause under a patch placement, bisected
  to the placement's call that breaks (``bisection``) as soon as it shows, on that program
  and its path, in the lane, before generation goes on: the bug is known by that decision. A
  bisection is a few runs of one program on one path, far fewer than a shrink; a decision is made on
  its finding's program (``Bisection.program``), so a smaller program (generation's, or a shrink's
  when settled) drops it (``FindingStore.add``) and the cause is decided again on that one. Causes of
  one decision are one bug from then on, and shrinking works per decision: the first cause of a
  decision is shrunk, the others need no shrink of their own (``Shrinker.shrunk_decisions``). What
  the budget left undecided says so (``Shrinker.mark_undecided``).
- **Confirming** (``Shrinker.confirm``): once per bug, its smallest program on its own paths under
  the Thunders that showed it and those that must not.

Every evaluation goes through the campaign's ``Evaluator``, whose cache (``evaluate``) never runs one
(program, inputs, path, placement) twice within a campaign; confirming alone replays.
"""

from __future__ import annotations

import dataclasses
import time
from collections import Counter
from typing import NamedTuple

from fuzzdce.core.decisions import Bisection
from fuzzdce.core.findings import Bug, Finding, Triaged, program_text, size, triage
from fuzzdce.core.joining import placed_marks, same_failure, settled_links
from fuzzdce.core.model import STOCK, Placement, Violation
from fuzzdce.core.program import Domain, Program
from fuzzdce.core.signatures import identity_id
from fuzzdce.core.vocabulary import Verdict
from fuzzdce.fuzzing import shrink_passes
from fuzzdce.fuzzing.bisection import bisect_failure, bisect_fix
from fuzzdce.fuzzing.driver import current_choices
from fuzzdce.fuzzing.ledger import shown_traces
from fuzzdce.fuzzing.time_plan import CONFIRM_MOST, PASS_STEP_COMPILES, Phase, cause_seconds, hypothesis_seconds, lane_share
from fuzzdce.running.evaluate import violations_of
from fuzzdce.running.placements import PLACEMENTS


def shrink_unit(smallest: Finding):
    """What one shrink serves, for a cause whose smallest finding is ``smallest``: its decision,
    where bisection named one (causes of one decision are one bug, shrunk once), else its smallest
    program (the causes one program shows, on several paths or oracles, are mostly one shrink: its
    settled program shows the others)."""
    return smallest.decision_identity or smallest.program


def finite_if_it_fails(program: Program, fails) -> Program:
    """``program`` with its NaN-and-infinity inputs drawn from ``real`` instead, when it fails so
    too: a bug that keeps them needs them (``findings.Bug.needs_nonfinite``)."""
    inputs = tuple(dataclasses.replace(i, domain=Domain.REAL) if i.domain == Domain.NONFINITE else i for i in program.inputs)
    if inputs == program.inputs:
        return program
    finite = dataclasses.replace(program, inputs=inputs)
    return finite if fails(finite) else program


class Configuration(NamedTuple):
    """The Thunders a shrink step runs: ``showing`` must show the cause's failure; each of
    ``passing``, asked only of a candidate that does, must not (the verdict would change)."""

    showing: Placement
    passing: tuple[Placement, ...]


class Shrinker:
    """Shrinking, joining and confirming for ``campaign`` (its ledger, evaluator, driver,
    placements, paths, plan and log), and their state: the settled programs and what each shows."""

    def __init__(self, campaign) -> None:
        self.campaign = campaign
        self.shown: dict[Program, list[Triaged]] = {}  # settled program -> what it shows, everywhere
        self.shown_marks: set[tuple[str, str]] = set()  # (mark, placement) of everything a settled program shows
        self.origin: dict[Program, str] = {}  # settled program -> the cause whose shrink gave it
        self.done: set[str] = set()  # causes shrunk (to their end or not)
        self.seconds: Counter = Counter()  # cause -> seconds of its shrink steps
        self.pass_seconds: list[float] = []  # each shrunk cause's passes and settling, in seconds
        self.reserve = 0.0  # seconds shrinking leaves before its end to confirm (``confirm_reserve``)
        # The decisions (``Bisection.identity``) of the causes shrunk: a cause of one of them is
        # that decision's bug, which needs no second shrink.
        self.shrunk_decisions: set[tuple] = set()
        # (program, path) where a gated run did not finish (``Bisection.finished``): a hang there
        # costs its job's whole limit, so no other cause is bisected on it (``decide``).
        self.unfinished: set[tuple[Program, str]] = set()

    @property
    def store(self):
        return self.campaign.ledger.store

    # --- which causes, in which order -------------------------------------------------------------

    def ordered_causes(self) -> list[tuple[str, list[Finding]]]:
        """The causes: the first of each bug the findings make so far (``FindingStore.bugs``: the
        cause of its smallest program) before the second of any, so that each bug gets a shrink
        while there is time (a bug may hold many causes, and shrinking them all can outlast the
        budget); within that, this lane's share first (``lane_share``), regressions first, then by
        first sighting."""
        shrinking = self.campaign.settings.shrinking
        rank: dict[tuple, int] = {}  # every cause is in one bug
        for bug in self.store.bugs():
            for i, key in enumerate(dict.fromkeys(f.cause_key for f in bug.members)):
                rank[key] = i
        return sorted(
            self.store.causes().items(),
            key=lambda kv: (
                rank[kv[0]] > 0,
                lane_share(kv[0], shrinking.lanes) != shrinking.lane,
                rank[kv[0]],
                kv[1][0].verdict != Verdict.REGRESSION,
                kv[1][0].first_seen_seconds or 0.0,
                identity_id(kv[0]),
            ),
        )

    def to_shrink(self, key: tuple, members: list[Finding]) -> bool:
        """A verdict that fails, not shrunk yet, its program not already settled?"""
        smallest = members[0]
        return (
            self.campaign.ledger.fails(smallest.verdict)
            and key not in self.done
            and smallest.shrunk is None
            and smallest.program not in self.shown
        )

    def waiting_seconds(self, evaluation_seconds: float, compile_seconds: float) -> float:
        """The work waiting after generation, in seconds, when a program takes
        ``evaluation_seconds`` to evaluate in full and a compile ``compile_seconds``:
        ``time_plan.cause_seconds`` for each shrink waiting (``shrink_unit``: a decision, or an
        undecided cause's smallest program) of the causes to shrink."""
        waiting = {
            shrink_unit(members[0])
            for key, members in self.store.causes().items()
            if self.to_shrink(key, members) and not self.shown_by_a_settled_program(members) and not self.decision_shrunk(members)
        }
        return len(waiting) * cause_seconds(evaluation_seconds, compile_seconds)

    def decision_shrunk(self, members: list[Finding]) -> bool:
        """Is the cause of ``members`` decided alike to a cause already shrunk (``shrunk_decisions``)?"""
        decided = members[0].decision_identity
        return decided is not None and decided in self.shrunk_decisions

    def shown_by_a_settled_program(self, members: list[Finding]) -> bool:
        """Does a settled program show one of ``members`` (``placed_marks``)?"""
        return any(placed_marks(f) & self.shown_marks for f in members)

    def keep_shown(self, program: Program, shown: list[Triaged]) -> None:
        """Record what the settled ``program`` shows (the first record of it stands)."""
        if program not in self.shown:
            self.shown[program] = shown
            self.shown_marks.update(*(placed_marks(t) for t in shown))

    # --- shrinking ---------------------------------------------------------------------------------

    def shrink_all(self) -> None:
        """Each cause not shrunk yet, in turn, its passes first and Hypothesis within its share
        (``hypothesis_seconds``); a cause a settled program already shows, or one of a decision
        already shrunk, needs no shrink of its own. First any regression cause not decided yet
        (generation decides them as found: here, those it had no time for) is bisected."""
        for key, _ in self.ordered_causes():
            if self.shrinking_over():
                return
            self.decide(key)
        while not self.shrinking_over():
            self.reserve = self.confirm_reserve()
            todo = []
            for key, members in self.ordered_causes():
                if not self.to_shrink(key, members):
                    continue
                if self.shown_by_a_settled_program(members) or self.decision_shrunk(members):
                    self.done.add(key)  # it joins that program's (or decision's) bug: no shrink of its own
                else:
                    todo.append((key, members))
            if not todo:
                return
            key, members = todo[0]
            if members[0].decision_identity is not None:  # its decision's other causes wait for no shrink of their own
                self.shrunk_decisions.add(members[0].decision_identity)
            self.shrink(key, waiting=len(todo) - 1)
            self.campaign.progress()

    def confirm_reserve(self) -> float:
        """The seconds shrinking leaves before its end to replay the bugs found so far (``confirm``):
        a full evaluation (generation's mean) per smallest program with a finding not replayed, at
        most ``CONFIRM_MOST`` of the budget; none where the campaign confirms nothing."""
        campaign = self.campaign
        if not campaign.settings.output.confirm or not campaign.plan.budget:
            return 0.0
        # A decision's causes are one bug, one replay.
        to_replay = {shrink_unit(members[0]) for members in self.store.causes().values() if members[0].confirmed is None}
        return min(len(to_replay) * campaign.stats.seconds_per_program, CONFIRM_MOST * campaign.plan.budget)

    def shrinking_over(self) -> bool:
        """Is shrinking's time over: the campaign stopped, or its end less the confirming reserve reached?"""
        return self.campaign.driver.stopped or self.campaign.plan.over(Phase.SHRINKING, self.reserve)

    def passes_each(self) -> float:
        """The seconds a cause's statement-level passes and settling take: the mean of this
        shrinking's so far, or, before any, one full evaluation and ``PASS_STEP_COMPILES`` compiles."""
        if self.pass_seconds:
            return sum(self.pass_seconds) / len(self.pass_seconds)
        stats = self.campaign.stats
        return cause_seconds(stats.seconds_per_program, stats.seconds_per_compile, PASS_STEP_COMPILES)

    def thunders(self) -> dict[str, Placement]:
        """Every Thunder the campaign evaluates, by name: stock, the reference, the placements."""
        campaign = self.campaign
        return {p.name: p for p in (PLACEMENTS[STOCK], campaign.reference, *campaign.placements)}

    def configuration(self, finding: Finding) -> Configuration:
        """The Thunders a shrink step of ``finding``'s cause runs (``Configuration``)."""
        reference, thunders = self.campaign.reference, self.thunders()
        if finding.verdict == Verdict.REGRESSION:
            return Configuration(thunders[finding.placements[0]], (reference,))
        if finding.verdict in (Verdict.FIXED, Verdict.MASKED):
            return Configuration(reference, tuple(p for name, p in thunders.items() if name != reference.name))
        return Configuration(reference, ())

    def shows_target(self, program: Program, under: Placement, target: Violation, paths: list[str]) -> bool:
        """Does ``program`` show ``target``'s failure (``same_failure``) under ``under`` on ``paths``?"""
        evaluations = self.campaign.evaluate(program, [under], paths, alone=True)
        return any(same_failure(v, target) for v in evaluations[under.name].violations)

    def failing(self, finding: Finding, key: tuple):
        """The shrink predicate of ``finding``'s cause: does a program still fail the same way on the
        finding's path under the Thunder showing it, and (asked only then) pass under each that must?"""
        target, path = finding.violation, [finding.violation.path]
        configuration = self.configuration(finding)
        verdicts: dict[Program, bool] = {}

        def fails(program: Program) -> bool:
            if program not in verdicts:
                started = time.perf_counter()
                verdicts[program] = self.shows_target(program, configuration.showing, target, path) and not any(
                    self.shows_target(program, other, target, path) for other in configuration.passing
                )
                self.seconds[key] += time.perf_counter() - started
            return verdicts[program]

        return fails

    def shrink(self, key: tuple, waiting: int = 0) -> bool:
        """Shrink one cause (``key``), ``waiting`` causes still to shrink after it: the
        statement-level passes first (cheap, and they leave no statement or returned value that can
        go), to their end or to the end of shrinking's time; then Hypothesis from the cause's
        choices (shapes, values, dtypes) within its share of the time the waiting causes' passes do
        not need (``hypothesis_seconds``), whose result, when smaller, the passes take on again.
        The result is settled. Returns whether the passes finished."""
        campaign = self.campaign
        self.done.add(key)
        smallest = self.store.causes()[key][0]
        fails = self.failing(smallest, key)

        def out_of_time() -> bool:
            return self.shrinking_over()

        if not fails(smallest.program):  # it no longer fails alone (flaky): keep it as it is
            self.settle(smallest.program, smallest.choices, smallest.weights, origin=key, finished=False)
            return False
        started = time.perf_counter()
        reduced, finished = shrink_passes.reduce(smallest.program, fails, out_of_time=out_of_time)
        passes = time.perf_counter() - started
        best = [reduced, smallest.choices if reduced == smallest.program else None]

        def reproduces(program: Program) -> bool:
            hit = fails(program)
            if hit and size(program) < size(best[0]):
                best[:] = [program, current_choices()]
            return hit

        left = campaign.plan.left(Phase.SHRINKING, self.reserve)
        seconds = None if left is None else hypothesis_seconds(left, waiting, self.passes_each())
        if finished and smallest.choices is not None and not out_of_time() and seconds != 0:
            deadline = None if seconds is None else time.monotonic() + seconds
            if not campaign.driver.shrink(
                smallest.choices, reproduces, weights=smallest.weights, deadline=deadline, seed_parts=(key,)
            ):
                campaign.log(f"fuzzdce: Hypothesis's shrink of the cause of finding {smallest.id} stopped for time")
            if best[0] != reduced:
                reduced, finished = shrink_passes.reduce(best[0], fails, out_of_time=out_of_time)
        reduced = finite_if_it_fails(reduced, fails)
        choices = best[1] if reduced == best[0] else None
        if not finished:
            campaign.log(
                f"fuzzdce: shrinking of the cause of finding {smallest.id} stopped at {reduced.n_ops} ops: time ({self.seconds[key]:.0f} s)"
            )
        started = time.perf_counter()
        self.settle(reduced, choices, smallest.weights, origin=key, finished=finished)
        if finished:  # a cut pass says nothing of what a pass takes
            self.pass_seconds.append(passes + time.perf_counter() - started)
        campaign.driver.save(choices)
        return finished

    def settle(self, program: Program, choices, weights, *, origin: str | None, finished: bool) -> None:
        """Evaluate ``program`` on every path under every placement, once: every finding it shows is
        recorded (it may now be their smallest program), and what it shows is kept for joining.
        A finished shrink's findings of it are marked shrunk; a cut one's cause, stopped."""
        campaign = self.campaign
        if program not in self.shown:
            evaluations = campaign.evaluate_everywhere(program)
            new = campaign.ledger.record(program, evaluations, choices=choices, weights=weights)
            self.keep_shown(program, list(triage(violations_of(evaluations)).values()))
            self.decide_found(new)  # a cause it is smaller for lost a decision made on its larger program
            if campaign.folder is not None:
                # The traces of each bug this program is the smallest of: ``record`` wrote every
                # bug's record, and the whole bug only where the program was new to its smallest.
                for bug in campaign.ledger.bugs():
                    if bug.smallest.program == program and not any(bug.smallest is f for f in new):
                        campaign.folder.write(bug, shown_traces(bug.smallest, evaluations, campaign.reference.name))
        if origin is not None:
            self.origin.setdefault(program, origin)
        fails = campaign.ledger.fails
        for finding in self.store:
            if finding.program == program:
                if finished:
                    finding.shrunk = True
                elif finding.shrunk is None and fails(finding.verdict):
                    finding.shrunk = False
        if not finished and origin in self.store.causes():
            for finding in self.store.causes()[origin]:
                if finding.shrunk is None and fails(finding.verdict):
                    finding.shrunk = False

    # --- joining -----------------------------------------------------------------------------------

    def join(self) -> None:
        """Shrink what no one did (time allowing), settle every cause's smallest program, bisect the
        causes no shrink bisected, then join each cause to the causes its settled programs show."""
        try:
            with self.campaign.phases.timed(Phase.SHRINKING):
                self.shrink_all()
            self.settle_rest()
            for key, _ in self.ordered_causes():  # the first cause of each bug first
                if self.deciding_over():
                    break
                self.decide(key)
                self.explain_gone(key)
        finally:  # what was settled is joined, even where a job was cut at the budget's end (``OutOfTime``)
            self.mark_cut_short()
            self.mark_undecided()
            self.link()

    # --- deciding ----------------------------------------------------------------------------------

    def decidable(self, key: tuple) -> tuple[Finding, Placement] | None:
        """Cause ``key``'s smallest finding and the placement to bisect, when the cause is a
        regression under a placement other than the reference whose smallest program has no
        decision yet; else None."""
        members = self.store.causes().get(key)
        if not members or members[0].decision is not None or members[0].verdict != Verdict.REGRESSION:
            return None
        placement = self.thunders().get(members[0].placements[0])
        if placement is None or placement.name == self.campaign.reference.name:
            return None
        return members[0], placement

    def explain_gone(self, key: tuple) -> None:
        """For cause ``key``, a failure of the reference's that the Thunders under test do not show:
        under each patch placement among them, bisect the other way (``bisection.bisect_fix``, on the
        cause's smallest program) to the edit without which the failure comes back, so the report
        says what made it go. One that still fails that path otherwise (``Finding.unclean``) fixed
        it only where that names an edit (``findings.is_fixed``); a build cannot be gated."""
        members = self.store.causes().get(key)
        if not members or members[0].verdict != Verdict.FIXED or members[0].fixed_by:
            return
        smallest, thunders, reference = members[0], self.thunders(), self.campaign.reference.name
        found = []
        started = time.perf_counter()
        for name, placement in thunders.items():
            if name != reference and placement.build is None and not placement.is_stock:
                found.append(bisect_fix(self.campaign.evaluate, smallest.program, placement, smallest.violation))
        self.seconds[key] += time.perf_counter() - started
        for finding in members:
            if finding.program == smallest.program:
                finding.fixed_by = tuple(found)

    def decide(self, key: tuple, shared: dict | None = None) -> None:
        """Bisect cause ``key``'s failure, when ``decidable``, to the call of what the placement
        replaced without which it goes (``bisection.bisect_failure``, on the cause's smallest
        program and its path, unlocalised: a gated prefix would gate other calls); the cause's
        findings of that program are then known by that decision (``Finding.decision``), and its
        bug by it. Its other findings, of larger programs, need none: they join their cause."""
        found = self.decidable(key)
        if found is None:
            return
        smallest, placement = found
        on = (smallest.program, smallest.violation.path)
        started = time.perf_counter()
        if on in self.unfinished:
            why = f"a gated run of its program on {on[1]} did not finish before"
            bisection = self.undecided(smallest, placement, why, finished=False)
        else:
            known = self.known_decisions(placement.name)
            with self.campaign.phases.timed(Phase.DECIDING):
                bisection = bisect_failure(self.campaign.evaluate, smallest.program, placement, smallest.violation, shared, known)
            if not bisection.finished:
                self.unfinished.add(on)
        self.seconds[key] += time.perf_counter() - started
        for finding in self.store.causes()[key]:
            if finding.program == smallest.program and finding.decision is None:
                finding.decision = bisection

    def known_decisions(self, placement: str) -> set[tuple]:
        """The decisions ``placement``'s causes were bisected to so far: a new cause tries each
        first (``bisection.bisect``), so a cause of a known decision joins it in a few runs."""
        return {
            f.decision.identity
            for f in self.store
            if f.decision is not None and f.decision.placement == placement and f.decision.identity is not None
        }

    def decide_found(self, findings: list[Finding]) -> None:
        """Decide as found: the causes of ``findings`` (new, or with a smaller program, which dropped
        a decision made on the larger), each once, as soon as a program shows them (``decide``), while
        the campaign's time allows (``deciding_over``; ``mark_undecided`` says which it did not)."""
        shared: dict = {}  # gated runs, shared by the causes one program shows on one path (``bisect_failure``)
        for key in dict.fromkeys(f.cause_key for f in findings if f.verdict == Verdict.REGRESSION):
            if self.deciding_over():
                return
            self.decide(key, shared)

    @staticmethod
    def undecided(smallest: Finding, placement: Placement, why: str, *, finished: bool = True) -> Bisection:
        """A decision that names none, and says ``why``, for the finding ``smallest`` (``finished``:
        ``Bisection.finished``)."""
        return Bisection(
            placement.name,
            note=why,
            path=smallest.violation.path,
            oracle=smallest.violation.oracle,
            program=program_text(smallest.program),
            finished=finished,
        )

    def deciding_over(self) -> bool:
        """Is there no time left to bisect: the campaign stopped, or joining's end reached?"""
        return self.campaign.driver.stopped or self.campaign.spent or self.campaign.plan.over(Phase.JOINING)

    def mark_undecided(self) -> None:
        """Give each cause the campaign had no time to bisect (``decidable`` still) a decision that
        says so: its bug then says why it names none."""
        for key in self.store.causes():
            found = self.decidable(key)
            if found is None:
                continue
            smallest, placement = found
            note = self.undecided(smallest, placement, "the campaign's time ran out before it was bisected")
            for finding in self.store.causes()[key]:
                if finding.program == smallest.program and finding.decision is None:
                    finding.decision = note

    def settle_rest(self) -> None:
        """Settle every cause's smallest program not settled yet, even one whose shrink was cut
        short (a program generation drew costs nothing: the cache has it); a cause a settled
        program already shows needs none. Causes of shrunk verdicts never shrunk are marked so."""
        campaign = self.campaign
        for key, members in self.ordered_causes():
            if campaign.driver.stopped or campaign.plan.over(Phase.JOINING):
                break
            smallest = members[0]
            if smallest.program not in self.shown and not self.shown_by_a_settled_program(members):
                self.settle(smallest.program, smallest.choices, smallest.weights, origin=key, finished=bool(smallest.shrunk))
        self.mark_cut_short()

    def mark_cut_short(self) -> None:
        """Mark the causes of failing verdicts no shrink finished: no time was left to shrink them."""
        for members in self.store.causes().values():
            if self.campaign.ledger.fails(members[0].verdict) and members[0].shrunk is None:
                members[0].shrunk = False

    def link(self) -> None:
        """Record the links ``joining.settled_links`` finds between causes: a cause whose settled
        smallest program shows another (``FindingStore.link`` joins one verdict only)."""
        causes = self.store.causes()
        for key, other in settled_links(causes, self.shown):
            self.store.link(
                causes[key][0], causes[other][0], f"shown by the settled minimal program of finding {causes[key][0].id}"
            )

    def absorb(self, other: Shrinker) -> None:
        """Fold in a lane's settled programs (what they show, whose shrink gave them)."""
        for program, shown in other.shown.items():
            self.keep_shown(program, shown)
        for program, key in other.origin.items():
            self.origin.setdefault(program, key)
        self.done |= other.done
        self.seconds.update(other.seconds)
        self.shrunk_decisions |= other.shrunk_decisions
        self.unfinished |= other.unfinished

    # --- confirming --------------------------------------------------------------------------------

    def confirm(self, bugs: list[Bug], until: Phase = Phase.CONFIRMING) -> None:
        """Replay each bug's smallest program once (no cache), by ``until``'s end, on the paths of
        its members not yet replayed (``Finding.confirmed`` None: a lane may have replayed them)
        under the Thunders that showed them and those that must not (``Configuration.passing``): a
        member shown again by each that showed it and by none of the others is confirmed, any other
        is not; members of other programs are left unknown."""
        campaign, thunders = self.campaign, self.thunders()
        for bug in bugs:
            smallest = bug.smallest
            # Each member of the smallest program not replayed yet, with the Thunders that must not show it.
            members = [
                (f, {p.name for p in self.configuration(f).passing})
                for f in bug.members
                if f.program == smallest.program and f.confirmed is None
            ]
            if not members:
                continue
            if campaign.plan.over(until):
                left = "left to the merged campaign" if until != Phase.CONFIRMING else "not confirmed"
                campaign.log(f"fuzzdce: out of time: the remaining bugs are {left}")
                return
            asked = {name for f, must_pass in members for name in (*f.placements, *must_pass)}
            chosen = [p for name, p in thunders.items() if name in asked]
            paths = sorted({f.violation.path for f, _ in members})
            evaluations = campaign.evaluate(smallest.program, chosen, paths, alone=True, cache=False)
            for finding, must_pass in members:
                again = {
                    name for name in evaluations if any(same_failure(v, finding.violation) for v in evaluations[name].violations)
                }
                finding.confirmed = set(finding.placements) <= again and not (again & must_pass)
                if not finding.confirmed:
                    campaign.log(f"finding {finding.id} did not reproduce the same on its smallest program")
