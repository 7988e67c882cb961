"""Values are compared by each output's own dtype: integers, bools and Python numbers exactly, a
floating result within its dtype's default tolerance or no farther than eager from a float64 run
(``oracles.outputs.compare``); the outputs, grads, mutations and guards oracles share the rule."""

import pytest
import torch
from conftest import evaluate_under

from fuzzdce.core.model import EAGER, Call, CallLabel, Outcome
from fuzzdce.core.program import Program, Ref, Step, TensorInput
from fuzzdce.oracles import grads, guards, mutations, outputs
from fuzzdce.oracles.outputs import compare, compare_calls
from fuzzdce.running.calls import transfer
from fuzzdce.running.path_running import run_path


def eager_with(inputs, expected, float64=None, attribute="outputs", label=CallLabel.PLAIN):
    """Eager's outcome of one call: its inputs (after the call), ``attribute`` and its float64 twin."""
    reference = Outcome(EAGER, "stock", calls={label: Call(label, inputs_after=inputs, **{attribute: expected})})
    if float64 is not None:
        reference.float64_calls[label] = Call(label, **{attribute: float64})
    return reference


def thunder_with(actual, attribute="outputs", label=CallLabel.PLAIN):
    return Outcome("jit", "p", calls={label: Call(label, **{attribute: actual})})


@pytest.mark.parametrize(
    "low_precision_input, actual, expected",
    [
        (torch.ones(2, dtype=torch.bfloat16), torch.tensor(104), torch.tensor(100)),
        (torch.ones(2), torch.tensor(1000050), torch.tensor(1000000)),
        (torch.ones(2), torch.tensor(1 + 5e-5, dtype=torch.float64), torch.tensor(1.0, dtype=torch.float64)),
        (torch.ones(2), 1000050, 1000000),
        (torch.ones(2, dtype=torch.float16), 2.5, 2.5 + 1e-9),
        (torch.ones(2, dtype=torch.bfloat16), torch.tensor([True]), torch.tensor([False])),
    ],
    ids=["int64 beside bfloat16", "int64 beside float32", "float64 beside float32", "python int", "python float", "bool"],
)
def test_a_low_precision_input_loosens_no_other_output(low_precision_input, actual, expected):
    """Each of these passed when the loosest input dtype's tolerance applied to every output."""
    reference = eager_with([low_precision_input], [expected])
    (violation,) = compare_calls(thunder_with([actual]), reference, "outputs", "outputs", "output")
    assert violation.key == outputs.mismatch_key(violation.message)


def test_mutations_and_grads_share_the_rule():
    eager_inputs = [torch.ones(2, dtype=torch.bfloat16), torch.tensor([100])]
    reference = Outcome(EAGER, "stock", calls={CallLabel.PLAIN: Call(CallLabel.PLAIN, inputs_after=eager_inputs)})
    mutated = thunder_with([torch.ones(2, dtype=torch.bfloat16), torch.tensor([104])], "inputs_after")
    assert [v.oracle for v in mutations.check(mutated, reference)] == ["mutations"]
    inputs = [torch.ones(1, dtype=torch.float16), torch.ones(1)]
    reference = eager_with(
        inputs, [torch.ones(1, dtype=torch.float16), torch.tensor([1.0])], attribute="grads", label=CallLabel.GRAD
    )
    off = thunder_with([torch.ones(1, dtype=torch.float16), torch.tensor([1.0 + 1e-4])], "grads", CallLabel.GRAD)
    assert [v.oracle for v in grads.check(off, reference)] == ["grads"]


# A float32 result computed through a float16 input (the false alarm the loosest-input floor was
# for): eager rounds the float16 contribution at another step than Thunder.
EAGER_RESULT, THUNDER_RESULT = torch.tensor(-4.51953125), torch.tensor(-4.518796920776367)


def test_a_result_nearer_the_float64_run_than_eager_is_clean():
    assert compare(THUNDER_RESULT, EAGER_RESULT) is not None, "beyond float32's own tolerance"
    float64 = torch.tensor(-4.5188, dtype=torch.float64)  # eager is the farther one
    assert compare(THUNDER_RESULT, EAGER_RESULT, float64=float64) is None


def test_a_result_farther_from_the_float64_run_than_eager_is_a_mismatch():
    float64 = EAGER_RESULT.double()  # eager is exact: Thunder's difference is its own error
    reason = compare(THUNDER_RESULT, EAGER_RESULT, float64=float64)
    assert reason is not None and "farther from the float64 result than eager" in reason
    assert outputs.mismatch_key(reason) == outputs.mismatch_key(compare(THUNDER_RESULT, EAGER_RESULT))


def test_eager_runs_a_low_precision_program_again_in_float64_and_a_float64_one_once(stock):
    half = Program((TensorInput((2, 3), "float16"),), (Step("sin", "torch.sin({0})", (Ref(0),)),), (1,), seed=1)
    eager = run_path(EAGER, half, stock)
    twin = eager.float64_calls[CallLabel.PLAIN]
    assert twin.outputs[0].dtype == torch.float64 and eager.calls[CallLabel.PLAIN].outputs[0].dtype == torch.float16
    assert torch.equal(twin.inputs_after[0], eager.calls[CallLabel.PLAIN].inputs_after[0].double())
    assert CallLabel.GRAD in eager.float64_calls and eager.float64_calls[CallLabel.GRAD].grads[0].dtype == torch.float64
    double = Program((TensorInput((2, 3), "float64"),), half.steps, (1,), seed=1)
    assert run_path(EAGER, double, stock).float64_calls == {}


