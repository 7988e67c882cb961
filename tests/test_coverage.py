"""A campaign reports each placement's DCE activity against stock, and names a placement that changed nothing."""

import pytest

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
    assert symcall["programs_changed"] == sum(1 for n in symcall["per_program"] if n)
    assert symcall["exercised"] and symcall["symbols"], symcall
    assert all(s["removed"] + s["added"] > 0 for s in symcall["symbols"])
    assert data["planted:does_nothing"]["exercised"] is False


@pytest.mark.slow
def test_report_says_what_changed_and_what_was_not_exercised(campaign):
    text = render(campaign.summary(), None)
    assert "symcall changed subsymbols in" in text
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
