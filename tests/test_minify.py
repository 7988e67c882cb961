"""``fuzzdce minify``: reading sources back into programs, the shrink passes against a stand-in, and
real minifies of planted faults and a real Thunder bug (slow)."""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from builders import THUNDER_FUNCTION, StandInEvaluator, flag, raised, wrong_values

from fuzzdce.core.model import EAGER, STOCK, Outcome
from fuzzdce.core.program import Domain, Program, Ref, Step, TensorInput
from fuzzdce.core.program_source import input_spec, inputs_of_make_inputs, parse_function, program_of_function
from fuzzdce.fuzzing.minify import Criterion, Failure, Minifier, run_minify
from fuzzdce.fuzzing.minify_sources import read_subject, report_path
from fuzzdce.results.reproducers import minified_case, standalone_script
from fuzzdce.running.evaluate import Evaluation
from fuzzdce.running.localise import first_differs_at, localised
from fuzzdce.running.placements import resolve

HERE = Path(__file__).parent
REPORT_SCRIPT = HERE / "minify_sources" / "index_add_grad_report.py"

UNARY = ("sin", "cos", "tanh", "neg", "abs", "atan")  # none is made of exp (sigmoid is: exp broken breaks it too)
BINARY = ("mul", "sub", "maximum")


def chain_program(n: int, fault: str, at: int, *, seed: int = 0, binary_fault: bool = False) -> Program:
    """``n`` elementwise statements on two (3, 4) float32 inputs, each reading the last value (and
    a random earlier one), with ``fault`` (``torch.FAULT``) at statement ``at`` alone; returns the
    last three values."""
    rng = random.Random(seed)
    steps = []
    for i in range(n):
        last = 2 + i - 1 if i else 0
        other = rng.randrange(0, 2 + i)
        if i == at:
            op = fault
            binary = binary_fault
        else:
            binary = rng.random() < 0.4
            op = rng.choice(BINARY if binary else UNARY)
        if binary:
            steps.append(Step(op, f"torch.{op}({{0}}, {{1}})", (Ref(last), Ref(other))))
        else:
            steps.append(Step(op, f"torch.{op}({{0}})", (Ref(last),)))
    values = 2 + n
    return Program((TensorInput((3, 4)), TensorInput((3, 4))), tuple(steps), (values - 3, values - 2, values - 1))


# --- reading sources ---------------------------------------------------------------------------------


def test_a_fuzzdce_program_reads_back_exactly():
    """A program's own source and inputs, parsed, render the same text (seed and domains included)."""
    original = Program(
        (
            TensorInput((2, 3), domain=Domain.POSITIVE),
            TensorInput((3, 2), "float64", transposed=True),
            TensorInput((2, 3), view_of=0),
            TensorInput((), "float16", requires_grad=False),  # never requires grad: read back so
            TensorInput((2,), requires_grad=False, values=(0.5, -1.0)),
        ),
        (
            Step("log", "torch.log({0})", (Ref(0),)),
            Step("split", "torch.split({0}, 1)", (Ref(1),), n_out=3),
            Step("add", "{0} + {1}", (Ref(3), Ref(2))),
            Step("mul", "{0} * {1}", (Ref(5), Ref(4))),
        ),
        (6, 4, 7),
        seed=7,
    )
    source = original.source() + "\n" + original.inputs_source()
    specs, seed = inputs_of_make_inputs(source)
    read = program_of_function(parse_function(source, "program"), specs, seed=seed)
    assert (read.source(), read.inputs_source()) == (original.source(), original.inputs_source())


def test_a_dynamo_forward_reads_as_straight_line_steps():
    """Aliases and ``x = None`` are no statements; operators, methods, ``inf`` and annotations are kept."""
    source = """
class DynamoModule(torch.nn.Module):
    def forward(self, L_x_: "f32[4]", L_y_: "f32[4]"):
        l_x_ = L_x_
        a: "f32[4]" = torch.sin(l_x_)
        l_x_ = None
        b = a * L_y_ + inf
        c, d = torch.split(b, 2)
        e = operator.getitem(c, 0)
        return (e, a)
"""
    forward = parse_function(source, "forward")
    program = program_of_function(forward, [TensorInput((4,)), TensorInput((4,))], skip_self=True)
    assert program.ops == ["sin", "add", "split", "getitem"]
    assert "v3 = v2 * v1 + float('inf')" in program.source()
    assert program.function()(*program.make_inputs())[0].shape == ()


