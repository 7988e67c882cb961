"""Generation and shrinking as separate phases, lanes that end only when they should, one fault one
bug. The evaluator here is a stand-in (no Thunder): a fault is a function of the program's ops, so
these tests run Hypothesis for real, generation and shrinking, at little cost."""

import dataclasses
import time

import pytest
from builders import StandInEvaluator
from builders import raised as raised_by
from builders import wrong_values as wrong_by
from hypothesis import settings
from hypothesis import strategies as st

from fuzzdce.core.program import Program, Ref, Step, TensorInput
from fuzzdce.core.vocabulary import Verdict
from fuzzdce.fuzzing.campaign import Campaign
from fuzzdce.fuzzing.config import CampaignConfig
from fuzzdce.fuzzing.driver import GenerationEnd
from fuzzdce.fuzzing.time_plan import Phase, hypothesis_seconds
from fuzzdce.results.report import render


@pytest.fixture(autouse=True)
def no_example_database():
    """What each test draws follows from its seed alone: an example database shared with the tests
    before it (the dev profile's, outside CI) would replay their programs first."""
    before = settings.get_current_profile_name()
    settings.register_profile("test_phases", parent=settings.get_profile(before), database=None)
    settings.load_profile("test_phases")
    yield
    settings.load_profile(before)


OPS = ("add", "mul", "abs", "exp", "neg")
FAULTY, OTHER = "planted:does_nothing", "planted:colliding_names"  # names only: nothing compiles here


def wrong_values(path, op="exp"):
    """Wrong values first differing at ``op``, as the evaluator localises them (``running.localise``)."""
    return wrong_by(path, op)


def wrong_grads(path, op="exp"):
    return wrong_by(path, op, oracle="grads") if path == "jit-grad" else None


def raised(path):
    return raised_by(path, "KeyError", "'planted'")


def showing(faults):
    """A stand-in evaluator: ``FAULTY`` shows ``fault(path)`` on each path of a program using the
    fault's op (or all of ``ops``, a tuple key); stock and other placements show nothing."""

    def shows(program, placement, paths):
        violations = []
        if placement.name == FAULTY:
            for ops, fault in faults.items():
                if all(op in program.ops for op in (ops if isinstance(ops, tuple) else (ops,))):
                    violations += [v for path in paths if (v := fault(path)) is not None]
        return violations

    return StandInEvaluator(shows)


def campaign_of(faults, *, programs=30, seed=4, **overrides):
    config = CampaignConfig.of(
        ("stock", FAULTY, OTHER), ("jit", "jit-grad"), max_examples=programs, seed=seed, ops=OPS, **overrides
    )
    evaluator = showing(faults)
    return Campaign(config, evaluator=evaluator, log=lambda line: None), evaluator


def faulty_bugs(campaign):
    return [b for b in campaign.ledger.bugs() if b.verdict == Verdict.REGRESSION]


