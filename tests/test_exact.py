"""The ``exact`` oracle: where a placement ran stock's execution trace (names aside), its results
are stock's bit for bit; other execution traces are activity, never a finding."""

import pytest
import torch
from conftest import evaluate_among
from sample_programs import DEAD_CODE_PROGRAM
from test_oracles import MUTATING

from fuzzdce.core.model import EAGER, Call, CallLabel, Outcome
from fuzzdce.core.portable_trace import Name, Node, PortableTrace
from fuzzdce.core.program import Program, Ref, Step, TensorInput
from fuzzdce.core.vocabulary import TraceLabel
from fuzzdce.oracles import exact, outputs
from fuzzdce.running.coverage import DceActivity, activity_lines
from fuzzdce.running.path_running import NONDETERMINISTIC_NOTE, run_path
from fuzzdce.running.placements import PLACEMENTS

PATHS = ["jit", "jit-grad", "jit-symbolic", "jit-torchcompile", "thunderfx"]
ULP_OFF = "planted:computation_off_by_one_ulp"
CORRECT = ("identity", "rdnp", "symcall-fixed")
# Each program is evaluated once under stock, the fault and the correct placements, for all the
# tests below (``evaluate_among``).
TOGETHER = {DEAD_CODE_PROGRAM: (ULP_OFF, *CORRECT), MUTATING: CORRECT}


def test_a_result_one_unit_in_the_last_place_off_is_caught_by_exact_alone():
    """Every value is within eager's tolerance (float32's default), so no other oracle sees it."""
    fault = ULP_OFF
    evaluations = evaluate_among(DEAD_CODE_PROGRAM, fault, TOGETHER[DEAD_CODE_PROGRAM], paths=PATHS)
    caught = evaluations[fault].violations
    assert {v.oracle for v in caught} == {"exact"}, caught
    assert {v.path for v in caught} == set(PATHS)
    assert all("stock ran the same execution trace" in v.message for v in caught)
    assert evaluations["stock"].violations == []


@pytest.mark.parametrize("placement", CORRECT)
@pytest.mark.parametrize("program", [DEAD_CODE_PROGRAM, MUTATING], ids=["dead code", "mutating"])
def test_correct_placements_give_stocks_bits(placement, program):
    evaluations = evaluate_among(program, placement, TOGETHER[program], paths=PATHS)
    assert evaluations[placement].violations == [], evaluations[placement].violations
    compared = [p for p, o in evaluations[placement].outcomes.items() if not o.execution_differs]
    assert compared, "no path ran stock's execution trace: nothing was compared"


def trace(*heads):
    """A portable trace of top-level ``(symbol, args, outs)``, the subsymbols left out."""
    return PortableTrace(
        tuple(Node(sym, tuple(map(Name, args)), tuple(map(Name, outs)), frozenset(), ()) for sym, args, outs in heads)
    )


def outcome(placement, output, forward):
    calls = {CallLabel.PLAIN: Call(CallLabel.PLAIN, outputs=[output])}
    return Outcome(
        "jit",
        placement,
        calls=calls,
        traces=[(TraceLabel("jit", "forward", 0), trace(("sin", "a", "t0"))), (TraceLabel("jit", "forward", 1), forward)],
    )


def test_renamed_proxies_are_the_same_execution_and_another_symbol_is_not():
    eager = Outcome(EAGER, "stock", calls={CallLabel.PLAIN: Call(CallLabel.PLAIN, outputs=[torch.ones(2)])})
    stock = outcome("stock", torch.tensor([1.0, 2.0]), trace(("cos", "a", "t0"), ("mul", "t0", "t1")))
    renamed = outcome("p", torch.tensor([1.0, 2.0000002]), trace(("cos", "a", "t5"), ("mul", "t5", "t9")))
    (violation,) = exact.check(renamed, eager, stock)
    assert "1 of 2 elements differ, first at (1,)" in violation.message
    assert exact.execution_differences(renamed, stock) == []
    other = outcome("p", torch.tensor([1.0, 2.0000002]), trace(("sin", "a", "t0"), ("mul", "t0", "t1")))
    assert exact.check(other, eager, stock) == []
    assert exact.execution_differences(other, stock) == ["jit forward: top-level symbols differ"]


