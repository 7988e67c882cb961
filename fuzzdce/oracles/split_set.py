"""The set of thunderfx splits, where and why, under a placement equals stock's on the same program.

A split that appears or disappears is a behaviour change of the placement even when no exception
caused it. Exception splits are left to the ``splits`` oracle, which reports each already: counting
them here too would double every such finding (and Hypothesis's shrinking work). Node names and counters are normalised away (``findings.normalise``), so identical
splits of differently numbered graphs compare equal. Silent for stock itself. Handed no baseline
for another placement (a reproducer script), it runs stock on the same path itself.
"""

from __future__ import annotations

from fuzzdce.execution import Outcome


def split_key(reason) -> str:
    """(why, where) of one split, with names, numbers and addresses abstracted."""
    from fuzzdce.findings import normalise

    why = getattr(reason.reason_type, "name", str(reason.reason_type))
    return f"{why}: {normalise(str(reason.info))} -- exception: {normalise(str(reason.exception))}"


def stock_outcome(outcome: Outcome) -> Outcome | None:
    """Stock Thunder's outcome on ``outcome``'s program and path; None for stock itself."""
    from fuzzdce.execution import run_path
    from fuzzdce.placements import PLACEMENTS

    if outcome.placement == "stock" or outcome.program is None or not outcome.path.startswith("thunderfx"):
        return None  # only thunderfx paths split
    return run_path(outcome.path, outcome.program, PLACEMENTS["stock"])


def check(outcome: Outcome, reference: Outcome, baseline: Outcome | None = None) -> list:
    from fuzzdce.oracles import Violation

    if baseline is None:
        baseline = stock_outcome(outcome)
    if baseline is None or reference.error is not None or outcome.skipped or baseline.skipped:
        return []
    from fuzzdce.oracles.splits import is_exception_split

    def keys(reasons) -> set[str]:
        return {split_key(r) for r in reasons if not is_exception_split(r)}

    mine, stock = keys(outcome.split_reasons), keys(baseline.split_reasons)
    violations = [Violation("split-set", outcome.path, f"split appears: {k}", "SplitAppears") for k in sorted(mine - stock)]
    violations += [Violation("split-set", outcome.path, f"split disappears: {k}", "SplitDisappears") for k in sorted(stock - mine)]
    return violations
