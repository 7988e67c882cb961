"""The shrink passes, each proven on a stand-in failure (a function of the program's
ops), and the minimality check run on a real campaign's findings folder."""

from collections import Counter

import pytest

from fuzzdce.core.program import Program, Ref, Step, TensorInput
from fuzzdce.fuzzing import shrink_passes
from fuzzdce.fuzzing.campaign import Campaign
from fuzzdce.fuzzing.config import CampaignConfig
from fuzzdce.fuzzing.minify import WHOLE_PROGRAM_PASSES
from fuzzdce.fuzzing.minimality import droppable, single_drops
from fuzzdce.fuzzing.shrink_passes import NAMED_PASSES, operand_to_constant, reduce, value_specs


def step(op, *refs):
    return Step(op, f"torch.{op}(" + ", ".join(f"{{{i}}}" for i in range(len(refs))) + ")", tuple(Ref(r) for r in refs))


def uses(*ops):
    """A stand-in failure: the program holds every op of ``ops``; records what it was asked."""
    asked = []

    def fails(program):
        asked.append(program)
        return all(op in program.ops for op in ops)

    return fails, asked


def test_dead_statements_unused_inputs_and_extra_returns_go():
    # v2 = neg(v1) is dead; v1 is read by nothing live; two values are returned
    program = Program((TensorInput((2,)), TensorInput((3,))), (step("neg", 1), step("exp", 0), step("abs", 0)), (3, 4), seed=1)
    fails, _ = uses("exp")
    reduced, finished = reduce(program, fails)
    assert finished and reduced.ops == ["exp"] and len(reduced.inputs) == 1 and reduced.outputs == (1,)
    assert reduced.inputs[0].shape == (2,)


def test_a_dead_statement_that_matters_is_kept():
    """Nothing is guessed: a failure that needs the dead statement keeps it."""
    program = Program((TensorInput((2,)),), (step("neg", 0), step("exp", 0)), (2,), seed=1)
    assert 0 not in program.live_steps()
    fails, _ = uses("neg", "exp")
    reduced, _ = reduce(program, fails)
    assert reduced.ops == ["neg", "exp"]


def test_delta_debugging_replaces_a_removed_result_by_a_fresh_input_of_its_shape_and_dtype():
    # exp reads sum's result (a 0-d tensor): without sum, a fresh 0-d input stands in
    program = Program((TensorInput((2, 3)),), (step("sum", 0), step("exp", 1)), (2,), seed=1)
    assert value_specs(program)[1].shape == ()
    fails, _ = uses("exp")
    reduced, finished = reduce(program, fails)
    assert finished and reduced.ops == ["exp"] and [i.shape for i in reduced.inputs] == [()]
    reduced.function()(*reduced.make_inputs())  # it runs


def test_truncation_moves_the_return_earlier():
    program = Program((TensorInput((2,)),), (step("exp", 0), step("neg", 1), step("abs", 2)), (3,), seed=1)
    fails, asked = uses("exp")
    reduced, _ = reduce(program, fails)
    assert reduced.ops == ["exp"] and reduced.outputs == (1,)
    assert len(asked) <= 4, "truncation finds the one-op prefix at once"


def test_single_drops_of_a_reproducer_are_its_dead_lines_and_returned_values():
    script = (
        "import torch\n\ndef program(v0):\n    v1 = torch.exp(v0)\n    v2 = torch.neg(v0)  # dead\n"
        "    v3 = torch.abs(v1)\n    return (v1, v3)\n"
    )
    drops = dict(single_drops(script))
    assert sorted(drops) == ["dead statement 'v2 = torch.neg(v0)  # dead'", "returned value v1", "returned value v3"]
    assert (
        "    return (v3,)\n" in drops["returned value v1"] and "neg" not in drops["dead statement 'v2 = torch.neg(v0)  # dead'"]
    )


@pytest.mark.slow
def test_no_bug_of_a_campaign_keeps_a_droppable_dead_statement_or_returned_value(tmp_path):
    """A short real campaign against a planted fault: in each bug's repro.py, dropping any one dead
    statement or returned value loses the failure (replayed, not guessed)."""
    config = CampaignConfig.of(
        ("stock", "planted:add_computes_sub"),
        ("jit",),
        max_examples=12,
        seed=7,
        ops=("add", "mul", "neg", "abs"),
        findings_dir=str(tmp_path),
        time_budget=240,
    )
    campaign = Campaign(config, log=lambda line: None)
    campaign.run()
    assert campaign.ledger.bugs(), "the planted fault was never drawn: pick another seed"
    assert droppable(tmp_path) == []
    # the check can fail: a dead statement put back into a reproducer is found droppable
    repro = next(tmp_path.glob("*/repro.py"))
    text = repro.read_text()
    repro.write_text(text.replace("\n    return (", "\n    v99 = torch.neg(v0)  # dead\n    return (", 1))
    assert droppable(tmp_path) == [f"{repro.parent.name}: dead statement 'v99 = torch.neg(v0)  # dead'"]


def user_program(source: str, *shapes) -> Program:
    """A user's function (``core.program_source``) on float32 inputs of ``shapes``."""
    from fuzzdce.core.program_source import parse_function, program_of_function

    return program_of_function(parse_function(source), tuple(TensorInput(s) for s in shapes), seed=1)


