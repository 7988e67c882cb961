"""DCE is sound: every subsymbol a placement removed was dead where it was removed, and nothing it
kept differs from stock's.

Read from traces only (``subsymbols.compare`` aligns the placement's traces with stock's on the
same path, modulo a consistent renaming of proxies, and leaves out traces that went another way).
A subsymbol present under stock but not under the placement was live, by Thunder's own scoping,
when a kept sibling after it reads one of its outputs freely (see ``liveness.why_live``), when
it produced its parent's output, or when it is tagged ``DONT_DCE`` or in-place (an executor that
runs the decomposition would lose the side effect). A subsymbol present under the placement but
not under stock, up to renaming, is a kept one that changed: DCE removes, it never edits (between
two Thunders, such a subsymbol is one the reference's DCE removed, or a sign that the two decompose
the symbol otherwise, which ``subsymbols`` leaves out: no finding; compared with the reference,
a build is judged on what it removed).
Outputs stay right under such a DCE as long as executors run the top-level symbols, which is why
no other oracle sees it.

Thunder also runs ``dce`` on traces no path records (the grad transform's, thunderfx's splitter's):
each call's kept decompositions against the trace it was given (``Outcome.dce_calls``, recorded by
``running.dce_calls``) are judged by the same rules, for stock too, so that triage sees what stock does.
"""

from __future__ import annotations

from fuzzdce.core.faults import dce_fault
from fuzzdce.core.liveness import why_live
from fuzzdce.core.model import Oracle, Outcome, Violation
from fuzzdce.core.subsymbols import changes, two_thunders

GIVEN = "the trace dce was given"  # what a dce call's kept decompositions are compared with


ORACLE_NAME = "dce-sound"
KEPT_CHANGED = "kept a subsymbol changed"
# What a DCE did wrong, by why the subsymbol it removed was live (``liveness.why_live``'s kinds).
_DROPPED = {
    "parent output": "dropped a subsymbol that produces its symbol's output",
    "read by kept": "dropped a subsymbol a kept subsymbol reads",
}


def what_went_wrong(change_kind: str, reason: str) -> str:
    """A DCE fault: what it removed (a subsymbol, or a kept one's outputs) and why that was live,
    the first of ``why_live``'s reasons; never which symbol it happened in (one defect of one DCE
    function shows under every symbol it meets)."""
    dropped = _DROPPED.get(reason, f"dropped a subsymbol tagged {reason}")
    return (
        dropped if change_kind == "removed" else f"pruned live outputs of a kept subsymbol ({dropped.removeprefix('dropped ')})"
    )


def check(outcome: Outcome, reference: Outcome, stock: Outcome | None = None) -> list[Violation]:
    if outcome.failure is not None:
        return []
    found = []
    if stock is not None:
        try:
            found = [(label, change, stock.placement) for label, change in changes(outcome, stock)]
        except Exception as e:  # a trace that cannot be walked is malformed: the names oracle says why
            outcome.could_not_check(ORACLE_NAME, "could not compare traces with the reference's", e)
    # Each dce call against the trace it was given, stock's too (so triage sees what stock does),
    # including calls no trace records; each call is complete even on a path that raised later
    # (the edited subsymbol may be why it raised).
    found += [(label, change, GIVEN) for label, change in outcome.dce_calls]
    violations, seen = [], set()
    across = stock is not None and two_thunders(outcome, stock)
    for label, change, compared_with in found:
        if change.kind == "added" and across and compared_with != GIVEN:
            continue
        child = change.child.sym
        if change.kind in ("removed", "pruned"):
            reasons = why_live(change)
            if not reasons:
                continue
            lost = (
                f"live outputs {', '.join(map(str, change.child.outs))} of {child}"
                if change.kind == "pruned"
                else "live subsymbol"
            )
            key = f"{change.symbol} lost {'outputs of ' if change.kind == 'pruned' else ''}{child}: {', '.join(kind for kind, _ in reasons)}"
            why = "; ".join(text for _, text in reasons)
            shown = "" if change.kind == "pruned" else f" {change.child.head}"
            message = f"{label}: {change.symbol} at depth {change.depth} lost {lost}{shown}: {why}"
            fault = dce_fault(ORACLE_NAME, what_went_wrong(change.kind, reasons[0][0]))
        else:
            key = f"{change.symbol} kept a changed {child}"
            message = f"{label}: {change.symbol} at depth {change.depth} has subsymbol {change.child.head}, which {compared_with} does not have"
            fault = dce_fault(ORACLE_NAME, KEPT_CHANGED)
        if fault in seen:  # the same fault echoed by later traces and other symbols of the program
            continue
        seen.add(fault)
        violations.append(
            Violation(ORACLE_NAME, outcome.path, f"{message} (in {change.parent.head})", "UnsoundDce", key=key, fault=fault)
        )
    return violations


ORACLE = Oracle(
    ORACLE_NAME,
    check,
    "every subsymbol the placement removed (against stock) was dead there, and nothing it kept changed",
    "no live subsymbol is lost",
    needs_stock=True,
)
