"""Elementwise ops: unary, activations, binary (tensors, Python scalars, operators), comparisons,
logical and bitwise ops, and ternary ops (where, clamp, lerp, addcmul)."""

from __future__ import annotations

import math

import hypothesis.strategies as st

from fuzzdce.core.program import ANY, Domain
from fuzzdce.strategies.spec import (
    ALL,
    ALL_FLOATS,
    BOOL,
    FLOATS,
    INTS,
    NUMERIC,
    ORDER,
    SAME,
    SCALARS,
    STRING,
    Edges,
    Operand,
    OpSpec,
    broadcastable,
    const,
    no_params,
    overflow,
    params,
    small_floats,
    tiny,
)

F = "torch.nn.functional"


# Elementwise ops whose results IEEE rules define for every input take ``ANY`` value domain, the
# nonfinite one (inf, NaN) included; ops needing a range say so.
def unary(name: str, dtypes=ALL_FLOATS, needs: str = ANY, yields: str = Domain.REAL, template: str | None = None, **kw) -> OpSpec:
    return OpSpec(name, "unary", template or f"torch.{name}({{0}})", dtypes, (Operand(domain=needs),), yields=yields, **kw)


def activation(
    name: str, extra: str = "", dtypes=ALL_FLOATS, p=None, yields: str = Domain.REAL, edges: Edges | None = None
) -> OpSpec:
    return OpSpec(
        name,
        "activation",
        f"{F}.{name}({{0}}{extra})",
        dtypes,
        (Operand(domain=ANY),),
        params=p or (no_params),
        yields=yields,
        edges=edges,
    )


def binary(name: str, dtypes=NUMERIC, template: str | None = None, divisor: str = ANY, p=None, **kw) -> OpSpec:
    """Broadcasting binary op; the second operand may have another dtype (type promotion)."""
    operands = (Operand(domain=ANY), Operand(relation=broadcastable, domain=divisor))
    return OpSpec(
        name,
        kw.pop("family", "binary"),
        template or f"torch.{name}({{0}}, {{1}})",
        dtypes,
        operands,
        params=p or (no_params),
        **kw,
    )


def with_scalar(name: str, template: str, dtypes=ALL_FLOATS, scalar=None, **kw) -> OpSpec:
    operands = (Operand(domain=ANY),)
    return OpSpec(
        name,
        "scalar",
        template,
        dtypes,
        operands,
        params=params(scalar=const(small_floats() if scalar is None else scalar)),
        **kw,
    )


# Where ops are special (``spec.Edges``), shared by the entries below.
def saturation(scale: float):
    """The two points (+-) where a function approaching its asymptote like ``exp(-x / scale)`` rounds
    to it in a dtype: ``scale * log(2 / eps)`` (sigmoid: 1, tanh: 0.5)."""
    return (lambda f: scale * math.log(2 / f.eps), lambda f: -scale * math.log(2 / f.eps))


AT_ZERO = Edges(kinks=(0.0,))
INTEGERS = Edges(kinks=(0.0, 1.0, -1.0, 2.0))  # floor, ceil, trunc, frac, remainder: jumps at integers
HALVES = Edges(kinks=(0.5, 1.5, 2.5, -0.5))  # round: ties to even
EXP = Edges(saturates=(overflow(math.log), lambda f: math.log(f.tiny)))  # overflows to inf, underflows to 0
HYPERBOLIC = Edges(saturates=(overflow(lambda m: math.log(2) + math.log(m)), overflow(lambda m: -math.log(2) - math.log(m))))
NEAR_ZERO = Edges(kinks=(0.0,), saturates=(tiny,))  # log, reciprocal, rsqrt, sqrt: the derivative blows up
UNIT_BOUNDS = Edges(kinks=(-1.0, 1.0))  # asin, atanh, erfinv: the derivative blows up at +-1
SIGMOID = Edges(kinks=(0.0,), saturates=(*saturation(1.0), 100.0, -100.0))
TANH = Edges(kinks=(0.0,), saturates=(*saturation(0.5), 20.0, -20.0, 100.0, -100.0))
SATURATES = Edges(saturates=(*saturation(1.0), 20.0, -20.0, 100.0, -100.0))  # gelu, silu, mish
# elu, celu, selu: linear above 0, exp(x) - 1 below, which rounds to -1 like sigmoid's tail.
ELU = Edges(kinks=(0.0,), saturates=(saturation(1.0)[1], -20.0, -100.0))
BOUNDS = Edges(kinks=("lo", "hi"))  # clamp's, clip's bounds (a parameter named so)


