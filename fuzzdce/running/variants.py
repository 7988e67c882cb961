"""The variants of a program a path calls besides the program itself: resized, and one per guard call.

A ``resized`` call runs the program on other input shapes consistent with it (``resized_program``);
a guard call varies one guarded property of the inputs (``guard_candidates``), which should miss
Thunder's cache, or hit it where the property is not guarded. Each variant counts only where eager
runs it.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from fuzzdce.core.model import CallLabel
from fuzzdce.core.program import NumberInput, StringInput, TensorInput, with_input, with_tensor_shapes
from fuzzdce.running.script_program import ScriptProgram


def resized_program(program) -> tuple[Any | None, str]:
    """``program`` on other input shapes consistent with it, or None and the reason there is none.

    Every size above 1 grows by the same amount (so equal sizes stay equal and distinct ones
    distinct, and broadcasting size-1 dimensions stay 1); a candidate counts only if eager runs it.
    """
    specs = getattr(program, "inputs", None)
    if not dataclasses.is_dataclass(program) or not isinstance(specs, tuple):
        return None, "the program gives no input shapes to change (a plain function, as in a reproducer)"
    sizes = sorted({d for spec in specs if isinstance(spec, TensorInput) for d in spec.shape if d > 1})
    if not sizes:
        return None, "every input dimension is 1 or absent: other shapes would change broadcasting"
    for grow in (1, 2, 3):
        candidate = with_tensor_shapes(program, lambda shape, grow=grow: tuple(d + grow if d > 1 else d for d in shape))
        if eager_accepts(candidate):
            return candidate, ""
    return None, "eager rejects the program on every resized shape tried"


def eager_accepts(program) -> bool:
    """Eager runs ``program`` on its inputs without raising."""
    try:
        program.function()(*program.make_inputs())
    except Exception:
        return False
    return True


# Another dtype for an input, as the guard call on dtype gives it (bool has none it is sure to take).
OTHER_DTYPE = {
    "float32": "float64",
    "float64": "float32",
    "float16": "float32",
    "bfloat16": "float32",
    "int64": "int32",
    "int32": "int64",
}


def _other_number(value, *, same_type: bool):
    """Another number: of ``value``'s type (``same_type``: the other bool, or one more), or else
    the nearest of another type (int -> float, float -> int, bool -> int)."""
    if same_type:
        return (not value) if isinstance(value, bool) else value + 1
    if isinstance(value, bool):
        return int(value)
    return float(value) if isinstance(value, int) else int(value)


def guard_candidates(program, label: CallLabel) -> list:
    """The variants of ``program`` a guard call of ``label`` may make, in order of preference:
    each differs from ``program`` in the property ``label`` names and nothing else."""
    if isinstance(program, ScriptProgram):  # a reproducer's program: the variants are in its file
        variant = program.guard_variant(label)
        return [] if variant is None else [variant]
    specs = getattr(program, "inputs", None)
    if not dataclasses.is_dataclass(program) or not isinstance(specs, tuple):
        return []
    tensors = [(i, s) for i, s in enumerate(specs) if isinstance(s, TensorInput) and s.view_of is None]
    numbers = [(i, s) for i, s in enumerate(specs) if isinstance(s, NumberInput)]
    strings = [(i, s) for i, s in enumerate(specs) if isinstance(s, StringInput)]
    if label == CallLabel.GUARD_SHAPE:
        resized, _ = resized_program(program)
        return [resized] if resized is not None else []
    if label == CallLabel.GUARD_RANK and tensors:
        return [with_tensor_shapes(program, lambda shape, lead=lead: (lead, *shape)) for lead in (2, 1)]
    if label == CallLabel.GUARD_DTYPE:
        return [with_input(program, i, dtype=OTHER_DTYPE[s.dtype]) for i, s in tensors[:1] if s.dtype in OTHER_DTYPE]
    if label == CallLabel.GUARD_REQUIRES_GRAD:
        return [program] if any(s.can_require_grad for _, s in tensors) else []
    if label == CallLabel.GUARD_STRIDES:
        for i, s in tensors:
            if len(s.shape) >= 2 and s.shape[-1] > 1 and s.shape[-2] > 1:
                return [with_input(program, i, transposed=not s.transposed)]
            if len(s.shape) >= 1 and s.shape[-1] > 1:
                return [with_input(program, i, strided=not s.strided)]
        return []
    if label in (CallLabel.GUARD_NUMBER_VALUE, CallLabel.GUARD_NUMBER_TYPE) and numbers:
        i, s = numbers[0]
        return [with_input(program, i, value=_other_number(s.value, same_type=label == CallLabel.GUARD_NUMBER_VALUE))]
    if label == CallLabel.GUARD_STRING_VALUE and strings:
        i, s = strings[0]  # its other choices, in order: the ops reading it accept each
        return [with_input(program, i, value=other) for other in s.choices if other != s.value]
    return []


# Guard calls cost a compile each (a miss is the point), so each program varies one guarded
# property: the one its seed picks among those it has (a seed shrinks towards 0, and so keeps its
# pick stable enough to shrink by). The report says how many programs varied each.
GUARDS_PER_PROGRAM = 1


def guard_labels(program) -> list[CallLabel]:
    """The guarded properties ``program`` varies (``GUARDS_PER_PROGRAM`` of those it has; all of
    them when that is None)."""
    present = [label for label in CallLabel if label.is_guard and guard_candidates(program, label)]
    if GUARDS_PER_PROGRAM is None or len(present) <= GUARDS_PER_PROGRAM or isinstance(program, ScriptProgram):
        return present
    start = getattr(program, "seed", 0) % len(present)
    return [present[(start + k) % len(present)] for k in range(GUARDS_PER_PROGRAM)]


def guard_program(program, label: CallLabel) -> tuple[Any | None, str]:
    """The program a guard call of ``label`` runs (the first candidate eager accepts), or None and why."""
    if label not in guard_labels(program):
        return None, f"no {label.property_varied} guard call: the program varies another property, or has none to vary"
    for candidate in guard_candidates(program, label):
        if eager_accepts(candidate):
            return candidate, ""
    return None, f"no {label.property_varied} guard call: eager rejects every variant tried"


def guard_variants(program) -> dict[CallLabel, Any]:
    """Each guard call ``program`` makes, by its label, with the program it runs (``guard_program``):
    what eager makes for reference, and what a reproducer writes as ``GUARD_INPUTS``."""
    variants = {label: guard_program(program, label)[0] for label in guard_labels(program)}
    return {label: variant for label, variant in variants.items() if variant is not None}