def test_float64_twins_keep_a_view_a_view():
    base = torch.randn(2, 3, dtype=torch.bfloat16)
    twins = transfer([base, base[...], torch.tensor([1, 2]), 2.5], floating=torch.float64)
    twins[1].add_(1)
    assert torch.equal(twins[0], twins[1]) and twins[0].dtype == torch.float64
    assert twins[2].dtype == torch.int64 and twins[3] == 2.5


# Softmax's gradient in bfloat16: Thunder's differs from eager's beyond bfloat16's own tolerance,
# and is no farther from the float64 gradient than eager's.
SOFTMAX = Program((TensorInput((4, 8), "bfloat16"),), (Step("softmax", "torch.softmax({0}, dim=1)", (Ref(0),)),), (1,), seed=0)


def test_stock_is_clean_on_a_bfloat16_gradient_that_only_the_float64_run_accepts():
    evaluation = evaluate_under(SOFTMAX, "stock", paths=["jit-grad"])["stock"]
    assert evaluation.violations == []
    call, expected = evaluation.outcomes["jit-grad"].calls[CallLabel.GRAD], evaluation.reference.calls[CallLabel.GRAD]
    assert compare(call.grads, expected.grads) is not None, "within bfloat16's own tolerance: proves nothing"


def test_guards_compare_against_the_guard_calls_float64_run():
    label = CallLabel.GUARD_DTYPE
    plain = Call(CallLabel.PLAIN, outputs=[torch.ones(1)])
    reference = Outcome(EAGER, "stock", calls={CallLabel.PLAIN: plain}, guard_calls={label: Call(label, outputs=[EAGER_RESULT])})
    outcome = Outcome("jit", "p", calls={CallLabel.PLAIN: plain}, guard_calls={label: Call(label, outputs=[THUNDER_RESULT])})
    assert [v.oracle for v in guards.check(outcome, reference)] == ["guards"]
    reference.float64_calls[label] = Call(label, outputs=[torch.tensor(-4.5188, dtype=torch.float64)])
    assert guards.check(outcome, reference) == []


def test_the_float64_run_computes_in_float64_through_a_conversion_down(stock):
    """A program that converts a value down itself (``.half()``) still runs in float64 in its twin."""
    down = Program(
        (TensorInput((2, 3)),),
        (
            Step("half", "{0}.half()", (Ref(0),)),
            Step("sin", "torch.sin({0})", (Ref(1),)),
            Step("mul", "{0}.shape[0] * {0}", (Ref(2),)),
        ),
        (3,),
        seed=1,
    )
    eager = run_path(EAGER, down, stock)
    assert eager.calls[CallLabel.PLAIN].outputs[0].dtype == torch.float16
    assert eager.float64_calls[CallLabel.PLAIN].outputs[0].dtype == torch.float64


# cos at an edge: half its elements among 0 and 1 (``TensorInput.edges``), where a planted grad rule
# is NaN at 0 and eager's gradient is finite.
def cos_at_zero(dtype: str) -> Program:
    return Program((TensorInput((3, 4), dtype, edges=(0.0, 1.0)),), (Step("cos", "torch.cos({0})", (Ref(0),)),), (1,), seed=5)


@pytest.mark.parametrize("dtype", ["bfloat16", "float32"])
def test_a_gradient_not_finite_where_eagers_is_is_a_finding_whatever_the_dtype(dtype):
    """Planted: a NaN gradient where eager's is finite is found in bfloat16 (where the float64 run and
    the dtype's loose tolerance apply) as in float32, and says so; stock is silent on the program."""
    assert bool((cos_at_zero(dtype).make_inputs()[0] == 0).any()), "the program must meet the edge"
    evaluations = evaluate_under(cos_at_zero(dtype), "planted:cos_grad_nan_at_zero", paths=["jit-grad"])
    (violation,) = [v for v in evaluations["planted:cos_grad_nan_at_zero"].violations if v.oracle == "grads"]
    assert "not finite where eager's is finite" in violation.message
    assert outputs.mismatch_key(violation.message).endswith("not finite where eager's is finite")
    assert evaluations["stock"].violations == []


def test_not_finite_is_judged_before_any_tolerance_and_only_where_eager_is_finite():
    """NaN or inf against eager's finite value is a mismatch even where the float64 run would excuse
    a finite error (eager far from it); NaN against NaN and inf against inf are not; a finite value
    where eager's is inf falls to the float64 rule, as before."""
    eager = torch.tensor([0.5, 1.0, float("nan"), float("inf")], dtype=torch.bfloat16)
    far = torch.tensor([100.0, 1.0, float("nan"), float("inf")], dtype=torch.float64)  # eager far from float64
    nan = torch.tensor([float("nan"), 1.0, float("nan"), float("inf")], dtype=torch.bfloat16)
    reason = compare(nan, eager, "grad", float64=far)
    assert reason is not None and reason.startswith("grad: not finite where eager's is finite; 1 NaN and 0 inf of 4")
    inf = torch.tensor([0.5, float("-inf"), float("nan"), float("inf")], dtype=torch.bfloat16)
    assert "0 NaN and 1 inf" in compare(inf, eager, "grad", float64=far)
    assert compare(eager.clone(), eager, "grad", float64=far) is None
    finite_for_inf = torch.tensor([0.5, 1.0, float("nan"), 3.0e38], dtype=torch.bfloat16)
    reason = compare(finite_for_inf, eager, "grad", float64=far)
    assert reason is not None and "not finite" not in reason
