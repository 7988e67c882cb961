"""Thunder's grad rules by name: which rules this Thunder registers, and which one a torch call reaches.

Read-only lookups in Thunder's own registries (``thunder.core.transforms._grad_fn_map`` and its VJP
rules, ``augmented_forward_impls``; ``thunder.torch._torch_to_thunder_function_map``), shared by what
records the rules a path ran (``running.grad_rules``) and what draws the ops that reach them
(``strategies.opinfo``, ``fuzzing.steering``).
"""

from __future__ import annotations

import functools
from typing import Any


def rule_name(sym_id: Any) -> str:
    """A symbol id as a rule's name: ``PrimIDs.COS`` -> ``prims.cos``; a string id (``torch.gelu``) as it is."""
    name = getattr(sym_id, "name", None)
    if name is not None and type(sym_id).__name__ == "PrimIDs":
        return f"prims.{name.lower()}"
    return str(sym_id)


@functools.cache
def grad_rule_ids() -> frozenset[str]:
    """Every grad rule this Thunder registers: the ids of ``_grad_fn_map`` and of the VJP rules."""
    from thunder.core import transforms  # noqa: PLC0415

    return frozenset(rule_name(i) for i in (*transforms._grad_fn_map, *transforms.augmented_forward_impls))


def rule_of_call(dotted: str) -> str | None:
    """The grad rule Thunder has for the symbol it maps a torch callable to (``torch.Tensor.arcsin``
    -> ``torch.arcsin``), or None: a callable Thunder maps to no symbol, or to one it differentiates
    through its decomposition (whose prims' rules a program reaches instead)."""
    import operator  # noqa: PLC0415

    import torch  # noqa: PLC0415
    from thunder.torch import _torch_to_thunder_function_map  # noqa: PLC0415

    try:
        function = operator.getitem if dotted == "operator.getitem" else eval(dotted, {"torch": torch})  # noqa: S307 - a dotted torch name
        symbol = _torch_to_thunder_function_map.get(function)
    except Exception:  # a name this torch does not have, or an unhashable callable: no rule known
        return None
    sym_id = getattr(symbol, "id", None)  # a few map to a plain function: no symbol, no rule
    rule = rule_name(sym_id) if sym_id is not None else None
    return rule if rule in grad_rule_ids() else None
