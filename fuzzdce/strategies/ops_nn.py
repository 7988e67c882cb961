"""``torch.nn.functional``: normalization, linear and convolution, embedding, pooling, dropout
(p=0 or eval, so results are deterministic) and losses."""

from __future__ import annotations

import math

import hypothesis.strategies as st

from fuzzdce.core.program import Domain
from fuzzdce.strategies.spec import (
    ALL_FLOATS,
    FLOATS,
    INTS,
    LOGITS,
    ORDER,
    STRING,
    TIES,
    Meta,
    Operand,
    OpSpec,
    choose,
    const,
    conv_weight,
    dim,
    in_range_indices,
    linear_weight,
    no_params,
    normalized_shape_of,
    one_of_range,
    params,
    same_shape,
    source,
)

F = "torch.nn.functional"


ONE_OPERAND = (Operand(),)
# Logits far apart: softmax saturates to one-hot, log_softmax to -inf differences.


def nn(name: str, template: str, dtypes=ALL_FLOATS, operands=ONE_OPERAND, p=None, **kw) -> OpSpec:
    return OpSpec(name, kw.pop("family", "nn"), template, dtypes, operands, params=p or (no_params), **kw)


REDUCTIONS = ("mean", "sum", "none")  # what a loss's ``reduction`` takes


def loss(name: str, template: str, dtypes=FLOATS, second: Operand | None = None, p=None, **kw) -> OpSpec:
    """A loss of the first operand against a second of the same shape; reduction drawn."""
    reduction = params(reduction=const(st.sampled_from(list(REDUCTIONS))))
    return nn(name, template, dtypes, (Operand(), second or Operand(relation=same_shape)), p or reduction, family="loss", **kw)


def channels_groups(x: Meta) -> st.SearchStrategy[dict]:
    """A group count dividing the channel dim (dim 1) of a batched input."""
    c = x.shape[1] if x.ndim >= 2 else 1
    return choose([g for g in range(1, max(c, 1) + 1) if c % g == 0] or [1]).map(lambda g: {"groups": g})


def normalized_shape(x: Meta) -> st.SearchStrategy[dict]:
    return one_of_range(1, max(x.ndim, 1)).map(lambda k: {"shape": x.shape[-k:] if x.ndim else ()})


def class_targets(x: Meta) -> st.SearchStrategy[dict]:
    """Class indices for logits (N, C, ...) or (C,): one per sample, each in [0, C)."""
    if x.ndim == 0:
        return st.just({"target": source("torch.tensor(0)")})
    c = x.shape[1] if x.ndim >= 2 else x.shape[0]
    n = x.shape[0] if x.ndim >= 2 else None
    rest = x.shape[2:]
    count = (n or 1) * math.prod(rest)
    if c == 0:
        return st.just({"target": source("torch.zeros(1, dtype=torch.int64)")})
    shape = ((n,) if n is not None else ()) + tuple(rest)
    return st.lists(one_of_range(0, c - 1), min_size=count, max_size=count).map(
        lambda v: {"target": source(f"torch.tensor({v!r}).reshape({shape!r})")}
    )


def embedding_indices(w: Meta) -> st.SearchStrategy[dict]:
    return in_range_indices(w.shape[0] if w.ndim == 2 else 0).map(lambda t: {"indices": t})


def pool_args(x: Meta) -> st.SearchStrategy[dict]:
    return st.fixed_dictionaries({"k": st.integers(1, 2), "s": st.sampled_from([None, 1, 2])})