def test_input_specs_keep_what_the_values_satisfy():
    import torch

    assert input_spec(torch.rand(3) + 1).domain == Domain.POSITIVE
    assert input_spec(torch.tensor([0, 3, 1])).domain == Domain.SIGNED_ZEROS  # valid indices stay valid
    assert input_spec(torch.tensor([1.0, float("nan")])).domain == Domain.NONFINITE
    assert input_spec(2.5).value == 2.5


def test_a_report_script_is_read_with_its_path_and_inputs():
    subject = read_subject(str(REPORT_SCRIPT))
    assert subject.path == "jit-grad"
    assert "index_add" in subject.program.ops
    assert subject.program.n_ops >= 10
    assert report_path("compiled = thunderfx(model)", True) == "thunderfx"


def test_a_function_and_its_inputs_factory_are_read(tmp_path):
    model = tmp_path / "model.py"
    model.write_text(
        "import torch\n\n"
        "def f(x, idx):\n    y = torch.sin(x)\n    z = y[idx]\n    return z\n\n"
        "def inputs():\n    return [torch.rand(4, 3) + 1, torch.tensor([0, 3])]\n"
    )
    subject = read_subject(f"{model}:f", inputs="inputs")
    assert subject.program.ops == ["sin", "getitem"]
    assert [s.domain for s in subject.program.inputs] == [Domain.POSITIVE, Domain.SIGNED_ZEROS]
    assert subject.program.inputs[1].values == (0, 3) and not subject.notes  # the values, kept
    redrawn = read_subject(f"{model}:f", inputs="inputs", redraw=True)
    assert redrawn.program.inputs[1].values is None and redrawn.notes  # redrawn when asked, and the user is told
    assert subject.program.inputs[0].can_require_grad  # the factory says nothing of grad: every floating input


def test_a_factory_that_says_which_tensors_require_grad_is_read_as_it_says(tmp_path):
    model = tmp_path / "model.py"
    model.write_text(
        "import torch\n\n"
        "def f(x, y):\n    z = x * y\n    return z\n\n"
        "def inputs():\n    return [torch.rand(3, requires_grad=True), torch.rand(3)]\n"
    )
    subject = read_subject(f"{model}:f", inputs="inputs")
    assert [s.can_require_grad for s in subject.program.inputs] == [True, False]
    written = subject.program.inputs_source()
    assert written.count("requires_grad_(requires_grad)") == 1 and "never requires grad" in written


def test_a_findings_bug_is_read_with_its_path_placement_and_failure(tmp_path):
    from test_records import BUG

    from fuzzdce.results.store import write_bug

    write_bug(tmp_path / BUG.id, BUG)
    subject = read_subject(str(tmp_path / BUG.id))
    assert (subject.path, subject.placement, subject.target.oracle) == ("jit", "symcall", "outputs")
    assert subject.program.ops == ["add"]


# --- the shrink passes, against a stand-in for Thunder ----------------------------------------------


def failing_with(op: str) -> StandInEvaluator:
    """A stand-in evaluator: a program fails (raises) when it holds ``op``; ``calls`` counts evaluations."""

    def shows(program, placement, paths):
        return [raised(paths[0], "RuntimeError", f"{op} broken", "thunder/x.py:f")] if op in program.ops else []

    return StandInEvaluator(shows)


def test_a_200_statement_program_reduces_to_the_broken_op_against_a_stand_in(stock):
    program = chain_program(200, "exp", 137)
    stand_in = failing_with("exp")
    result = Minifier(stand_in, stock, "jit", timeout=1.0).minify(program, Failure(Criterion.SAME))
    assert result.program.ops == ["exp"]
    assert result.queries == len(stand_in.calls) - 1  # every candidate asked once; the last replay is no query
    assert result.line().startswith("200 statements -> 1 in ")


def test_the_result_is_1_minimal_and_ctrl_c_keeps_the_smallest(stock):
    program = chain_program(60, "exp", 30)

    interrupting = failing_with("exp")
    shows = interrupting.shows

    def interrupted_at_the_thirteenth(program, placement, paths):
        if len(interrupting.calls) == 13:
            raise KeyboardInterrupt
        return shows(program, placement, paths)

    interrupting.shows = interrupted_at_the_thirteenth
    result = Minifier(interrupting, stock, "jit", timeout=1.0).minify(program, Failure(Criterion.SAME))
    assert result.interrupted and "exp" in result.program.ops and result.program.n_ops < 60


