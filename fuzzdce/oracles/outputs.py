"""Outputs agree with eager: ``torch.testing.assert_close`` with tolerances by dtype, NaN in the same places."""

from __future__ import annotations

import torch

from fuzzdce.execution import Outcome

# Looser than assert_close's defaults for low precision: fused and decomposed arithmetic
# legitimately rounds differently from eager's kernels.
TOLERANCES = {
    torch.float16: dict(rtol=1e-2, atol=1e-2),
    torch.bfloat16: dict(rtol=5e-2, atol=5e-2),
    torch.float32: dict(rtol=1e-4, atol=1e-5),
    torch.float64: dict(rtol=1e-7, atol=1e-7),
}


def compare(actual, expected, what: str = "output") -> str | None:
    """Why ``actual`` differs from ``expected`` (nested tensors and numbers), or None if they agree."""
    if isinstance(expected, (list, tuple)):
        if not isinstance(actual, (list, tuple)) or len(actual) != len(expected):
            return f"{what}: expected a sequence of {len(expected)}, got {type(actual).__name__}"
        for i, (a, e) in enumerate(zip(actual, expected)):
            reason = compare(a, e, f"{what}[{i}]")
            if reason:
                return reason
        return None
    tolerances = TOLERANCES.get(getattr(expected, "dtype", None), {})
    try:
        torch.testing.assert_close(actual, expected, equal_nan=True, **tolerances)
    except AssertionError as e:
        lines = [line.strip() for line in str(e).strip().splitlines() if line.strip()]
        return f"{what}: " + "; ".join(lines[:3])
    except Exception as e:  # mismatched types assert_close cannot even compare
        return f"{what}: {type(e).__name__}: {e}"
    return None


def check(outcome: Outcome, reference: Outcome, baseline: Outcome | None = None) -> list:
    from fuzzdce.oracles import Violation

    if reference.error is not None or outcome.error is not None:
        return []
    reason = compare(outcome.outputs, reference.outputs)
    return [Violation("outputs", outcome.path, reason, "Mismatch")] if reason else []
