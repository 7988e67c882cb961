"""Which of Thunder's grad rules a path ran: Thunder's own code as the map of what a campaign tested.

"289 catalog entries drawn" says what was generated, not what was tested. Thunder's grad transform
asks one function for each bound symbol it differentiates, ``thunder.core.transforms.
_get_gradfn_and_executor`` (an executor's grad transform, or the rule registered for the symbol's id
in ``_grad_fn_map``), and falls back on the symbol's VJP rule (``augmented_forward_impls``) where it
has none; a symbol with neither is differentiated through its decomposition. While a path runs,
that function is observed: each symbol id for which a rule exists is recorded on the outcome
(``Outcome.grad_rules``), the rule returned as it was. Python 3.11 has no ``sys.monitoring``, and a
``settrace`` over Thunder's tracing costs more than the path; this costs one set insertion per
symbol differentiated, so it stays on. The rules there are (``grad_rule_ids``) are the registries'
keys: "grad rules reached: N of M" in the report (``summary.json``'s ``grad_rules``).
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterator, Mapping
from typing import Any

from fuzzdce.core.model import Outcome
from fuzzdce.running.placements import patch_everywhere
from fuzzdce.running.probes import in_shadow


def rule_name(sym_id: Any) -> str:
    """A symbol id as a rule's name: ``PrimIDs.COS`` -> ``prims.cos``; a string id (``torch.gelu``) as it is."""
    name = getattr(sym_id, "name", None)
    if name is not None and type(sym_id).__name__ == "PrimIDs":
        return f"prims.{name.lower()}"
    return str(sym_id)


@functools.cache
def grad_rule_ids() -> frozenset[str]:
    """Every grad rule this Thunder registers: the ids of ``_grad_fn_map`` and of the VJP rules."""
    from thunder.core import transforms

    return frozenset(rule_name(i) for i in (*transforms._grad_fn_map, *transforms.augmented_forward_impls))


AUTOMATIC = "automatic registration"  # a torch op Thunder has no symbol of its own for: torch's autograd is its rule


def namespace(rule: str) -> str:
    """Where a rule's op lives: ``prims``, ``torch``, ``Tensor``, ``nn.functional``, ``linalg``, ...
    (``torch.nn.functional.silu`` -> ``nn.functional``; ``Tensor.as_strided`` -> ``Tensor``)."""
    if "." not in rule:
        return rule
    head, rest = rule.split(".", 1)
    if head != "torch":
        return head
    if "." not in rest:
        return "torch"
    return "nn.functional" if rest.startswith("nn.functional.") else rest.split(".", 1)[0]


def automatically_registered() -> frozenset[str]:
    """The rules of the torch ops this Thunder registers automatically (``thunder.torch.
    default_torch_ops``), by name; empty where it registers none."""
    try:
        from thunder.torch import _torch_to_thunder_function_map  # noqa: PLC0415
        from thunder.torch.default_torch_ops import torch_auto_registered_ops  # noqa: PLC0415
    except ImportError:
        return frozenset()
    symbols = (_torch_to_thunder_function_map.get(f) for fs in torch_auto_registered_ops.values() for f in fs)
    return frozenset(rule_name(s.id) for s in symbols if s is not None)


def rule_families() -> dict[str, list[str]]:
    """Every grad rule this Thunder registers, by family: the namespace of its op, and whether the
    rule is Thunder's own or torch's behind the automatic registration (``torch (automatic
    registration)``). What the report counts reached and never reached per family."""
    automatic = automatically_registered()
    families: dict[str, list[str]] = {}
    for rule in sorted(grad_rule_ids()):
        family = namespace(rule) + (f" ({AUTOMATIC})" if rule in automatic else "")
        families.setdefault(family, []).append(rule)
    return families


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


@contextlib.contextmanager
def observed_grad_rules(outcome: Outcome) -> Iterator[None]:
    """While active, each symbol id Thunder's grad transform finds a rule for (its own, an
    executor's, or a VJP rule) is added to ``outcome.grad_rules``. fuzzdce's own failure to record
    is never Thunder's: the rule is returned as it was."""
    # Imported before patching: a module first imported inside the block (autodiff is, by the first
    # grad call) would bind the wrapper by name and keep it once the block has restored the original.
    import thunder.transforms.autodiff  # noqa: F401
    from thunder.core import transforms

    current = transforms._get_gradfn_and_executor
    reached: set[str] = set(outcome.grad_rules)

    def get_gradfn_and_executor(bsym, *args, **kwargs):
        result = current(bsym, *args, **kwargs)
        if in_shadow():  # another placement's call, probed beside stock's (``probes``): not this run's
            return result
        try:
            sym_id = bsym.sym.id
            if result[0] is not None or sym_id in transforms.augmented_forward_impls:
                reached.add(rule_name(sym_id))
        except Exception:  # noqa: S110 - a bound symbol we cannot read: not recorded, Thunder untouched
            pass
        return result

    try:
        with patch_everywhere(transforms, "_get_gradfn_and_executor", get_gradfn_and_executor):
            yield
    finally:
        outcome.grad_rules = sorted(reached)


def coverage_line(data: Mapping[str, Any] | None, limit: int = 12) -> str | None:
    """The report's line: ``grad rules reached: N of M (the most reached: rule programs, ...)``, or None."""
    if not data:
        return None
    reached: Mapping[str, int] = data.get("reached", {})
    most = ", ".join(f"{rule} {n}" for rule, n in sorted(reached.items(), key=lambda kv: (-kv[1], kv[0]))[:limit])
    return f"grad rules reached: {len(reached)} of {data.get('total', '?')}" + (f" ({most}, ...)" if most else "")


def family_lines(data: Mapping[str, Any] | None, shown: int = 8) -> list[str]:
    """Per family of rules (``rule_families``, stored with the campaign), the reached and the
    registered, and the first ``shown`` never reached: what is left for generation to reach."""
    if not data or not data.get("families"):
        return []
    reached = data.get("reached", {})
    lines = ["grad rules by family (reached of registered; never reached):"]
    for family, rules in sorted(data["families"].items(), key=lambda kv: -len(kv[1])):
        never = [rule for rule in rules if rule not in reached]
        listed = ", ".join(never[:shown]) + (f", ... ({len(never) - shown} more)" if len(never) > shown else "")
        lines.append(f"  {family}: {len(rules) - len(never)} of {len(rules)}" + (f"; never: {listed}" if never else ""))
    return lines