def test_minify_reads_the_first_differing_op_from_the_one_localisation():
    """The evaluator localises a wrong value (``localise.localised``: the first prefix wrong
    itself); minify's first differing op is read from that violation (``localise.first_differs_at``),
    never found a second way."""
    program = chain_program(5, "add", 2, binary_fault=True)
    wrong = wrong_values("jit")
    asked = []

    def run(prefix):  # a stand-in for Thunder: every prefix from the add on is wrong
        asked.append(prefix.ops[-1])
        return [wrong] if "add" in prefix.ops else []

    found = localised(program, wrong, run)
    assert first_differs_at(found) == "add" and "values first differ at `v4 = torch.add(" in found.message
    assert Failure(Criterion.SAME, found).first_op == "add" and asked[-1] == "add"
    assert first_differs_at(wrong) is None and Failure(Criterion.SAME, wrong).first_op is None  # not localised
    assert first_differs_at(raised("jit", "RuntimeError", "x", symbol="add")) is None  # no wrong value
    marked = flag("jit", marked_by=THUNDER_FUNCTION)
    assert marked.fault.marked_by == THUNDER_FUNCTION
    assert first_differs_at(marked) is None  # a flag a Function marked: no op to blame


def dag_program(rng: random.Random, n: int) -> Program:
    """``n`` statements on three inputs, each reading one or two earlier values at random, returning
    three of the values at random: a program of any shape, its statements side by side or in chains."""
    steps = []
    for i in range(n):
        reads = rng.sample(range(3 + i), k=min(2, 3 + i)) if rng.random() < 0.5 else [rng.randrange(3 + i)]
        template = " + ".join(f"{{{j}}}" for j in range(len(reads))) if len(reads) > 1 else "torch.sin({0})"
        steps.append(Step("add" if len(reads) > 1 else "sin", template, tuple(Ref(r) for r in reads)))
    outputs = tuple(sorted(rng.sample(range(3, 3 + n), k=3)))
    return Program((TensorInput((2,)), TensorInput((2,)), TensorInput((2,))), tuple(steps), outputs)


def wrong_through(program: Program, wrong: set[int]) -> set[int]:
    """The steps of ``program`` whose values are wrong: those in ``wrong``, and every step reading
    a wrong value (a wrong value stays wrong downstream)."""
    producer, found = program.producers(), set()
    for i, step in enumerate(program.steps):
        if i in wrong or any(producer.get(r) in found for r in step.refs()):
            found.add(i)
    return found


def shows_wrong(program: Program, wrong: set[int]) -> bool:
    producer, through = program.producers(), wrong_through(program, wrong)
    return any(producer.get(o) in through for o in program.outputs)


WRONG = wrong_values("jit-grad", oracle="grads", call="grad")


def test_a_flag_lost_early_and_shown_late_in_a_program_of_several_outputs_is_localised_at_its_op():
    """hstack loses requires_grad early; addcdiv reads it late; the statements between compute the
    other outputs, and their prefixes are right. The search over the program's dependences names
    hstack in a few prefix runs (a bisection in program order took a right prefix between them for
    "nothing wrong before it", and named a later add)."""
    from sample_programs import MULTI_OUTPUT_HSTACK as program

    from fuzzdce.running.localise import SCANNED_STEPS, first_wrong

    hstack = program.ops.index("hstack")
    asked = []

    def run(prefix):
        asked.append(prefix.n_ops - 1)
        return [WRONG] if shows_wrong(prefix, {hstack}) else []

    assert len(program.live_steps()) > SCANNED_STEPS  # localised by bisection, not by every prefix
    step, _ = first_wrong(program, WRONG, run)
    assert program.statement(step) == "v6 = torch.hstack([v0, v0])"
    assert len(asked) <= 5, asked
    assert first_wrong(program, WRONG, run, exhaustive=True)[0] == step


def test_the_bisection_names_the_op_at_fault_in_programs_of_any_shape():
    """Random programs of several inputs and outputs, statements side by side or chained, one of
    them wrong (and every statement reading it): the bisection names it, as every prefix in order
    does."""
    from fuzzdce.running.localise import first_wrong

    rng = random.Random(5)
    for trial in range(200):
        program = dag_program(rng, rng.randrange(17, 60))
        live = sorted(program.live_steps())
        at = rng.choice(live)

        def run(prefix, at=at):
            return [WRONG] if shows_wrong(prefix, {at}) else []

        step, _ = first_wrong(program, WRONG, run)
        assert step == at, (trial, at, step, program.source())


