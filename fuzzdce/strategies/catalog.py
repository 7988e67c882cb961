"""The op catalog: one entry per torch operation, data rather than control flow.

Each ``OpSpec`` states, next to its source template, the rule that makes it valid:
- ``dtypes``: dtypes its first tensor operand may have;
- ``operands``: how many tensor operands, and which live values each may be (``Any``, or
  ``Broadcastable`` with the first, or ``SameShape``);
- ``params``: a function from the operand metas to a Hypothesis strategy of keyword values
  substituted into the template (dims in range, scalars, flags).
Output shapes and dtypes are not written by hand: the program strategy runs each drawn step on
``meta`` tensors, so torch itself is the shape rule, and a step torch rejects is simply not added.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import hypothesis.strategies as st

FLOATS = ("float32", "float64")
INTS = ("int32", "int64")
BOOL = ("bool",)


@dataclass(frozen=True)
class Meta:
    """Shape and dtype of a live value (``dtype`` is a key of ``program.DTYPES``)."""

    shape: tuple[int, ...]
    dtype: str

    @property
    def ndim(self) -> int:
        return len(self.shape)


def any_value(first: Meta, candidate: Meta) -> bool:
    return True


def broadcastable(first: Meta, candidate: Meta) -> bool:
    """Shapes that broadcast together (numpy's rule, which torch shares)."""
    for a, b in zip(reversed(first.shape), reversed(candidate.shape)):
        if a != b and a != 1 and b != 1:
            return False
    return True


def same_shape(first: Meta, candidate: Meta) -> bool:
    return first.shape == candidate.shape


OperandRule = Callable[[Meta, Meta], bool]
ParamsRule = Callable[..., st.SearchStrategy[dict]]


def no_params(*metas: Meta) -> st.SearchStrategy[dict]:
    return st.just({})


@dataclass(frozen=True)
class OpSpec:
    name: str
    family: str
    template: str
    dtypes: tuple[str, ...] = FLOATS
    operands: tuple[OperandRule, ...] = (any_value,)
    params: ParamsRule = field(default=no_params, repr=False)
    n_out: int = 1


# --- parameter rules ---------------------------------------------------------------------------


def small_floats() -> st.SearchStrategy[float]:
    """Python scalars that keep values in a comparable range (no inf, no NaN)."""
    return st.sampled_from([1.0, 2.0, 0.5, -1.0, -2.5, 3.0])


def dim(x: Meta) -> st.SearchStrategy[int]:
    """A valid dimension index of ``x`` (0-dim tensors accept -1 and 0)."""
    n = max(x.ndim, 1)
    return st.integers(-n, n - 1)


def with_dim(x: Meta, *rest: Meta) -> st.SearchStrategy[dict]:
    return st.fixed_dictionaries({"dim": dim(x)})


def with_dim_keepdim(x: Meta, *rest: Meta) -> st.SearchStrategy[dict]:
    return st.fixed_dictionaries({"dim": dim(x), "keepdim": st.booleans()})


def with_alpha(x: Meta, *rest: Meta) -> st.SearchStrategy[dict]:
    return st.fixed_dictionaries({"alpha": small_floats()})


def with_scalar(x: Meta, *rest: Meta) -> st.SearchStrategy[dict]:
    return st.fixed_dictionaries({"scalar": small_floats()})


def with_two_dims(x: Meta, *rest: Meta) -> st.SearchStrategy[dict]:
    return st.fixed_dictionaries({"dim0": dim(x), "dim1": dim(x)})


def with_permutation(x: Meta, *rest: Meta) -> st.SearchStrategy[dict]:
    return st.fixed_dictionaries({"dims": st.permutations(range(x.ndim)).map(tuple)})


def with_new_dim(x: Meta, *rest: Meta) -> st.SearchStrategy[dict]:
    return st.fixed_dictionaries({"dim": st.integers(-x.ndim - 1, x.ndim)})


def with_correction(x: Meta, *rest: Meta) -> st.SearchStrategy[dict]:
    return st.fixed_dictionaries({"dim": dim(x), "correction": st.sampled_from([0, 1])})


# --- the catalog ---------------------------------------------------------------------------------


def unary(name: str, template: str | None = None, dtypes=FLOATS) -> OpSpec:
    return OpSpec(name, "unary", template or f"torch.{name}({{0}})", dtypes)


def binary(name: str, template: str | None = None, dtypes=FLOATS, params: ParamsRule = no_params) -> OpSpec:
    return OpSpec(name, "binary", template or f"torch.{name}({{0}}, {{1}})", dtypes, (any_value, broadcastable), params)


def reduction(name: str, template: str, params: ParamsRule = with_dim_keepdim, dtypes=FLOATS) -> OpSpec:
    return OpSpec(name, "reduction", template, dtypes, (any_value,), params)


def shape_op(name: str, template: str, params: ParamsRule = no_params, dtypes=FLOATS) -> OpSpec:
    return OpSpec(name, "shape", template, dtypes, (any_value,), params)


CATALOG: tuple[OpSpec, ...] = (
    # elementwise unary
    unary("neg"),
    unary("abs"),
    unary("exp"),
    unary("log"),
    unary("sin"),
    unary("cos"),
    unary("tanh"),
    unary("sigmoid"),
    unary("relu"),
    unary("sqrt"),
    unary("rsqrt"),
    unary("reciprocal"),
    unary("floor"),
    unary("square"),
    # elementwise binary, broadcasting
    binary("add"),
    binary("add_alpha", "torch.add({0}, {1}, alpha={alpha})", params=with_alpha),
    binary("sub"),
    binary("sub_alpha", "torch.sub({0}, {1}, alpha={alpha})", params=with_alpha),
    binary("mul"),
    binary("div"),
    binary("maximum"),
    binary("minimum"),
    binary("atan2"),
    binary("operator_add", "{0} + {1}"),
    binary("operator_mul", "{0} * {1}"),
    # with a Python scalar operand
    OpSpec("add_scalar", "scalar", "torch.add({0}, {scalar})", params=with_scalar),
    OpSpec("mul_scalar", "scalar", "torch.mul({0}, {scalar})", params=with_scalar),
    OpSpec("rsub_scalar", "scalar", "{scalar} - {0}", params=with_scalar),
    OpSpec("pow_scalar", "scalar", "torch.pow({0}, 2)"),
    # reductions
    reduction("sum", "torch.sum({0}, dim={dim}, keepdim={keepdim})"),
    reduction("mean", "torch.mean({0}, dim={dim}, keepdim={keepdim})"),
    reduction("amax", "torch.amax({0}, dim={dim}, keepdim={keepdim})"),
    reduction("sum_all", "torch.sum({0})", params=no_params),
    reduction("var", "torch.var({0}, dim={dim}, correction={correction})", params=with_correction),
    reduction("softmax", "torch.softmax({0}, dim={dim})", params=with_dim),
    # shape ops
    shape_op("reshape_flat", "torch.reshape({0}, (-1,))"),
    shape_op("transpose", "torch.transpose({0}, {dim0}, {dim1})", with_two_dims),
    shape_op("permute", "torch.permute({0}, {dims})", with_permutation),
    shape_op("unsqueeze", "torch.unsqueeze({0}, {dim})", with_new_dim),
    shape_op("squeeze", "torch.squeeze({0})"),
    shape_op("flatten", "torch.flatten({0})"),
)

BY_NAME: dict[str, OpSpec] = {spec.name: spec for spec in CATALOG}
assert len(BY_NAME) == len(CATALOG), "catalog names must be unique"
