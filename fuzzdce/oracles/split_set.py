"""The set of thunderfx splits, where and why, under a placement equals stock's on the same program.

A split that appears or disappears is a behaviour change of the placement even when no exception
caused it. Exception splits are left to the ``splits`` oracle, which reports each already: counting
them here too would double every such finding (and Hypothesis's shrinking work). Node names and
counters are normalised away, so identical splits of differently numbered graphs compare equal.
Silent for stock itself (handed no stock outcome) and on paths that split nothing.
"""

from __future__ import annotations

from fuzzdce.core.faults import split_change_fault
from fuzzdce.core.model import Oracle, Outcome, Violation
from fuzzdce.core.signatures import normalise
from fuzzdce.oracles.splits import is_exception_split


def split_key(reason) -> str:
    """(why, where) of one split, with names, numbers and addresses abstracted."""
    return f"{reason_name(reason)}: {normalise(str(reason.info))} -- exception: {normalise(str(reason.exception))}"


def reason_name(reason) -> str:
    return getattr(reason.reason_type, "name", str(reason.reason_type))


def check(outcome: Outcome, reference: Outcome, stock: Outcome | None = None) -> list[Violation]:
    if stock is None or reference.error is not None or outcome.skipped or stock.skipped:
        return []
    if outcome.failure is not None or stock.failure is not None:
        return []  # a path that never finished has no splits to compare

    def keyed(reasons) -> dict[str, object]:
        return {split_key(r): r for r in reasons if not is_exception_split(r)}

    mine, theirs = keyed(outcome.split_reasons), keyed(stock.split_reasons)
    changes = [("appears", "SplitAppears", k, mine[k]) for k in sorted(mine.keys() - theirs.keys())]
    changes += [("disappears", "SplitDisappears", k, theirs[k]) for k in sorted(theirs.keys() - mine.keys())]
    return [
        Violation(
            ORACLE_NAME,
            outcome.path,
            f"split {change}: {k}",
            error_type,
            fault=split_change_fault(ORACLE_NAME, change, reason_name(r), str(r.info), str(r.exception)),
        )
        for change, error_type, k, r in changes
    ]


ORACLE_NAME = "split-set"

ORACLE = Oracle(
    ORACLE_NAME,
    check,
    "thunderfx splits the same nodes for the same reasons as under stock",
    "thunderfx splits the graph as unpatched Thunder does",
    needs_stock=True,
)
