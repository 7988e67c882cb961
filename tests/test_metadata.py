"""The ``metadata`` oracle: each tensor of the forward and backward execution traces has, when it
runs, the shape, dtype, device and (an input) requires_grad its trace states; the first op whose
statement is wrong is named.

Planted faults it catches (a wrong dtype stated by an op, the ops after it traced from that
statement; an input stated to require grad), its silence on stock across drawn programs on jit and
jit-grad, the rule for symbolic dimensions, and two real Thunder 0.2.6 misstatements it finds.
"""

from __future__ import annotations

import pickle

import pytest
from conftest import evaluate_under
from hypothesis import HealthCheck, Phase, given, seed, settings
from sample_programs import DEAD_CODE_PROGRAM

from fuzzdce.core.faults import Misstatement, metadata_fault
from fuzzdce.core.model import Outcome
from fuzzdce.core.program import Program, Ref, Step, TensorInput
from fuzzdce.core.signatures import identity_id
from fuzzdce.oracles import metadata
from fuzzdce.oracles.metadata import Misstated
from fuzzdce.running import stated_metadata
from fuzzdce.running.path_running import run_path
from fuzzdce.running.placements import resolve
from fuzzdce.strategies.programs import programs

# cos, then two ops that read it: under ``cos_states_float64`` all three misstate their dtype.
COS_THEN_MORE = Program(
    (TensorInput((2, 3)), TensorInput((3,))),
    (
        Step("cos", "torch.cos({0})", (Ref(0),)),
        Step("add", "torch.add({0}, {1})", (Ref(2), Ref(1))),
        Step("sin", "torch.sin({0})", (Ref(3),)),
    ),
    (4,),
    seed=1,
)


def metadata_violations(evaluation):
    return [v for v in evaluation.violations if v.oracle == metadata.ORACLE_NAME]


def test_a_wrong_dtype_stated_by_an_op_is_caught_at_that_op_not_at_the_ops_traced_from_it(monkeypatch):
    """``cos`` states float64 and runs float32; ``add`` and ``sin``, traced from that statement,
    state float64 too and run float32. The first op is named, once per path."""
    every: list[str] = []
    check = stated_metadata.Observer.check

    def seeing_every_misstatement(self, stated, *values):
        every.extend(s.op for s, v in zip(stated, values) if s.differs(v, self.runs == 1))
        check(self, stated, *values)

    monkeypatch.setattr(stated_metadata.Observer, "check", seeing_every_misstatement)
    fault = "planted:cos_states_float64"
    evaluations = evaluate_under(COS_THEN_MORE, fault, paths=["jit"])
    assert metadata_violations(evaluations["stock"]) == []
    assert {"cos", "add", "sin"} <= set(every), every
    [violation] = metadata_violations(evaluations[fault])
    assert violation.fault == metadata_fault("metadata", "forward", "cos", "dtype")
    assert str(violation.fault) == "metadata | dtype misstated | at cos | in a forward trace"
    assert violation.site == "cos"
    assert "cos defines" in violation.message and "torch.float32 when it runs" in violation.message
    assert "the trace states torch.float64" in violation.message
    assert {m.op for m in evaluations[fault].outcomes["jit"].misstated} == {"cos"}


def test_an_input_stated_to_require_grad_is_caught():
    fault = "planted:input_states_requires_grad"
    evaluations = evaluate_under(DEAD_CODE_PROGRAM, fault, paths=["jit"])
    assert metadata_violations(evaluations["stock"]) == []
    [violation] = metadata_violations(evaluations[fault])
    assert (
        str(violation.fault)
        == "metadata | requires_grad misstated | at unpack_trivial | stated by thunder.core.prims.unpack_trivial_meta | in a forward trace"
    )
    assert "requires_grad False when it runs; the trace states True" in violation.message


QUIET = settings(
    max_examples=14,
    database=None,
    deadline=None,
    phases=[Phase.generate],
    suppress_health_check=list(HealthCheck),
)


def drawn_programs() -> list[Program]:
    found: list[Program] = []

    @QUIET
    @seed(5)
    @given(programs())
    def collect(program):
        found.append(program)

    collect()
    return found


