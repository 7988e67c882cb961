"""One fault one entry (the joins beside ``cause_key``), the evaluation cache, the time plan and the
phase clock: on synthetic findings and a stand-in job runner, no Thunder."""

import time
from collections import Counter
from types import SimpleNamespace

import pytest
from builders import StandInCampaign, StandInEvaluator, chain, raised, split, store_of, wrong_values
from builders import malformed as malformed_trace

from fuzzdce.core.findings import FindingStore
from fuzzdce.core.joining import same_failure
from fuzzdce.core.model import EAGER, Outcome
from fuzzdce.core.vocabulary import Verdict
from fuzzdce.fuzzing.config import ShrinkingSettings
from fuzzdce.fuzzing.shrinking import Shrinker
from fuzzdce.fuzzing.time_plan import (
    CONFIRM_MOST,
    LEFT_AFTER_GENERATION,
    SHRINK_END,
    SHRINK_STEP_COMPILES,
    Phase,
    PhaseClock,
    TimePlan,
)
from fuzzdce.running.evaluate import Evaluator, PathResult
from fuzzdce.running.placements import resolve


def program(op="exp", seed=1):
    return chain(op, seed=seed)


def malformed(path, op="amax"):
    """A malformation each ``op`` makes its own (its kind names the op)."""
    return malformed_trace(path, f"an output of {op} none of its subsymbols produces")


def test_findings_whose_shrunk_programs_are_identical_are_one_bug_whatever_the_path():
    """elu's gradient at NaN showed on three paths with the identical 2-op program: one bug."""
    store = store_of(*((Verdict.REGRESSION, ("p",), wrong_values(path), program(), True) for path in ("a", "b", "c")))
    (bug,) = store.bugs()
    assert bug.paths() == ["a", "b", "c"]


def test_identical_programs_that_are_not_settled_do_not_join():
    """A program generation drew, not shrunk: two faults it shows stay two bugs."""
    store = store_of(*((Verdict.REGRESSION, ("p",), wrong_values(path), program(), None) for path in ("a", "b")))
    assert len(store.bugs()) == 2


def test_one_faulty_placement_never_joins_another():
    """The same minimal program broken by two faulty placements: two bugs (no placement in common);
    a baseline finding under stock and one under stock and rdnp: one."""
    store = store_of(
        (Verdict.REGRESSION, ("p",), wrong_values("a"), program(), True),
        (Verdict.REGRESSION, ("q",), wrong_values("a"), program(), True),
    )
    assert len(store.bugs()) == 2
    store = store_of(
        (Verdict.SHARED, ("stock",), malformed("a"), program(), True),
        (Verdict.SHARED, ("stock", "rdnp"), malformed("a"), program(), True),
    )
    assert len(store.bugs()) == 1


def test_the_same_failure_on_another_path_is_one_bug_but_wrong_values_are_not():
    """A malformed trace on six paths, each with its own program: one bug. Wrong values on two
    paths, programs apart: their message says only which output differs, so they stay apart."""
    store = store_of(*((Verdict.REGRESSION, ("p",), malformed(f"path{i}"), program(seed=i), None) for i in range(6)))
    assert len(store.bugs()) == 1
    store = store_of(*((Verdict.REGRESSION, ("p",), wrong_values(f"path{i}"), program("neg", seed=i), None) for i in range(2)))
    assert len(store.bugs()) == 2


def test_a_shrink_keeps_the_failure_not_just_the_oracle():
    failed = raised("jit", "KeyError", "'t3'", "thunder/a.py:f")
    renamed = raised("jit", "KeyError", "'t9'", "thunder/a.py:f")
    other = raised("jit", "TypeError", "no", "thunder/a.py:f")
    assert same_failure(renamed, failed) and not same_failure(other, failed)
    assert not same_failure(raised("thunderfx", "KeyError", "'t3'", "thunder/a.py:f"), failed)


