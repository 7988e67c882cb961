"""A campaign reports each placement's DCE activity against stock, and names a placement that changed nothing."""

import pytest
from builders import wrong_values

from fuzzdce.fuzzing.campaign import Campaign
from fuzzdce.fuzzing.config import CampaignConfig
from fuzzdce.results.report import render


@pytest.fixture(scope="module")
def campaign():
    config = CampaignConfig.of(("stock", "symcall", "planted:does_nothing"), ("jit", "jit-symbolic"), max_examples=8, seed=3)
    c = Campaign(config, log=lambda line: None)
    c.run()
    return c


@pytest.mark.slow
def test_summary_holds_each_placements_activity(campaign):
    import json

    data = json.loads(json.dumps(campaign.summary().to_json()))["dce_activity"]
    assert set(data) == {"symcall", "planted:does_nothing"}
    symcall = data["symcall"]
    assert symcall["programs"] == len(symcall["per_program"]) > 0
    # A program counts where subsymbols changed, and also where symcall raised otherwise than stock.
    assert symcall["programs_changed"] >= sum(1 for n in symcall["per_program"] if n)
    assert symcall["exercised"] and symcall["symbols"], symcall
    assert all(s["removed"] + s["added"] > 0 for s in symcall["symbols"])
    assert data["planted:does_nothing"]["exercised"] is False


@pytest.mark.slow
def test_report_says_what_changed_and_what_was_not_exercised(campaign):
    text = render(campaign.summary(), None)
    assert "symcall did otherwise than stock in" in text
    assert "planted:does_nothing: NOT EXERCISED" in text
    # A placement that changes nothing cannot lose a subsymbol. (symcall can: under symbolic values
    # it drops number-proxy producers such as `i3 = shape(v1)` that a kept subsymbol still reads.)
    unsound = [f for f in campaign.store if f.violation.oracle == "dce-sound"]
    assert not any(p in f.placements for f in unsound for p in ("stock", "planted:does_nothing")), unsound


@pytest.mark.slow
def test_a_steered_campaign_runs_in_rounds_and_draws_more_of_the_catalog():
    from fuzzdce.fuzzing.steering import ROUND

    # Baseline bugs left unshrunk: shrink steps would count as programs too.
    config = CampaignConfig.of(("stock", "symcall"), ("jit",), max_examples=ROUND + 5, seed=1, steer=True, shrink_baseline=False)
    steered = Campaign(config, log=lambda line: None)
    steered.run()
    assert steered.stats.programs == ROUND + 5  # a second round ran although the first found nothing
    assert sum(steered.driver.steering.ops.values()) == sum(steered.stats.ops.values())
    assert steered.summary().to_json()["dce_activity"]["symcall"]["programs"] == ROUND + 5


def test_weights_put_what_was_never_drawn_first_and_heaviest():
    from fuzzdce.core.program import Program, Step, TensorInput
    from fuzzdce.fuzzing.steering import UNSEEN, Steering

    steering = Steering()
    steering.drew(Program((TensorInput((2,)),), (Step("abs", "torch.abs({0})"),) * 3, (1,)))
    weights = steering.weights()
    assert weights.ops["abs"] == UNSEEN // 4 and weights.ops["neg"] == UNSEEN
    assert weights.dtypes["float32"] == UNSEEN // 2


def test_entries_whose_programs_were_active_weigh_more():
    from fuzzdce.core.program import Program, Step, TensorInput
    from fuzzdce.fuzzing.steering import ACTIVE, UNSEEN, Steering

    steering = Steering()
    for _ in range(7):
        steering.drew(Program((TensorInput((2,)),), (Step("abs", "torch.abs({0})"), Step("neg", "torch.neg({0})")), (1,)))
    steering.evaluated.update({"abs": 4, "neg": 4})
    steering.active.update({"abs": 2})
    weights = steering.weights()
    assert weights.ops["abs"] == ACTIVE // 2 and weights.ops["neg"] == UNSEEN // 8


