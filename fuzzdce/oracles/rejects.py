"""A Thunder under test rejects what the reference Thunder rejects, where eager rejects it too.

A program (or one call of it: the grad call of an in-place op on a leaf that requires grad) that
eager rejects is no finding about its results, and no other oracle judges it. But where the
reference Thunder rejects the same call too, a Thunder under test that returns a result has lost a
check the reference makes: a DCE that removed a runtime check looks exactly like that. Compared
call by call with the reference's outcome on the same path (``stock``); silent for the reference
itself, and where eager or the reference accepted the call (Thunder raising where eager did not is
``raises``'s; Thunder accepting more than eager is no regression when the reference does too).
"""

from __future__ import annotations

from fuzzdce.core.faults import rejection_fault
from fuzzdce.core.model import Call, CallLabel, Oracle, Outcome, Violation
from fuzzdce.oracles.raises import without_message

NAME = "rejects"


def all_calls(outcome: Outcome) -> dict[CallLabel, Call]:
    return {**outcome.calls, **outcome.guard_calls}


def eager_rejects(reference: Outcome, label: CallLabel) -> bool:
    """Eager rejected the call ``label``: that call raised, or the whole program did (its plain call)."""
    call = all_calls(reference).get(label)
    return reference.error is not None or (call is not None and call.error is not None)


def check(outcome: Outcome, reference: Outcome, stock: Outcome | None = None) -> list[Violation]:
    if stock is None or outcome.failure is not None:
        return []
    theirs = all_calls(stock)
    violations = []
    for label, call in all_calls(outcome).items():
        rejected = theirs.get(label)
        if rejected is None or rejected.error is None or call.error is not None or call.outputs is None:
            continue
        if not eager_rejects(reference, label):
            continue
        e = rejected.error
        message = f"{label} call: returned a result where {stock.placement} raised {e.type}: {e.message or without_message(e)} (eager rejects it too)"
        violations.append(
            Violation(
                NAME,
                outcome.path,
                message,
                "AcceptedRejected",
                key=f"accepts what the reference rejects: {e.type}: {e.message}",
                fault=rejection_fault(NAME, e.type, e.message),
            )
        )
    return violations


ORACLE = Oracle(
    NAME,
    check,
    "a call that eager and stock both reject (raise on) is rejected under the placement too",
    "the call is rejected as under unpatched Thunder",
    needs_stock=True,
    judges_where_eager_rejects=True,
)