def test_a_step_that_may_write_what_a_wrong_step_reads_stays_a_suspect():
    """The program does not say which ops write in place: a step reading a value that a wrong
    step's ancestors read (``zero_`` of an input another step reads later) may have changed it, and
    stays among the suspects; the steps a right step reads are cleared (``ancestors``), no others."""
    from fuzzdce.running.localise import ancestors, may_change

    program = Program(
        (TensorInput((2,)), TensorInput((2,)), TensorInput((2,), view_of=1)),
        (
            Step("zero_", "{0}.zero_()", (Ref(0),)),  # v3: writes v0
            Step("sin", "torch.sin({0})", (Ref(1),)),  # v4
            Step("zero_", "{0}.zero_()", (Ref(2),)),  # v5: writes v2, a view of v1
            Step("exp", "torch.exp({0})", (Ref(0),)),  # v6: reads v0 after the write
            Step("cos", "torch.cos({0})", (Ref(6),)),  # v7
            Step("add", "{0} + {1}", (Ref(7), Ref(4))),  # v8
        ),
        (8, 5),
    )
    assert ancestors(program, 4) == {3}
    assert may_change(program, 4) == {0, 3}
    assert ancestors(program, 5) == {1, 3, 4}
    assert may_change(program, 5) == {0, 1, 2, 3, 4}  # sin reads v1, of which v2 is a view


def healing_stand_in(exhaustive_runs: list, blamed: list | None = None, wrong_ops=("exp",)):
    """An ``Evaluator`` stand-in for a wrong value that does not always stay wrong downstream: the
    ``wrong_ops`` are wrong, ``relu`` of a wrong value is right again, any other op reading a wrong
    value is wrong. Its wrong values are localised as the evaluator's are (``localise.localised``);
    ``exhaustive_runs`` says of each evaluation whether it localised by every prefix, ``blamed`` (if
    given) the op each candidate's wrong value first differs at."""
    from fuzzdce.running.localise import localised

    def wrong_steps(program):
        producer, found = program.producers(), set()
        for i, step in enumerate(program.steps):
            if step.op in wrong_ops or (step.op != "relu" and any(producer.get(r) in found for r in step.refs())):
                found.add(i)
        return found

    def shown(program):
        producer, wrong = program.producers(), wrong_steps(program)
        return [WRONG] if any(producer.get(o) in wrong for o in program.outputs) else []

    def evaluate(program, placements, *, paths, exhaustive=False, **kwargs):
        exhaustive_runs.append(exhaustive)
        evaluation = Evaluation(program, placements[0].name, Outcome(EAGER, STOCK))
        evaluation.violations.extend(localised(program, v, shown, exhaustive=exhaustive) for v in shown(program))
        if blamed is not None and not exhaustive:
            blamed.extend(first_differs_at(v) for v in evaluation.violations)
        return {placements[0].name: evaluation}

    return evaluate


def healed_program(fillers: int) -> Program:
    """``exp`` of the first input (wrong), ``relu`` of it (right again), ``fillers`` statements on
    the second input returned apart, and an add of the relu and the exp (wrong): the bisection clears
    the exp with the relu's right prefix and names the add; every prefix in order names the exp."""
    chain = tuple(Step("sin", "torch.sin({0})", (Ref(3 + i if i else 1),)) for i in range(fillers))
    steps = (
        Step("exp", "torch.exp({0})", (Ref(0),)),  # v2
        Step("relu", "torch.relu({0})", (Ref(2),)),  # v3
        *chain,
        Step("add", "{0} + {1}", (Ref(3), Ref(2))),
    )
    last = 2 + len(steps) - 1
    return Program((TensorInput((2,)), TensorInput((2,))), steps, (last, last - 1))


def test_a_candidate_first_differing_where_the_bisected_original_does_not_is_checked_against_every_prefix(stock):
    """The original's wrong value was localised by bisection at a later op (the add); candidates
    small enough to be localised by every prefix first differ at the exp, which the original shows
    wrong first too. Minify localises the original by every prefix once, keeps the exp as its
    target, and goes on (it stalled at the original's size, each smaller candidate "another
    failure")."""
    program = healed_program(15)
    runs = []
    stand_in = healing_stand_in(runs)
    original = stand_in(program, [stock], paths=["jit-grad"])[stock.name].violations
    assert [first_differs_at(v) for v in original] == ["add"]  # the bisection's answer

    result = Minifier(stand_in, stock, "jit-grad", timeout=1.0).minify(program, Failure(Criterion.SAME))
    assert result.failure.first_op == "exp" and result.program.ops == ["exp"]
    assert runs.count(True) == 1  # the original, localised by every prefix once


