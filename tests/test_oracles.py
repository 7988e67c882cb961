"""Each oracle catches a fault planted through a placement, and is silent on stock for the same program."""

import pytest
import torch
from conftest import evaluate_among, evaluate_under
from sample_programs import DEAD_CODE_PROGRAM

from fuzzdce.core.model import Call, CallLabel, ErrorInfo, JobFailure, Outcome
from fuzzdce.core.program import Program, Ref, Step, TensorInput
from fuzzdce.core.signatures import normalise
from fuzzdce.oracles import grads, raises, split_set
from fuzzdce.running.paths import DEFAULT_PATHS

PROGRAM = DEAD_CODE_PROGRAM

# v0 is multiplied in place; the result read afterwards does not depend on it.
MUTATING = Program(
    (TensorInput((2, 3)), TensorInput((3,))),
    (Step("mul_", "{0}.mul_({1})", (Ref(0), Ref(1))), Step("cos", "torch.cos({0})", (Ref(1),))),
    (3,),
    seed=1,
)


@pytest.fixture(scope="module")
def on_stock():
    return evaluate_under(PROGRAM, "stock")["stock"]


def oracles_hit(evaluation, path=None):
    return {v.oracle for v in evaluation.violations if path is None or v.path == path}


def test_stock_is_silent_on_every_default_path(on_stock):
    assert on_stock.violations == []
    assert set(on_stock.outcomes) == set(DEFAULT_PATHS)


def test_stock_is_silent_on_a_program_mutating_its_input():
    assert evaluate_under(MUTATING, "stock", paths=["jit", "jit-symbolic"])["stock"].violations == []


PLANTED = [
    ("planted:colliding_names", PROGRAM, "jit", "names"),
    ("planted:add_computes_sub", PROGRAM, "jit", "outputs"),
    ("planted:failing_splitter", PROGRAM, "thunderfx", "splits"),
    ("planted:exp_unsupported_in_splitter", PROGRAM, "thunderfx", "split-set"),
    ("planted:cos_grad_flipped", PROGRAM, "jit-grad", "grads"),
    ("planted:cos_grad_flipped", PROGRAM, "thunderfx", "grads"),
    ("planted:inplace_made_functional", MUTATING, "jit", "mutations"),
    ("planted:lazy_dce", PROGRAM, "jit", "idempotent"),
    ("planted:cos_states_float64", PROGRAM, "jit", "metadata"),
]
ONLY_ITS_ORACLE = ["planted:exp_unsupported_in_splitter", "planted:lazy_dce", "planted:cos_grad_flipped"]


def only_its_oracles_path(placement):
    return "thunderfx" if "splitter" in placement else "jit-grad"


def together_on(program, path):
    """The planted faults the tests below evaluate ``program`` under on ``path``: evaluated together
    (``evaluate_among``), stock compiles each program once per path for all of them."""
    planted = [p for p, prog, pa, _ in PLANTED if prog is program and pa == path]
    if program is PROGRAM:
        planted += [p for p in ONLY_ITS_ORACLE if only_its_oracles_path(p) == path]
    return tuple(dict.fromkeys(planted))


@pytest.mark.parametrize("placement, program, path, oracle", PLANTED)
def test_planted_fault_is_caught(placement, program, path, oracle):
    evaluations = evaluate_among(program, placement, together_on(program, path), paths=[path])
    baseline, evaluation = evaluations["stock"], evaluations[placement]
    assert oracle in oracles_hit(evaluation, path), evaluation.violations
    assert oracle not in oracles_hit(baseline), baseline.violations


@pytest.mark.parametrize("placement", ONLY_ITS_ORACLE)
def test_planted_fault_is_caught_by_its_oracle_only(placement):
    """A split without an exception is no exception split; a fixed-point failure is no malformed trace."""
    path = only_its_oracles_path(placement)
    hit = oracles_hit(evaluate_among(PROGRAM, placement, together_on(PROGRAM, path), paths=[path])[placement])
    assert len(hit) == 1, hit