ROUNDING = st.sampled_from([None, "trunc", "floor"])
# The strings an op takes from a string input of the program (``program.StringInput``).
ROUNDING_MODES = ("trunc", "floor")
APPROXIMATIONS = ("none", "tanh")

OPS: tuple[OpSpec, ...] = (
    # elementwise unary, with the domain each needs
    unary("abs", NUMERIC, edges=AT_ZERO),
    unary("neg", NUMERIC),
    unary("exp", yields=Domain.POSITIVE, edges=EXP),
    unary("exp2", yields=Domain.POSITIVE, edges=Edges(saturates=(overflow(math.log2),))),
    unary("expm1", edges=EXP),
    unary("log", needs=Domain.POSITIVE, edges=NEAR_ZERO),
    unary("log2", needs=Domain.POSITIVE, edges=NEAR_ZERO),
    unary("log10", needs=Domain.POSITIVE, edges=NEAR_ZERO),
    unary("log1p", needs=Domain.POSITIVE, edges=NEAR_ZERO),
    unary("sqrt", needs=Domain.POSITIVE, yields=Domain.POSITIVE, edges=NEAR_ZERO),
    unary("rsqrt", needs=Domain.POSITIVE, yields=Domain.POSITIVE, edges=NEAR_ZERO),
    unary("reciprocal", needs=Domain.POSITIVE, yields=Domain.POSITIVE, edges=NEAR_ZERO),
    unary("sin"),
    unary("cos"),
    unary("tan", needs=Domain.UNIT),
    unary("asin", needs=Domain.UNIT, edges=UNIT_BOUNDS),
    unary("acos", needs=Domain.UNIT, edges=UNIT_BOUNDS),
    unary("atan"),
    unary("sinh", edges=HYPERBOLIC),
    unary("cosh", yields=Domain.POSITIVE, edges=HYPERBOLIC),
    unary("tanh", yields=Domain.UNIT, edges=TANH),
    unary("asinh"),
    unary("atanh", needs=Domain.UNIT, edges=UNIT_BOUNDS),
    unary("sigmoid", yields=Domain.PROB, edges=SIGMOID),
    unary("erf", yields=Domain.UNIT, edges=TANH),
    unary("erfc", yields=Domain.POSITIVE, edges=TANH),
    unary("erfinv", needs=Domain.UNIT, edges=UNIT_BOUNDS),
    unary("lgamma", needs=Domain.POSITIVE, edges=Edges(kinks=(1.0, 2.0, 0.0), saturates=(tiny,))),
    unary("digamma", needs=Domain.POSITIVE, edges=NEAR_ZERO),
    unary("floor", NUMERIC, yields=SAME, edges=INTEGERS),
    unary("ceil", NUMERIC, yields=SAME, edges=INTEGERS),
    unary("round", NUMERIC, edges=HALVES),
    unary("trunc", NUMERIC, edges=INTEGERS),
    unary("frac", edges=INTEGERS),
    unary("sign", NUMERIC, edges=AT_ZERO),
    unary("signbit", NUMERIC),
    unary("square", NUMERIC),
    unary("relu", NUMERIC, edges=AT_ZERO),
    unary("isfinite", ALL),
    unary("isnan", ALL),
    unary("isinf", ALL),
    unary("logical_not", ALL),
    unary("bitwise_not", INTS + BOOL),
    unary("nan_to_num", edges=Edges(saturates=(lambda f: f.max, lambda f: -f.max))),
    unary("logit", needs=Domain.PROB, edges=Edges(kinks=(0.0, 1.0))),
    unary("clone", ALL, yields=SAME),
    # activations (torch.nn.functional)
    activation(
        "gelu",
        p=params(approximate=const(st.sampled_from(["none", "tanh"]))),
        extra=", approximate={approximate}",
        edges=SATURATES,
    ),
    OpSpec(
        "gelu_approximate_input",
        "activation",
        f"{F}.gelu({{0}}, approximate={{1}})",
        ALL_FLOATS,
        (Operand(domain=ANY), Operand(dtypes=STRING, values=APPROXIMATIONS)),
    ),
    activation("silu", edges=SATURATES),
    activation("relu6", edges=Edges(kinks=(0.0, 6.0))),
    activation("hardswish", edges=Edges(kinks=(-3.0, 3.0))),
    activation("hardsigmoid", edges=Edges(kinks=(-3.0, 3.0))),
    activation("hardtanh", edges=UNIT_BOUNDS),
    activation("leaky_relu", ", negative_slope={slope}", p=params(slope=const(st.sampled_from([0.01, 0.2]))), edges=AT_ZERO),
    activation("elu", edges=ELU),
    activation("celu", edges=ELU),
    activation("selu", edges=ELU),
    activation("mish", edges=SATURATES),
    # softplus is linear past beta * x > 20 (its threshold): beta 1 and 2 meet it at 20 and 10; its
    # exp(beta * x) underflows far below 0 (at -100 the result is a float32 subnormal).
    activation(
        "softplus",
        ", beta={beta}",
        p=params(beta=const(st.sampled_from([1.0, 2.0]))),
        edges=Edges(kinks=(20.0, 10.0, 0.0), saturates=(100.0, -100.0)),
    ),
    activation("softsign", yields=Domain.UNIT, edges=AT_ZERO),
    activation("tanhshrink", edges=TANH),
    activation("logsigmoid", edges=SIGMOID),
    activation("softshrink", edges=Edges(kinks=(-0.5, 0.5))),
    activation("hardshrink", edges=Edges(kinks=(-0.5, 0.5))),
    activation(
        "threshold",
        ", {threshold}, {value}",
        p=params(threshold=const(small_floats()), value=const(small_floats())),
        edges=Edges(kinks=("threshold",)),
    ),
    # binary, broadcasting, with type promotion between the operands' dtypes
    binary("add"),
    binary("add_alpha", template="torch.add({0}, {1}, alpha={alpha})", p=params(alpha=const(small_floats())), dtypes=ALL_FLOATS),
    binary("sub"),
    binary("sub_alpha", template="torch.sub({0}, {1}, alpha={alpha})", p=params(alpha=const(small_floats())), dtypes=ALL_FLOATS),
    binary("mul", ALL),
    binary("div", ALL_FLOATS),
    # Integer division by zero kills the process (SIGFPE) in some CPU kernels: integer divisors
    # are clamped away from zero in the program itself, which keeps eager and Thunder comparable.
    binary(
        "div_rounding",
        NUMERIC,
        template="torch.div({0}, {1}.clamp(min=1), rounding_mode={mode})",
        divisor=Domain.POSITIVE,
        p=params(mode=const(ROUNDING)),
    ),
    OpSpec(
        "div_rounding_input",
        "binary",
        "torch.div({0}, {1}.clamp(min=1), rounding_mode={2})",
        NUMERIC,
        (
            Operand(domain=ANY),
            Operand(relation=broadcastable, domain=Domain.POSITIVE),
            Operand(dtypes=STRING, values=ROUNDING_MODES),
        ),
    ),
    binary("true_divide", ALL_FLOATS),
    binary("floor_divide", NUMERIC, template="torch.floor_divide({0}, {1}.clamp(min=1))", divisor=Domain.POSITIVE),
    binary("remainder", NUMERIC, template="torch.remainder({0}, {1}.clamp(min=1))", divisor=Domain.POSITIVE),
    binary("fmod", NUMERIC, template="torch.fmod({0}, {1}.clamp(min=1))", divisor=Domain.POSITIVE),
    binary("pow", ALL_FLOATS, template="torch.pow({0}, {1})", divisor=Domain.REAL),
    binary("maximum", NUMERIC, edges=ORDER),
    binary("minimum", NUMERIC, edges=ORDER),
    binary("atan2", ALL_FLOATS, edges=AT_ZERO),
    binary("copysign", ALL_FLOATS, edges=AT_ZERO),
    binary("nextafter", FLOATS),
    binary("ldexp", FLOATS, template="torch.ldexp({0}, {1}.to(torch.int64).clamp(-4, 4))", torch_op="torch.ldexp"),
    binary("operator_add", ALL, template="{0} + {1}", torch_op=""),
    binary("operator_mul", ALL, template="{0} * {1}", torch_op=""),
    binary("operator_sub", NUMERIC, template="{0} - {1}", torch_op=""),
    binary("operator_truediv", ALL_FLOATS, template="{0} / {1}", torch_op=""),
    binary("operator_floordiv", INTS, template="{0} // {1}.clamp(min=1)", divisor=Domain.POSITIVE, torch_op=""),
    binary("operator_pow", FLOATS, template="{0} ** {1}", torch_op=""),
    # comparisons and logical / bitwise ops
    binary("eq", ALL, family="compare"),
    binary("ne", ALL, family="compare"),
    binary("lt", NUMERIC, family="compare"),
    binary("le", NUMERIC, family="compare"),
    binary("gt", NUMERIC, family="compare"),
    binary("ge", NUMERIC, family="compare"),
    binary("operator_lt", NUMERIC, template="{0} < {1}", family="compare", torch_op=""),
    binary("operator_eq", ALL, template="{0} == {1}", family="compare", torch_op="torch.Tensor.__eq__"),
    binary("logical_and", ALL, family="logical"),
    binary("logical_or", ALL, family="logical"),
    binary("logical_xor", ALL, family="logical"),
    binary("bitwise_and", INTS + BOOL, family="logical"),
    binary("bitwise_or", INTS + BOOL, family="logical"),
    binary("bitwise_xor", INTS + BOOL, family="logical"),
    # with a Python scalar operand
    with_scalar("add_scalar", "torch.add({0}, {scalar})", torch_op="torch.add"),
    with_scalar("mul_scalar", "torch.mul({0}, {scalar})", NUMERIC, scalar=st.sampled_from([2, -1, 3]), torch_op="torch.mul"),
    with_scalar("rsub", "torch.rsub({0}, {scalar})"),
    with_scalar("rsub_operator", "{scalar} - {0}", torch_op=""),
    with_scalar(
        "pow_scalar",
        "torch.pow({0}, {scalar})",
        scalar=st.sampled_from([2, 3, 0.5, -1]),
        torch_op="torch.pow",
        # x ** 2 and x ** 3 overflow; x ** 0.5 and x ** -1 blow up at 0
        edges=Edges(kinks=(0.0,), saturates=(overflow(math.sqrt), overflow(math.cbrt))),
    ),
    with_scalar("float_power", "torch.float_power({0}, {scalar})", FLOATS, scalar=st.sampled_from([2, 3])),
    with_scalar(
        "div_scalar_int",
        "torch.div({0}, {scalar}, rounding_mode='floor')",
        INTS,
        scalar=st.sampled_from([2, 3, -2]),
        torch_op="torch.div",
    ),
    with_scalar("eq_scalar", "torch.eq({0}, {scalar})", NUMERIC, scalar=st.sampled_from([0, 1]), torch_op="torch.eq"),
    with_scalar("gt_scalar", "{0} > {scalar}", NUMERIC, scalar=st.sampled_from([0, 0.5]), torch_op=""),
    # with a Python number as the scalar: an int from the program (x.shape[i], numel()) or a
    # number input (int, float, bool), which Thunder's prologue checks by type and value
    OpSpec("mul_number", "number", "{0} * {1}", NUMERIC, (Operand(), Operand(dtypes=SCALARS)), torch_op=""),
    OpSpec("add_number", "number", "torch.add({0}, {1})", NUMERIC, (Operand(), Operand(dtypes=SCALARS)), torch_op="torch.add"),
    # torch refuses to subtract a bool, a Python one too: an int or a float only.
    OpSpec("sub_number", "number", "{0} - {1}", NUMERIC, (Operand(), Operand(dtypes=("pyint", "pyfloat"))), torch_op=""),
    OpSpec(
        "pow_number",
        "number",
        "torch.pow({0}, {1})",
        FLOATS,
        (Operand(), Operand(dtypes=SCALARS)),
        torch_op="torch.pow",
        edges=Edges(kinks=(0.0, 1.0, -1.0)),
    ),
    OpSpec(
        "where_number",
        "number",
        "torch.where({0} > 0, {0}, {1})",
        ALL_FLOATS,
        (Operand(), Operand(dtypes=SCALARS)),
        torch_op="torch.where",
        edges=AT_ZERO,
    ),
    # ternary
    OpSpec(
        "where",
        "ternary",
        "torch.where({0}, {1}, {2})",
        BOOL,
        (Operand(), Operand(NUMERIC, broadcastable), Operand(NUMERIC, broadcastable)),
    ),
    OpSpec(
        "where_scalar",
        "ternary",
        "torch.where({0} > 0, {0}, {scalar})",
        ALL_FLOATS,
        params=params(scalar=const(small_floats())),
        torch_op="torch.where",
        edges=AT_ZERO,
    ),
    OpSpec(
        "clamp",
        "ternary",
        "torch.clamp({0}, min={lo}, max={hi})",
        NUMERIC,
        params=params(lo=const(st.sampled_from([-1, 0, None])), hi=const(st.sampled_from([1, 2]))),
        edges=BOUNDS,
    ),
    OpSpec(
        "clamp_tensor",
        "ternary",
        "torch.clamp({0}, {1}, {2})",
        ALL_FLOATS,
        (Operand(), Operand(relation=broadcastable), Operand(relation=broadcastable)),
        torch_op="torch.clamp",
    ),
    OpSpec(
        "clamp_min",
        "ternary",
        "torch.clamp_min({0}, {lo})",
        NUMERIC,
        params=params(lo=const(st.sampled_from([-1, 0]))),
        edges=BOUNDS,
    ),
    OpSpec(
        "clip",
        "ternary",
        "torch.clip({0}, {lo}, {hi})",
        NUMERIC,
        params=params(lo=const(st.sampled_from([-2, 0])), hi=const(st.sampled_from([1, 3]))),
        edges=BOUNDS,
    ),
    OpSpec(
        "lerp",
        "ternary",
        "torch.lerp({0}, {1}, {w})",
        ALL_FLOATS,
        (Operand(), Operand(relation=broadcastable)),
        params=params(w=const(st.sampled_from([0.25, 0.5, 1.5]))),
    ),
    OpSpec(
        "lerp_tensor",
        "ternary",
        "torch.lerp({0}, {1}, {2})",
        FLOATS,
        (Operand(), Operand(relation=broadcastable), Operand(relation=broadcastable)),
        torch_op="torch.lerp",
    ),
    OpSpec(
        "addcmul",
        "ternary",
        "torch.addcmul({0}, {1}, {2}, value={v})",
        ALL_FLOATS,
        (Operand(), Operand(relation=broadcastable), Operand(relation=broadcastable)),
        params=params(v=const(small_floats())),
    ),
    OpSpec(
        "addcdiv",
        "ternary",
        "torch.addcdiv({0}, {1}, {2}, value={v})",
        ALL_FLOATS,
        (Operand(), Operand(relation=broadcastable), Operand(relation=broadcastable, domain=Domain.POSITIVE)),
        params=params(v=const(small_floats())),
    ),
    OpSpec(
        "masked_fill",
        "ternary",
        "torch.masked_fill({0}, {1}, {v})",
        ALL_FLOATS,
        (Operand(), Operand(BOOL, broadcastable)),
        params=params(v=const(small_floats())),
    ),
    OpSpec(
        "isclose",
        "ternary",
        "torch.isclose({0}, {1})",
        ALL_FLOATS,
        (Operand(), Operand(relation=broadcastable)),
        torch_op="torch.isclose",
    ),
)
