"""Failures judged where the old oracles looked away: an internal error on a guard call (a clear
"not supported" is activity), and a call that eager and the reference reject but a Thunder under
test accepts (``rejects``)."""

import pytest
from conftest import evaluate_under
from sample_programs import DEAD_CODE_PROGRAM
from test_guards import SIN, TIMES_NUMBER, every_guard  # noqa: F401  (a fixture)
from test_oracles import MUTATING

from fuzzdce.core.faults import Raised
from fuzzdce.core.model import EAGER, Call, CallLabel, ErrorInfo, Outcome
from fuzzdce.core.program import Program, Ref, Step, TensorInput
from fuzzdce.oracles import guards, rejects

GUARDED_PATHS = ["jit", "jit-symbolic"]


def test_an_internal_error_compiling_again_for_a_guard_call_is_a_finding(every_guard):  # noqa: F811
    fault = "planted:recompile_fails_for_float64"
    evaluations = evaluate_under(DEAD_CODE_PROGRAM, fault, paths=GUARDED_PATHS)
    caught = evaluations[fault].violations
    assert [(v.oracle, v.path, v.error_type) for v in caught] == [("guards", p, "KeyError") for p in GUARDED_PATHS], caught
    assert caught[0].message.startswith("dtype varied: KeyError (guard-dtype call, forward)")
    assert isinstance(caught[0].fault, Raised) and caught[0].fault.exception == "KeyError"  # a fault as raises makes one
    assert evaluations["stock"].violations == []


def test_a_guard_call_thunder_says_it_does_not_support_is_activity(every_guard):  # noqa: F811
    fault = "planted:recompile_unsupported_for_float64"
    evaluation = evaluate_under(DEAD_CODE_PROGRAM, fault, paths=GUARDED_PATHS)[fault]
    assert evaluation.violations == []
    notes = [n for o in evaluation.outcomes.values() for n in o.notes]
    assert "guard call varied dtype, missed the cache, Thunder does not support it" in notes


def test_unsupported_reads_the_type_and_the_words():
    assert guards.unsupported(ErrorInfo("NotImplementedError", "", "", ""))
    assert guards.unsupported(ErrorInfo("RuntimeError", "dtype float64 is not supported by this executor", "", ""))
    assert not guards.unsupported(ErrorInfo("KeyError", "'t3'", "", ""))


# The fast subset (-m "not slow") checks one correct placement on the number and in-place programs;
# the full suite all three on all four.
@pytest.mark.parametrize(
    "placement", [pytest.param("identity", marks=pytest.mark.slow), "rdnp", pytest.param("symcall-fixed", marks=pytest.mark.slow)]
)
@pytest.mark.parametrize(
    "program",
    [pytest.param(DEAD_CODE_PROGRAM, marks=pytest.mark.slow), pytest.param(SIN, marks=pytest.mark.slow), TIMES_NUMBER, MUTATING],
    ids=["dead", "sin", "number", "mutating"],
)
def test_correct_placements_raise_where_stock_raises(placement, program, every_guard):  # noqa: F811
    paths = [*GUARDED_PATHS, "jit-grad", "thunderfx", "jit-torchcompile"]
    evaluations = evaluate_under(program, placement, paths=paths)
    assert evaluations[placement].violations == [] and evaluations["stock"].violations == []


def test_a_placement_that_drops_a_runtime_check_is_caught_where_eager_and_stock_reject(every_guard):  # noqa: F811
    """The grad call writes in place into a leaf that requires grad: eager and stock raise; a DCE
    that loses the executor's check returns a result, which no other oracle judges."""
    fault = "planted:copy_skips_leaf_check"
    evaluations = evaluate_under(MUTATING, fault, paths=["jit-grad", "jit"])
    caught = [v for v in evaluations[fault].violations if v.oracle == "rejects"]
    assert {(v.path, v.message.split(":")[0]) for v in caught} == {("jit-grad", "grad call"), ("jit", "guard-requires-grad call")}
    assert all("a leaf Variable that requires grad" in v.key for v in caught)
    assert evaluations["stock"].violations == []


def call(label, error=None, outputs=None):
    return Call(label, error=error, outputs=outputs)


def test_a_program_eager_rejects_is_judged_by_whether_the_reference_rejects_it():
    boom = ErrorInfo("RuntimeError", "shapes do not broadcast", "thunder/core/prims.py:meta", "")
    eager = Outcome(EAGER, "stock", calls={CallLabel.PLAIN: call(CallLabel.PLAIN, boom)}, error=boom)
    stock = Outcome("jit", "stock", calls={CallLabel.PLAIN: call(CallLabel.PLAIN, boom)}, error=boom)
    accepts = Outcome("jit", "p", calls={CallLabel.PLAIN: call(CallLabel.PLAIN, outputs=[1])})
    (violation,) = rejects.check(accepts, eager, stock)
    assert violation.message.startswith("plain call: returned a result where stock raised RuntimeError")
    assert rejects.check(stock, eager, None) == [], "the reference is never judged against itself"
    stock_accepts = Outcome("jit", "stock", calls={CallLabel.PLAIN: call(CallLabel.PLAIN, outputs=[1])})
    assert rejects.check(accepts, eager, stock_accepts) == [], "accepting what eager rejects is no regression"
    eager_runs = Outcome(EAGER, "stock", calls={CallLabel.PLAIN: call(CallLabel.PLAIN, outputs=[1])})
    assert rejects.check(accepts, eager_runs, stock) == [], "stock raising where eager runs is raises' finding"


def test_a_program_eager_rejects_runs_under_the_placement_only_where_the_reference_rejects_it():
    """A wrong broadcast: eager and stock raise on every path; the placement is run and judged."""
    bad = Program((TensorInput((2, 3)), TensorInput((4,))), (Step("add", "torch.add({0}, {1})", (Ref(0), Ref(1))),), (2,))
    evaluations = evaluate_under(bad, "identity", paths=["jit"])
    assert evaluations["identity"].invalid and evaluations["identity"].outcomes["jit"].error is not None
    assert evaluations["identity"].violations == []


@pytest.mark.slow
def test_the_reproducer_of_an_accepted_rejection_fails_until_the_check_is_back(tmp_path, capsys):
    from test_exact import reproduce

    assert reproduce(tmp_path, "planted:copy_skips_leaf_check", MUTATING, "jit-grad", "rejects", capsys) == (1, 0)
