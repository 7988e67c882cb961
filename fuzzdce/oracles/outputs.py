"""Outputs agree with eager: exactly where the value is exact, within the output's own dtype's
tolerance or no farther from a float64 run than eager's where it is floating, NaN in the same places.

The rule (``compare``), shared by ``grads``, ``mutations`` and ``guards``:

- integer and bool tensors, Python numbers and strings: equal, exactly (and of the same type and dtype);
- a floating tensor NaN or inf where eager's is finite: a mismatch whatever the dtype
  (``not_finite_where_eager_is``), before any tolerance;
- a floating tensor: ``torch.testing.assert_close`` with the default tolerances of its own dtype
  (float16 rtol 1e-3, bfloat16 1.6e-2, float32 1.3e-6, float64 1e-7; atol 1e-5, 1e-7 for float64),
  NaN where eager has NaN; where that fails and eager also ran the program on its inputs upcast to
  float64 (``path_running.run_float64``), the result still agrees if each element it differs at is
  no farther from the float64 result than ``FLOAT64_MULTIPLIER`` times eager's own distance from it,
  plus the dtype's tolerance: ``|res - r64| <= 3 |eager - r64| + atol + rtol |r64|``. That is
  ``torch._dynamo.utils.same(ref, res, fp64_ref)``'s judgement, element by element: Thunder may
  round at other steps than eager (a float32 result computed through a float16 input), it may not
  be less accurate.
"""

from __future__ import annotations

import re
from typing import Any

import torch
from torch.testing._comparison import default_tolerances

from fuzzdce.core.faults import value_fault
from fuzzdce.core.model import CallLabel, Judges, Oracle, Outcome, ScriptCheck, Violation, has_deterministic_values

OUTPUTS = "outputs"

# How many times eager's distance from the float64 result a compiled result may be from it: the
# multiplier ``torch._dynamo.utils.same`` uses for small tensors (under 1,000 elements: all of ours).
FLOAT64_MULTIPLIER = 3.0


def compare(actual, expected, what: str = "output", float64: Any = None) -> str | None:
    """Why ``actual`` differs from ``expected`` (nested tensors and numbers), or None if they agree.

    ``float64``: the same value from eager's float64 run (nested alike), where there is one: a
    floating tensor beyond its dtype's tolerance still agrees when it is no farther from that than
    eager is (``closer_than_eager``).
    """
    if isinstance(expected, (list, tuple)):
        if not isinstance(actual, (list, tuple)) or len(actual) != len(expected):
            return f"{what}: expected a sequence of {len(expected)}, got {type(actual).__name__}"
        twins = float64 if isinstance(float64, (list, tuple)) and len(float64) == len(expected) else [None] * len(expected)
        for i, (a, e, r) in enumerate(zip(actual, expected, twins)):
            reason = compare(a, e, f"{what}[{i}]", r)
            if reason:
                return reason
        return None
    if isinstance(expected, str):  # a string input after the call: assert_close compares no strings
        return None if actual == expected else f"{what}: {actual!r}, expected {expected!r}"
    lost = not_finite_where_eager_is(actual, expected)
    if lost:
        return f"{what}: {lost}"
    # A Python number is exact (assert_close would give a float float64's tolerance); a tensor gets
    # its own dtype's defaults, which are exact for integers and bools.
    exact = dict(rtol=0.0, atol=0.0) if isinstance(expected, (bool, int, float)) else {}
    try:
        torch.testing.assert_close(actual, expected, equal_nan=True, **exact)
    except AssertionError as e:
        if closer_than_eager(actual, expected, float64):
            return None
        lines = [line.strip() for line in str(e).strip().splitlines() if line.strip()]
        beyond = "; and farther from the float64 result than eager" if float64 is not None else ""
        return f"{what}: " + "; ".join(lines[:3]) + beyond
    except Exception as e:  # mismatched types assert_close cannot even compare
        return f"{what}: {type(e).__name__}: {e}"
    return None


