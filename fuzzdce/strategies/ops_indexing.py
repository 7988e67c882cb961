"""Python's indexing and in-place semantics as users write them: boolean masks (getitem and setitem,
the value's count matching the mask's), integer-array indices mixed with ``None``, ``...`` and
slices, setitem with a broadcast value, writes of a value that requires grad into a tensor that
does not (and the reverse), and in-place writes through views.

Each entry is valid by construction, whatever the values: a value written is cloned where it might
share memory with its target (an input and its view, a setitem's result and its target: torch refuses
overlapping writes, and the generator's stand-ins share no memory to show it); a literal mask's
count is known when the step is drawn; a mask computed from values is read back only through an op whose shape does not
depend on it (setitem, a sum), or the value written through it is indexed by the same mask; index
tensors are in range, and distinct where a write goes through them (a repeated index's write order
is unspecified). Gradients are checked like any other op's, on every grad path.
"""

from __future__ import annotations

import math

import hypothesis.strategies as st

from fuzzdce.core.program import Literal
from fuzzdce.strategies.ops_structure import basic_index
from fuzzdce.strategies.spec import (
    ALL_FLOATS,
    NUMERIC,
    Meta,
    Operand,
    OpSpec,
    broadcasts_to_first,
    choose,
    one_of_range,
    same_shape,
    small_floats,
    source,
)

WRITE = Operand(written=True)
MAX_MASK = 16  # elements of a literal mask


def leading_mask(x: Meta) -> st.SearchStrategy[Literal]:
    """A literal boolean mask over ``x``'s leading dims (its first one, or more while it stays small):
    ``x[mask]`` has as many rows as the mask has True values, known before the program runs."""
    if x.ndim == 0:
        return st.booleans().map(lambda b: source(f"torch.tensor({b})"))
    depths = [k for k in range(1, x.ndim + 1) if math.prod(x.shape[:k]) <= MAX_MASK] or [1]
    return choose(depths).flatmap(
        lambda k: st.lists(st.booleans(), min_size=math.prod(x.shape[:k]), max_size=math.prod(x.shape[:k])).map(
            lambda bits: source(f"torch.tensor({bits!r}).reshape({tuple(x.shape[:k])!r})")
        )
    )


def index_tensor(size: int, distinct: bool) -> st.SearchStrategy[str]:
    """A literal int64 index tensor of 1-3 positions in [0, size) (distinct ones when written through)."""
    positions = st.lists(one_of_range(0, size - 1), min_size=1, max_size=min(3, size) if distinct else 3, unique=distinct)
    return positions.map(lambda v: f"torch.tensor({v!r})")


def array_index(x: Meta, distinct: bool = False) -> st.SearchStrategy[Literal]:
    """An index with integer arrays mixed with ``None``, ``...``, slices and ints, as users write it:
    ``x[idx]``, ``x[:, idx]``, ``x[..., idx]``, ``x[None, idx]``, ``x[idx, None, 1:]``, ``x[idx0, idx1]``
    (two arrays broadcast together: the same length, or one of length 1)."""
    sizes = [n for n in x.shape]
    if not sizes or 0 in sizes:
        return st.just(source("torch.tensor([0])"))  # torch rejects it on a 0-d or empty tensor: dropped
    d = one_of_range(0, x.ndim - 1)

    def form(k: int) -> st.SearchStrategy[str]:
        dim = k % x.ndim
        one = index_tensor(sizes[dim], distinct)
        forms = [
            one.map(lambda t: ":, " * dim + t),
            index_tensor(sizes[-1], distinct).map(lambda t: "..., " + t),
            one.map(lambda t: "None, " + ":, " * dim + t),
            index_tensor(sizes[0], distinct).map(lambda t: t + ", None" + (", 1:" if x.ndim > 1 else "")),
        ]
        if x.ndim >= 2:
            length = one_of_range(1, 3)
            forms.append(
                length.flatmap(
                    lambda n: st.tuples(
                        st.lists(one_of_range(0, sizes[0] - 1), min_size=n, max_size=n, unique=distinct),
                        st.lists(one_of_range(0, sizes[1] - 1), min_size=n, max_size=n, unique=distinct),
                    ).map(lambda ab: f"torch.tensor({ab[0]!r}), torch.tensor({ab[1]!r})")
                )
            )
        return one_of_range(0, len(forms) - 1).flatmap(lambda i: forms[i])

    return d.flatmap(form).map(source)


def value_fits(first: Meta, value: Meta) -> bool:
    """A value to write through an index into ``first``: no more dims (eager checks it broadcasts)."""
    return value.ndim <= first.ndim


