import pytest
import torch
from hypothesis import HealthCheck, find, given, settings

from fuzzdce.core.program import Program, Ref, Step, TensorInput, views_follow_bases, with_input, with_tensor_shapes
from fuzzdce.strategies import CATALOG, programs

# On the fuzz profile the suite loads, which has no explain phase (``profiles``): find() counts its
# example as a failure, and explaining it would run it again many times over.
FAST = settings(max_examples=200, deadline=None, database=None, suppress_health_check=list(HealthCheck))
# find() stops at the first example that satisfies; the budget only bounds the search for one.
SEARCH = settings(FAST, max_examples=10000)


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
        "def program(v0, v1):\n    v2 = torch.add(v0, v1, alpha=2.0)\n    v3 = torch.cos(v2)  # dead\n    return (v2,)\n"
    )
    assert "float32[2, 3]" in repr(p) and "def program" in repr(p)
    out = p.function()(*p.make_inputs())
    a, b = p.make_inputs()
    torch.testing.assert_close(out[0], a + 2 * b)


def test_a_program_owns_its_arithmetic_values_producers_prefixes_and_every_value():
    """One definition of each: a step's first value, which step defines a value, the program cut
    after a step returning what it defines, and the program returning every value."""
    p = Program(
        (TensorInput((4,)),),
        (
            Step("split", "torch.split({0}, 2)", (Ref(0),), n_out=2),
            Step("neg", "torch.neg({0})", (Ref(1),)),  # dead
            Step("add", "{0} + {1}", (Ref(1), Ref(2))),
        ),
        (4,),
    )
    assert [p.first_value(i) for i in range(p.n_ops + 1)] == [1, 3, 4, 5]
    assert p.producers() == {1: 0, 2: 0, 3: 1, 4: 2} and p.live_steps() == {0, 2}
    assert (p.prefix(0).ops, p.prefix(0).outputs) == (["split"], (1, 2))
    assert (p.prefix(1).ops, p.prefix(1).outputs) == (["split", "neg"], (3,))
    assert p.every_value().outputs == (1, 2, 3, 4) and p.every_value().live_steps() == {0, 1, 2}
    # Localising compares what the rest of the live program reads: split's second part only is
    # read by a live step only through add (the dead neg's read of v1 counts for nothing).
    read_second = Program(
        p.inputs, (p.steps[0], Step("neg", "torch.neg({0})", (Ref(1),)), Step("abs", "torch.abs({0})", (Ref(2),))), (4,)
    )
    assert read_second.read_prefix(0).outputs == (2,) and p.read_prefix(0).outputs == (1, 2)
    assert p.read_prefix(2).outputs == (4,)
    assert len(p.every_value().function()(*p.make_inputs())) == 4


def test_a_view_keeps_its_bases_shape_dtype_and_layout_whatever_changed_the_base():
    """The one rule of views (``views_follow_bases``), which shrinking's smaller shapes and the
    guard calls' variants both apply: a view of a view too; what is the view's own stays."""
    base = TensorInput((4, 6), "float64", transposed=True)
    view = TensorInput((2, 3), view_of=0, requires_grad=False)
    inputs = (base, TensorInput((5,)), view, TensorInput((2, 3), view_of=2))
    followed = views_follow_bases(inputs)
    assert followed[:2] == inputs[:2]
    for spec in followed[2:]:
        assert (spec.shape, spec.dtype, spec.transposed, spec.strided) == ((4, 6), "float64", True, False)
    assert not followed[2].requires_grad and followed[3].view_of == 2
    p = Program(followed, (Step("add", "{0} + {1}", (Ref(0), Ref(3))),), (4,))
    assert p.function()(*p.make_inputs())[0].shape == (4, 6)


def test_changing_a_base_input_changes_its_views_alike():
    """``with_input`` and ``with_tensor_shapes`` change bases; their views follow (the one rule):
    a guard call's other dtype, strides or rank never makes a view its base cannot give."""
    base, view = TensorInput((4, 6)), TensorInput((4, 6), view_of=0)
    p = Program((base, TensorInput((3,)), view), (Step("add", "{0} + {1}", (Ref(0), Ref(2))),), (3,))
    other_dtype = with_input(p, 0, dtype="float64", transposed=True)
    assert [(s.dtype, s.transposed) for s in other_dtype.inputs] == [("float64", True), ("float32", False), ("float64", True)]
    ranked = with_tensor_shapes(p, lambda shape: (2, *shape))
    assert [s.shape for s in ranked.inputs] == [(2, 4, 6), (2, 3), (2, 4, 6)]
    assert ranked.function()(*ranked.make_inputs())[0].shape == (2, 4, 6)


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
    tensors = [spec for spec in program.inputs if isinstance(spec, TensorInput)]
    assert 1 <= len(tensors) <= 4  # up to three drawn, and perhaps a view of the first
    assert len(program.inputs) - len(tensors) <= 2  # perhaps a number, perhaps a string


@pytest.mark.slow  # the fast subset (-m "not slow") stays under 2 minutes: this one alone takes 5-30 s
def test_programs_contain_dead_code_sometimes():
    find(programs(), lambda p: len(p.live_steps()) < p.n_ops, settings=SEARCH)