OPS: tuple[OpSpec, ...] = (
    nn(
        "softmax_f",
        f"{F}.softmax({{0}}, dim={{dim}})",
        p=params(dim=dim),
        torch_op=f"{F}.softmax",
        yields=Domain.PROB,
        edges=LOGITS,
    ),
    nn("log_softmax_f", f"{F}.log_softmax({{0}}, dim={{dim}})", p=params(dim=dim), torch_op=f"{F}.log_softmax", edges=LOGITS),
    nn("softmin", f"{F}.softmin({{0}}, dim={{dim}})", p=params(dim=dim), yields=Domain.PROB, edges=LOGITS),
    nn("layer_norm", f"{F}.layer_norm({{0}}, {{shape}})", p=normalized_shape, edges=TIES),
    nn(
        "layer_norm_affine",
        f"{F}.layer_norm({{0}}, {{1}}.shape, {{1}}, {{2}})",
        FLOATS,
        (
            Operand(),
            Operand(same_dtype=True, relation=normalized_shape_of),
            Operand(same_dtype=True, relation=normalized_shape_of),
        ),
        torch_op=f"{F}.layer_norm",
    ),
    nn("rms_norm", f"{F}.rms_norm({{0}}, {{shape}})", FLOATS, p=normalized_shape, edges=TIES),
    nn("group_norm", f"{F}.group_norm({{0}}, {{groups}})", FLOATS, p=channels_groups),
    nn(
        "batch_norm_eval",
        f"{F}.batch_norm({{0}}, torch.zeros({{0}}.shape[1]), torch.ones({{0}}.shape[1]), training=False)",
        ("float32",),
        torch_op=f"{F}.batch_norm",
    ),
    nn("instance_norm", f"{F}.instance_norm({{0}})", FLOATS),
    nn("local_response_norm", f"{F}.local_response_norm({{0}}, 2)", FLOATS),
    nn("normalize", f"{F}.normalize({{0}}, dim={{dim}})", p=params(dim=dim), edges=TIES),
    nn("linear", f"{F}.linear({{0}}, {{1}})", ALL_FLOATS, (Operand(), Operand(same_dtype=True, relation=linear_weight))),
    nn(
        "linear_bias",
        f"{F}.linear({{0}}, {{1}}, {{1}}[:, 0])",
        FLOATS,
        (Operand(), Operand(same_dtype=True, relation=linear_weight)),
        torch_op=f"{F}.linear",
    ),
    nn(
        "conv1d",
        f"{F}.conv1d({{0}}, {{1}}, stride={{stride}}, padding={{padding}})",
        FLOATS,
        (Operand(), Operand(same_dtype=True, relation=conv_weight)),
        p=params(stride=const(st.integers(1, 2)), padding=const(st.integers(0, 1))),
    ),
    nn(
        "conv2d",
        f"{F}.conv2d({{0}}, {{1}}, padding={{padding}})",
        FLOATS,
        (Operand(), Operand(same_dtype=True, relation=conv_weight)),
        p=params(padding=const(st.integers(0, 1))),
    ),
    nn("embedding", f"{F}.embedding({{indices}}, {{0}})", ALL_FLOATS, (Operand(),), p=embedding_indices),
    nn("one_hot", f"{F}.one_hot({{0}}.long().clamp(0, 2), 3)", INTS),
    nn("avg_pool1d", f"{F}.avg_pool1d({{0}}, {{k}}, {{s}})", FLOATS, p=pool_args),
    nn("avg_pool2d", f"{F}.avg_pool2d({{0}}, {{k}}, {{s}})", FLOATS, p=pool_args),
    nn("max_pool1d", f"{F}.max_pool1d({{0}}, {{k}}, {{s}})", FLOATS, p=pool_args, edges=ORDER),
    nn("max_pool2d", f"{F}.max_pool2d({{0}}, {{k}}, {{s}})", FLOATS, p=pool_args, edges=ORDER),
    nn("adaptive_avg_pool2d", f"{F}.adaptive_avg_pool2d({{0}}, {{size}})", FLOATS, p=params(size=const(st.sampled_from([1, 2])))),
    nn("interpolate", f"{F}.interpolate({{0}}, scale_factor=2.0, mode='nearest')", FLOATS),
    nn("dropout_p0", f"{F}.dropout({{0}}, p=0.0)", torch_op=f"{F}.dropout"),
    nn("dropout_eval", f"{F}.dropout({{0}}, p=0.5, training=False)", torch_op=f"{F}.dropout"),
    nn("glu", f"{F}.glu({{0}}, {{dim}})", FLOATS, p=params(dim=dim)),
    loss("mse_loss", f"{F}.mse_loss({{0}}, {{1}}, reduction={{reduction}})", ALL_FLOATS),
    # the reduction a string input of the program (so the result's shape follows a guarded input)
    nn(
        "mse_loss_reduction_input",
        f"{F}.mse_loss({{0}}, {{1}}, reduction={{2}})",
        ALL_FLOATS,
        (Operand(), Operand(relation=same_shape), Operand(dtypes=STRING, values=REDUCTIONS)),
        family="loss",
    ),
    loss("l1_loss", f"{F}.l1_loss({{0}}, {{1}}, reduction={{reduction}})", edges=TIES),
    loss("smooth_l1_loss", f"{F}.smooth_l1_loss({{0}}, {{1}}, reduction={{reduction}})", edges=TIES),
    loss(
        "bce_with_logits",
        f"{F}.binary_cross_entropy_with_logits({{0}}, {{1}}, reduction={{reduction}})",
        second=Operand(relation=same_shape, domain=Domain.PROB),
        torch_op=f"{F}.binary_cross_entropy_with_logits",
    ),
    loss("kl_div", f"{F}.kl_div({{0}}, {{1}}, reduction={{reduction}})", second=Operand(relation=same_shape, domain=Domain.PROB)),
    nn(
        "cross_entropy",
        f"{F}.cross_entropy({{0}}, {{target}}, label_smoothing={{ls}})",
        FLOATS,
        p=lambda x: class_targets(x).map(lambda d: {**d, "ls": 0.0}),
        family="loss",
    ),
    nn(
        "cross_entropy_smooth",
        f"{F}.cross_entropy({{0}}, {{target}}, label_smoothing=0.1, reduction='sum')",
        FLOATS,
        p=class_targets,
        family="loss",
        torch_op=f"{F}.cross_entropy",
    ),
    nn("nll_loss", f"{F}.nll_loss({{0}}, {{target}})", FLOATS, p=class_targets, family="loss"),
)