OPS: tuple[OpSpec, ...] = (
    # boolean masks
    OpSpec(
        "mask_getitem",
        "indexing",
        "{0}[{mask}]",
        NUMERIC,
        params=lambda x: leading_mask(x).map(lambda m: {"mask": m}),
        torch_op="torch.Tensor.__getitem__",
    ),
    OpSpec(
        "mask_select_sum",
        "indexing",
        "{0}[{1} > 0].sum()",
        ALL_FLOATS,
        (Operand(), Operand(NUMERIC, same_shape)),
        torch_op="torch.Tensor.__getitem__",
    ),
    OpSpec(
        "mask_setitem_scalar",
        "indexing",
        "{0}[{1} > 0] = {v}; {out} = {0}",
        ALL_FLOATS,
        (WRITE, Operand(NUMERIC, same_shape)),
        params=lambda x, m: small_floats().map(lambda v: {"v": v}),
        torch_op="torch.Tensor.__setitem__",
    ),
    OpSpec(
        "mask_setitem_matching",  # x[m] = y[m]: the value's count is the mask's, whatever the values
        "indexing",
        "{0}[{1} > 0] = {2}[{1} > 0]; {out} = {0}",
        ALL_FLOATS,
        (WRITE, Operand(NUMERIC, same_shape), Operand(ALL_FLOATS, same_shape)),
        torch_op="torch.Tensor.__setitem__",
    ),
    OpSpec(
        "mask_setitem_literal",
        "indexing",
        "{0}[{mask}] = {1}.clone(); {out} = {0}",
        ALL_FLOATS,
        (WRITE, Operand(ALL_FLOATS, value_fits)),
        params=lambda x, v: leading_mask(x).map(lambda m: {"mask": m}),
        torch_op="torch.Tensor.__setitem__",
    ),
    # integer arrays with None, ... and slices
    OpSpec(
        "array_getitem",
        "indexing",
        "{0}[{index}]",
        NUMERIC,
        params=lambda x: array_index(x).map(lambda i: {"index": i}),
        torch_op="torch.Tensor.__getitem__",
    ),
    OpSpec(
        "array_setitem",
        "indexing",
        "{0}[{index}] = {1}.clone(); {out} = {0}",
        ALL_FLOATS,
        (WRITE, Operand(ALL_FLOATS, value_fits)),
        params=lambda x, v: array_index(x, distinct=True).map(lambda i: {"index": i}),
        torch_op="torch.Tensor.__setitem__",
    ),
    # setitem with a value broadcast into a basic index
    OpSpec(
        "setitem_broadcast",
        "indexing",
        "{0}[{index}] = {1}.clone(); {out} = {0}",
        ALL_FLOATS,
        (WRITE, Operand(ALL_FLOATS, value_fits)),
        params=lambda x, v: basic_index(x).map(lambda i: {"index": i}),
        torch_op="torch.Tensor.__setitem__",
    ),
    # requires_grad moving through writes: a value that requires grad written into a new tensor that
    # does not (a buffer filled from parameters), and a value that does not into one that does
    OpSpec(
        "setitem_into_fresh",
        "indexing",
        "{out} = torch.zeros_like({0}); {out}[{index}] = {1}[{index}]",
        ALL_FLOATS,
        (Operand(), Operand(ALL_FLOATS, same_shape)),
        params=lambda x, v: basic_index(x).map(lambda i: {"index": i}),
        torch_op="torch.Tensor.__setitem__",
    ),
    OpSpec(
        "add_into_fresh",
        "indexing",
        "{out} = torch.zeros_like({0}); {out}.add_({1})",
        ALL_FLOATS,
        (Operand(), Operand(ALL_FLOATS, broadcasts_to_first)),
        torch_op="torch.Tensor.add_",
    ),
    OpSpec(
        "setitem_detached",
        "indexing",
        "{0}[{index}] = {1}[{index}].detach(); {out} = {0}",
        ALL_FLOATS,
        (WRITE, Operand(ALL_FLOATS, same_shape)),
        params=lambda x, v: basic_index(x).map(lambda i: {"index": i}),
        torch_op="torch.Tensor.__setitem__",
    ),
    # in-place writes through a view of a computed value: the base sees them
    OpSpec(
        "mul_through_view",
        "indexing",
        "{0}[{index}].mul_({s}); {out} = {0}",
        ALL_FLOATS,
        (WRITE,),
        params=lambda x: st.fixed_dictionaries({"index": basic_index(x), "s": st.sampled_from([2.0, -1.0, 0.5])}),
        torch_op="torch.Tensor.mul_",
    ),
    OpSpec(
        "copy_through_transpose",
        "indexing",
        "{0}.mT.copy_({1}.clone()); {out} = {0}",
        ALL_FLOATS,
        (WRITE, Operand(ALL_FLOATS, lambda a, b: a.ndim >= 2 and value_fits(a, b))),
        torch_op="torch.Tensor.copy_",
    ),
)