def test_raises_oracle_reports_thunder_raising():
    evaluation = evaluate_under(PROGRAM, "planted:colliding_names", paths=["jit"])["planted:colliding_names"]
    assert "raises" in oracles_hit(evaluation)


def test_eager_failure_makes_the_program_invalid_not_a_finding():
    """Stock rejects it too, so the placement runs it (``rejects`` judges whether it accepts it)."""
    bad = Program((TensorInput((2, 3)), TensorInput((4,))), (Step("add", "torch.add({0}, {1})", (Ref(0), Ref(1))),), (2,))
    evaluations = evaluate_under(bad, "symcall")
    evaluation = evaluations["symcall"]
    assert evaluation.invalid and evaluation.violations == [] and evaluations["stock"].violations == []
    assert set(evaluation.outcomes) == set(evaluations["stock"].outcomes) == set(DEFAULT_PATHS)
    assert all(o.error is not None for o in evaluations["stock"].outcomes.values())


def test_in_place_on_a_leaf_is_invalid_for_the_grad_call_only():
    """Eager rejects mul_ on a leaf that requires grad: Thunder's grad call is then not judged."""
    evaluation = evaluate_under(MUTATING, "stock", paths=["jit-grad"])["stock"]
    assert not evaluation.invalid
    assert evaluation.reference.calls["grad"].error is not None
    assert "raises" not in oracles_hit(evaluation)


# --- oracles on hand-made outcomes (no Thunder) ---------------------------------------------------


def _error(message="boom"):
    return ErrorInfo("RuntimeError", message, "", "")


def _outcome(path="jit", **calls):
    outcome = Outcome(path, "p")
    for label, error in calls.items():
        outcome.calls[label] = Call(label, error=error)
    return outcome


def test_raises_compares_call_by_call():
    reference = _outcome("eager", plain=None, grad=_error("leaf"))
    assert raises.check(_outcome(plain=None, grad=_error()), reference) == []
    assert [v.message for v in raises.check(_outcome(plain=_error(), grad=None), reference)] == ["RuntimeError (): boom"]


class _Reason:
    def __init__(self, kind, info, exception=None):
        self.reason_type = type("Kind", (), {"name": kind})()
        self.info, self.exception = info, exception


def test_split_set_ignores_node_numbering_and_reports_both_directions():
    stock = Outcome("thunderfx", "stock", split_reasons=[_Reason("MISSING_OP_SUPPORT", "node sin_1 at 0x7f00")])
    same = Outcome("thunderfx", "p", split_reasons=[_Reason("MISSING_OP_SUPPORT", "node sin_7 at 0x7fff")])
    other = Outcome("thunderfx", "p", split_reasons=[_Reason("UNSUPPORTED_NODE", "node cos_1")])
    reference = _outcome("eager", plain=None)
    assert split_set.check(same, reference, stock) == []
    messages = [v.message.split(":")[0] for v in split_set.check(other, reference, stock)]
    assert messages == ["split appears", "split disappears"]


def test_timeout_and_crash_are_oracles_reading_the_job_failure():
    from fuzzdce.oracles import ORACLES

    reference = _outcome("eager", plain=None)
    for kind in ("timeout", "crash"):
        failed = Outcome("jit", "p", failure=JobFailure(kind, "worker killed by SIGSEGV"))
        hit = {v.oracle for o in ORACLES.values() for v in o(failed, reference, None)}
        assert hit == {kind}


def test_split_set_reads_stock_from_its_caller_and_never_compiles():
    """Handed no stock outcome (stock itself), it is silent rather than compiling stock."""
    stock = Outcome("thunderfx", "stock", split_reasons=[_Reason("MISSING_OP_SUPPORT", "node exp_1")])
    mine = Outcome("thunderfx", "p")
    reference = _outcome("eager", plain=None)
    assert split_set.check(mine, reference, None) == []
    assert [v.message.split(":")[0] for v in split_set.check(mine, reference, stock)] == ["split disappears"]


