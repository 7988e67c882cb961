import torch
from hypothesis import HealthCheck, find, given, settings

from fuzzdce.program import Program, Ref, Step, TensorInput
from fuzzdce.strategies import CATALOG, programs

FAST = settings(max_examples=200, deadline=None, database=None, suppress_health_check=list(HealthCheck))
# find() stops at the first example that satisfies; the budget only bounds the search for one.
SEARCH = settings(FAST, max_examples=2000)


def test_source_renders_dead_code_and_outputs():
    p = Program(
        (TensorInput((2, 3)), TensorInput((3,))),
        (
            Step("add", "torch.add({0}, {1}, alpha={alpha})", (Ref(0), Ref(1)), (("alpha", 2.0),)),
            Step("cos", "torch.cos({0})", (Ref(2),)),
        ),
        (2,),
        seed=7,
    )
    assert p.source() == (
        "def program(v0, v1):\n"
        "    v2 = torch.add(v0, v1, alpha=2.0)\n"
        "    v3 = torch.cos(v2)  # dead\n"
        "    return (v2,)\n"
    )
    assert "float32[2, 3]" in repr(p) and "def program" in repr(p)
    out = p.function()(*p.make_inputs())
    a, b = p.make_inputs()
    torch.testing.assert_close(out[0], a + 2 * b)


def test_inputs_are_seeded_and_can_require_grad():
    p = Program((TensorInput((2,)), TensorInput((2,), "int64")), (), (0,), seed=3)
    first, second = p.make_inputs(), p.make_inputs()
    torch.testing.assert_close(first, second)
    grads = p.make_inputs(requires_grad=True)
    assert grads[0].requires_grad and not grads[1].requires_grad


@FAST
@given(programs())
def test_drawn_programs_run_in_eager(program):
    outputs = program.function()(*program.make_inputs())
    assert len(outputs) == len(program.outputs) >= 1
    assert 1 <= len(program.inputs) <= 3


def test_programs_contain_dead_code_sometimes():
    find(programs(), lambda p: len(p.live_steps()) < p.n_ops, settings=SEARCH)


def test_shrinks_to_a_single_op():
    # Any single-op property: the minimal example has exactly that op and one input.
    for name in ("mul", "sum", "transpose"):
        minimal = find(programs(), lambda p, name=name: name in p.ops, settings=SEARCH)
        assert minimal.ops == [name], minimal
        assert len(minimal.inputs) == 1, minimal


def test_catalog_names_are_unique():
    assert len({spec.name for spec in CATALOG}) == len(CATALOG)