def test_a_call_inside_a_statement_gives_way_to_the_argument_that_fails_and_what_it_alone_read_goes():
    """``torch.matmul(v0, torch.ones(1, 4)) + v1.sum(0)`` failing as the matmul alone does: the
    statement ends as the matmul, and ``v1`` (read only by the operand that went) goes too."""
    program = user_program("def f(a, b):\n    c = torch.matmul(a, torch.ones(1, 4)) + b.sum(0)\n    return c\n", (3, 1), (2, 4))
    taken = Counter()
    reduced, finished = reduce(program, lambda p: "torch.matmul(" in p.source(), taken=taken)
    assert finished and reduced.source().splitlines()[1] == "    v1 = torch.matmul(v0, torch.ones(1, 4))"
    assert reduced.ops == ["matmul"] and len(reduced.inputs) == 1 and taken["call_to_argument"] == 1
    reduced.function()(*reduced.make_inputs())  # it runs


def test_a_keyword_goes_back_to_its_default_unless_the_failure_needs_it():
    program = Program(
        (TensorInput((2,)),) * 3,
        (Step("addcdiv", "torch.addcdiv({0}, {1}, {2}, value={value})", (Ref(0), Ref(1), Ref(2)), (("value", 2.0),)),),
        (3,),
    )
    reduced, _ = reduce(program, lambda p: "addcdiv" in p.source())
    assert "torch.addcdiv(v0, v1, v2)" in reduced.source() and reduced.steps[0].op == "addcdiv"
    kept, _ = reduce(program, lambda p: "value=2.0" in p.source())
    assert "value=2.0" in kept.source()  # only where the failure keeps its identity


def test_an_operand_becomes_a_constant_and_its_input_goes():
    program = user_program("def f(a, b):\n    c = torch.sin(a) * b\n    return c\n", (2,), (2,))
    reduced, _ = reduce(program, lambda p: "torch.sin(" in p.source())
    assert reduced.source().splitlines()[1] == "    v1 = torch.sin(v0)" or "torch.sin(v0) * 1" in reduced.source()
    assert len(reduced.inputs) == 1
    assert list(operand_to_constant(program))[0].source().splitlines()[1] == "    v1 = torch.sin(v0) * 1"


def test_shapes_shrink_where_the_failure_allows():
    from fuzzdce.fuzzing.shrink_passes import INPUT_PASSES, PASSES

    program = Program((TensorInput((4, 6)),), (step("exp", 0),), (1,))
    reduced, _ = reduce(program, lambda p: p.inputs[0].shape[1] > 1, passes=PASSES + INPUT_PASSES)
    assert reduced.inputs[0].shape == (1, 2)
    # A view of a halved input is halved with it (``views_follow_bases``).
    viewed = Program((TensorInput((4, 6)), TensorInput((4, 6), view_of=0)), (Step("add", "{0} + {1}", (Ref(0), Ref(1))),), (2,))
    (halved, *_) = shrink_passes.halve_shapes(viewed)
    assert [i.shape for i in halved.inputs] == [(2, 3), (2, 3)]


def test_a_statement_nesting_calls_is_taken_apart_into_the_same_computation():
    """``fuzzdce minify`` first takes a user's statement apart, one call of a value per statement,
    so the first wrong op is found inside it (clamp, not the add around it)."""
    import torch

    from fuzzdce.core.program_source import take_apart

    program = user_program(
        "def f(a, b):\n    c = torch.clamp(a, min=0, max=1) * 2 + a.sum()\n    d, e = torch.max(c + b, 0)\n    return c, e\n",
        (4,),
        (4,),
    )
    apart = take_apart(program)
    assert apart.ops == ["clamp", "mul", "sum", "add", "add", "max"]
    assert apart.source().splitlines()[1] == "    v2 = torch.clamp(v0, min=0, max=1)"
    for a, b in zip(program.function()(*program.make_inputs()), apart.function()(*apart.make_inputs())):
        assert torch.equal(a, b)
    assert take_apart(apart) == apart  # one call per statement already


def test_a_statement_never_gives_way_to_a_bare_value():
    """``torch.sub(v0, v0)`` failing whatever it computes stays a call: ``v1 = v0`` computes nothing."""
    program = Program((TensorInput((2,)),), (Step("sub", "torch.sub({0}, {0})", (Ref(0), Ref(0))),), (1,))
    reduced, _ = reduce(program, lambda p: True)
    assert reduced.ops == ["sub"] and "torch.sub(v0, v0)" in reduced.source()


def test_every_pass_is_registered_once_by_name_with_what_it_does():
    """One family of reducers: the campaign's, minify's whole-program passes and the input passes
    are all ``NAMED_PASSES``, each with a docstring; a second pass of one name is refused."""
    composed = (*shrink_passes.PASSES, *shrink_passes.INPUT_PASSES, *WHOLE_PROGRAM_PASSES)
    assert sorted(composed) == sorted(NAMED_PASSES)
    assert all(NAMED_PASSES[name].__doc__ for name in NAMED_PASSES)
    with pytest.raises(ValueError):
        shrink_passes.shrink_pass(NAMED_PASSES["ddmin"])


def test_the_whole_program_passes_take_what_they_can_at_once():
    """Minify's passes, once each (``shrink_passes.apply``): every dead statement and unread input at
    once, one returned value, the shortest failing prefix, windows of statements."""
    program = Program(
        (TensorInput((2,)), TensorInput((3,))),
        (step("neg", 1), step("sin", 0), step("exp", 3), step("cos", 4), step("abs", 0)),
        (5, 6),
        seed=1,
    )
    fails, _ = uses("exp")
    taken = Counter()
    current = program
    for name in WHOLE_PROGRAM_PASSES:
        current = shrink_passes.apply(name, current, fails, taken)
    assert current.ops == ["exp"] and len(current.inputs) == 1
    assert taken["single_outputs"] == 1 and taken["truncate"] == 1 and taken["ddmin"] == 1
    assert shrink_passes.apply("single_outputs", current, fails) is current  # nothing to take: itself
