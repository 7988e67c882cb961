"""Outputs agree with eager: ``torch.testing.assert_close`` with tolerances by dtype, NaN in the same places."""

from __future__ import annotations

import re

import torch

from fuzzdce.core.faults import value_fault
from fuzzdce.core.findings import OUTPUTS
from fuzzdce.core.model import CallLabel, Oracle, Outcome, Violation

# Looser than assert_close's defaults for low precision: fused and decomposed arithmetic
# legitimately rounds differently from eager's kernels.
TOLERANCES = {
    torch.float16: dict(rtol=1e-2, atol=1e-2),
    torch.bfloat16: dict(rtol=5e-2, atol=5e-2),
    torch.float32: dict(rtol=1e-4, atol=1e-5),
    torch.float64: dict(rtol=1e-7, atol=1e-7),
}


def loosest(dtypes) -> torch.dtype | None:
    """The dtype with the loosest tolerance among ``dtypes`` (None if none has one)."""
    known = [d for d in dtypes if d in TOLERANCES]
    return max(known, key=lambda d: TOLERANCES[d]["rtol"], default=None)


def compare(actual, expected, what: str = "output", floor: torch.dtype | None = None) -> str | None:
    """Why ``actual`` differs from ``expected`` (nested tensors and numbers), or None if they agree.

    Tolerances are those of the expected value's dtype, or of ``floor`` when that is looser: a
    float32 result computed through a float16 input carries float16's rounding, and eager and
    Thunder may round at different steps.
    """
    if isinstance(expected, (list, tuple)):
        if not isinstance(actual, (list, tuple)) or len(actual) != len(expected):
            return f"{what}: expected a sequence of {len(expected)}, got {type(actual).__name__}"
        for i, (a, e) in enumerate(zip(actual, expected)):
            reason = compare(a, e, f"{what}[{i}]", floor)
            if reason:
                return reason
        return None
    if isinstance(expected, str):  # a string input after the call: assert_close compares no strings
        return None if actual == expected else f"{what}: {actual!r}, expected {expected!r}"
    dtype = loosest([getattr(expected, "dtype", None), floor])
    tolerances = TOLERANCES.get(dtype, {})
    try:
        torch.testing.assert_close(actual, expected, equal_nan=True, **tolerances)
    except AssertionError as e:
        lines = [line.strip() for line in str(e).strip().splitlines() if line.strip()]
        return f"{what}: " + "; ".join(lines[:3])
    except Exception as e:  # mismatched types assert_close cannot even compare
        return f"{what}: {type(e).__name__}: {e}"
    return None


def mismatch_key(reason: str) -> str:
    """What differs, without where or by how much: ``compare``'s first clause, for scalars and
    tensors, exact and inexact dtypes alike. (The detail names the first differing index, as long as
    the value's rank, so with it one fault would be a finding per rank and kind of dtype drawn.)"""
    first = reason.split("; ", 1)[0]
    return re.sub(r"\b(Scalars|Tensor-likes) are not (close|equal)!", "values differ", first)


def compare_calls(outcome: Outcome, reference: Outcome, oracle: str, attribute: str, what: str) -> list[Violation]:
    """One violation per call whose ``attribute`` differs from eager's call with the same label.

    Shared by the outputs, grads and mutations oracles; silent where either side has no value.
    """
    if reference.error is not None:
        return []
    violations = []
    for label, call in outcome.calls.items():
        expected = reference.calls.get(label)
        actual_value = getattr(call, attribute)
        expected_value = getattr(expected, attribute, None) if expected is not None else None
        if actual_value is None or expected_value is None:
            continue
        prefix = what if label == CallLabel.PLAIN else f"{label} call {what}"
        floor = loosest([t.dtype for t in expected.inputs_after or [] if isinstance(t, torch.Tensor)])
        reason = compare(actual_value, expected_value, prefix, floor)
        if reason:
            violations.append(
                Violation(
                    oracle,
                    outcome.path,
                    reason,
                    "Mismatch",
                    key=mismatch_key(reason),
                    fault=value_fault(oracle, label, None),
                    call=label,
                )
            )
    return violations


def check(outcome: Outcome, reference: Outcome, stock: Outcome | None = None) -> list[Violation]:
    return compare_calls(outcome, reference, OUTPUTS, "outputs", "output")


ORACLE = Oracle(OUTPUTS, check, "outputs agree with eager (torch.testing.assert_close, tolerances by dtype)")