def test_negative_zero_and_nan_payloads_are_bits_too():
    assert exact.bit_difference(torch.tensor([0.0]), torch.tensor([-0.0]))
    assert exact.bit_difference(torch.tensor([float("nan")]), torch.tensor([float("nan")])) == ""
    assert exact.bit_difference([2, 1.5], [2, 1.5]) == "" and exact.bit_difference([2], [2.0])


def test_other_execution_traces_are_counted_as_activity():
    activity = DceActivity()

    class Evaluation:
        invalid = False

        def __init__(self, differs):
            self.outcomes = {"jit": Outcome("jit", "p", execution_differs=differs)}

    activity.add({"p": Evaluation(["jit forward: top-level symbols differ"])})
    activity.add({"p": Evaluation([])})
    entry = activity.summary(["p"])["p"]
    assert entry["programs_execution_differs"] == 1
    entry["exercised"], entry["programs_changed"], entry["fraction_changed"] = True, 1, 0.5
    assert "ran other execution traces than stock's in 1 programs" in activity_lines({"p": entry})[0]


def reproduce(tmp_path, placement, program, path, oracle, capsys):
    """The reproducer of ``program``'s ``oracle`` bug under ``placement``: its exit under the
    placement, then under stock (standing for the fix)."""
    import runpy

    from fuzzdce.fuzzing.campaign import Campaign
    from fuzzdce.fuzzing.config import CampaignConfig

    campaign = Campaign(CampaignConfig.of(("stock", placement), (path,), findings_dir=str(tmp_path)), log=lambda line: None)
    campaign.observe(program)
    (bug,) = [b for b in campaign.ledger.bugs() if b.verdict == "regression" and oracle in b.oracles()]
    script = runpy.run_path(str(tmp_path / bug.id / "repro.py"), run_name="reproducer")
    failing = script["main"]([])
    assert f"FAIL {oracle}" in capsys.readouterr().out
    return failing, script["main"](["--placement", "stock"])


@pytest.mark.slow
def test_the_reproducer_of_a_bit_difference_fails_until_it_is_gone(tmp_path, capsys):
    assert reproduce(tmp_path, "planted:computation_off_by_one_ulp", DEAD_CODE_PROGRAM, "jit", "exact", capsys) == (1, 0)


# max_unpool2d writing two values through one index (every index 0): which one lands is the
# kernel's choice, and torch says it has no deterministic implementation.
UNPOOL_REPEATED = Program(
    (TensorInput((1, 1, 2, 2)),),
    (Step("max_unpool2d", "torch.nn.functional.max_unpool2d({0}, torch.zeros((1, 1, 2, 2), dtype=torch.long), 2)", (Ref(0),)),),
    (1,),
    seed=1,
)


def test_eager_records_the_kernels_torch_says_are_not_deterministic_and_restores_its_settings():
    eager = run_path(EAGER, UNPOOL_REPEATED, PLACEMENTS["stock"])
    assert eager.error is None
    assert eager.calls[CallLabel.PLAIN].nondeterministic == ("max_unpooling2d_forward_out",)
    assert any(note.startswith(NONDETERMINISTIC_NOTE) for note in eager.notes)
    assert not torch.are_deterministic_algorithms_enabled() and torch.utils.deterministic.fill_uninitialized_memory
    assert run_path(EAGER, DEAD_CODE_PROGRAM, PLACEMENTS["stock"]).calls[CallLabel.PLAIN].nondeterministic == ()


def test_values_of_a_call_that_ran_a_nondeterministic_kernel_are_not_compared():
    """Two runs of one execution trace differed in 1 of 54 elements after max_unpool2d (a false
    alarm of ``exact``, and of ``outputs`` against eager): where eager's call ran a kernel torch says
    is not deterministic, neither compares that call's values; a deterministic call still is."""
    stock = outcome("stock", torch.tensor([1.0, 2.0]), trace(("cos", "a", "t0")))
    other_bits = outcome("p", torch.tensor([1.0, 2.0000002]), trace(("cos", "a", "t5")))
    kernel = ("max_unpooling2d_forward_out",)
    for nondeterministic, caught in (((), True), (kernel, False)):
        eager = Outcome(
            EAGER,
            "stock",
            calls={CallLabel.PLAIN: Call(CallLabel.PLAIN, outputs=[torch.ones(2)], nondeterministic=nondeterministic)},
        )
        assert bool(exact.check(other_bits, eager, stock)) == caught
        assert bool(outputs.check(other_bits, eager)) == caught
