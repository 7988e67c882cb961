"""Guards guard: a call that differs from the first in one property the prologue checks gives
eager's result.

Thunder reuses a compiled computation only when its prologue's checks pass (``check_len``,
``check_tensor_metadata``, ``check_number_type_and_value``, ...). Each guard call
(``CallLabel.is_guard``: another shape or rank, dtype, ``requires_grad``, layout, a number input's
value or type, a string input's value) is made on the same compiled function after the first call.
A recompile (a cache miss) or a clear Thunder error is what a guard should do; a wrong result, or
one with the first call's shape or dtype, means a cached computation ran on inputs it was not
built for. Checked where the first call was right (a computation wrong from the start is the
``outputs`` finding). Under symbolic values, shapes, numbers and strings hit the cache by design:
the result must be right all the same.

A guard call that raises where eager's call on the same inputs did not is judged too: an error
that says what Thunder does not support (``unsupported``: a ``NotImplementedError``, "not
supported") is a clear refusal, counted as activity (``path_running`` notes it beside the cache
line); any other (a ``KeyError`` or ``AssertionError`` while Thunder compiles again for a new
dtype) is a finding, identified by its exception as ``raises`` identifies one.
"""

from __future__ import annotations

import dataclasses
import re

from fuzzdce.core.faults import guard_fault
from fuzzdce.core.model import CallLabel, ErrorInfo, Oracle, Outcome, ScriptCheck, Violation, has_deterministic_values
from fuzzdce.oracles.outputs import compare, float64_value
from fuzzdce.oracles.raises import raised as raised_to_caller

# One finding per path, whichever property a program varied: which guard let the call through
# is in the message (a guard fault shows on every property it checks, each drawn by chance).
ORACLE_NAME = "guards"
KEY = "a call that must miss the cache gave another result than eager"

# How Thunder says what it does not support (``NotImplementedError("... is not supported")``,
# "unsupported dtype"): a refusal a user can read, not an internal error.
UNSUPPORTED = re.compile(r"not (yet )?(supported|implemented)|unsupported|does not support", re.IGNORECASE)


def unsupported(error: ErrorInfo) -> bool:
    """``error`` says what Thunder does not support (a clear refusal, no internal error)."""
    return error.type == "NotImplementedError" or bool(UNSUPPORTED.search(error.message))


def raised(outcome: Outcome, label: CallLabel, e: ErrorInfo) -> Violation:
    """A guard call's internal error as a violation, identified by its exception as ``raises``
    identifies one (``raises.raised``), the property varied in the message."""
    stage = outcome.guard_calls[label].stage
    as_raised = raised_to_caller(outcome.path, e, f" ({label} call, {stage})")
    return dataclasses.replace(as_raised, oracle=ORACLE_NAME, message=f"{label.property_varied} varied: {as_raised.message}")


def mismatch(call, expected, float64=None) -> str | None:
    """Why a guard call's result differs from eager's on the same inputs (None: it does not);
    ``float64``: eager's float64 twin of its outputs, where there is one."""
    what = "output"
    reason = compare(call.outputs, expected.outputs, what, float64)
    if reason is None and call.output_requires_grad != expected.output_requires_grad:
        reason = f"{what}: requires_grad of outputs is {call.output_requires_grad}, eager's {expected.output_requires_grad}"
    return reason


def first_call_right(outcome: Outcome, reference: Outcome) -> bool:
    """The plain call agreed with eager: only then does a wrong guard call tell of a guard (a
    computation already wrong on the first call is the ``outputs`` oracle's finding)."""
    call, expected = outcome.calls.get(CallLabel.PLAIN), reference.calls.get(CallLabel.PLAIN)
    if call is None or expected is None or call.error is not None or call.outputs is None:
        return False
    if not has_deterministic_values(expected):  # its values say nothing either way
        return False
    return compare(call.outputs, expected.outputs, float64=float64_value(reference, CallLabel.PLAIN, "outputs")) is None


def errors(outcome: Outcome, reference: Outcome) -> list[Violation]:
    """Each guard call that raised an internal error where eager's call on the same inputs did not."""
    found = []
    for label, call in outcome.guard_calls.items():
        expected = reference.guard_calls.get(label)
        if call.error is None or expected is None or expected.error is not None or unsupported(call.error):
            continue
        found.append(raised(outcome, label, call.error))
    return found


def check(outcome: Outcome, reference: Outcome, stock: Outcome | None = None) -> list[Violation]:
    if reference.error is not None or outcome.failure is not None:
        return []
    violations = errors(outcome, reference)
    if not first_call_right(outcome, reference):
        return violations
    for label, call in outcome.guard_calls.items():
        expected = reference.guard_calls.get(label)
        if expected is None or call.error is not None or expected.error is not None or call.outputs is None:
            continue  # an error is judged above
        if not has_deterministic_values(expected):
            continue
        reason = mismatch(call, expected, float64_value(reference, label, "outputs"))
        if reason:
            cache = {"hit": " (it hit the cache)", "miss": " (it compiled again)"}.get(call.cache, "")
            message = f"{label.property_varied} varied{cache}: {reason}"
            # Its fault: the property varied (a guard fault shows on every op reading it), and
            # whether a cached computation ran (a guard let it through) or a new one is wrong.
            violations.append(
                Violation(
                    ORACLE_NAME,
                    outcome.path,
                    message,
                    "GuardMismatch",
                    key=KEY,
                    fault=guard_fault(ORACLE_NAME, label.property_varied, call.cache),
                )
            )
    return violations


ORACLE = Oracle(
    ORACLE_NAME,
    check,
    "calls that vary a property the prologue checks (shape, rank, dtype, requires_grad, layout, a number, a string) agree with eager",
    "the calls varying what the prologue checks agree with eager",
    reads_guard_calls=True,
    script_check=ScriptCheck.GUARDS,
)