def test_every_generated_program_is_evaluated_in_full_while_a_large_finding_is_unshrunk():
    """Findings on large programs exist from early on (no shrinking during generation), and yet
    every program Hypothesis draws, small ones too, is evaluated under every placement and path,
    until the programs are spent."""
    campaign, evaluator = campaign_of({("add", "mul"): wrong_values})
    campaign.driver.run()
    assert campaign.driver.ended == GenerationEnd.PROGRAMS
    everywhere = [call for call in evaluator.calls if call[1] == ("stock", FAULTY, OTHER)]  # not a bisection's runs
    assert campaign.full_evaluations == 30 == len(campaign.distinct_programs) == len(everywhere)
    assert all(paths == ("jit", "jit-grad") for _, _, paths in everywhere)
    assert campaign.store.findings, "the fault was never drawn: pick another seed"
    smallest_finding = min(f.program.n_ops for f in campaign.store)
    assert any(p.n_ops < smallest_finding for p, _, _ in everywhere[len(everywhere) // 2 :]), (
        "programs smaller than the finding's were drawn late, and evaluated in full"
    )


def test_generation_decides_each_regression_cause_on_the_program_that_shows_it_before_it_goes_on():
    """Deciding as found: a regression cause is bisected as soon as a program shows it, on that
    program and its path, before the next program is drawn; a smaller program showing it is
    bisected again. Every regression cause leaves generation decided on its smallest program."""
    from fuzzdce.core.findings import program_text

    campaign, evaluator = campaign_of({("add", "mul"): wrong_values})
    campaign.driver.run()
    regressions = [members[0] for members in campaign.store.causes().values() if members[0].verdict == Verdict.REGRESSION]
    assert regressions, "the fault was never drawn: pick another seed"
    assert all(f.decision is not None and f.decision.made_on(program_text(f.program)) for f in regressions)
    full = ("stock", FAULTY, OTHER)
    bisections = [i for i, (_, names, _) in enumerate(evaluator.calls) if names != full]
    assert bisections, "nothing was bisected during generation"
    for i in bisections:  # each right after the program it bisects was evaluated in full, or another run of its bisection
        j = max(k for k in range(i) if evaluator.calls[k][1] == full)
        assert all(evaluator.calls[k][0] == evaluator.calls[i][0] for k in range(j, i + 1))
        assert len(evaluator.calls[i][2]) == 1  # one path


def test_a_cause_the_campaign_had_no_time_to_decide_says_so():
    """Joining stopped for time (the campaign stopped) before a regression cause was bisected: its
    bug names no decision and says why, in the report's words (``core.decisions.describe``)."""
    from fuzzdce.core.decisions import describe

    campaign, _ = campaign_of({})
    program = Program((TensorInput((2,)),), (Step("exp", "torch.exp({0})", (Ref(0),)),), (1,), seed=1)
    campaign.store.add(Verdict.REGRESSION, (FAULTY,), wrong_values("jit"), program)
    campaign.stop()
    campaign.shrinker.join()
    (bug,) = campaign.ledger.bugs()
    assert bug.decision is not None and bug.decision.identity is None
    assert describe(bug.decision) == ["decision: not bisected: the campaign's time ran out before it was bisected"]


def test_a_lane_ends_when_hypothesis_has_nothing_new_to_draw():
    """Three programs in all (a strategy that can draw nothing else): the campaign evaluates each
    once and ends, "nothing new", with most of its programs unspent."""
    programs = [Program((TensorInput((n,)),), (Step("neg", "torch.neg({0})", (Ref(0),)),), (1,), seed=1) for n in (1, 2, 3)]
    campaign, evaluator = campaign_of({}, programs=50)
    campaign.driver.strategy = lambda weights=None: st.sampled_from(programs)
    campaign.driver.run()
    assert campaign.driver.ended == GenerationEnd.NOTHING_NEW and campaign.full_evaluations == 3
    assert sorted(p.inputs[0].shape for p, _, _ in evaluator.calls) == [(1,), (2,), (3,)]


def test_a_round_draws_each_program_afresh_not_as_a_variant_of_the_last():
    """40 programs of three indices among 770 (as a program draws its OpInfo steps): drawn
    independently, 120 draws meet about 110 distinct indices (uniformly, 770 * (1 - e^(-120/770))).
    Hypothesis's own backend follows each program with near-copies of it (mutations, simplest
    extensions of its prefix) and met 36-41 with this campaign's rounds: the same few entries again."""
    campaign, evaluator = campaign_of({}, programs=40)
    campaign.driver.strategy = lambda weights=None: st.lists(st.integers(0, 769), min_size=3, max_size=3).map(
        lambda indices: Program(
            (TensorInput((len(indices),)),),
            tuple(Step("neg", f"torch.neg({{0}}) + {k}", (Ref(0),)) for k in indices),
            (1,),
            seed=1,
        )
    )
    campaign.driver.run()
    indices = [step.template for program, _, _ in evaluator.calls for step in program.steps]
    assert len(evaluator.calls) == 40 and len(indices) == 120
    assert len(set(indices)) >= 90, f"{len(set(indices))} distinct indices in 120 draws"


def test_each_cause_is_shrunk_against_its_failing_configuration_only():
    """A fault of programs using exp, on jit only: after generation, its bug is shrunk to one op in
    a run of its own whose steps evaluate jit only, under the faulty placement alone, and under
    stock alone only a candidate that still fails there; no step runs twice (the cache)."""
    campaign, evaluator = campaign_of({"exp": lambda path: wrong_values(path) if path == "jit" else None}, seed=9)
    campaign.driver.run()
    generated = len(evaluator.calls)
    (before,) = faulty_bugs(campaign)
    assert before.program.n_ops > 1, "generation shrinks nothing"
    campaign.shrink_causes()
    # After the settling, the cause is bisected (``Shrinker.decide``): the faulty placement gated, alone, on jit.
    after = list(zip(evaluator.calls, evaluator.gated))[generated:]
    *steps, settling = [call for call, gated in after if not gated]
    bisecting = [call for call, gated in after if gated]
    assert bisecting and all(len(names) == 1 and paths == ("jit",) for _, names, paths in bisecting)
    assert steps and all(paths == ("jit",) and names in {(FAULTY,), ("stock",)} for _, names, paths in steps)
    for (program, names, _), previous in zip(steps[1:], steps):
        if names == ("stock",):
            assert previous[:2] == (program, (FAULTY,)) and "exp" in program.ops, "stock ran on a candidate that passed"
    # the minimal program is evaluated everywhere, once: what it shows settles the causes it shows
    assert settling[0].ops == ["exp"] and settling[1] == ("stock", FAULTY, OTHER) and settling[2] == ("jit", "jit-grad")
    (bug,) = faulty_bugs(campaign)
    assert bug.program.ops == ["exp"] and bug.smallest.shrunk is True and bug.shrink_note is None
    assert campaign.full_evaluations == 30, "shrink steps are not programs evaluated in full"


def test_one_fault_on_several_paths_and_oracles_is_one_bug():
    """Wrong values on both paths and wrong gradients (no exception: nothing joins them by cause)
    all come from one fault: one bug, at one op."""
    campaign, _ = campaign_of({"exp": wrong_values, ("exp",): wrong_grads})
    campaign.run()
    (bug,) = faulty_bugs(campaign)
    assert bug.paths() == ["jit", "jit-grad"] and bug.oracles() == ["grads", "outputs"]
    assert bug.program.ops == ["exp"]


def test_two_independent_faults_shown_by_one_program_are_two_bugs():
    """Wrong values where exp is, an exception where neg is: programs with both show both, and
    they come out as two bugs, each at its own one-op minimum."""
    campaign, evaluator = campaign_of({"exp": wrong_values, "neg": raised}, programs=40, seed=5)
    campaign.driver.run()
    assert any({"exp", "neg"} <= set(p.ops) for p, _, _ in evaluator.calls), "no program showed both: pick another seed"
    campaign.shrink_causes()
    campaign.finish()
    bugs = faulty_bugs(campaign)
    assert sorted(b.program.ops for b in bugs) == [["exp"], ["neg"]], [(b.id, b.program.ops, b.oracles()) for b in bugs]
    assert {b.oracles()[0] for b in bugs} == {"outputs", "raises"}


def test_findings_on_unshrunk_programs_never_join_and_the_report_says_shrinking_stopped():
    """No time to shrink: two faults that always show together (both need exp and neg) are never
    joined (wrong values first differing at one op on two paths are one identity, one bug), each
    bug reported with where its shrinking stopped."""
    campaign, _ = campaign_of({("exp", "neg"): wrong_values, ("neg", "exp"): raised}, programs=40, seed=5, time_budget=1e-6)
    campaign.driver.options = dataclasses.replace(campaign.driver.options, time_budget=None)
    campaign.generation_over = lambda: False
    campaign.driver.run()  # generation spends its programs (no deadline of its own); the rest has no time
    campaign.shrink_causes()
    campaign.finish()
    bugs = faulty_bugs(campaign)
    assert sorted(b.oracles() for b in bugs) == [["outputs"], ["raises"]], [(b.id, b.oracles()) for b in bugs]
    for bug in bugs:
        assert bug.shrink_note == f"shrinking stopped at {bug.program.n_ops} ops: time" and bug.program.n_ops > 1
    assert render(campaign.summary(), None).count("shrinking stopped at") == 2


def test_a_lane_ends_when_its_time_is_spent():
    """A budget already spent before the first program: generation ends on time, evaluating nothing
    (and the lane would end the same at any budget: "time" is the only reason besides programs and
    Hypothesis running dry)."""
    campaign, evaluator = campaign_of({}, programs=50, time_budget=1e-9)
    campaign.driver.run()
    assert campaign.driver.ended == GenerationEnd.TIME and campaign.full_evaluations == 0 and evaluator.calls == []


def test_generation_ends_early_when_the_causes_waiting_would_fill_the_time_left(monkeypatch):
    """Programs that seem to take 100 s each to evaluate in full (the stand-in takes none): without a
    fault nothing waits, and generation spends its programs; with one, it ends on time as soon as
    the work waiting (two evaluations per program to shrink) no longer fits the time left, long
    before generation's latest end."""

    def slow_campaign(faults):
        campaign, _ = campaign_of(faults, programs=30, time_budget=1000)
        campaign.epoch = campaign.plan.start - 900 + 45  # 145 s left: more than the least generation leaves
        campaign.plan = dataclasses.replace(campaign.plan, start=campaign.epoch)
        real_examine = campaign.examine

        def examine(program, choices, weights):
            found = real_examine(program, choices, weights)
            campaign.stats.seconds = 100.0 * campaign.full_evaluations
            return found

        campaign.examine = examine
        return campaign

    clean = slow_campaign({})
    clean.driver.run()
    assert clean.driver.ended == GenerationEnd.PROGRAMS and clean.full_evaluations == 30
    faulty = slow_campaign({"exp": wrong_values})
    faulty.driver.run()
    waiting = faulty.shrinker.waiting_seconds(100.0, faulty.stats.seconds_per_compile)
    assert faulty.driver.ended == GenerationEnd.TIME and faulty.full_evaluations < 30
    assert waiting >= faulty.plan.left(Phase.WRITING) > 100, "it ended before the work waiting filled the time left"


def test_generation_resumes_when_shrinking_is_done_with_generation_time_left():
    """Generation ends for the work waiting (programs that seem to take 100 s each, 145 s left);
    the stand-in shrinks it at once, and generation goes on from its next round, until its
    programs are spent, instead of the lane sitting idle to the end of the budget."""
    campaign, _ = campaign_of({"exp": wrong_values}, programs=60, time_budget=1000, started_at=time.time() - 855)
    lines, slow, evaluated_at_first_end = [], [True], []
    campaign.log = lines.append
    real_examine, real_shrink = campaign.examine, campaign.shrink_causes

    def examine(program, choices, weights):
        found = real_examine(program, choices, weights)
        campaign.stats.seconds = (100.0 if slow[0] else 0.001) * campaign.full_evaluations
        return found

    def shrink_causes():
        if slow[0]:
            evaluated_at_first_end.append(campaign.full_evaluations)
        slow[0] = False
        campaign.stats.seconds = 0.001 * campaign.full_evaluations
        real_shrink()

    campaign.examine, campaign.shrink_causes = examine, shrink_causes
    campaign.run()
    assert campaign.store.findings, "the fault was never drawn: pick another seed"
    assert evaluated_at_first_end[0] < 60 and any("generation resumes" in line for line in lines), lines
    assert campaign.full_evaluations == 60 and campaign.stats.generation_ended == [GenerationEnd.PROGRAMS]


def test_a_lane_resumes_generation_once_its_replays_are_done():
    """A lane's generation ends for its bugs' replays (programs that seem to take 100 s each, 145 s
    left: a 100-s replay reserve and the budget's last 5%); shrinking leaves that reserve waiting.
    The lane confirms its bugs, and with nothing waiting then, generation resumes until its
    programs are spent, instead of the lane ending 95 s early."""
    campaign, _ = campaign_of(
        {"exp": wrong_values}, programs=60, time_budget=1000, started_at=time.time() - 855, joined_elsewhere=True
    )
    lines, slow, confirmed_at = [], [True], []
    campaign.log = lines.append
    real_examine, real_confirm = campaign.examine, campaign.shrinker.confirm

    def examine(program, choices, weights):
        found = real_examine(program, choices, weights)
        campaign.stats.seconds = (100.0 if slow[0] else 0.001) * campaign.full_evaluations
        return found

    def confirm(bugs, until=Phase.CONFIRMING):
        real_confirm(bugs, until=until)
        if slow[0]:
            confirmed_at.append(campaign.full_evaluations)
        slow[0] = False
        campaign.stats.seconds = 0.001 * campaign.full_evaluations

    campaign.examine, campaign.shrinker.confirm = examine, confirm
    campaign.run()
    assert campaign.store.findings, "the fault was never drawn: pick another seed"
    assert confirmed_at and confirmed_at[0] < 60, "generation did not end before the replays"
    assert any(b.smallest.confirmed for b in faulty_bugs(campaign))
    assert any("generation resumes" in line for line in lines), lines
    assert campaign.full_evaluations == 60 and campaign.stats.generation_ended == [GenerationEnd.PROGRAMS]


def test_a_later_campaign_replays_the_findings_saved_in_the_example_database(tmp_path):
    """Generation never fails a Hypothesis test, so fuzzdce saves each finding's choices itself:
    a later campaign sharing the database evaluates the first one's finding programs again."""
    both = {("exp", "neg"): wrong_values}
    database = str(tmp_path / "examples")
    first, _ = campaign_of(both, programs=40, seed=5, profile="dev", database=database)
    found = set()  # every program whose choices were saved: new or smaller for a finding
    record = first.ledger.record

    def recording(program, *args, **kwargs):
        changed = record(program, *args, **kwargs)
        if changed:
            found.add(program)
        return changed

    first.ledger.record = recording
    first.driver.run()
    assert found, "the fault was never drawn: pick another seed"
    second, evaluator = campaign_of(both, programs=3, seed=99, profile="dev", database=database)
    second.driver.run()
    assert found & {program for program, _, _ in evaluator.calls}


def test_a_steered_campaign_shrinks_each_cause_under_the_weights_that_drew_it():
    """Steered rounds draw under weights of their own: a bug's shrink run replays its choices under
    the same weights, so it starts from the very program and shrinks it."""
    campaign, _ = campaign_of({"exp": lambda path: wrong_values(path) if path == "jit" else None}, programs=40, steer=True)
    campaign.run()
    (bug,) = faulty_bugs(campaign)
    assert bug.smallest.weights is not None and bug.smallest.shrunk is True
    assert bug.program.ops == ["exp"]


def test_hypothesis_shares_only_the_time_the_waiting_causes_passes_leave():
    """Every waiting cause's passes come first: Hypothesis's shrink of one cause gets an equal share
    of what they leave, and none when they need it all."""
    assert hypothesis_seconds(100.0, 0, 5.0) == 100.0
    assert hypothesis_seconds(100.0, 3, 5.0) == (100.0 - 15.0) / 4
    assert hypothesis_seconds(100.0, 19, 5.0) == (100.0 - 95.0) / 20, (
        "no floor: with many causes waiting, each gets its passes first"
    )
    assert hypothesis_seconds(100.0, 40, 5.0) == 0.0


def test_causes_a_settled_program_shows_are_not_shrunk_on_their_own():
    """One fault on two paths and two oracles is three causes. Once the first is shrunk to its end
    and its program evaluated everywhere, that program shows the other two: they get no shrink run
    of their own (so a tight budget does not leave them apart) and come out in the same bug."""
    campaign, evaluator = campaign_of({"exp": wrong_values, ("exp",): wrong_grads})
    campaign.driver.run()
    assert len({f.violation.path + f.violation.oracle for f in campaign.store if f.verdict == Verdict.REGRESSION}) == 3
    generated = len(evaluator.calls)
    campaign.shrink_causes()
    after = list(zip(evaluator.calls, evaluator.gated))[generated:]
    shrunk_paths = {paths for (_, names, paths), gated in after if names == (FAULTY,) and not gated}  # not a bisection's runs
    assert len(shrunk_paths) == 1, f"more than one cause was shrunk: {shrunk_paths}"
    campaign.finish()
    (bug,) = faulty_bugs(campaign)
    assert bug.program.ops == ["exp"] and sorted(bug.oracles()) == ["grads", "outputs"]