def test_check_trace_runs_in_thunders_cache_info_context():
    """Re-executing index_put's meta reads Thunder's cache info: outside the context Thunder sets
    while compiling, check_trace raised LookupError, a baseline "bug" of the harness's making."""
    from fuzzdce.core.program import Literal

    index_put = Program(
        (TensorInput((3, 2)), TensorInput((3, 2))),
        (
            Step("copysign", "torch.copysign({0}, {1})", (Ref(0), Ref(1))),
            Step(
                "index_put",
                "torch.index_put({0}, ({index},), torch.tensor({v}, dtype={0}.dtype))",
                (Ref(2),),
                (("index", Literal("torch.tensor([0, 2])")), ("v", 2.0)),
            ),
        ),
        (3,),
        seed=1,
    )
    assert evaluate_under(index_put, "stock", paths=["jit"])["stock"].violations == []


def test_a_wrong_value_is_one_finding_whatever_the_rank_or_dtype_but_a_wrong_dtype_is_another():
    """The mismatch's detail names the first differing index, as long as the value's rank: the key
    leaves it out, so one fault is not a finding per rank drawn."""
    import torch

    from fuzzdce.core.signatures import normalise
    from fuzzdce.oracles.outputs import compare, mismatch_key

    values = (torch.ones(()), torch.ones(3), torch.ones(2, 3), torch.ones(3, dtype=torch.int64))
    keys = {normalise(mismatch_key(compare(x + 1, x))) for x in values}
    assert len(keys) == 1, keys
    wrong_dtype = normalise(mismatch_key(compare(torch.ones(3, dtype=torch.float64), torch.ones(3))))
    assert wrong_dtype not in keys


def test_grads_compares_only_elements_whose_inputs_were_finite():
    """At a NaN input a derivative is a convention (elu's: eager 1.0, Thunder NaN): not compared;
    a wrong gradient at a finite input still is."""
    inputs = [torch.tensor([float("nan"), 1.0])]

    def outcome(path, grad):
        return Outcome(
            path, "stock", calls={CallLabel.GRAD: Call(CallLabel.GRAD, grads=[torch.tensor(grad)], inputs_after=inputs)}
        )

    eager = outcome("eager", [1.0, 2.0])
    assert grads.check(outcome("jit", [float("nan"), 2.0]), eager) == []
    (violation,) = grads.check(outcome("jit", [float("nan"), 3.0]), eager)
    assert violation.oracle == "grads"


def test_a_requires_grad_mismatch_keeps_its_identity_when_a_returned_value_goes():
    """Dropping a returned value that agrees with eager leaves the same failure (a shrinker and
    the minimality check must both see it so), while the opposite mismatch is another."""

    def outcome(path, flags):
        return Outcome(path, "stock", calls={CallLabel.GRAD: Call(CallLabel.GRAD, output_requires_grad=flags)})

    def identity(flags, eager_flags):
        (violation,) = grads.requires_grad_mismatches(outcome("jit", flags), outcome("eager", eager_flags))
        return normalise(violation.key or violation.message)

    assert identity([True, False], [True, True]) == identity([False], [True])
    assert identity([False], [True]) != identity([True], [False])
    assert grads.requires_grad_mismatches(outcome("jit", [True, False]), outcome("eager", [True, False])) == []


def test_gradients_are_compared_only_where_the_outputs_requires_grad_agree():
    """An output that lost requires_grad (hstack of 0-d tensors under thunder.jit) also changes the
    gradients, which flow through fewer outputs: one fault, filed once, as the flag. Where the flags
    agree, a wrong gradient is still a finding."""

    def outcome(path, flags, grad):
        call = Call(CallLabel.GRAD, output_requires_grad=flags, grads=[torch.tensor([grad])], grad_inputs=[0])
        return Outcome(path, "stock", calls={CallLabel.GRAD: call})

    eager = outcome("eager", [True, True], 2.0)
    (flag,) = grads.check(outcome("jit", [False, True], 1.0), eager)
    assert flag.error_type == "RequiresGradMismatch"
    (value,) = grads.check(outcome("jit", [True, True], 1.0), eager)
    assert value.error_type == "Mismatch"