@pytest.mark.slow
def test_shrinks_to_a_single_op():
    # Any single-op property: the minimal example has exactly that op and one input.
    for name in ("mul", "sum", "transpose"):
        minimal = find(programs(), lambda p, name=name: name in p.ops, settings=SEARCH)
        assert minimal.ops == [name], minimal
        assert len(minimal.inputs) == 1, minimal


def test_catalog_names_are_unique():
    assert len({spec.name for spec in CATALOG}) == len(CATALOG)


# --- the catalog-driven generator --------------------------------------------------------------------

from fuzzdce.core.program import Literal  # noqa: E402
from fuzzdce.strategies import BY_NAME  # noqa: E402


def test_tuple_results_unpack_and_numbers_flow_into_ops():
    p = Program(
        (TensorInput((2, 3)),),
        (
            Step("max_dim", "torch.max({0}, {dim})", (Ref(0),), (("dim", 1),), n_out=2),
            Step("shape_i", "{0}.shape[{dim}]", (Ref(0),), (("dim", 0),)),
            Step("zeros", "torch.zeros({0})", (Ref(3),)),
            Step("split", "torch.split({0}, 5)", (Ref(0),), n_out=1, unpack=True),
            Step("setitem", "{0}[{index}] = 1.5; {out} = {0}", (Ref(4),), (("index", Literal("0")),)),
        ),
        (1, 6),
    )
    assert "    v1, v2, = torch.max(v0, 1)\n" in p.source()  # v2 (the indices) is never used
    assert "    v5, = torch.split(v0, 5)  # dead\n" in p.source()
    assert "    v4[0] = 1.5; v6 = v4\n" in p.source()
    values, zeros = p.function()(*p.make_inputs())
    torch.testing.assert_close(values, p.make_inputs()[0].max(1).values)
    assert zeros.tolist() == [1.5, 0.0]


def test_input_domains_and_layouts_render():
    p = Program(
        (TensorInput((3, 2), domain="positive", transposed=True), TensorInput((2, 2), "int64", domain="positive", strided=True)),
        (),
        (0, 1),
    )
    x, y = p.make_inputs(requires_grad=True)
    assert x.shape == (3, 2) and not x.is_contiguous() and x.requires_grad and (x > 0).all()
    assert y.shape == (2, 2) and not y.is_contiguous() and (y >= 1).all()


@pytest.mark.slow
def test_in_place_ops_never_write_inputs_or_views():
    """An in-place op writes a computed value, or an input only where another input aliases it
    (a write that shows through a view is what such a program tests)."""

    def aliased(p, i):
        return p.inputs[i].view_of is not None or any(spec.view_of == i for spec in p.inputs)

    def writes_a_non_fresh_value(p):
        return any(
            BY_NAME[step.op].operands[0].written and step.refs()[0] < len(p.inputs) and not aliased(p, step.refs()[0])
            for step in p.steps
        )

    written = tuple(spec for spec in CATALOG if spec.operands[0].written)
    assert {"add_", "zero_", "mul_"} <= {spec.name for spec in written}

    @FAST
    @given(programs(catalog=written + tuple(spec for spec in CATALOG if spec.view)))
    def check(program):
        assert not writes_a_non_fresh_value(program)

    check()


@pytest.mark.slow
def test_planted_single_op_fault_shrinks_to_one_op():
    """add_computes_sub breaks top-level ltorch.add: Thunder's result differs from eager's, and
    the minimal failing program has exactly one op (and stock Thunder passes it)."""
    from conftest import evaluate_under

    # A few families around the faulty op keep the search short; add is among them.
    catalog = tuple(BY_NAME[n] for n in ("abs", "mul", "add", "sum", "transpose", "cat", "exp", "sub_alpha"))

    def wrong_outputs(program, placement):
        evaluation = evaluate_under(program, placement, paths=["jit"])[placement]
        return [v for v in evaluation.violations if v.oracle == "outputs"]

    minimal = find(
        programs(catalog=catalog, max_ops=4),
        lambda p: bool(wrong_outputs(p, "planted:add_computes_sub")),
        settings=settings(FAST, max_examples=300),
    )
    assert minimal.n_ops == 1, minimal
    assert not wrong_outputs(minimal, "stock")


def test_each_input_requires_grad_as_drawn():
    """A floating input drawn not to require grad stays so on a grad call, and its source says so."""
    p = Program((TensorInput((2,)), TensorInput((2,), requires_grad=False), TensorInput((2,), "int64")), (), (0,), seed=3)
    grads = p.make_inputs(requires_grad=True)
    assert [x.requires_grad for x in grads] == [True, False, False]
    assert [x.requires_grad for x in p.make_inputs()] == [False, False, False]
    assert "# never requires grad" in p.inputs_source().splitlines()[4]
    assert "requires_grad_" not in p.inputs_source().splitlines()[4]


@pytest.mark.slow  # the fast subset (-m "not slow") stays under 2 minutes: this one alone takes 5-30 s
def test_programs_mix_inputs_that_require_grad_with_inputs_that_do_not():
    def mixed(p):
        floating = [s for s in p.inputs if isinstance(s, TensorInput) and s.dtype.startswith("float") and s.view_of is None]
        return len({s.requires_grad for s in floating}) == 2

    find(programs(), mixed, settings=SEARCH)