def test_a_candidate_first_differing_at_an_op_the_original_does_not_show_wrong_first_is_another_failure(stock):
    """Two wrong ops, each computing one output: exp, first, and tan. The original's wrong value
    first differs at the exp, by bisection and by every prefix alike; a candidate returning the
    tan's output alone first differs at the tan: another failure, checked against every prefix of
    the original once (not once per such candidate), the target kept."""
    exp_side = (Step("exp", "torch.exp({0})", (Ref(0),)),) + tuple(Step("sin", "torch.sin({0})", (Ref(2 + i),)) for i in range(8))
    tan_side = (Step("tan", "torch.tan({0})", (Ref(1),)),) + tuple(
        Step("sin", "torch.sin({0})", (Ref(11 + i),)) for i in range(8)
    )
    program = Program((TensorInput((2,)), TensorInput((2,))), exp_side + tan_side, (19, 10))
    runs, blamed = [], []
    stand_in = healing_stand_in(runs, blamed, wrong_ops=("exp", "tan"))
    assert [first_differs_at(v) for v in stand_in(program, [stock], paths=["jit-grad"])[stock.name].violations] == ["exp"]

    result = Minifier(stand_in, stock, "jit-grad", timeout=1.0).minify(program, Failure(Criterion.SAME))
    assert "tan" in blamed  # a candidate first differed at the tan
    assert result.failure.first_op == "exp" and result.program.ops == ["exp"]
    assert runs.count(True) == 1


def test_the_standalone_script_runs_eager_and_compiled_and_compares():
    program = chain_program(3, "exp", 1)
    text = standalone_script(minified_case(program, "jit-grad", raised("jit-grad", "RuntimeError", '"""quoted"')))
    compile(text, "repro.py", "exec")
    assert "def test_repro():" in text and "thunder.jit(program)" in text
    assert "torch.autograd.backward(" in text  # the grad path's call: forward, then backward


# --- real minifies (each starts a worker and compiles many candidates) ----------------------------------


@pytest.mark.slow
def test_a_200_statement_program_with_one_planted_broken_op_minifies_to_that_op():
    program = chain_program(200, "exp", 123)
    result = run_minify(program, Failure(Criterion.SAME), resolve("planted:exp_raises"), path="jit")
    assert result.program.ops == ["exp"]
    assert "planted: exp is broken" in result.violation.message


@pytest.mark.slow
def test_a_value_mismatch_keeps_its_first_differing_op():
    """``add`` computes ``sub``: the minimal program is the ``add`` alone, not a later op reading it."""
    program = chain_program(40, "add", 17, binary_fault=True)
    result = run_minify(program, Failure(Criterion.SAME), resolve("planted:add_computes_sub"), path="jit")
    assert result.failure.first_op == "add"
    assert result.program.ops == ["add"]
    assert result.violation.oracle == "outputs"


@pytest.mark.slow
def test_a_flag_lost_early_in_a_program_of_several_outputs_minifies_to_the_op_that_lost_it():
    """hstack loses requires_grad early in a 19-statement program of three inputs and outputs;
    addcdiv's gradient through it is wrong late. Minify keeps hstack as the first differing op
    (it once stopped at 17 statements, blaming a later add) and ends at hstack and what shows it."""
    from sample_programs import MULTI_OUTPUT_HSTACK

    result = run_minify(MULTI_OUTPUT_HSTACK, Failure(Criterion.SAME), resolve("stock"), path="jit-grad")
    if result.failure.target.error_type != "Mismatch":
        pytest.skip(f"this Thunder shows no wrong gradient through hstack: {result.failure.describe()}")
    assert result.failure.first_op == "hstack", result.failure.describe()
    assert result.program.n_ops <= 3 and "hstack" in result.program.ops, result.program.source()


@pytest.mark.slow
def test_a_hanging_candidate_is_cut_by_the_time_limit_and_the_minify_goes_on():
    """Returning the ``tanh`` value alone hangs Thunder; that candidate is killed, and the minify
    finds the ``exp`` alone."""
    program = Program(
        (TensorInput((3,)), TensorInput((3,))),
        (Step("exp", "torch.exp({0})", (Ref(0),)), Step("tanh", "torch.tanh({0})", (Ref(1),))),
        (3, 2),
    )
    result = run_minify(
        program, Failure(Criterion.SAME), resolve("planted:exp_raises_tanh_hangs"), path="jit", timeout=3.0, grace=1.0
    )
    assert result.program.ops == ["exp"]