def test_a_backward_through_an_output_eager_does_not_differentiate_is_no_raise():
    """ones_like of an in-place result required grad under thunder.jit, and its backward then
    raised: eager never makes that backward, so the flag (``grads``) is the one finding; a backward
    raising where the flags agree is still Thunder's exception."""
    from fuzzdce.core.model import CallStage, ErrorInfo
    from fuzzdce.oracles import raises

    def outcome(path, flags, error=None):
        call = Call(CallLabel.GRAD, output_requires_grad=flags, error=error, stage=CallStage.BACKWARD if error else "")
        return Outcome(path, "stock", calls={CallLabel.GRAD: call}, error=error)

    error = ErrorInfo("AssertionError", "", "thunder/executors/torch_autograd.py:backward", "")
    assert raises.check(outcome("jit-grad", [True], error), outcome("eager", [False])) == []
    (violation,) = raises.check(outcome("jit-grad", [True], error), outcome("eager", [True]))
    assert violation.error_type == "AssertionError"


def test_an_exception_without_a_message_says_where_it_was_raised():
    """A bare ``assert`` in Thunder raises an AssertionError with no message: the report says where
    it was raised (what tells two of them apart), not an empty headline."""
    from fuzzdce.core.model import ErrorInfo
    from fuzzdce.oracles import raises

    bare = ErrorInfo("AssertionError", "", "thunder/executors/torch_autograd.py:backward", "")
    assert raises.raised("jit-grad", bare, " (grad call, backward)").message == (
        "AssertionError (grad call, backward): (no message) raised in thunder/executors/torch_autograd.py:backward"
    )
    said = ErrorInfo("KeyError", "'t1'", "thunder/core/symbol.py:__call__", "")
    assert raises.raised("thunderfx", said).message == "KeyError: 't1'"


# sin(v0) * cos(v1), v1 drawn not to require grad: one gradient, v0's. (Returning cos(v1) too is
# a finding of stock's: thunder.jit's output requires grad where eager's does not, 0.2.6 and main.)
MIXED_GRAD = Program(
    (TensorInput((2, 3)), TensorInput((3,), requires_grad=False)),
    (
        Step("sin", "torch.sin({0})", (Ref(0),)),
        Step("cos", "torch.cos({0})", (Ref(1),)),
        Step("mul", "torch.mul({0}, {1})", (Ref(2), Ref(3))),
    ),
    (4,),
    seed=2,
)


def test_grads_follow_each_inputs_own_flag_and_stay_silent_on_stock():
    evaluation = evaluate_under(MIXED_GRAD, "stock", paths=["jit-grad"])["stock"]
    assert evaluation.violations == []
    grad_call = evaluation.reference.calls["grad"]
    assert grad_call.grad_inputs == [0] and len(grad_call.grads) == 1


def test_a_flipped_grad_is_caught_on_an_input_that_requires_grad_beside_one_that_does_not():
    mixed = Program(
        (TensorInput((3,), requires_grad=False), TensorInput((3,))),
        (Step("mul", "torch.mul({0}, {1})", (Ref(0), Ref(1))), Step("cos", "torch.cos({0})", (Ref(2),))),
        (3,),
        seed=2,
    )
    evaluations = evaluate_under(mixed, "planted:cos_grad_flipped", paths=["jit-grad"])
    assert "grads" in oracles_hit(evaluations["planted:cos_grad_flipped"])
    assert evaluations["stock"].violations == []