def not_finite_where_eager_is(actual, expected) -> str | None:
    """Why ``actual`` (a floating tensor) is wrong whatever its dtype: NaN or inf at elements where
    eager's ``expected`` is finite, or None. No tolerance and no float64 run excuses that: a
    saturating gradient (var_mean's NaN, an overflow in a rewritten formula) is a wrong value in
    bfloat16 as in float64. The first clause is its key (``mismatch_key``); counts follow."""
    if not (isinstance(actual, torch.Tensor) and isinstance(expected, torch.Tensor)):
        return None
    if not (actual.is_floating_point() and expected.is_floating_point()) or actual.shape != expected.shape:
        return None
    a, e = actual.detach().cpu(), expected.detach().cpu()
    lost = torch.isfinite(e) & ~torch.isfinite(a)
    if not bool(lost.any()):
        return None
    first = tuple(int(i) for i in lost.nonzero()[0])
    nan, inf = int((lost & torch.isnan(a)).sum()), int((lost & torch.isinf(a)).sum())
    return (
        f"not finite where eager's is finite; {nan} NaN and {inf} inf of {a.numel()} elements, "
        f"the first at index {first}: {a[first].item()} where eager's is {e[first].item()}"
    )


def closer_than_eager(actual, expected, float64) -> bool:
    """``actual`` (a floating tensor like eager's ``expected``) is, at every element, equal to eager's
    within its dtype's tolerance, or finite and within ``FLOAT64_MULTIPLIER`` times eager's distance
    from the float64 result ``float64`` plus that tolerance (eager's distance counting as 0 where
    eager is not finite: there only the tolerance is allowed)."""
    tensors = (actual, expected, float64)
    if not all(isinstance(t, torch.Tensor) for t in tensors) or float64.dtype != torch.float64:
        return False
    if not expected.is_floating_point() or actual.dtype != expected.dtype or not actual.shape == expected.shape == float64.shape:
        return False
    rtol, atol = default_tolerances(expected)
    a, e, r = (t.detach().to("cpu", torch.float64) for t in tensors)
    as_eager = torch.isclose(a, e, rtol=rtol, atol=atol, equal_nan=True)
    eager_error = torch.where(torch.isfinite(e), (e - r).abs(), torch.zeros((), dtype=torch.float64))
    allowed = FLOAT64_MULTIPLIER * eager_error + atol + rtol * r.abs()
    near_float64 = torch.isfinite(a) & torch.isfinite(r) & ((a - r).abs() <= allowed)
    return bool((as_eager | near_float64).all())


def mismatch_key(reason: str) -> str:
    """What differs, without where or by how much: ``compare``'s first clause, for scalars and
    tensors, exact and inexact dtypes alike. (The detail names the first differing index, as long as
    the value's rank, so with it one fault would be a finding per rank and kind of dtype drawn.)"""
    first = reason.split("; ", 1)[0]
    return re.sub(r"\b(Scalars|Tensor-likes) are not (close|equal)!", "values differ", first)


def float64_value(reference: Outcome, label: CallLabel, attribute: str) -> Any:
    """Eager's float64 twin of ``attribute`` of its call ``label``, or None where there is none."""
    twin = reference.float64_calls.get(label)
    return None if twin is None else getattr(twin, attribute)


def compare_calls(outcome: Outcome, reference: Outcome, oracle: str, attribute: str, what: str) -> list[Violation]:
    """One violation per call whose ``attribute`` differs from eager's call with the same label.

    Shared by the outputs, grads and mutations oracles; silent where either side has no value, and
    where eager's call ran a kernel torch says is not deterministic (``has_deterministic_values``).
    """
    if reference.error is not None:
        return []
    violations = []
    for label, call in outcome.calls.items():
        expected = reference.calls.get(label)
        if not has_deterministic_values(expected):
            continue
        actual_value = getattr(call, attribute)
        expected_value = getattr(expected, attribute, None) if expected is not None else None
        if actual_value is None or expected_value is None:
            continue
        prefix = what if label == CallLabel.PLAIN else f"{label} call {what}"
        reason = compare(actual_value, expected_value, prefix, float64_value(reference, label, attribute))
        if reason:
            violations.append(
                Violation(
                    oracle,
                    outcome.path,
                    reason,
                    "Mismatch",
                    key=mismatch_key(reason),
                    fault=value_fault(oracle, label, outcome.path),
                    call=label,
                )
            )
    return violations


def check(outcome: Outcome, reference: Outcome, stock: Outcome | None = None) -> list[Violation]:
    return compare_calls(outcome, reference, OUTPUTS, "outputs", "output")


ORACLE = Oracle(
    OUTPUTS,
    check,
    "outputs agree with eager (exact for integers, bools and numbers; floating: the dtype's default "
    "tolerance, or no farther than eager from a float64 run)",
    "the outputs agree with eager",
    judges=Judges.VALUE,
    script_check=ScriptCheck.OUTPUTS,
    minify_priority=3,
)