class CountingJobs:
    """A stand-in job runner: every job passes; counts the jobs it ran."""

    def __init__(self):
        self.jobs = Counter()

    def __call__(self, job):
        self.jobs[(job.program, job.placement.name, job.path)] += 1
        if job.path == EAGER:
            return Outcome(EAGER, "stock")
        return PathResult(Outcome(job.path, job.placement.name), [])


def test_no_job_runs_twice_with_the_cache_and_confirming_replays():
    runner = CountingJobs()
    evaluator, jobs = Evaluator(runner, cache=True), runner.jobs
    placements = [resolve("rdnp")]
    evaluator(program(), placements, paths=["jit", "thunderfx"])
    evaluator(program(), placements, paths=["jit"], alone=True)  # a shrink step: all cached
    assert set(jobs.values()) == {1} and len(jobs) == 5  # eager, and 2 paths x (stock, rdnp)
    evaluator(program(), [], paths=["jit"], cache=False)
    assert jobs[(program(), "stock", "jit")] == 2 and jobs[(program(), "rdnp", "jit")] == 1
    evaluator(program(seed=2), placements, paths=["jit"], alone=True)  # other inputs: another job
    assert jobs[(program(seed=2), "rdnp", "jit")] == 1 and jobs[(program(seed=2), "stock", "jit")] == 0


def two_ops(seed=1):
    return chain("exp", "neg", seed=seed)


def test_a_replay_belongs_to_its_program_and_two_lanes_replays_of_one_program_combine():
    """``Finding.confirmed`` says whether its own program reproduced: a smaller program found later
    is not replayed yet; merged, the smaller program brings its replay (and its decision) along,
    and one program two lanes replayed is confirmed only if both reproduced it."""
    violation = malformed("jit")
    store = FindingStore()
    finding, _ = store.add(Verdict.REGRESSION, ("rdnp",), violation, two_ops())
    finding.confirmed = True
    store.add(Verdict.REGRESSION, ("rdnp",), violation, program())
    assert finding.program == program() and finding.confirmed is None

    def lane(prog, confirmed, decision=None):
        other = FindingStore()
        theirs, _ = other.add(Verdict.REGRESSION, ("rdnp",), violation, prog)
        theirs.confirmed, theirs.decision = confirmed, decision
        return other

    merged = FindingStore()
    merged.merge(lane(two_ops(), True, decision="bisected on two ops"))
    merged.merge(lane(program(), False, decision="bisected on one op"))  # smaller: its program, replay and decision win
    (mine,) = merged
    assert mine.program == program() and mine.confirmed is False and mine.decision == "bisected on one op"
    for first, second, together in ((True, None, True), (None, None, None), (True, False, False), (None, True, True)):
        merged = FindingStore()
        merged.merge(lane(program(), first))
        merged.merge(lane(program(), second))
        assert next(iter(merged)).confirmed is together, (first, second)


def replaying(store, shows, plan):
    """A stand-in campaign whose every replay shows the violations in ``shows`` on its paths under
    rdnp and nothing under stock."""

    def shown(program, placement, paths):
        return [v for v in shows if v.path in paths] if placement.name == "rdnp" else []

    return StandInCampaign(store, plan=plan, evaluator=StandInEvaluator(shown))


