"""Reductions, tuple-returning ops, shape and view ops, indexing, joining and splitting, matmul,
conversions, factories, in-place ops and arithmetic on shapes (Python ints flowing into ops)."""

from __future__ import annotations

import math

import hypothesis.strategies as st

from fuzzdce.core.program import Domain
from fuzzdce.strategies.spec import (
    ALL,
    ALL_FLOATS,
    BOOL,
    FLOATS,
    LOGITS,
    NUMBER,
    NUMERIC,
    ORDER,
    SAME,
    TIES,
    Edges,
    Meta,
    Operand,
    OpSpec,
    broadcastable,
    broadcasts_to_first,
    choose,
    const,
    dim,
    divides_numel,
    in_range_indices,
    last_dims_match,
    matmul_fits,
    new_dim,
    no_params,
    one_of_range,
    params,
    permutation_of,
    same_shape,
    small_floats,
    source,
)

KEEPDIM = const(st.booleans())
CORRECTION = const(st.sampled_from([0, 1]))


def reduction(name: str, template: str, dtypes=ALL_FLOATS, p=None, **kw) -> OpSpec:
    return OpSpec(name, kw.pop("family", "reduction"), template, dtypes, params=p or params(dim=dim, keepdim=KEEPDIM), **kw)


def shape_op(name: str, template: str, p=None, dtypes=ALL, view: bool = True, yields: str = SAME, **kw) -> OpSpec:
    """Ops that move values without computing new ones: the result keeps the operand's domain."""
    return OpSpec(name, kw.pop("family", "shape"), template, dtypes, params=p or (no_params), yields=yields, view=view, **kw)


def nonempty_dim(x: Meta) -> st.SearchStrategy[int]:
    """A dim of size >= 1 (or any dim when there is none: torch then rejects the step)."""
    return choose([d for d, n in enumerate(x.shape) if n >= 1] or [0])


def two_dims(x: Meta) -> st.SearchStrategy[tuple[int, int]]:
    return st.tuples(dim(x), dim(x))


def permutation(x: Meta) -> st.SearchStrategy[tuple[int, ...]]:
    return permutation_of(x.ndim)