def test_finite_grads_masks_the_inputs_that_required_grad():
    """Gradients are per input that required grad: the mask of a non-finite input follows the positions."""
    inputs = [torch.tensor([1.0, 2.0]), torch.tensor([float("nan"), 1.0])]
    call = Call(CallLabel.GRAD, grads=[torch.tensor([5.0, 5.0])], grad_inputs=[1])
    (masked,) = grads.finite_grads(call, inputs, [1]).grads
    assert masked.tolist() == [0.0, 5.0]


def test_a_flag_thunders_autograd_function_invents_is_one_fault_whatever_the_op():
    """thunder.jit's autograd Function marks every output it makes differentiable: an output eager
    does not differentiate (new_full beside a product, rsub of an input without grad beside
    logsumexp) requires grad under it. Its flag is that Function's, not the op's: one identity,
    read from the output's autograd node, with no op to localise. An invented flag no Thunder
    Function made, or a lost one, is still localised at its op."""
    from fuzzdce.core.faults import fault_of
    from fuzzdce.running.localise import needs_localising

    def program(steps, outputs, inputs):
        return Program(inputs, steps, outputs, seed=3)

    new_full = program(
        (Step("new_full", "{0}.new_full((2,), 3.0)", (Ref(0),)), Step("mul", "torch.mul({0}, {0})", (Ref(0),))),
        (1, 2),
        (TensorInput((3,)),),
    )
    rsub = program(
        (Step("logsumexp", "torch.logsumexp({0}, dim=-1)", (Ref(1),)), Step("rsub", "torch.rsub({0}, 1.0)", (Ref(0),))),
        (2, 3),
        (TensorInput((3,), requires_grad=False), TensorInput((2, 3))),
    )
    invented = []
    for p in (new_full, rsub):
        evaluation = evaluate_under(p, "stock", paths=["jit-grad"])["stock"]
        (flag,) = [v for v in evaluation.violations if v.error_type == "RequiresGradMismatch"]
        assert flag.site.startswith("thunder.") and not needs_localising(flag), flag
        invented.append(fault_of(flag))
    assert invented[0] == invented[1]
    assert evaluate_under(new_full, "stock", paths=["thunderfx"])["stock"].violations == [], "thunderfx marks them as eager"

    def flags(actual, wanted, functions):
        call = Call(CallLabel.GRAD, output_requires_grad=actual, output_functions=functions)
        outcome = Outcome("jit-grad", "stock", calls={CallLabel.GRAD: call})
        (v,) = grads.requires_grad_mismatches(
            outcome, Outcome("eager", "stock", calls={CallLabel.GRAD: Call(CallLabel.GRAD, output_requires_grad=wanted)})
        )
        return v

    assert needs_localising(flags([True], [False], [None]))
    assert needs_localising(flags([True], [False], ["mylib.Scale"]))
    assert needs_localising(flags([False], [True], [None]))


def test_memory_no_op_wrote_reads_alike_in_eager_and_under_thunder():
    """``torch.empty_like(x)`` alone returns whatever the allocator held: a shrink that reduced
    ``torch.empty_like(x).fill_(0.5)`` to it compared two runs' leftover memory and filed it, under
    the placement that patches nothing. Every run fills memory no op wrote (PyTorch's deterministic
    mode: NaN for floats, the largest value for integers), eager's and Thunder's alike."""
    import torch

    program = Program(
        (TensorInput((2, 3)), TensorInput((4,), dtype="int64")),
        (Step("empty_like", "torch.empty_like({0})", (Ref(0),)), Step("empty_like", "torch.empty_like({0})", (Ref(1),))),
        (2, 3),
        seed=1,
    )
    before = (torch.are_deterministic_algorithms_enabled(), torch.utils.deterministic.fill_uninitialized_memory)
    for placement in ("stock", "identity"):
        evaluation = evaluate_under(program, placement, paths=["jit", "jit-grad", "thunderfx"])[placement]
        assert evaluation.violations == [], evaluation.violations
    after = (torch.are_deterministic_algorithms_enabled(), torch.utils.deterministic.fill_uninitialized_memory)
    assert after == before, "the fill is the run's, not the process's"