def test_confirming_replays_only_what_no_lane_replayed_on_its_own_paths_and_stops_at_its_phase_end():
    """A lane confirms its bugs; the merged campaign replays only findings no lane replayed, on
    their paths alone. Past ``until``'s end nothing runs, and the log says where the rest went."""
    replayed, fresh = malformed("jit", op="amax"), malformed("thunderfx", op="amin")
    store = store_of(
        (Verdict.REGRESSION, ("rdnp",), replayed, program(), True),
        (Verdict.REGRESSION, ("rdnp",), fresh, program(), True),
    )
    first, second = sorted(store, key=lambda f: f.violation.path)
    first.confirmed = True  # a lane replayed it
    campaign = replaying(store, [replayed, fresh], TimePlan(100, time.time()))
    Shrinker(campaign).confirm(store.bugs())
    assert campaign.replays == [(program(), ("stock", "rdnp"), ("thunderfx",), False)]
    assert first.confirmed is True and second.confirmed is True
    second.confirmed = None
    late = replaying(store, [replayed, fresh], TimePlan(10, time.time() - 100))
    Shrinker(late).confirm(store.bugs(), until=Phase.SHRINKING)
    assert late.replays == [] and second.confirmed is None
    assert late.lines == ["fuzzdce: out of time: the remaining bugs are left to the merged campaign"]


def test_shrinking_leaves_time_to_replay_the_bugs_found_within_its_share_of_the_budget():
    """Shrinking ends its reserve before its end: one full evaluation per program to replay, at
    most ``CONFIRM_MOST`` of the budget, none where the campaign confirms nothing."""
    store = store_of(
        (Verdict.REGRESSION, ("rdnp",), malformed("jit"), program(), None),
        (Verdict.REGRESSION, ("rdnp",), malformed("jit", op="amin"), program("neg"), None),
    )
    next(iter(store)).confirmed = True  # replayed: no time needed for its program
    campaign = StandInCampaign(
        store,
        settings=SimpleNamespace(output=SimpleNamespace(confirm=True)),
        plan=TimePlan(1000, time.time()),
        seconds_per_program=2.0,
    )
    shrinker = Shrinker(campaign)
    assert shrinker.confirm_reserve() == 2.0
    campaign.stats.seconds_per_program = 400.0
    assert shrinker.confirm_reserve() == CONFIRM_MOST * 1000
    shrinker.reserve = shrinker.confirm_reserve()
    campaign.plan = TimePlan(1000, time.time() - 1000 * SHRINK_END + 10)  # 10 s to shrinking's end
    assert shrinker.shrinking_over() and not campaign.plan.over(Phase.SHRINKING)
    campaign.settings.output.confirm = False
    assert shrinker.confirm_reserve() == 0.0


def test_the_time_plan_splits_the_wall_time_from_the_start():
    start = time.time() - 50
    plan = TimePlan(100, start)
    assert plan.end(Phase.GENERATION) == start + 100 * (1 - min(LEFT_AFTER_GENERATION))
    assert plan.end(Phase.SHRINKING) == start + 100 * SHRINK_END and plan.end(Phase.WRITING) == start + 100
    assert not plan.over(Phase.GENERATION) and 45 < plan.left(Phase.WRITING) <= 50
    assert TimePlan(10, start).over(Phase.CONFIRMING) and TimePlan(None, start).left(Phase.WRITING) is None


def test_generation_ends_when_the_time_left_is_the_work_waiting_within_its_bounds():
    least, most = LEFT_AFTER_GENERATION
    plan = TimePlan(100, time.time() - 88)  # 12 s left
    assert not plan.generation_over(0.0) and not plan.generation_over(11.0)
    assert plan.generation_over(13.0)
    assert TimePlan(100, time.time() - (100 - 100 * least) - 1).generation_over(0.0)  # the least it leaves
    assert not TimePlan(100, time.time() - (100 - 100 * most) + 5).generation_over(1e9)  # the most it leaves
    assert not TimePlan(None, time.time() - 1e6).generation_over(1e9)  # no budget, no end


def test_the_work_waiting_counts_each_program_to_shrink_once():
    """Two causes one program shows (two paths' wrong values) wait as one shrink; a shrunk cause and a
    verdict that is not shrunk (fixed, here) wait as none."""
    store = store_of(
        *((Verdict.REGRESSION, ("p",), wrong_values(path), program(), None) for path in ("a", "b")),
        (Verdict.REGRESSION, ("p",), malformed("a"), program("neg"), None),
        (Verdict.REGRESSION, ("p",), malformed("b"), program("sin"), True),
        (Verdict.FIXED, ("stock",), malformed("c"), program("cos"), None),
    )
    shrinker = Shrinker(StandInCampaign(store, fails=lambda verdict: verdict == Verdict.REGRESSION))
    assert shrinker.waiting_seconds(3.0, 0.5) == 2 * (3.0 + SHRINK_STEP_COMPILES * 0.5)