@pytest.mark.slow
def test_activity_crosses_the_sandbox():
    from conftest import evaluate_under  # noqa: F401 (tests/ on the path)
    from sample_programs import DEAD_CODE_PROGRAM

    from fuzzdce.running.evaluate import Evaluator
    from fuzzdce.running.placements import resolve
    from fuzzdce.running.sandbox import SandboxedJobs

    local = Evaluator()(DEAD_CODE_PROGRAM, [resolve("planted:dce_drops_live")], paths=["jit"])
    sandboxed_evaluator = Evaluator(SandboxedJobs())
    try:
        sandboxed = sandboxed_evaluator(DEAD_CODE_PROGRAM, [resolve("planted:dce_drops_live")], paths=["jit"])
    finally:
        sandboxed_evaluator.close()
    name = "planted:dce_drops_live"
    assert sandboxed[name].outcomes["jit"].dce_activity == local[name].outcomes["jit"].dce_activity != {}
    assert {v.oracle for v in sandboxed[name].violations} >= {"dce-sound"}


def _evaluation(name, *, error=None, splits=(), violations=()):
    from fuzzdce.core.model import Outcome
    from fuzzdce.core.program import Program, Ref, Step, TensorInput
    from fuzzdce.running.evaluate import Evaluation

    program = Program((TensorInput((2,)),), (Step("neg", "torch.neg({0})", (Ref(0),)),), (1,), seed=1)
    outcome = Outcome("thunderfx", name, error=error, split_reasons=list(splits))
    return Evaluation(program, name, Outcome("eager", "stock"), {"thunderfx": outcome}, list(violations))


def test_a_placement_whose_only_edit_is_a_raise_is_exercised():
    """symcall's DCE raising on a bound symbol (thunderfx splits there) changes no subsymbol; it is
    an edit all the same, so the placement is exercised (planted: a split stock does not make)."""
    from fuzzdce.core.dce_activity import raise_edits
    from fuzzdce.running.coverage import DceActivity, activity_lines

    stock, raising = _evaluation("stock"), _evaluation("symcall", splits=["KeyError: 't0'"])
    for evaluation in (raising, stock):
        evaluation.outcomes["thunderfx"].dce_raise_edits = raise_edits(
            evaluation.outcomes["thunderfx"], stock.outcomes["thunderfx"]
        )
    assert raise_edits(stock.outcomes["thunderfx"], raising.outcomes["thunderfx"]) == ["no raise"]
    activity = DceActivity()
    activity.add({"stock": stock, "symcall": raising})
    entry = activity.summary(["stock", "symcall"])["symcall"]
    assert entry["exercised"] and entry["programs_raised"] == 1 and entry["symbols"] == []
    assert "raised where stock returns in 1 program" in activity_lines({"symcall": entry})[0]
    # Precision: a placement that did as stock did is still not exercised.
    idle = DceActivity()
    idle.add({"stock": stock, "symcall": _evaluation("symcall")})
    assert "NOT EXERCISED" in activity_lines(idle.summary(["symcall"]))[0]


def test_a_placement_with_a_regression_is_never_not_exercised():
    from fuzzdce.running.coverage import DceActivity, activity_lines

    wrong = wrong_values("thunderfx")
    activity = DceActivity()
    activity.add({"stock": _evaluation("stock"), "symcall": _evaluation("symcall", violations=[wrong])})
    line = activity_lines(activity.summary(["symcall"]))[0]
    assert "NOT EXERCISED" not in line and "failed where stock passes in 1 program" in line
    shared = DceActivity()  # a failure stock shows too is no edit of the placement's
    shared.add({"stock": _evaluation("stock", violations=[wrong]), "symcall": _evaluation("symcall", violations=[wrong])})
    assert "NOT EXERCISED" in activity_lines(shared.summary(["symcall"]))[0]
