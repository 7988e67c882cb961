"""How a placement's subsymbols differ from stock's: the diff behind DCE activity and ``dce-sound``.

A placement changes what Thunder records as each bound symbol's decomposition (its
``subsymbols``). Traces are matched across placements by label ("jit forward 3"); inside a pair of
traces, bound symbols are matched by their *head* (symbol name, arguments, outputs), which is the
same under every placement when compilation went the same way. For every matched pair, the two
lists of subsymbols are aligned in order (``difflib``): a stock subsymbol with no counterpart was
*removed* by the placement, a placement subsymbol with no counterpart was *added* (a kept one that
differs from stock's). Matched subsymbols are compared the same way, one level down.

Bound symbols whose heads match nothing on the other side (a trace that went another way after a
placement renamed its proxies) are not compared: such differences are not subsymbol DCE.
"""

from __future__ import annotations

import difflib
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from thunder.core import prims
from thunder.core.proxies import Proxy
from thunder.core.symbol import has_tags

# Tags of a subsymbol (or of anything in its decomposition) that Thunder must keep whatever its
# outputs: DONT_DCE (checks, ``copy_``, ``sink``, returns) and in-place ops.
KEEP_TAGS = {prims.OpTags.DONT_DCE, prims.OpTags.IN_PLACE}


def _atom(value: Any) -> str:
    if isinstance(value, Proxy):
        return value.name
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def head(bsym) -> str:
    """A bound symbol without its decomposition: ``t3 = add(t1, t2, alpha=None)``."""
    outs = ", ".join(_atom(o) for o in bsym.flat_outs)
    args = ", ".join(_atom(a) for a in bsym.flat_args)
    return f"{outs} = {bsym.sym.name}({args})"


@dataclass(frozen=True)
class Change:
    """One subsymbol present on one side only, in the decomposition of a bound symbol both share."""

    kind: str  # "removed" (stock has it, the placement not) or "added" (the placement only)
    depth: int  # the parent's depth: 0 for a top-level bound symbol of the trace
    parent: Any  # the placement's bound symbol whose subsymbols differ
    child: Any  # the subsymbol removed (stock's) or added (the placement's)
    kept: tuple  # the placement's subsymbols of ``parent``, in order
    # Names defined where ``parent`` runs without ``child``: outputs of the trace's earlier
    # top-level symbols and of the kept subsymbols at every level above and beside it. A removed
    # definition of such a name (a duplicate ``shape`` query under symbolic values) loses nothing.
    available: frozenset = frozenset()

    @property
    def symbol(self) -> str:
        return self.parent.sym.name


def _align(
    stock_children: Sequence, children: Sequence, depth: int, parent, out: list[Change], available: frozenset
) -> None:
    stock_heads = [head(b) for b in stock_children]
    heads = [head(b) for b in children]
    kept = tuple(children)
    available = available | _names(o for b in kept for o in b.flat_outs)
    matcher = difflib.SequenceMatcher(None, stock_heads, heads, autojunk=False)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            for s, p in zip(stock_children[i1:i2], children[j1:j2]):
                if s.subsymbols or p.subsymbols:
                    _align(s.subsymbols, p.subsymbols, depth + 1, p, out, available)
            continue
        out.extend(Change("removed", depth, parent, s, kept, available) for s in stock_children[i1:i2])
        out.extend(Change("added", depth, parent, p, kept, available) for p in children[j1:j2])


def trace_changes(stock_trace, trace) -> list[Change]:
    """Every subsymbol difference between two traces of the same label, top-level symbols matched by head."""
    by_head: dict[str, list] = {}
    for b in stock_trace.bound_symbols:
        by_head.setdefault(head(b), []).append(b)
    out: list[Change] = []
    defined: frozenset = frozenset()
    for b in trace.bound_symbols:
        candidates = by_head.get(head(b))
        if candidates:
            s = candidates.pop(0)
            if s.subsymbols or b.subsymbols:
                _align(s.subsymbols, b.subsymbols, 0, b, out, defined)
        defined = defined | _names(b.flat_outs)
    return out


def matched_traces(outcome, stock) -> Iterable[tuple[str, Any, Any]]:
    """(label, stock's trace, the placement's trace) for every label both have as trace objects."""
    if stock is None:
        return
    stock_traces = {label: t for label, t in stock.traces if hasattr(t, "bound_symbols")}
    for label, trace in outcome.traces:
        if label in stock_traces and hasattr(trace, "bound_symbols"):
            yield label, stock_traces[label], trace


def changes(outcome, stock) -> list[tuple[str, Change]]:
    """(label, change) for every subsymbol difference between ``outcome``'s traces and stock's."""
    return [(label, c) for label, s, t in matched_traces(outcome, stock) for c in trace_changes(s, t)]


# --- was a removed subsymbol dead? ------------------------------------------------------------------


def _names(proxies: Iterable) -> set[str]:
    return {p.name for p in proxies if isinstance(p, Proxy)}


def _used_by(bsyms: Iterable) -> set[str]:
    """Names every one of ``bsyms`` (and their decompositions) reads."""
    used: set[str] = set()
    for b in bsyms:
        used |= _names(b.flat_args)
        used |= _used_by(b.subsymbols)
    return used


def why_live(change: Change) -> list[tuple[str, str]]:
    """Why the removed subsymbol was not dead where it was removed, as (kind, explanation) pairs:
    kinds "parent output", "read by kept", and the tag names of ``KEEP_TAGS``. Empty: it was dead."""
    child, reasons = change.child, []
    outs = _names(child.flat_outs)
    parent_outs = (outs & _names(change.parent.flat_outs)) - change.available
    if parent_outs:
        reasons.append(("parent output", f"it produces {change.symbol}'s output {', '.join(sorted(parent_outs))}"))
    used = (outs & _used_by(change.kept)) - change.available
    if used:
        readers = [b.sym.name for b in change.kept if (_names(b.flat_args) | _used_by(b.subsymbols)) & used]
        reasons.append(("read by kept", f"kept {', '.join(dict.fromkeys(readers))} read(s) {', '.join(sorted(used))}"))
    for tag in sorted(KEEP_TAGS, key=lambda t: t.name):
        if has_tags(child, {tag}):
            reasons.append((tag.name, f"it is tagged {tag.name}"))
    return reasons


# --- DCE activity, as plain data --------------------------------------------------------------------


def activity(outcome, stock) -> dict[str, list[int]]:
    """``"symbol@depth" -> [removed, added]``: the placement's subsymbol changes against stock on one
    path. A change that later traces carry along (the same parent and child) counts once."""
    seen: set[tuple] = set()
    counts: dict[str, list[int]] = {}
    for _, c in changes(outcome, stock):
        key = (c.kind, c.depth, head(c.parent), head(c.child))
        if key in seen:
            continue
        seen.add(key)
        entry = counts.setdefault(f"{c.symbol}@{c.depth}", [0, 0])
        entry[0 if c.kind == "removed" else 1] += 1
    return counts


def merge_activity(per_path: Iterable[dict[str, list[int]]]) -> Counter:
    """Several paths' activity as one Counter of ``("symbol@depth", "removed"|"added") -> count``."""
    total: Counter = Counter()
    for counts in per_path:
        for key, (removed, added) in counts.items():
            total[(key, "removed")] += removed
            total[(key, "added")] += added
    return +total
