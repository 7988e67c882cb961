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
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from fuzzdce.core.grad_rule_names import grad_rule_ids, rule_name
from fuzzdce.core.model import Outcome
from fuzzdce.running.compile_sharing import in_shadow
from fuzzdce.running.patching import patch_everywhere
from fuzzdce.strategies.sources import SOURCES, source_of

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
        if in_shadow():  # another placement's call, probed beside stock's (``compile_sharing``): not this run's
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


def source_lines(data: Mapping[str, Any] | None, bug_ops: Iterable[Iterable[str]] = ()) -> list[str]:
    """Per source of the programs (``strategies.sources``: catalog programs, OpInfo programs, model
    blocks), its programs, the grad rules they reached (and of those, the ones no other source's
    programs reached) and its bugs, each bug counted under its smallest program's source (``bug_ops``:
    each bug's smallest program's ops). Empty where the campaign recorded no sources."""
    by_source = (data or {}).get("by_source") or {}
    if not by_source:
        return []
    bugs = Counter(source_of(ops) for ops in bug_ops)
    parts = []
    for source in sorted(by_source, key=lambda s: SOURCES.index(s) if s in SOURCES else len(SOURCES)):
        reached = set(by_source[source].get("reached", {}))
        others = set().union(*(set(part.get("reached", {})) for other, part in by_source.items() if other != source))
        programs, n_bugs = by_source[source].get("programs", 0), bugs.get(source, 0)
        parts.append(
            f"{source}: {programs} program{'s' * (programs != 1)}, {len(reached)} rule{'s' * (len(reached) != 1)} "
            f"({len(reached - others)} no other source reached), {n_bugs} bug{'s' * (n_bugs != 1)}"
        )
    return ["grad rules and bugs by source (a bug under its smallest program's): " + "; ".join(parts)]
