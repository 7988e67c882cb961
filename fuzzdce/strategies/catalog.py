"""The op catalog: every entry of the ``ops_*`` modules, joined, and what Thunder makes of each."""

from __future__ import annotations

import itertools

import torch
from thunder.torch import _torch_to_thunder_function_map
from thunder.torch.default_torch_ops import torch_auto_registered_ops

from fuzzdce.strategies.ops_device import OPS as DEVICE
from fuzzdce.strategies.ops_elementwise import OPS as ELEMENTWISE
from fuzzdce.strategies.ops_indexing import OPS as INDEXING
from fuzzdce.strategies.ops_nn import OPS as NN
from fuzzdce.strategies.ops_structure import OPS as STRUCTURE
from fuzzdce.strategies.ops_training import OPS as TRAINING
from fuzzdce.strategies.spec import OpSpec

CATALOG: tuple[OpSpec, ...] = ELEMENTWISE + STRUCTURE + NN + INDEXING + TRAINING + DEVICE
BY_NAME: dict[str, OpSpec] = {spec.name: spec for spec in CATALOG}
assert len(BY_NAME) == len(CATALOG), "catalog names must be unique"


def resolve_torch_op(dotted: str):
    """The torch object a dotted path names (``torch.Tensor.add_`` -> the method)."""
    parts = dotted.split(".")
    obj = torch
    for part in parts[1:]:
        obj = getattr(obj, part)
    return obj


def thunder_support(spec: OpSpec) -> str:
    """How Thunder 0.2.6 handles ``spec``'s torch op: "native" (a Thunder symbol that decomposes),
    "fallback" (auto-registered: runs torch as an opaque symbol), "unmapped", or "python"."""
    if spec.torch_name is None:
        return "python"
    fn = resolve_torch_op(spec.torch_name)
    if fn not in _torch_to_thunder_function_map:
        return "unmapped"
    return "fallback" if fn in set(itertools.chain(*torch_auto_registered_ops.values())) else "native"
