"""The set of thunderfx splits, where and why, under a placement equals stock's on the same program.

A split that appears or disappears is a behaviour change of the placement even when no exception
caused it. Node names and counters are normalised away (``findings.normalise``), so identical
splits of differently numbered graphs compare equal. Silent for stock itself (no baseline).
"""

from __future__ import annotations

from fuzzdce.execution import Outcome


def split_key(reason) -> str:
    """(why, where) of one split, with names, numbers and addresses abstracted."""
    from fuzzdce.findings import normalise

    why = getattr(reason.reason_type, "name", str(reason.reason_type))
    return f"{why}: {normalise(str(reason.info))} -- exception: {normalise(str(reason.exception))}"


def check(outcome: Outcome, reference: Outcome, baseline: Outcome | None = None) -> list:
    from fuzzdce.oracles import Violation

    if baseline is None or reference.error is not None or outcome.skipped or baseline.skipped:
        return []
    mine, stock = set(map(split_key, outcome.split_reasons)), set(map(split_key, baseline.split_reasons))
    violations = [Violation("split-set", outcome.path, f"split appears: {k}", "SplitAppears") for k in sorted(mine - stock)]
    violations += [Violation("split-set", outcome.path, f"split disappears: {k}", "SplitDisappears") for k in sorted(stock - mine)]
    return violations
