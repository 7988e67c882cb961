"""The shapes of training code: losses built from reductions over a program's values, and
reductions broadcast back into elementwise ops (normalisation, centring, scaling by a norm), with
operands of mixed ranks, a 0-d tensor against an n-d one included. A backward runs through all of
it on every grad path.
"""

from __future__ import annotations

import hypothesis.strategies as st

from fuzzdce.strategies.spec import (
    ALL_FLOATS,
    FLOATS,
    ORDER,
    TIES,
    Meta,
    Operand,
    OpSpec,
    broadcastable,
    dim,
    params,
)


def zero_d(first: Meta, candidate: Meta) -> bool:
    """A 0-d tensor, against the first operand of any rank."""
    return candidate.ndim == 0


def lower_rank(first: Meta, candidate: Meta) -> bool:
    """A tensor of lower rank than the first operand that broadcasts with it (a bias, a scale)."""
    return candidate.ndim < first.ndim and broadcastable(first, candidate)


ONE = (Operand(),)


def training(name: str, template: str, operands=ONE, dtypes=ALL_FLOATS, p=None, **kw) -> OpSpec:
    return OpSpec(name, "training", template, dtypes, operands, params=p or (lambda *metas: st.just({})), torch_op="", **kw)


OPS: tuple[OpSpec, ...] = (
    # losses: reductions over the program's values, a 0-d result
    training("loss_mse", "(({0} - {1}) ** 2).mean()", (Operand(), Operand(relation=broadcastable))),
    training("loss_l1_sum", "({0} - {1}).abs().sum()", (Operand(), Operand(relation=broadcastable)), edges=TIES),
    training("loss_of_norms", "torch.linalg.vector_norm({0}) + {1}.pow(2).mean()", (Operand(), Operand()), FLOATS),
    training("loss_weighted", "({0} * {1}).sum() / {1}.abs().sum().clamp_min(1)", (Operand(), Operand(relation=broadcastable))),
    training(
        "loss_logsumexp", "(torch.logsumexp({0}, dim={dim}) - {0}.select({dim}, 0)).mean()", p=params(dim=dim), dtypes=FLOATS
    ),
    # reductions broadcast back into elementwise ops
    training(
        "standardise",
        "({0} - {0}.mean(dim={dim}, keepdim=True)) / ({0}.std(dim={dim}, keepdim=True) + 1e-5)",
        p=params(dim=dim),
        dtypes=FLOATS,
        edges=TIES,
    ),
    training("centre_by_max", "{0} - {0}.amax(dim={dim}, keepdim=True)", p=params(dim=dim), edges=ORDER),
    training(
        "scale_by_norm",
        "{0} / torch.linalg.vector_norm({0}, dim={dim}, keepdim=True).clamp_min(1e-6)",
        p=params(dim=dim),
        dtypes=FLOATS,
    ),
    training("scale_by_loss", "{0} * {1}.mean()", (Operand(), Operand())),
    # mixed ranks: a 0-d tensor, a lower-rank one, against the first operand
    training("mul_0d", "{0} * {1}", (Operand(), Operand(relation=zero_d))),
    training("add_0d_sum", "{0} + {1}.sum()", (Operand(), Operand(relation=zero_d))),
    training("affine_lower_rank", "{0} * {1} + {1}", (Operand(), Operand(relation=lower_rank))),
)
