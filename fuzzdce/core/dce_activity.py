"""DCE activity as plain data: what a placement did on a path against the reference, counted per
symbol and depth (subsymbols removed and added), and where it raised while the reference returned.
A placement that did none of it in a whole campaign was not exercised (``running.coverage``)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from fuzzdce.core.subsymbols import Change, changes


def activity_of(found: Iterable[tuple[str, Change]]) -> dict[tuple[str, int], list[int]]:
    """``(symbol, depth) -> [removed, added]``; a change that later traces carry along (the same
    parent and child) counts once."""
    seen: set[tuple] = set()
    counts: dict[tuple[str, int], list[int]] = {}
    for _, c in found:
        if c.kind == "pruned":  # a kept subsymbol: no subsymbol removed or added
            continue
        key = (c.kind, c.depth, c.parent.head, c.child.head)
        if key in seen:
            continue
        seen.add(key)
        entry = counts.setdefault((c.symbol, c.depth), [0, 0])
        entry[0 if c.kind == "removed" else 1] += 1
    return counts


def activity(outcome, stock) -> dict[tuple[str, int], list[int]]:
    """The placement's subsymbol changes against stock on one path (see ``activity_of``)."""
    return activity_of(changes(outcome, stock))


def raise_edits(outcome, reference) -> list[str]:
    """How a path's outcome differs from the reference's on the same path in what raised, as
    ``decisions.Edit`` kinds: "raise" where it raised (an exception, or one more graph split: a
    raise thunderfx's splitter caught) where the reference returns, "no raise" the reverse. A
    placement whose only edit is a raise (its DCE failing on a bound symbol) changes no subsymbol,
    yet is exercised: the raise is what it did."""
    mine, theirs = len(outcome.split_reasons), len(reference.split_reasons)
    raised = (outcome.error is not None and reference.error is None) or mine > theirs
    returned = (reference.error is not None and outcome.error is None) or theirs > mine
    return (["raise"] if raised else []) + (["no raise"] if returned else [])


def merge_activity(per_path: Iterable[dict[tuple[str, int], list[int]]]) -> Counter:
    """Several paths' activity as one Counter of ``((symbol, depth), "removed"|"added") -> count``."""
    total: Counter = Counter()
    for counts in per_path:
        for key, (removed, added) in counts.items():
            total[(key, "removed")] += removed
            total[(key, "added")] += added
    return +total
