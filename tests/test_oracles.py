"""Each oracle catches a fault planted through a placement, and is silent on stock for the same program."""

import pytest

from fuzzdce.evaluate import evaluate
from fuzzdce.program import Program, Ref, Step, TensorInput
from fuzzdce.placements import resolve

PROGRAM = Program(
    (TensorInput((2, 3)), TensorInput((3,))),
    (
        Step("add", "torch.add({0}, {1})", (Ref(0), Ref(1))),
        Step("exp", "torch.exp({0})", (Ref(0),)),  # dead
        Step("cos", "torch.cos({0})", (Ref(2),)),
    ),
    (4,),
    seed=1,
)


@pytest.fixture(scope="module")
def on_stock():
    return evaluate(PROGRAM, resolve("stock"))


def oracles_hit(evaluation, path=None):
    return {v.oracle for v in evaluation.violations if path is None or v.path == path}


def test_stock_is_silent(on_stock):
    assert on_stock.violations == []
    assert set(on_stock.outcomes) == {"jit", "thunderfx"}


@pytest.mark.parametrize(
    "placement, path, oracle",
    [
        ("planted:colliding_names", "jit", "names"),
        ("planted:add_computes_sub", "jit", "outputs"),
        ("planted:failing_splitter", "thunderfx", "splits"),
    ],
)
def test_planted_fault_is_caught(placement, path, oracle):
    evaluation = evaluate(PROGRAM, resolve(placement), paths=[path])
    assert oracle in oracles_hit(evaluation, path), evaluation.violations


def test_raises_oracle_reports_thunder_raising():
    evaluation = evaluate(PROGRAM, resolve("planted:colliding_names"), paths=["jit"])
    assert "raises" in oracles_hit(evaluation)


def test_eager_failure_makes_the_program_invalid_not_a_finding():
    bad = Program((TensorInput((2, 3)), TensorInput((4,))), (Step("add", "torch.add({0}, {1})", (Ref(0), Ref(1))),), (2,))
    evaluation = evaluate(bad, resolve("symcall"))
    assert evaluation.invalid and evaluation.violations == [] and evaluation.outcomes == {}
