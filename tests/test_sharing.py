"""What a program's evaluation shares, and what it leaves out, so that a campaign compiles what
judging it needs and no more (issue 55): a localising prefix runs the wrong call only, and a
Thunder that ran the reference's execution traces takes the reference's localisation, by identity."""

from __future__ import annotations

import dataclasses

import pytest
from builders import wrong_values as wrong_outputs

from fuzzdce.core.model import Placement
from fuzzdce.core.program import Program, Ref, Step, TensorInput
from fuzzdce.running.evaluate import Evaluator
from fuzzdce.running.placements import resolve

# add's value is wrong under planted:add_computes_sub; neg before it and abs after it are not.
ADD_BETWEEN = Program(
    (TensorInput((3,), "float32"),),
    (
        Step("neg", "torch.neg({0})", (Ref(0),)),
        Step("add", "torch.add({0}, {0})", (Ref(1),)),
        Step("abs", "torch.abs({0})", (Ref(2),)),
    ),
    (3,),
    seed=2,
)


def wrong_values(evaluation):
    return [v for v in evaluation.violations if v.oracle == "outputs"]


def test_a_localising_prefix_runs_through_the_wrong_call_only_and_compiles_no_reference(runs):
    """The wrong value is localised at add, as before; its prefixes run under the wrong Thunder only,
    through the plain call (jit's guard calls, which compile again, are not made), and stock
    compiles none of them (``outputs`` compares with eager)."""
    wrong = resolve("planted:add_computes_sub")
    evaluation = Evaluator()(ADD_BETWEEN, [wrong], paths=["jit"])[wrong.name]
    (violation,) = wrong_values(evaluation)
    assert violation.site == "add" and "first differs at add" in str(violation.fault), violation
    prefixes = [run for run in runs if run[2] != tuple(ADD_BETWEEN.ops) and run[1] != "eager"]
    assert prefixes, runs
    assert all(placement == wrong.name and through == "plain" for placement, _, _, through in prefixes), prefixes


def test_a_thunder_that_ran_the_references_execution_takes_its_localisation(runs):
    """Under the wrong Thunder as the reference, a placement that ran the very execution traces
    (the wrong one again, under another name) shows the same wrong value: the reference's
    localisation is its own, and no prefix runs under it."""
    reference = resolve("planted:add_computes_sub")
    same = dataclasses.replace(reference, name="add computes sub, again")
    evaluations = Evaluator()(ADD_BETWEEN, [same], paths=["jit"], reference=reference)
    (theirs,), (mine,) = wrong_values(evaluations[reference.name]), wrong_values(evaluations[same.name])
    assert mine.site == theirs.site == "add" and mine.message == theirs.message
    prefixes_under_same = [run for run in runs if run[0] == same.name and run[2] != tuple(ADD_BETWEEN.ops)]
    assert prefixes_under_same == []


def test_the_references_localisation_is_taken_by_identity_not_by_words(runs, monkeypatch):
    """The same wrong value, from the very execution traces, worded otherwise under each Thunder
    (a message naming who ran it): it is one failure, and takes the reference's localisation by its
    identity; no prefix runs under the other Thunder."""
    from fuzzdce.oracles import outputs

    compare_calls = outputs.compare_calls

    def worded_by_placement(outcome, *args):
        return [dataclasses.replace(v, message=f"{v.message} (under {outcome.placement})") for v in compare_calls(outcome, *args)]

    monkeypatch.setattr(outputs, "compare_calls", worded_by_placement)
    reference = resolve("planted:add_computes_sub")
    same = dataclasses.replace(reference, name="add computes sub, again")
    evaluations = Evaluator()(ADD_BETWEEN, [same], paths=["jit"], reference=reference)
    (theirs,), (mine,) = wrong_values(evaluations[reference.name]), wrong_values(evaluations[same.name])
    assert mine.site == theirs.site == "add" and mine.fault == theirs.fault
    assert [run for run in runs if run[0] == same.name and run[2] != tuple(ADD_BETWEEN.ops)] == []


def add_as_sub_and_abs_as_neg():
    """add rebound to sub, as planted:add_computes_sub, and abs to neg: on ``ADD_BETWEEN`` the
    same values (abs and neg of the zeros ``x - x`` makes), other execution traces."""
    import thunder.torch as ltorch
    from planted import _after_dce

    rebound = {ltorch.add: ltorch.sub, ltorch.abs: ltorch.neg}

    def rebind(trace, result) -> None:
        result.bound_symbols = [
            bsym.from_bsym(sym=rebound[bsym.sym], subsymbols=()) if bsym.sym in rebound else bsym for bsym in result.bound_symbols
        ]

    return _after_dce(rebind)


def test_a_thunder_that_ran_other_execution_traces_localises_its_own_wrong_value(runs):
    """Precision: the same wrong value, bit for bit, from other execution traces than the
    reference's (abs run as neg, on zeros) is localised by the placement's own prefixes, never taken
    from the reference's."""
    reference = resolve("planted:add_computes_sub")
    other = Placement("add as sub, abs as neg", add_as_sub_and_abs_as_neg)
    evaluations = Evaluator()(ADD_BETWEEN, [other], paths=["jit"], reference=reference)
    (theirs,), (mine,) = wrong_values(evaluations[reference.name]), wrong_values(evaluations[other.name])
    assert evaluations[other.name].outcomes["jit"].execution_differs, "the planted placement no longer runs other traces"
    assert mine.message == theirs.message, "the two wrong values no longer read alike"
    assert mine.site == theirs.site == "add"
    assert any(run[0] == other.name and run[2] != tuple(ADD_BETWEEN.ops) for run in runs)


@pytest.mark.parametrize("steps, wrong_from", [(40, 25), (40, 0), (40, 39), (12, 7)])
def test_a_long_programs_wrong_value_is_localised_in_few_prefix_runs(steps, wrong_from):
    """A chain of ``steps`` ops, wrong from step ``wrong_from`` on: localised at that step, by
    bisection past ``SCANNED_STEPS`` (about log2 of its steps prefix runs, not one per step), by one
    run per step up to it below."""
    from fuzzdce.running.localise import SCANNED_STEPS, first_wrong

    chain = tuple(Step("add", "torch.add({0}, 1)", (Ref(i),)) for i in range(steps))
    program = Program((TensorInput((2,)),), chain, (steps,))
    wrong = wrong_outputs("jit")
    asked = []

    def run(prefix):
        asked.append(prefix.n_ops - 1)
        return [wrong] if prefix.n_ops - 1 >= wrong_from else []

    step, _ = first_wrong(program, wrong, run)
    assert step == wrong_from
    if steps == 40:  # past SCANNED_STEPS: six or seven runs, where one per step would be up to forty
        assert steps > SCANNED_STEPS and len(asked) <= 7, asked
    else:
        assert asked == list(range(wrong_from + 1))
