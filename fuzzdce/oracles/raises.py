"""Exceptions agree: Thunder must not raise where eager did not.

Compared call by call: where eager's call with the same label raised too (say, an in-place op on
a leaf that requires grad), that call is invalid, not a finding. A grad call whose outputs require
grad otherwise than eager's is judged by ``grads`` alone once it reaches the backward. An exception outside any call
(building the compiled function) is one whenever eager ran the program.
"""

from __future__ import annotations

from fuzzdce.core.faults import exception_fault
from fuzzdce.core.model import CallLabel, CallStage, ErrorInfo, Judges, Oracle, Outcome, ScriptCheck, Violation

RAISES = "raises"


def check(outcome: Outcome, reference: Outcome, stock: Outcome | None = None) -> list[Violation]:
    if reference.error is not None:
        return []
    return [raised(outcome.path, error, where) for where, error in unexpected_errors(outcome, reference)]


def unexpected_errors(outcome: Outcome, reference: Outcome) -> list[tuple[str, ErrorInfo]]:
    """What ``outcome`` raised where ``reference`` (eager) did not, as (where, error): each call whose
    reference call succeeded, in order, then an exception outside any call. A reproducer counts
    Thunder raising by the same rule."""
    found = []
    for label, call in outcome.calls.items():
        expected = reference.calls.get(label)
        if call.error is None or expected is None or expected.error is not None:
            continue
        if call.stage == CallStage.BACKWARD and call.output_requires_grad != expected.output_requires_grad:
            # Thunder backpropagated through outputs that do not require grad in eager, which
            # eager never differentiates: the flags are the fault (``grads`` files it), and a
            # backward that then fails is no call eager made.
            continue
        where = f"{label} call, {call.stage}" if label != CallLabel.PLAIN else call.stage
        found.append((f" ({where})", call.error))
    if outcome.error is not None and not any(c.error is outcome.error for c in outcome.calls.values()):
        found.append(("", outcome.error))
    return found


def raised(path: str, e: ErrorInfo, where: str = "") -> Violation:
    """One exception as a violation; which call raised it is in the message, not in its fault
    (``faults.exception_fault``: its kind, Thunder frame and the symbol it names)."""
    fault, site = exception_fault(e)
    return Violation(
        RAISES,
        path,
        f"{e.type}{where}: {e.message or without_message(e)}",
        e.type,
        e.frame,
        key=f"{e.type}: {e.message}",
        fault=fault,
        site=site,
    )


def without_message(e: ErrorInfo) -> str:
    """What a report says of an exception raised without a message (a bare ``assert`` in Thunder):
    where it was raised, the one thing that tells two of them apart."""
    return f"(no message) raised in {e.frame}" if e.frame else "(no message)"


ORACLE = Oracle(
    RAISES,
    check,
    "Thunder raises no exception where eager did not",
    "Thunder does not raise",
    judges=Judges.EXCEPTION,
    script_check=ScriptCheck.RAISES,
    minify_priority=0,
)
