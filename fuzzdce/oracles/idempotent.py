"""DCE is idempotent: on a trace whose provenance says DCE produced it, DCE again removes nothing.

The judge is stock Thunder's ``transform_common.dce`` (oracles run after the placement's patches
are gone), run on a structural copy: Thunder's DCE edits kept bound symbols' subsymbols in place.
"""

from __future__ import annotations

from collections import Counter

from thunder.core.trace import from_trace
from thunder.core.transform_common import dce

from fuzzdce.core.errors import why_fuzzdces_own
from fuzzdce.core.faults import fixed_point_fault
from fuzzdce.core.model import Oracle, Outcome, Violation

DCE_PROVENANCE = "Dead Code Elimination"


def produced_by_dce(trace) -> bool:
    return DCE_PROVENANCE in str(trace.get_provenance() or "")


def structural_copy(bsym):
    """``bsym`` with every level of subsymbols copied, so edits to the copy leave the original alone."""
    return bsym.from_bsym(subsymbols=[structural_copy(s) for s in bsym.subsymbols])


def shape(bsyms, depth: int = 0, parent: str = "") -> list[tuple[str, str]]:
    """One (line, parent) per bound symbol at every level: what it is and what it defines, and the
    symbol whose subsymbols it is ("" at the top level)."""
    lines = []
    for bsym in bsyms:
        outs = ",".join(o.name for o in bsym.flat_proxy_outs)
        lines.append((f"{'  ' * depth}{outs} = {bsym.sym.name}", parent))
        lines += shape(bsym.subsymbols, depth + 1, bsym.sym.name)
    return lines


def copied(trace):
    """A structural copy of ``trace``: DCE may edit it without touching the original."""
    copy = from_trace(trace)
    copy.bound_symbols = [structural_copy(b) for b in trace.bound_symbols]
    return copy


def removed_by_dce_again(trace, copy=None) -> list[tuple[str, str]]:
    """(line, parent) of ``shape`` that a second DCE removes (empty when DCE is a fixed point here);
    ``copy``: the structural copy DCE runs on (made here when not given)."""
    copy = copied(trace) if copy is None else copy
    before, after = Counter(shape(trace.bound_symbols)), Counter(shape(dce(copy).bound_symbols))
    return sorted((before - after).elements())


def check(outcome: Outcome, reference: Outcome, stock: Outcome | None = None) -> list[Violation]:
    violations = []
    for label, trace in outcome.traces:
        if not produced_by_dce(trace):
            continue
        try:
            copy = copied(trace)
        except Exception as e:  # fuzzdce's own error is a harness error; a trace Thunder cannot copy is not checked
            if why_fuzzdces_own(e):
                raise
            outcome.could_not_check(ORACLE_NAME, "could not copy a trace to run DCE on", e)
            continue
        try:
            removed = removed_by_dce_again(trace, copy)
        except Exception as e:
            if why_fuzzdces_own(e):  # raised in fuzzdce's own helpers (``shape``): never "DCE is not a fixed point"
                raise
            # Thunder's DCE itself raised on a trace DCE produced: it cannot even walk it (the names oracle says why)
            removed = [(f"dce raised {type(e).__name__}: {e}", "")]
        if removed:
            listed = "; ".join(line.strip() for line, _ in removed[:3])
            message = f"{label}: DCE again removes {len(removed)} bound symbol(s): {listed}"
            # Which symbols a second DCE changes depends on the program (a DCE fault shows in every
            # symbol it touches); that it changes any is the finding. The first is its site.
            site = next((parent for _, parent in removed if parent), "")
            violations.append(
                Violation(
                    ORACLE_NAME,
                    outcome.path,
                    message,
                    "DceNotIdempotent",
                    key="DCE is not a fixed point",
                    site=site,
                    fault=fixed_point_fault(ORACLE_NAME),
                )
            )
    return violations


ORACLE_NAME = "idempotent"

ORACLE = Oracle(
    ORACLE_NAME,
    check,
    "DCE again removes nothing from a trace DCE produced",
    "DCE run again removes nothing",
    reads_traces=True,
)