@pytest.mark.slow
def test_a_thunder_report_script_minifies_to_the_op_without_a_grad_rule(tmp_path):
    """A real Thunder 0.2.6 bug (index_add has no grad rule) in a script ``thunder.dynamo.report`` wrote."""
    from fuzzdce.cli import main

    assert main(["minify", str(REPORT_SCRIPT), "--out", str(tmp_path)]) == 0
    script = (tmp_path / "repro.py").read_text()
    assert "torch.index_add(" in script and "torch.sin(" not in script
    assert "gradient transform" in (tmp_path / "issue.md").read_text()
    # The script stands alone: torch and Thunder only, exit 1 while the bug is there.
    ran = subprocess.run([sys.executable, str(tmp_path / "repro.py")], capture_output=True, text=True, cwd=tmp_path)
    assert ran.returncode == 1 and "Failed to find a gradient transform" in ran.stderr


@pytest.mark.slow
def test_a_failing_statement_holding_more_than_the_failing_call_minifies_to_the_call_alone():
    """Real Thunder 0.2.6 (index_add has no grad rule): ``index_add(...) * 2 + x.sum()`` ends as the
    index_add alone, reduced inside its statement (counted), its identity kept."""
    source = "def f(x, w):\n    y = torch.index_add(x, 0, torch.tensor([0, 2]), w) * 2 + x.sum()\n    return y\n"
    program = program_of_function(parse_function(source), (TensorInput((3, 2)), TensorInput((2, 2))), seed=1)
    result = run_minify(program, Failure(Criterion.SAME), resolve(STOCK), path="jit-grad")
    assert result.program.source().splitlines()[1] == "    v2 = torch.index_add(v0, 0, torch.tensor([0, 2]), v1)", result.program
    assert result.inside_statements >= 2 and "index_add" in result.violation.message


# A user's file whose failure needs its very values (Thunder 0.2.6 and main): clamp's gradient at
# its bounds is 0 under Thunder, 1 in eager; max over a dim with ties splits the gradient, eager
# gives it to one element. Drawn values would have no element at a bound and no tie.
EXACT_VALUES = {
    "clamp": ("torch.clamp(v0, min=0, max=1)", "torch.tensor([0.0, 1.0, 0.5, -2.0], requires_grad=requires_grad)"),
    "max_ties": ("torch.max(v0, dim=1)[0]", "torch.tensor([[1.0, 1.0, 0.0], [2.0, 0.0, 2.0]], requires_grad=requires_grad)"),
}


def test_a_users_values_are_kept_exactly_and_redrawn_only_when_asked(tmp_path):
    program, values = EXACT_VALUES["clamp"]
    user = tmp_path / "user.py"
    user.write_text(
        f"import torch\n\n\ndef program(v0):\n    v1 = {program}\n    return (v1,)\n\n\n"
        f"def make_inputs(requires_grad=False):\n    return [{values}]\n"
    )
    kept = read_subject(str(user)).program
    assert kept.inputs[0].values == (0.0, 1.0, 0.5, -2.0) and not read_subject(str(user)).notes
    assert torch.equal(kept.make_inputs()[0], torch.tensor([0.0, 1.0, 0.5, -2.0]))
    redrawn = read_subject(str(user), redraw=True)
    assert redrawn.program.inputs[0].values is None and "redrawn" in redrawn.notes[0]


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(EXACT_VALUES))
def test_a_user_file_failing_only_at_its_exact_values_minifies_and_still_fails(tmp_path, case):
    from fuzzdce.cli import main

    program, values = EXACT_VALUES[case]
    user = tmp_path / "user.py"
    user.write_text(
        f"import torch\n\n\ndef program(v0):\n    v1 = {program}\n    return (v1,)\n\n\n"
        f"def make_inputs(requires_grad=False):\n    return [{values}]\n"
    )
    out = tmp_path / "out"
    assert main(["minify", str(user), "--path", "jit-grad", "--out", str(out)]) == 0
    script = (out / "repro.py").read_text()
    assert "torch.tensor([" in script and "torch.randn" not in script, script  # the values, kept (maybe fewer)
    ran = subprocess.run([sys.executable, str(out / "repro.py")], capture_output=True, text=True, cwd=out)
    assert ran.returncode == 1 and "the gradient of v0 differs from eager's" in ran.stderr, ran.stdout + ran.stderr[-2000:]