HAND_WRITTEN = (
    DEAD_CODE_PROGRAM,
    COS_THEN_MORE,
    # a tuple result, a view and a reduction to an integer tensor
    Program(
        (TensorInput((3, 4)),),
        (
            Step("max", "torch.max({0}, 1)", (Ref(0),)),
            Step("getitem", "{0}[1]", (Ref(1),)),
            Step("mT", "{0}.mT", (Ref(0),)),
            Step("argmax", "torch.argmax({0}, 0)", (Ref(0),)),
        ),
        (2, 3, 4),
        seed=1,
    ),
    # a conversion, an in-place op on a non-leaf and a matmul
    Program(
        (TensorInput((2, 3)), TensorInput((3, 2))),
        (
            Step("double", "{0}.double()", (Ref(0),)),
            Step("exp", "torch.exp({0})", (Ref(0),)),
            Step("mul_", "{0}.mul_(2.0)", (Ref(3),)),
            Step("matmul", "torch.matmul({0}, {1})", (Ref(0), Ref(1))),
        ),
        (2, 4, 5),
        seed=1,
    ),
)


# Real misstatements of stock Thunder 0.2.6 on these paths, each pinned by its own test below: a
# drawn program meeting one (any amax, amin, max or min on a grad path) is no false alarm.
# The meta function of every op Thunder 0.2.6 registers automatically from torch: one adaptor.
AUTOMATIC_META = "thunder.torch.meta_adaptor.<locals>.meta_func"
STOCK_MISSTATES = {"metadata | dtype misstated | at unsqueeze | in a backward trace"}


# The fast subset (-m "not slow") checks the grad path (forward and backward traces); the full suite jit too.
@pytest.mark.parametrize("path", [pytest.param("jit", marks=pytest.mark.slow), "jit-grad"])
def test_stock_states_what_runs_on_drawn_and_hand_written_programs(path, monkeypatch):
    """Precision: under stock, across drawn programs and hand-written ones, nothing misstated (but
    the real misstatements pinned below), no check missed, and the observer saw every program
    Thunder ran."""
    observed: list[int] = []
    check = stated_metadata.Observer.check

    def counting(self, stated, *values):
        observed.append(id(self))
        check(self, stated, *values)

    monkeypatch.setattr(stated_metadata.Observer, "check", counting)
    stock = resolve("stock")
    ran = 0
    for program in (*HAND_WRITTEN, *drawn_programs()):
        before = len(observed)
        outcome = run_path(path, program, stock)
        assert outcome.failure is None, outcome.failure
        found = {str(v.fault) for v in metadata.check(outcome, Outcome("eager", "stock"))}
        assert found <= STOCK_MISSTATES, (program.source(), outcome.misstated)
        assert [w for w in outcome.not_checked if w[0] == metadata.ORACLE_NAME] == []
        if outcome.error is None:
            ran += 1
            assert len(observed) > before, program.source()
    assert ran >= 10


def test_symbolic_dimensions_are_stated_for_the_inputs_they_were_traced_from():
    """Under symbolic values the resized call reuses the trace on other shapes: a dimension that is
    a number proxy states nothing there, so stock's native ops misstate nothing."""
    outcome = run_path("jit-symbolic", COS_THEN_MORE, resolve("stock"))
    assert outcome.error is None and outcome.calls["resized"].cache == "hit"
    assert outcome.misstated == []


def test_a_fallback_op_under_symbolic_values_states_the_shape_it_was_traced_with():
    """A real Thunder 0.2.6 misstatement: an op Thunder registers automatically from torch (here
    ``torch.detach``, meta computed by torch on meta tensors) states its result's traced shape as
    numbers under ``cache="symbolic values"``, and the cached trace runs on other shapes. Ops after
    it are traced from that statement: ``torch.zeros(y.shape)`` returns the traced shape."""
    detached = Program(
        (TensorInput((2, 3)),),
        (Step("detach", "{0}.detach()", (Ref(0),)), Step("sin", "torch.sin({0})", (Ref(1),))),
        (2,),
        seed=1,
    )
    outcome = run_path("jit-symbolic", detached, resolve("stock"))
    assert outcome.calls["resized"].cache == "hit"
    [violation] = metadata.check(outcome, Outcome("eager", "stock"))
    assert str(violation.fault) == (f"metadata | shape misstated | at detach | stated by {AUTOMATIC_META} | in a forward trace")
    assert "[2, 3]" in violation.message  # what the trace states, the drawn shape


