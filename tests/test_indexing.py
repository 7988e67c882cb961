"""Python's indexing and in-place semantics and the shapes of training code are drawn in programs,
valid by construction (they run in eager, plain and grad calls alike), with gradients checked."""

import pytest
import torch
from conftest import evaluate_under
from hypothesis import HealthCheck, Phase, find, given, seed, settings

from fuzzdce.core.model import CallLabel
from fuzzdce.core.program import Program, Ref, Step, TensorInput
from fuzzdce.strategies import BY_NAME, programs
from fuzzdce.strategies.ops_indexing import OPS as INDEXING
from fuzzdce.strategies.ops_training import OPS as TRAINING
from fuzzdce.strategies.spec import source

# Ops some entries need before them: a computed (writable) tensor, a 0-d one.
ENABLERS = (BY_NAME["clone"], BY_NAME["sum_all"])
# Hypothesis's default profile as the parent: a profile another test loads must not change the draws.
SEARCH = settings(
    settings.get_profile("default"),
    max_examples=2000,
    deadline=None,
    database=None,
    phases=[Phase.generate],
    suppress_health_check=list(HealthCheck),
)


def runs_in_eager(program: Program) -> None:
    """The plain call, and a grad call backpropagating through every output that requires grad."""
    program.function()(*program.make_inputs())
    inputs = program.make_inputs(requires_grad=True)
    outputs = [o for o in program.function()(*inputs) if isinstance(o, torch.Tensor) and o.requires_grad]
    if outputs:
        torch.autograd.backward([o.sum() for o in outputs])


def writes_an_input(program: Program) -> bool:
    """In-place on an input (the aliased pair): eager rejects the grad call, by design (``rejects``)."""
    written = {s.refs()[0] for s in program.steps if BY_NAME[s.op].operands[0].written}
    return any(i < len(program.inputs) for i in written)


@pytest.mark.parametrize("name", [pytest.param("mask_setitem_matching", marks=pytest.mark.slow), "setitem_into_fresh"])
def test_mask_setitem_and_a_grad_value_written_into_a_non_grad_tensor_are_drawn_and_valid(name):
    """Drawn among the rest of the catalog's indexing entries, and the program runs in eager."""
    program = find(
        programs(catalog=(*INDEXING, *ENABLERS), max_ops=4),
        lambda p: name in p.ops and not writes_an_input(p),
        settings=SEARCH,
    )
    runs_in_eager(program)


@seed(47)
@settings(SEARCH, max_examples=150)
@given(programs(catalog=(*INDEXING, *TRAINING, *ENABLERS), max_ops=5))
def test_indexing_and_training_programs_are_valid_by_construction(program):
    """Whatever is drawn runs in eager: the plain call, and the grad call unless an input is written."""
    if writes_an_input(program):
        program.function()(*program.make_inputs())
    else:
        runs_in_eager(program)


# A buffer that does not require grad, filled in place from a value that does (``setitem_into_fresh``):
# the result requires grad, and only the positions written get a gradient.
INTO_FRESH = Program(
    (TensorInput((2, 3)), TensorInput((2, 3))),
    (
        Step(
            "setitem_into_fresh",
            BY_NAME["setitem_into_fresh"].template,
            (Ref(0), Ref(1)),
            (("index", source("0")),),
        ),
    ),
    (2,),
    seed=1,
)


def test_a_grad_value_written_into_a_fresh_tensor_carries_its_gradient_and_stock_agrees():
    inputs = INTO_FRESH.make_inputs(requires_grad=True)
    (out,) = INTO_FRESH.function()(*inputs)
    assert out.requires_grad
    out.sum().backward()
    assert inputs[0].grad is None and torch.equal(inputs[1].grad, torch.tensor([[1.0] * 3, [0.0] * 3]))
    evaluation = evaluate_under(INTO_FRESH, "stock", paths=["jit-grad"])["stock"]
    assert evaluation.violations == [], evaluation.violations
    assert evaluation.outcomes["jit-grad"].calls[CallLabel.GRAD].grads is not None