def raising_decision(placement, frame):
    """A bisection naming ``placement``'s call that raises at ``frame``: one decision."""
    from fuzzdce.core.decisions import Bisection, Edit

    culprit = Edit(2, "thunder.core.symbol.Symbol.__call__", "raise", error_kind="KeyError", error_frame=frame)
    return Bisection(placement, (culprit,), culprit, alone=True, without=True, runs=3)


def decided_store(*found):
    """A store of (placements, violation, program, decision) regression findings, none shrunk."""
    store = FindingStore()
    for placements, violation, prog, made in found:
        finding, _ = store.add(Verdict.REGRESSION, placements, violation, prog)
        finding.decision = made
    return store


OPS = ("neg", "sin", "cos", "tanh", "abs", "sqrt", "ceil", "floor", "exp", "log")


def test_the_work_waiting_counts_each_decision_to_shrink_once_under_one_placement():
    """Ten causes bisected to one decision of one placement are one bug, one shrink and one replay; a
    cause of another decision is a second, an undecided cause (its program) a third."""
    first, second = raising_decision("p", "thunder/a.py:f"), raising_decision("p", "thunder/b.py:g")
    store = decided_store(
        *((("p",), malformed("jit", op), program(op), first) for op in OPS),
        (("p",), malformed("thunderfx", "amin"), program("exp", seed=2), second),
        (("p",), malformed("thunderfx", "amax"), program("exp", seed=3), None),
    )
    assert len(store.bugs()) == 3
    shrinker = Shrinker(StandInCampaign(store, fails=lambda verdict: verdict == Verdict.REGRESSION))
    assert shrinker.waiting_seconds(3.0, 0.5) == 3 * (3.0 + SHRINK_STEP_COMPILES * 0.5)
    shrinker.shrunk_decisions.add(first.identity)  # its shrink is done: its causes wait for nothing
    assert shrinker.waiting_seconds(3.0, 0.5) == 2 * (3.0 + SHRINK_STEP_COMPILES * 0.5)
    campaign = StandInCampaign(
        store,
        fails=lambda verdict: verdict == Verdict.REGRESSION,
        settings=SimpleNamespace(output=SimpleNamespace(confirm=True)),
        plan=TimePlan(1000, time.time()),
        seconds_per_program=2.0,
    )
    assert Shrinker(campaign).confirm_reserve() == 3 * 2.0


def test_the_work_waiting_counts_each_decision_of_several_placements():
    """Seven placements, each with its causes bisected to its own one decision: seven shrinks,
    however many causes each decision makes."""
    placements = [f"p{i}" for i in range(7)]
    store = decided_store(
        *(
            ((name,), malformed(path, op), program(op, seed=i), raising_decision(name, "thunder/a.py:f"))
            for i, name in enumerate(placements)
            for path, op in (("jit", "amax"), ("thunderfx", "amin"), ("jit", "sum"))
        )
    )
    assert len(store.bugs()) == 7 and len(store.causes()) == 21
    regressions = StandInCampaign(store, fails=lambda verdict: verdict == Verdict.REGRESSION)
    assert Shrinker(regressions).waiting_seconds(3.0, 0.5) == 7 * (3.0 + SHRINK_STEP_COMPILES * 0.5)