def reshape_target(x: Meta) -> st.SearchStrategy[tuple[int, ...]]:
    """Shapes with ``x``'s number of elements: flattened, reversed, split off a factor, or with -1."""
    shapes = [(-1,), tuple(reversed(x.shape)), (1, *x.shape), tuple(n for n in x.shape if n != 1)]
    if x.numel:
        shapes += [(f, x.numel // f) for f in range(1, x.numel + 1) if x.numel % f == 0][:4]
        shapes += [(-1, x.shape[-1])] if x.ndim and x.shape[-1] else []
    return choose(shapes)


def expand_target(x: Meta) -> st.SearchStrategy[tuple[int, ...]]:
    """A shape ``x`` expands to: size-1 dims grown, a leading dim prepended, -1 kept."""
    grown = st.tuples(*(st.sampled_from([n, -1]) if n != 1 else st.sampled_from([1, 2, 3]) for n in x.shape))
    return st.tuples(st.sampled_from([(), (2,)]), grown).map(lambda t: t[0] + t[1])


def narrow_args(x: Meta) -> st.SearchStrategy[dict]:
    """dim, start, length with start + length <= size."""
    if x.ndim == 0:
        return st.just({"dim": 0, "start": 0, "length": 1})
    return dim(x).flatmap(
        lambda d: one_of_range(0, x.shape[d]).flatmap(
            lambda s: st.fixed_dictionaries({"dim": st.just(d), "start": st.just(s), "length": one_of_range(0, x.shape[d] - s)})
        )
    )


def basic_index(x: Meta) -> st.SearchStrategy[str]:
    """A basic index expression: per leading dim an int, a slice (with step) or ``None``; maybe ``...``."""

    def one(n: int) -> st.SearchStrategy[str]:
        options = [
            st.tuples(one_of_range(-n - 1, n + 1), one_of_range(-n - 1, n + 1), st.sampled_from([None, 1, 2])).map(
                lambda t: f"{'' if t[0] is None else t[0]}:{t[1]}" + (f":{t[2]}" if t[2] else "")
            ),
            st.just(":"),
            st.just("None"),
        ]
        if n:
            options.insert(0, one_of_range(-n, n - 1).map(str))
        return st.one_of(options)

    if x.ndim == 0:
        return st.sampled_from(["None", "...", "..., None"]).map(source)
    count = one_of_range(1, x.ndim)
    return count.flatmap(lambda k: st.tuples(*(one(n) for n in x.shape[:k]), st.booleans())).map(
        lambda parts: source(", ".join(parts[:-1]) + (", ..." if parts[-1] else ""))
    )


def advanced_index(x: Meta) -> st.SearchStrategy[str]:
    """An index with an int64 tensor of in-range positions on one dim (``x[:, torch.tensor([2, 0])]``)."""
    if x.ndim == 0:
        return st.just(source("torch.tensor([0])"))  # never valid on a 0-dim tensor; torch rejects the step
    return nonempty_dim(x).flatmap(lambda d: in_range_indices(x.shape[d]).map(lambda t: source(":, " * d + t.source)))


def gather_args(x: Meta) -> st.SearchStrategy[dict]:
    """dim and an in-range index tensor no larger than ``x`` (gather's shape rule)."""
    if x.ndim == 0 or 0 in x.shape:
        return st.just({"dim": 0, "index": source("torch.zeros((), dtype=torch.int64)")})

    def literal(d: int) -> st.SearchStrategy[dict]:
        shape = st.tuples(*(one_of_range(1, n) for n in x.shape))
        return shape.flatmap(
            lambda s: st.lists(one_of_range(0, x.shape[d] - 1), min_size=math.prod(s), max_size=math.prod(s)).map(
                lambda vals: {"dim": d, "index": source(f"torch.tensor({vals!r}).reshape({s!r})")}
            )
        )

    return dim(x).map(lambda d: d % x.ndim).flatmap(literal)


def split_args(x: Meta) -> st.SearchStrategy[dict]:
    return st.fixed_dictionaries({"size": st.integers(1, 3), "dim": dim(x)})


def index_list_for(x: Meta, d_key: str = "dim") -> st.SearchStrategy[dict]:
    if x.ndim == 0:
        return st.just({d_key: 0, "index": source("torch.tensor([0])")})
    return nonempty_dim(x).flatmap(lambda d: in_range_indices(x.shape[d]).map(lambda t: {d_key: d, "index": t}))


def distinct_index_for(x: Meta) -> st.SearchStrategy[dict]:
    """index_copy needs an index without repeats (else the result depends on write order)."""
    if x.ndim == 0:
        return st.just({"dim": 0, "index": source("torch.tensor([0])")})
    return nonempty_dim(x).flatmap(
        lambda d: st.lists(one_of_range(0, x.shape[d] - 1), min_size=1, max_size=x.shape[d], unique=True).map(
            lambda v: {"dim": d, "index": source(f"torch.tensor({v!r})")}
        )
    )


def topk_args(x: Meta) -> st.SearchStrategy[dict]:
    if x.ndim == 0:
        return st.just({"k": 1, "dim": 0, "largest": True})
    return dim(x).flatmap(
        lambda d: st.fixed_dictionaries({"k": one_of_range(0, x.shape[d]), "dim": st.just(d), "largest": st.booleans()})
    )


def unflatten_args(x: Meta) -> st.SearchStrategy[dict]:
    if x.ndim == 0:
        return st.just({"dim": 0, "sizes": (1,)})
    return dim(x).map(lambda d: {"dim": d, "sizes": (1, -1) if x.shape[d] else (0, 1)})


WRITE = Operand(written=True)
# Index ops on 0-dim tensors: meta kernels accept some that CPU rejects, so they are not drawn.
INDEXABLE = (Operand(relation=lambda first, x: x.ndim >= 1),)
DT = const(
    st.sampled_from(
        ["torch.float32", "torch.float64", "torch.int64", "torch.bool", "torch.bfloat16", "torch.float16", "torch.int32"]
    ).map(source)
)

OPS: tuple[OpSpec, ...] = (
    # reductions (dims, keepdim, correction, dtype)
    reduction("sum", "torch.sum({0}, dim={dim}, keepdim={keepdim})", ALL),
    reduction("sum_all", "torch.sum({0})", ALL, p=no_params, torch_op="torch.sum"),
    reduction("sum_dtype", "torch.sum({0}, {dim}, dtype=torch.float64)", NUMERIC, p=params(dim=dim), torch_op="torch.sum"),
    reduction("mean", "torch.mean({0}, dim={dim}, keepdim={keepdim})"),
    reduction("prod", "torch.prod({0}, {dim}, keepdim={keepdim})", NUMERIC),
    reduction("amax", "torch.amax({0}, dim={dim}, keepdim={keepdim})", NUMERIC, edges=ORDER),
    reduction("amin", "torch.amin({0}, dim={dim}, keepdim={keepdim})", NUMERIC, edges=ORDER),
    reduction("all", "torch.all({0}, dim={dim}, keepdim={keepdim})", ALL),
    reduction("any", "torch.any({0}, dim={dim}, keepdim={keepdim})", ALL),
    reduction("argmax", "torch.argmax({0}, dim={dim}, keepdim={keepdim})", NUMERIC, edges=ORDER),
    reduction("argmin", "torch.argmin({0}, dim={dim}, keepdim={keepdim})", NUMERIC, edges=ORDER),
    # var, std and norms where values tie: a slice of equal values has zero spread, zero norm (the
    # derivative of sqrt at 0)
    reduction("var", "torch.var({0}, dim={dim}, correction={correction})", p=params(dim=dim, correction=CORRECTION), edges=TIES),
    reduction(
        "std",
        "torch.std({0}, dim={dim}, correction={correction}, keepdim={keepdim})",
        p=params(dim=dim, correction=CORRECTION, keepdim=KEEPDIM),
        edges=TIES,
    ),
    reduction("logsumexp", "torch.logsumexp({0}, dim={dim}, keepdim={keepdim})", edges=Edges(saturates=(100.0, -100.0, 1e4))),
    reduction("cumsum", "torch.cumsum({0}, dim={dim})", NUMERIC, p=params(dim=dim)),
    reduction("softmax", "torch.softmax({0}, dim={dim})", p=params(dim=dim), yields=Domain.PROB, edges=LOGITS),
    reduction("log_softmax", "torch.log_softmax({0}, dim={dim})", p=params(dim=dim), edges=LOGITS),
    reduction(
        "vector_norm",
        "torch.linalg.vector_norm({0}, ord={ord}, dim={dim})",
        FLOATS,
        p=params(dim=dim, ord=const(st.sampled_from([2, 1, float("inf")]))),
        edges=TIES,
    ),
    reduction("tensor_mean", "{0}.mean()", p=no_params),
    reduction("tensor_sum", "{0}.sum({dim})", NUMERIC, p=params(dim=dim)),
    # ops returning tuples (some elements are left unused: dead code by construction)
    reduction("max_dim", "torch.max({0}, {dim}, keepdim={keepdim})", NUMERIC, family="tuple", torch_op="torch.max", edges=ORDER),
    reduction("min_dim", "torch.min({0}, {dim})", NUMERIC, p=params(dim=dim), family="tuple", torch_op="torch.min", edges=ORDER),
    reduction("max_all", "torch.max({0})", NUMERIC, p=no_params, torch_op="torch.max", edges=ORDER),
    reduction(
        "sort",
        "torch.sort({0}, dim={dim}, descending={desc})",
        NUMERIC,
        p=params(dim=dim, desc=KEEPDIM),
        family="tuple",
        edges=ORDER,
    ),
    reduction(
        "argsort", "torch.argsort({0}, dim={dim}, descending={desc})", NUMERIC, p=params(dim=dim, desc=KEEPDIM), edges=ORDER
    ),
    reduction("topk", "torch.topk({0}, {k}, dim={dim}, largest={largest})", NUMERIC, p=topk_args, family="tuple", edges=ORDER),
    reduction(
        "var_mean",
        "torch.var_mean({0}, dim={dim}, correction={correction})",
        p=params(dim=dim, correction=CORRECTION),
        family="tuple",
        edges=TIES,
    ),
    reduction("std_mean", "torch.std_mean({0}, dim={dim})", p=params(dim=dim), family="tuple", edges=TIES),
    reduction("aminmax", "torch.aminmax({0}, dim={dim})", NUMERIC, p=params(dim=dim), family="tuple", edges=ORDER),
    reduction("frexp", "torch.frexp({0})", FLOATS, p=no_params, family="tuple"),
    # order statistics: special where values tie (which index a tie's gradient goes to)
    reduction(
        "median_dim", "torch.median({0}, {dim}, keepdim={keepdim})", NUMERIC, family="tuple", torch_op="torch.median", edges=ORDER
    ),
    reduction("median_all", "torch.median({0})", NUMERIC, p=no_params, torch_op="torch.median", edges=ORDER),
    reduction("mode", "torch.mode({0}, {dim})", NUMERIC, p=params(dim=dim), family="tuple", edges=ORDER),
    reduction(
        "kthvalue",
        "torch.kthvalue({0}, {k}, {dim})",
        NUMERIC,
        p=lambda x: topk_args(x).map(lambda d: {"k": max(d["k"], 1), "dim": d["dim"]}),
        family="tuple",
        edges=ORDER,
    ),
    # shape and view ops
    shape_op("reshape", "torch.reshape({0}, {shape})", params(shape=reshape_target)),
    shape_op("view", "{0}.view({shape})", params(shape=reshape_target)),
    shape_op(
        "reshape_number",
        "{0}.reshape({1}, -1)",
        operands=(Operand(), Operand(dtypes=NUMBER, relation=divides_numel)),
        torch_op="torch.Tensor.reshape",
    ),
    shape_op("permute", "torch.permute({0}, {dims})", params(dims=permutation)),
    shape_op("transpose", "torch.transpose({0}, {d0}, {d1})", lambda x: two_dims(x).map(lambda t: {"d0": t[0], "d1": t[1]})),
    shape_op("swapaxes", "torch.swapaxes({0}, {d0}, {d1})", lambda x: two_dims(x).map(lambda t: {"d0": t[0], "d1": t[1]})),
    shape_op("t", "torch.t({0})"),
    shape_op("expand", "{0}.expand({shape})", params(shape=expand_target)),
    shape_op(
        "expand_as", "{0}.expand_as({1})", operands=(Operand(), Operand(ALL, lambda first, c: broadcasts_to_first(c, first)))
    ),
    shape_op("broadcast_to", "torch.broadcast_to({0}, {shape})", params(shape=expand_target)),
    shape_op("squeeze", "torch.squeeze({0})"),
    shape_op("squeeze_dim", "torch.squeeze({0}, {dim})", params(dim=dim), torch_op="torch.squeeze"),
    shape_op("unsqueeze", "torch.unsqueeze({0}, {dim})", params(dim=new_dim)),
    shape_op("flatten", "torch.flatten({0}, {start})", params(start=dim)),
    shape_op("unflatten", "torch.unflatten({0}, {dim}, {sizes})", unflatten_args),
    shape_op("movedim", "torch.movedim({0}, {src}, {dst})", params(src=dim, dst=dim)),
    shape_op("narrow", "torch.narrow({0}, {dim}, {start}, {length})", narrow_args),
    shape_op("diagonal", "torch.diagonal({0}, {offset})", params(offset=const(st.sampled_from([0, 1, -1])))),
    shape_op(
        "select",
        "torch.select({0}, {dim}, {index})",
        lambda x: nonempty_dim(x).flatmap(
            lambda d: one_of_range(0, max(x.shape[d] - 1, 0) if x.ndim else 0).map(lambda i: {"dim": d, "index": i})
        ),
    ),
    shape_op(
        "unfold",
        "{0}.unfold({dim}, {size}, {step})",
        params(dim=dim, size=const(st.integers(1, 2)), step=const(st.integers(1, 2))),
    ),
    shape_op("ravel", "torch.ravel({0})"),
    shape_op("atleast_2d", "torch.atleast_2d({0})"),
    shape_op("contiguous", "{0}.contiguous()", view=False),
    shape_op("flip", "torch.flip({0}, ({dim},))", params(dim=dim), view=False),
    shape_op("roll", "torch.roll({0}, {shift}, {dim})", params(shift=const(st.integers(-3, 3)), dim=dim), view=False),
    shape_op(
        "repeat",
        "{0}.repeat({reps})",
        lambda x: st.tuples(*(one_of_range(1, 2) for _ in range(x.ndim))).map(lambda r: {"reps": (2,) + r}),
        view=False,
    ),
    shape_op("tile", "torch.tile({0}, ({n},))", params(n=const(st.integers(1, 3))), view=False),
    shape_op(
        "repeat_interleave",
        "torch.repeat_interleave({0}, {n}, dim={dim})",
        params(n=const(st.integers(1, 3)), dim=dim),
        view=False,
    ),
    shape_op("tril", "torch.tril({0}, {k})", params(k=const(st.integers(-1, 1))), view=False),
    shape_op("triu", "torch.triu({0}, {k})", params(k=const(st.integers(-1, 1))), view=False),
    shape_op(
        "pad",
        "torch.nn.functional.pad({0}, ({lo}, {hi}), value={v})",
        params(lo=const(st.integers(0, 2)), hi=const(st.integers(-1, 2)), v=const(small_floats())),
        dtypes=ALL_FLOATS,
        view=False,
        yields=Domain.REAL,
    ),
    # indexing: basic (ints, slices, None, ...) and advanced (int tensors), gather/scatter family
    shape_op("getitem", "{0}[{index}]", params(index=basic_index), torch_op="torch.Tensor.__getitem__"),
    shape_op("getitem_tensor", "{0}[{index}]", params(index=advanced_index), torch_op="torch.Tensor.__getitem__", view=False),
    # Boolean-mask indexing is left out: its result's shape depends on the data.
    shape_op("index_select", "torch.index_select({0}, {dim}, {index})", index_list_for, view=False),
    shape_op("gather", "torch.gather({0}, {dim}, {index})", gather_args, view=False),
    shape_op("take_along_dim", "torch.take_along_dim({0}, {index}, {dim})", gather_args, view=False),
    OpSpec(
        "index_add",
        "index",
        "torch.index_add({0}, {dim}, {index}, torch.ones_like({0}).index_select({dim}, {index}))",
        ALL_FLOATS,
        operands=INDEXABLE,
        params=index_list_for,
    ),
    OpSpec(
        "index_copy",
        "index",
        "torch.index_copy({0}, {dim}, {index}, {0}.index_select({dim}, {index}) * 2)",
        ALL_FLOATS,
        operands=INDEXABLE,
        params=distinct_index_for,
    ),
    OpSpec(
        "scatter_add",
        "index",
        "torch.scatter_add({0}, {dim}, {index}, torch.ones_like({index}, dtype={0}.dtype))",
        ALL_FLOATS,
        operands=INDEXABLE,
        params=gather_args,
    ),
    OpSpec(
        "scatter",
        "index",
        "torch.scatter({0}, {dim}, {index}, {v})",
        ALL_FLOATS,
        operands=INDEXABLE,
        params=lambda x: gather_args(x).map(lambda d: {**d, "v": 1.5}),
    ),
    OpSpec(
        "index_put",
        "index",
        "torch.index_put({0}, ({index},), torch.tensor({v}, dtype={0}.dtype))",
        ALL_FLOATS,
        operands=INDEXABLE,
        params=lambda x: index_list_for(x).map(lambda d: {"index": d["index"], "v": 2.0}),
    ),
    # joining and splitting
    OpSpec("cat", "join", "torch.cat([{0}, {1}], dim={dim})", ALL, (Operand(), Operand(ALL, same_shape)), params=params(dim=dim)),
    OpSpec(
        "stack",
        "join",
        "torch.stack([{0}, {1}], dim={dim})",
        ALL,
        (Operand(), Operand(ALL, same_shape)),
        params=params(dim=new_dim),
    ),
    OpSpec("hstack", "join", "torch.hstack([{0}, {1}])", ALL, (Operand(), Operand(ALL, same_shape))),
    OpSpec("split", "join", "torch.split({0}, {size}, dim={dim})", ALL, params=split_args, view=True, yields=SAME),
    OpSpec(
        "chunk",
        "join",
        "torch.chunk({0}, {n}, dim={dim})",
        ALL,
        params=params(n=const(st.integers(1, 3)), dim=dim),
        view=True,
        yields=SAME,
    ),
    OpSpec(
        "tensor_split",
        "join",
        "torch.tensor_split({0}, {n}, dim={dim})",
        ALL,
        params=params(n=const(st.integers(1, 3)), dim=dim),
        view=True,
        yields=SAME,
    ),
    OpSpec("unbind", "join", "torch.unbind({0}, dim={dim})", ALL, params=params(dim=dim), view=True, yields=SAME),
    # matmul family
    OpSpec("matmul", "matmul", "torch.matmul({0}, {1})", ALL_FLOATS, (Operand(), Operand(same_dtype=True, relation=matmul_fits))),
    OpSpec(
        "matmul_nt",
        "matmul",
        "{0} @ {1}.mT",
        ALL_FLOATS,
        (Operand(), Operand(same_dtype=True, relation=last_dims_match)),
        torch_op="",
    ),
    OpSpec(
        "mm",
        "matmul",
        "torch.mm({0}, {1}.mT)",
        ALL_FLOATS,
        (Operand(), Operand(same_dtype=True, relation=lambda a, b: a.ndim == b.ndim == 2 and last_dims_match(a, b))),
    ),
    OpSpec(
        "bmm",
        "matmul",
        "torch.bmm({0}, {1}.mT)",
        ALL_FLOATS,
        (
            Operand(),
            Operand(
                same_dtype=True,
                relation=lambda a, b: a.ndim == b.ndim == 3 and a.shape[0] == b.shape[0] and last_dims_match(a, b),
            ),
        ),
    ),
    OpSpec(
        "mv",
        "matmul",
        "torch.mv({0}, {1})",
        ALL_FLOATS,
        (Operand(), Operand(same_dtype=True, relation=lambda a, b: a.ndim == 2 and b.shape == a.shape[1:])),
    ),
    OpSpec("outer", "matmul", "torch.outer({0}.flatten(), {1}.flatten())", ALL_FLOATS, (Operand(), Operand())),
    OpSpec(
        "einsum",
        "matmul",
        "torch.einsum('...i,...i->...', {0}, {1})",
        ALL_FLOATS,
        (
            Operand(),
            Operand(
                same_dtype=True,
                relation=lambda a, b: (
                    last_dims_match(a, b) and broadcastable(Meta(a.shape[:-1], a.dtype), Meta(b.shape[:-1], b.dtype))
                ),
            ),
        ),
    ),
    OpSpec(
        "addmm",
        "matmul",
        "torch.addmm({0}, {1}, {2}.mT, beta={beta})",
        ALL_FLOATS,
        (
            Operand(),
            Operand(same_dtype=True, relation=lambda a, b: b.ndim == 2),
            Operand(same_dtype=True, relation=lambda a, c: c.ndim == 2),
        ),
        params=params(beta=const(st.sampled_from([1.0, 0.5]))),
    ),
    OpSpec(
        "baddbmm",
        "matmul",
        "torch.baddbmm({0}, {1}, {2}.mT)",
        FLOATS,
        (
            Operand(),
            Operand(same_dtype=True, relation=lambda a, b: b.ndim == 3),
            Operand(same_dtype=True, relation=lambda a, c: c.ndim == 3),
        ),
    ),
    # type conversions
    OpSpec("to_dtype", "convert", "{0}.to({dtype})", ALL, params=params(dtype=DT), torch_op="torch.Tensor.to"),
    OpSpec("type_as", "convert", "{0}.type_as({1})", ALL, (Operand(), Operand(ALL))),
    OpSpec("long", "convert", "{0}.long()", ALL),
    OpSpec("double", "convert", "{0}.double()", ALL),
    OpSpec("bool", "convert", "{0}.bool()", ALL),
    OpSpec("half", "convert", "{0}.half()", ALL),
    OpSpec("bfloat16", "convert", "{0}.bfloat16()", ALL),
    OpSpec("int", "convert", "{0}.int()", ALL),
    # factories, from live values' shapes or from Python ints in the program
    OpSpec("zeros_like", "factory", "torch.zeros_like({0})", ALL),
    OpSpec("ones_like", "factory", "torch.ones_like({0}, dtype={dtype})", ALL, params=params(dtype=DT), yields=Domain.POSITIVE),
    OpSpec("full_like", "factory", "torch.full_like({0}, {v})", ALL_FLOATS, params=params(v=const(small_floats()))),
    OpSpec(
        "empty_like_filled",
        "factory",
        "torch.empty_like({0}).fill_(0.5)",
        ALL_FLOATS,
        torch_op="torch.empty_like",
        yields=Domain.PROB,
    ),
    OpSpec("zeros", "factory", "torch.zeros({0}, dtype={dtype})", NUMBER, params=params(dtype=DT)),
    OpSpec("ones", "factory", "torch.ones(({0}, 2))", NUMBER, yields=Domain.POSITIVE),
    OpSpec("full", "factory", "torch.full(({0},), {v})", NUMBER, params=params(v=const(small_floats()))),
    OpSpec("arange", "factory", "torch.arange({0})", NUMBER),
    OpSpec("arange_float", "factory", "torch.arange(0, {0}, 0.5, dtype=torch.float32)", NUMBER, torch_op="torch.arange"),
    OpSpec("tensor", "factory", "torch.tensor({v})", NUMBER, params=lambda n: st.just({"v": 1.5}), yields=Domain.POSITIVE),
    OpSpec("new_zeros", "factory", "{0}.new_zeros(({1}, 1))", ALL, (Operand(), Operand(NUMBER))),
    OpSpec("new_full", "factory", "{0}.new_full((2,), {v})", NUMERIC, params=params(v=const(st.sampled_from([1, 3])))),
    # in-place ops, only on values the program computed (never an input or a view of one)
    OpSpec("add_", "inplace", "{0}.add_({1})", ALL_FLOATS, (WRITE, Operand(relation=broadcasts_to_first))),
    OpSpec("mul_", "inplace", "{0}.mul_({s})", NUMERIC, (WRITE,), params=params(s=const(st.sampled_from([2, -1])))),
    OpSpec(
        "sub_",
        "inplace",
        "{0}.sub_({1}, alpha={a})",
        ALL_FLOATS,
        (WRITE, Operand(relation=broadcasts_to_first)),
        params=params(a=const(small_floats())),
    ),
    OpSpec("div_", "inplace", "{0}.div_({s})", ALL_FLOATS, (WRITE,), params=params(s=const(st.sampled_from([2.0, -4.0])))),
    OpSpec(
        "clamp_",
        "inplace",
        "{0}.clamp_({lo}, {hi})",
        NUMERIC,
        (WRITE,),
        params=params(lo=const(st.sampled_from([-1, 0])), hi=const(st.sampled_from([1, 2]))),
    ),
    OpSpec("zero_", "inplace", "{0}.zero_()", ALL, (WRITE,)),
    OpSpec("relu_", "inplace", "torch.relu_({0})", ALL_FLOATS, (WRITE,)),
    OpSpec("exp_", "inplace", "{0}.exp_()", ALL_FLOATS, (WRITE,)),
    OpSpec(
        "copy_",
        "inplace",
        "{0}.copy_({1})",
        ALL_FLOATS,
        (WRITE, Operand(ALL, broadcasts_to_first)),
        torch_op="torch.Tensor.copy_",
    ),
    OpSpec(
        "masked_fill_",
        "inplace",
        "{0}.masked_fill_({1}, {v})",
        ALL_FLOATS,
        (WRITE, Operand(BOOL, broadcasts_to_first)),
        params=params(v=const(small_floats())),
    ),
    OpSpec(
        "index_fill_setitem",
        "inplace",
        "{0}[{index}] = {v}; {out} = {0}",
        ALL_FLOATS,
        (WRITE,),
        params=lambda x: basic_index(x).map(lambda i: {"index": i, "v": 1.5}),
        torch_op="torch.Tensor.__setitem__",
    ),
    OpSpec(
        "setitem_tensor",
        "inplace",
        "{0}[{index}] = {1}; {out} = {0}",
        ALL_FLOATS,
        (WRITE, Operand(relation=lambda a, b: b.ndim == 0)),
        params=lambda x, v: basic_index(x).map(lambda i: {"index": i}),
        torch_op="torch.Tensor.__setitem__",
    ),
    # arithmetic on shapes: Python ints computed from tensors and flowing into later ops
    OpSpec("shape_i", "number", "{0}.shape[{dim}]", ALL, params=params(dim=dim), torch_op=""),
    OpSpec("size_i", "number", "{0}.size({dim})", ALL, params=params(dim=dim), torch_op=""),
    OpSpec("size", "number", "{0}.size()", ALL, torch_op=""),
    OpSpec("numel", "number", "{0}.numel()", ALL, torch_op="torch.numel"),
    OpSpec("number_mul", "number", "{0} * {1}", NUMBER, (Operand(), Operand(NUMBER)), torch_op=""),
    OpSpec("number_add", "number", "{0} + {1} + 1", NUMBER, (Operand(), Operand(NUMBER)), torch_op=""),
)
