"""What a trace states each tensor is, it is when it runs: shape, dtype, device, an input's requires_grad.

Thunder acts on its traces' statements: executors are chosen, fusions planned, the grad transform
built and buffers made from each proxy's metadata. A statement that differs from the tensor that
runs is a fault of the op that made it (its meta function, or a pass that rewrote the trace) even
where the values come out right. Thunder's own op tests compare the two at the last trace's outputs
(``thunder/tests/test_ops.py``); ``running.stated_metadata`` compares every tensor each top-level
bound symbol of the forward and backward execution traces defines, while the path runs, and
records the first that differs per run (``Outcome.misstated``). This oracle judges those records:
one violation per kind of trace and per misstatement, naming the op.

Its fault (``faults.metadata_fault``) is the kind of trace, the op, the code that stated it (the
meta function of a prim, where one did) and the attribute misstated: a wrong dtype stated for
``sum`` is one fault whatever the shapes or names of a program, and another than one stated for
``mean`` by the same meta function.
"""

from __future__ import annotations

from typing import NamedTuple

from fuzzdce.core.faults import metadata_fault
from fuzzdce.core.model import Oracle, Outcome, Violation

ORACLE_NAME = "metadata"


class Misstated(NamedTuple):
    """One tensor whose metadata at run time differs from what its trace states: the kind of trace
    (forward, backward), the op that defines it (a fusion region's subsymbol), its proxy's name, the
    attribute (shape, dtype, device, requires_grad, or type: no tensor at all), stated and actual."""

    trace: str
    op: str
    proxy: str
    attribute: str
    stated: str
    actual: str
    stated_by: str = ""  # the meta function of a prim that stated it (``faults.Misstatement``)


def check(outcome: Outcome, reference: Outcome, stock: Outcome | None = None) -> list[Violation]:
    violations, seen = [], set()
    for m in outcome.misstated:
        fault = metadata_fault(ORACLE_NAME, m.trace, m.op, m.attribute, m.stated_by)
        if fault in seen:  # the same misstatement on every call of the function
            continue
        seen.add(fault)
        message = (
            f"{m.trace} trace: {m.op} defines {m.proxy} with {m.attribute} {m.actual} when it runs; the trace states {m.stated}"
        )
        violations.append(
            Violation(
                ORACLE_NAME,
                outcome.path,
                message,
                "MisstatedMetadata",
                key=f"{m.op} misstates {m.attribute} in a {m.trace} trace",
                fault=fault,
                site=m.op,
            )
        )
    return violations


ORACLE = Oracle(
    ORACLE_NAME,
    check,
    "each tensor of the forward and backward execution traces has, when it runs, the shape, dtype, "
    "device and (an input) requires_grad its trace states",
    "each tensor has, when it runs, the metadata its trace states",
)