def test_shrinking_works_per_decision_ten_causes_of_one_decision_are_one_shrink():
    """Ten causes of one decision, one of another and an undecided one: three shrinks, the rest
    join their decision's bug with no shrink of their own."""
    first, second = raising_decision("p", "thunder/a.py:f"), raising_decision("p", "thunder/b.py:g")
    store = decided_store(
        *((("p",), malformed("jit", op), program(op), first) for op in OPS),
        (("p",), malformed("thunderfx", "amin"), program("exp", seed=2), second),
        (("p",), malformed("thunderfx", "amax"), program("exp", seed=3), None),
    )
    campaign = StandInCampaign(
        store,
        fails=lambda verdict: verdict == Verdict.REGRESSION,
        settings=SimpleNamespace(shrinking=ShrinkingSettings(), output=SimpleNamespace(confirm=False)),
        plan=TimePlan(1000, time.time()),
        placements=[],
    )
    shrinker, shrunk = Shrinker(campaign), []

    def shrink(key, waiting=0):
        shrunk.append(key)
        shrinker.done.add(key)

    shrinker.shrink = shrink
    shrinker.shrink_all()
    decisions = [store.causes()[key][0].decision_identity for key in shrunk]
    assert len(shrunk) == 3 and set(decisions) == {first.identity, second.identity, None}, decisions


def test_the_work_waiting_is_counted_in_compiles_whatever_the_placements():
    """A shrink step compiles one path under one or two Thunders however many a campaign evaluates:
    a campaign of seven Thunders (22 compiles a program at the same seconds per compile) reserves
    one more full evaluation per cause than stock alone (settling), not seven times its work. The
    old count, full evaluations per cause, reserved 3.7 times stock's here."""
    store = store_of((Verdict.REGRESSION, ("p",), wrong_values("a"), program(), None))
    shrinker = Shrinker(StandInCampaign(store, fails=lambda verdict: verdict == Verdict.REGRESSION))
    per_compile = 0.15
    stock_alone = shrinker.waiting_seconds(6 * per_compile, per_compile)
    seven_thunders = shrinker.waiting_seconds(22 * per_compile, per_compile)
    assert seven_thunders - stock_alone == pytest.approx((22 - 6) * per_compile)
    assert seven_thunders < 1.5 * stock_alone


def test_each_lane_shrinks_its_own_share_of_the_causes_first():
    """Two lanes holding the same causes start on different ones: each its share (``lane_share``)
    first, regressions first within it; together they take every cause, and a lone campaign's order
    is regressions first, then by first sighting."""
    from fuzzdce.core.signatures import identity_id

    store = FindingStore()
    for i, op in enumerate(("exp", "neg", "sin", "cos", "tanh", "abs", "sqrt", "ceil")):
        verdict = Verdict.REGRESSION if i % 2 else Verdict.SHARED
        store.add(verdict, ("p",) if i % 2 else ("stock", "p"), malformed("jit", op), program(op), seconds=float(i))
    assert len(store.bugs()) == 8

    def order(lane, lanes):
        return causes_in_order(store, lane, lanes)

    def share(key, lanes):
        return int(identity_id(key), 16) % lanes

    first, second = order(0, 2), order(1, 2)
    assert sorted(first) == sorted(second) and first[0] != second[0]
    for lane, keys in enumerate((first, second)):
        mine = [share(k, 2) == lane for k in keys]
        assert mine == sorted(mine, reverse=True) and any(mine) and not all(mine)
    alone = order(0, 1)
    verdicts = [store.causes()[k][0].verdict for k in alone]
    assert verdicts == [Verdict.REGRESSION] * 4 + [Verdict.SHARED] * 4
    assert [store.causes()[k][0].first_seen_seconds for k in alone] == [1.0, 3.0, 5.0, 7.0, 0.0, 2.0, 4.0, 6.0]


def causes_in_order(store, lane=0, lanes=1):
    settings = SimpleNamespace(shrinking=ShrinkingSettings(lane=lane, lanes=lanes))
    return [key for key, _ in Shrinker(StandInCampaign(store, settings=settings)).ordered_causes()]


