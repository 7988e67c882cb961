"""Value domains where compilers break: each is drawn as declared, and nonfinite values reach only
operands declared to take any value."""

import math

import pytest
import torch

from fuzzdce.core.program import ANY, Domain, Program, TensorInput
from fuzzdce.strategies import CATALOG
from fuzzdce.strategies.programs import INPUT_DOMAINS, integral_domain
from fuzzdce.strategies.spec import SAME


def drawn(domain, dtype="float32", shape=(64,)):
    program = Program((TensorInput(shape, dtype, domain=domain),), (), (0,), seed=3)
    return program.make_inputs()[0]


def test_every_domain_is_declared_once_and_every_table_reads_the_declaration():
    names = [domain.value for domain in Domain]
    assert len(names) == len(set(names)) == 8
    assert INPUT_DOMAINS == tuple(Domain) and INPUT_DOMAINS[0] == Domain.REAL  # the order is the table's
    requirements = {ANY, *Domain}
    for domain in Domain:
        assert {ANY, domain} <= domain.satisfies <= requirements
        assert domain.on_integers in Domain and domain.on_integers.on_integers == domain.on_integers
    for spec in CATALOG:  # every op names declared domains only
        assert spec.yields in {SAME, *Domain}, spec.name
        assert all(operand.domain in requirements for operand in spec.operands), spec.name


def test_integer_inputs_get_the_domain_their_values_can_have():
    assert [integral_domain("int64", d) for d in Domain] == [
        Domain.REAL,
        Domain.POSITIVE,
        Domain.POSITIVE,
        Domain.POSITIVE,
        Domain.TIES,
        Domain.SIGNED_ZEROS,
        Domain.LARGE,
        Domain.TIES,
    ]
    assert {integral_domain("bool", d) for d in Domain} == {Domain.REAL}
    assert [integral_domain("float16", d) for d in Domain] == list(Domain)


@pytest.mark.parametrize("domain", list(Domain))
@pytest.mark.parametrize("dtype", ["float32", "int64"])
def test_every_domain_draws_values_it_satisfies(domain, dtype):
    values = drawn(integral_domain(dtype, domain), dtype).double()
    meets = {
        Domain.REAL: values.isfinite().all(),
        Domain.POSITIVE: (values > 0).all(),
        Domain.UNIT: ((values > -1) & (values < 1)).all(),
        Domain.PROB: ((values > 0) & (values < 1)).all(),
    }
    assert all(meets[d] for d in integral_domain(dtype, domain).satisfies if d in meets), values


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "int64"])
def test_boundary_domains_hold_their_values(dtype):
    ties = drawn("ties", dtype)
    assert ties.unique().numel() <= 5 and (ties == 0).any()
    assert (drawn("large", dtype).abs() > 10).any()
    if dtype != "int64":
        zeros = drawn("signed_zeros", dtype)
        assert (zeros == 0).any() and any(math.copysign(1.0, float(v)) < 0 for v in zeros[zeros == 0])
        nonfinite = drawn("nonfinite", dtype)
        assert nonfinite.isnan().any() and nonfinite.isinf().any()


def test_nonfinite_values_reach_only_operands_that_take_any_value_and_propagate():
    from fuzzdce.strategies.programs import result_metas
    from fuzzdce.strategies.spec import Meta, Operand

    nonfinite, large = Meta((2,), "float32", "nonfinite"), Meta((2,), "float32", "large")
    assert not Operand().accepts(("float32",), None, nonfinite)
    assert not Operand(domain="positive").accepts(("float32",), None, large)
    assert Operand().accepts(("float32",), None, large)
    assert Operand(domain="any").accepts(("float32",), None, nonfinite)
    exp = next(spec for spec in CATALOG if spec.name == "exp")
    assert exp.operands[0].domain == "any"
    (result,) = result_metas(exp, [nonfinite], (torch.ones(2),))
    assert result.domain == "nonfinite"  # not exp's "positive": NaN stays NaN
    (flags,) = result_metas(exp, [nonfinite], (torch.ones(2, dtype=torch.bool),))
    assert flags.domain == "real"  # comparisons of NaN are plain booleans
    assert [spec.name for spec in CATALOG if spec.name == "log" and spec.operands[0].domain != "positive"] == []


def test_an_aliasing_input_is_a_view_of_its_base_and_the_pair_is_writable():
    from fuzzdce.core.program import Ref, Step
    from fuzzdce.strategies.programs import input_metas

    base = TensorInput((2, 3), "float32", transposed=True)
    inputs = (base, TensorInput((3,)), TensorInput((2, 3), "float32", transposed=True, view_of=0))
    program = Program(inputs, (Step("mul_", "{0}.mul_({s})", (Ref(2),), (("s", 2),)),), (0,), seed=4)
    a, _, view = program.make_inputs()
    assert view.data_ptr() == a.data_ptr() and view.stride() == a.stride() and view._base is not None
    before = a.clone()
    (out,) = program.function()(*program.make_inputs())
    torch.testing.assert_close(out, before * 2)  # the write through the view shows in the base
    assert [m.writable for m in input_metas(inputs)] == [True, False, True]
    grad_inputs = program.make_inputs(requires_grad=True)
    assert grad_inputs[0].is_leaf and grad_inputs[2].requires_grad and not grad_inputs[2].is_leaf