def test_one_meta_functions_misstatements_of_two_ops_are_two_faults_and_one_ops_in_two_programs_one():
    """Every op Thunder registers automatically is stated by one adaptor (``meta_adaptor``), whose
    misstatement under symbolic values shows at detach and at sgn: two faults, each known by its op
    and the adaptor that stated it. detach's in another program (other shapes, another op after it)
    is the same fault."""

    def misstatement(op: str, template: str, shape=(2, 3), after=("sin", "torch.sin({0})")):
        program = Program((TensorInput(shape),), (Step(op, template, (Ref(0),)), Step(*after, (Ref(1),))), (2,), seed=1)
        [violation] = metadata.check(run_path("jit-symbolic", program, resolve("stock")), Outcome("eager", "stock"))
        return violation

    detach, sgn = misstatement("detach", "{0}.detach()"), misstatement("sgn", "torch.sgn({0})")
    assert (detach.site, sgn.site) == ("detach", "sgn")
    assert detach.fault.stated_by == sgn.fault.stated_by == AUTOMATIC_META
    assert detach.fault != sgn.fault and identity_id(detach.fault.identity()) != identity_id(sgn.fault.identity())
    elsewhere = misstatement("detach", "{0}.detach()", shape=(4, 1, 2), after=("cos", "torch.cos({0})"))
    assert elsewhere.fault == detach.fault and identity_id(elsewhere.fault.identity()) == identity_id(detach.fault.identity())


def test_amaxs_backward_states_its_count_of_ties_bool():
    """A real Thunder 0.2.6 misstatement in a backward trace: amax's grad rule
    (``grad_chooser_backward``) counts the maxima with ``prims.sum`` of a bool mask, which states a
    bool; torch sums it to int64, and ``sum`` is restated so, but the ``unsqueeze`` after it still
    states bool (and so do the ``expand`` and the division's decomposition reading it)."""
    program = Program((TensorInput((3,)),), (Step("amax", "torch.amax({0}, 0)", (Ref(0),)),), (1,), seed=1)
    outcome = run_path("jit-grad", program, resolve("stock"))
    assert outcome.error is None
    [violation] = metadata.check(outcome, Outcome("eager", "stock"))
    assert str(violation.fault) == "metadata | dtype misstated | at unsqueeze | in a backward trace"
    assert "torch.int64 when it runs; the trace states torch.bool" in violation.message


def test_the_oracle_reports_each_misstatement_once_and_by_op_attribute_and_trace():
    outcome = Outcome("jit-grad", "p")
    outcome.misstated = [
        Misstated("forward", "sum", "t3", "shape", "[2]", "[3]"),
        Misstated("forward", "sum", "t9", "shape", "[4]", "[5]"),  # the next call: the same fault
        Misstated("backward", "sum", "t20", "shape", "[2]", "[3]"),
    ]
    violations = metadata.check(outcome, Outcome("eager", "stock"))
    assert [str(v.fault) for v in violations] == [
        "metadata | shape misstated | at sum | in a forward trace",
        "metadata | shape misstated | at sum | in a backward trace",
    ]
    assert all(isinstance(v.fault, Misstatement) and v.site == "sum" for v in violations)
    assert pickle.loads(pickle.dumps(outcome)).misstated == outcome.misstated  # plain data: it crosses processes


def test_a_trace_fuzzdce_cannot_copy_runs_as_thunder_made_it_and_is_counted_not_checked(monkeypatch):
    def broken(trace, observer):
        raise RuntimeError("planted: cannot copy")

    monkeypatch.setattr(stated_metadata, "observing_copy", broken)
    outcome = run_path("jit", DEAD_CODE_PROGRAM, resolve("stock"))
    assert outcome.error is None and outcome.failure is None
    assert ("metadata", "could not observe a forward trace (RuntimeError)") in outcome.not_checked


def test_a_thunder_whose_traces_are_named_otherwise_is_counted_not_checked(monkeypatch):
    """Another Thunder naming its forward function otherwise: nothing observed is no clean run."""
    monkeypatch.setattr(stated_metadata, "OBSERVED", {})
    outcome = run_path("jit", DEAD_CODE_PROGRAM, resolve("stock"))
    assert outcome.error is None and outcome.misstated == []
    assert ("metadata", "observed no forward trace's function") in outcome.not_checked