def test_each_bug_gets_a_shrink_before_any_gets_a_second():
    """Causes of one bug (three failures one minimal program shows) wait behind the first cause of every other
    bug, however early they were seen: the cause of a bug's smallest program goes first."""
    store = FindingStore()
    seen = iter(range(100))
    for path, op in (("a", "amax"), ("b", "amin"), ("c", "max")):  # three identities one settled program shows
        finding, _ = store.add(Verdict.REGRESSION, ("p",), malformed(path, op), program("exp"), seconds=float(next(seen)))
        finding.shrunk = True
    store.add(Verdict.REGRESSION, ("p",), malformed("a", "argmax"), program("neg"), seconds=float(next(seen)))
    store.add(Verdict.SHARED, ("stock", "p"), malformed("a", "cumsum"), program("sin"), seconds=float(next(seen)))
    bugs = store.bugs()
    assert sorted(len({f.cause_key for f in b.members}) for b in bugs) == [1, 1, 3]
    heads = {b.members[0].cause_key for b in bugs}
    order = causes_in_order(store)
    assert set(order[:3]) == heads and len(order) == 5
    assert [store.causes()[k][0].verdict for k in order[:3]] == [Verdict.REGRESSION, Verdict.REGRESSION, Verdict.SHARED]


def test_a_phase_timed_inside_another_is_not_counted_for_the_outer_one():
    seconds = Counter()
    clock = PhaseClock(seconds)
    with clock.timed(Phase.JOINING):
        time.sleep(0.05)
        with clock.timed(Phase.SHRINKING):
            assert clock.current == Phase.SHRINKING
            time.sleep(0.1)
        assert clock.current == Phase.JOINING
    assert clock.current is None
    assert 0.1 <= seconds[Phase.SHRINKING] < 0.2 and 0.05 <= seconds[Phase.JOINING] < 0.1


def test_one_fault_raising_on_a_tensor_proxy_and_on_a_float_proxy_is_one_bug():
    """A split's exception names the proxy it missed: 't0' on one program, 'f0' on another; one
    identity, one cause on both thunderfx paths."""
    store = store_of(
        (Verdict.REGRESSION, ("p",), split("thunderfx", "'t0'"), program("neg"), None),
        (Verdict.REGRESSION, ("p",), split("thunderfx-dynamic", "'f0'"), program("exp"), None),
    )
    assert len(store.causes()) == 1 and len(store.bugs()) == 1


def test_a_link_never_joins_two_verdicts():
    """A baseline bug's settled program may also show a placement-induced finding: they stay apart."""
    store = store_of(
        (Verdict.SHARED, ("stock", "p"), malformed("a"), program(), True),
        (Verdict.REGRESSION, ("p",), wrong_values("a"), program("neg"), True),
    )
    baseline, induced = sorted(store.findings.values(), key=lambda f: f.verdict != Verdict.SHARED)
    store.link(baseline, induced)
    assert len(store.bugs()) == 2


def test_a_one_op_bug_cut_short_says_only_its_values_may_shrink_further():
    """One op is as few statements as a bug's program holds: a cut shrink left only Hypothesis's
    shapes, values and dtypes, and the report says so, where a longer program may hold more."""
    from fuzzdce.results.records import BugRecord
    from fuzzdce.results.report import bug_lines

    one, two = (store_of((Verdict.SHARED, ("stock",), malformed("jit"), p, False)) for p in (program(), two_ops()))
    (short,), (longer,) = one.bugs(), two.bugs()
    assert short.shrink_note == "shrinking stopped at 1 op: time" and longer.shrink_note == "shrinking stopped at 2 ops: time"
    assert "1 op: time (its shapes, values and dtypes may shrink further)" in "\n".join(bug_lines(BugRecord.of(short)))
    assert "2 ops: time (the program may hold more than the bug needs)" in "\n".join(bug_lines(BugRecord.of(longer)))
