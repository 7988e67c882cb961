"""How a placement's subsymbols differ from stock's: traces aligned modulo renaming, and the
changes found (``Change``): the diff behind DCE activity (``dce_activity``) and ``dce-sound``
(``liveness``).

A placement changes what Thunder records as each bound symbol's decomposition (its
``subsymbols``). The comparison works on the plain-data copy of each trace (``portable_trace``), so
it reads Thunder trace objects made here and traces another Thunder build sent back alike.

Traces are matched across placements by label ("jit forward 3"). Inside a pair, bound symbols are
aligned *modulo a consistent renaming* of proxies: two placements may number their proxies
differently (a subgraph traced afresh, a decomposition recorded in another order), and a renamed
proxy is no edit. Alignment runs in passes: subsymbols whose heads (symbol, arguments, outputs) are
equal once known names are translated through the renaming found so far, and unknown names erased,
are paired when their names extend the renaming consistently; pairing a definition teaches the
renaming its outputs, which lets the next pass pair their readers. What stays unpaired is a
stock subsymbol the placement *removed*, or a placement subsymbol stock does not have (*added*: a
kept one that was edited). Paired subsymbols are compared the same way, one level down.

Traces that went different ways are not compared: thunderfx split the program differently, the
placement produced other traces, or a trace's top-level symbols do not align. Those differences
are not subsymbol DCE; the oracles that see their cause (``splits``, ``split-set``, ``names``)
report them, and ``not_compared`` says which traces were left out.

Between two Thunders (a build's outcome against this process's Thunder's or another build's:
``Outcome.build``), a symbol's subsymbols are compared only where both decompose it alike. DCE removes
subsymbols and prunes outputs; it never adds one. So a subsymbol the placement kept that the
reference lacks is either one the reference's DCE removed, which is dead where it stands (no kept
sibling after it reads its outputs, it makes none of its parent's, and no keep-tag), or evidence
that the two decompose the symbol otherwise: a *live* one is that evidence (``neg`` decomposed as
``mul(neg(a), 2)`` on a branch, as ``neg(a)`` on main), and the symbol's changes, at every depth
below it, are left out and counted in ``decomposition_differs`` instead. Behaviour is judged by the
behavioural oracles (``outputs``, ``grads``, ``mutations``, ``raises``, ``splits``). A patch placement
runs this process's Thunder, whose decompositions are its own by construction: there, any added
subsymbol is an edit.
"""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from fuzzdce.core.portable_trace import Atom, Name, Node, PortableTrace, free_reads, portable_trace


def _portable_for_comparison(outcome, trace) -> PortableTrace:
    """``trace``, one of ``outcome``'s, as a portable tree, converted once per trace object."""
    if isinstance(trace, PortableTrace):
        return trace
    hit = outcome.compared_traces.get(id(trace))
    if hit is not None and hit[0] is trace:  # the trace object is held there, so its id is its own
        return hit[1]
    converted = portable_trace(trace, with_text=False)
    outcome.compared_traces[id(trace)] = (trace, converted)
    return converted


# --- alignment modulo renaming ----------------------------------------------------------------------


class Renaming:
    """A one-to-one map between stock's proxy names and the placement's, learnt while aligning."""

    def __init__(self) -> None:
        self.forward: dict[str, str] = {}
        self.backward: dict[str, str] = {}

    @classmethod
    def fixed(cls, names) -> Renaming:
        """A renaming that maps each of ``names`` to itself: two decompositions of one trace read
        the same outer values by the same names, so a read of another one is an edit (``matmul(b,
        a)`` for ``matmul(a, b)``), not a renaming to learn."""
        renaming = cls()
        renaming.forward = {n: n for n in names}
        renaming.backward = dict(renaming.forward)
        return renaming

    def copy(self) -> Renaming:
        twin = Renaming()
        twin.forward, twin.backward = dict(self.forward), dict(self.backward)
        return twin

    def stock_key(self, node: Node) -> tuple:
        """``node``'s head with each name translated to the placement's, or erased if not known yet."""
        return _key(node, lambda n: self.forward.get(n))

    def placement_key(self, node: Node) -> tuple:
        return _key(node, lambda n: n if n in self.backward else None)

    def unify(self, stock: Node, placement: Node) -> bool:
        """Extend the renaming so that ``stock`` and ``placement`` are the same bound symbol up to
        names; False (and nothing learnt) when their names cannot correspond one to one.

        An output stock names and the placement does not is *pruned* (DCE replaces an unused
        output of a kept symbol by a placeholder, as Thunder's ``dce`` does): no edit, though its
        liveness is checked like a removed subsymbol's (``pruned_outputs``).
        """
        reads, definitions = [], []
        for kind, atoms in (("read", zip(stock.args, placement.args)), ("def", zip(stock.outs, placement.outs))):
            for s, p in atoms:
                if isinstance(s, Name) and isinstance(p, Name):
                    (reads if kind == "read" else definitions).append((s.name, p.name))
                elif isinstance(p, Name) or (not isinstance(s, Name) and s != p):
                    return False  # a name where stock has a constant, or another constant: an edit
        forward, backward = dict(self.forward), dict(self.backward)
        for s, p in reads:
            if forward.setdefault(s, p) != p or backward.setdefault(p, s) != s:
                return False
        # A definition binds its names anew: Thunder reuses a name for another value (``i0`` is the
        # first dimension of every tensor a decomposition queries), and the placement may have
        # named that value otherwise (``i5``); only reads must agree with the binding they see.
        for s, p in definitions:
            backward.pop(forward.get(s, p), None)
            forward.pop(backward.get(p, s), None)
            forward[s], backward[p] = p, s
        self.forward, self.backward = forward, backward
        return True


def pruned_outputs(stock: Node, placement: Node) -> tuple[Name, ...]:
    """Stock's output names that the placement's paired bound symbol replaced by a placeholder."""
    return tuple(s for s, p in zip(stock.outs, placement.outs) if isinstance(s, Name) and not isinstance(p, Name))


def _key(node: Node, translate) -> tuple:
    # Outputs enter by count only: a definition's output names are what pairing it teaches, and
    # an output pruned to a placeholder is DCE, not another symbol (``Renaming.unify`` checks them).
    def atom(a: Atom):
        if isinstance(a, Name):
            return ("name", translate(a.name))
        return ("const", a)

    return (node.sym, tuple(map(atom, node.args)), len(node.outs))


def align(stock_nodes: Sequence[Node], nodes: Sequence[Node], renaming: Renaming) -> list[tuple[int | None, int | None]]:
    """Pair ``stock_nodes`` with ``nodes`` in order, modulo ``renaming`` (which learns as it pairs).

    Returns (stock index, placement index) pairs in order; an unpaired one has None on the other side.
    """
    pairs: dict[int, int] = {}
    # Same names first: where a decomposition computes one value twice (``i29 = sub(i0, i28)``,
    # ``i30 = sub(i0, i28)``) and DCE kept one, the kept one is the one with its name.
    _align_pass(stock_nodes, nodes, renaming, pairs, exact=True)
    for _ in range(len(stock_nodes) + 1):  # each pass pairs more, or ends the loop
        before = len(pairs)
        _align_pass(stock_nodes, nodes, renaming, pairs)
        if len(pairs) == before:
            break
    return _in_order(pairs, len(stock_nodes), len(nodes))


def _exact_key(node: Node) -> tuple:
    return (node.sym, node.args, node.outs)


def _align_pass(stock_nodes, nodes, renaming: Renaming, pairs: dict[int, int], exact: bool = False) -> None:
    # The unpaired stretches between pairs found so far are aligned on their own, so that a pair
    # never crosses another (order is part of a decomposition).
    done_p = set(pairs.values())
    bounds = sorted(pairs.items())
    starts = [(-1, -1), *bounds]
    ends = [*bounds, (len(stock_nodes), len(nodes))]
    for (s0, p0), (s1, p1) in zip(starts, ends):
        stock_span = [i for i in range(s0 + 1, s1) if i not in pairs]
        span = [j for j in range(p0 + 1, p1) if j not in done_p]
        if not stock_span or not span:
            continue
        if exact:
            stock_keys = [_exact_key(stock_nodes[i]) for i in stock_span]
            keys = [_exact_key(nodes[j]) for j in span]
        else:
            stock_keys = [renaming.stock_key(stock_nodes[i]) for i in stock_span]
            keys = [renaming.placement_key(nodes[j]) for j in span]
        matcher = difflib.SequenceMatcher(None, stock_keys, keys, autojunk=False)
        for block in matcher.get_matching_blocks():
            for k in range(block.size):
                i, j = stock_span[block.a + k], span[block.b + k]
                if renaming.unify(stock_nodes[i], nodes[j]):
                    pairs[i] = j


def _in_order(pairs: dict[int, int], n_stock: int, n: int) -> list[tuple[int | None, int | None]]:
    out: list[tuple[int | None, int | None]] = []
    s = p = 0
    for i, j in sorted(pairs.items()):
        out += [(k, None) for k in range(s, i)] + [(None, k) for k in range(p, j)] + [(i, j)]
        s, p = i + 1, j + 1
    return out + [(k, None) for k in range(s, n_stock)] + [(None, k) for k in range(p, n)]


# --- the changes ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Change:
    """One subsymbol present on one side only, in the decomposition of a bound symbol both share."""

    # "removed" (stock has it, the placement not), "added" (the placement only), or "pruned" (both
    # have it; the placement replaced outputs of it by placeholders: ``child`` holds those outputs)
    kind: str
    depth: int  # the parent's depth: 0 for a top-level bound symbol of the trace
    parent: Node  # the placement's bound symbol whose subsymbols differ
    child: Node  # the subsymbol removed (stock's) or added (the placement's)
    kept: tuple[Node, ...]  # the placement's subsymbols of ``parent``, in order
    position: int  # where ``child`` stood among ``kept``: the kept subsymbols from here on follow it
    # Names a subsymbol of ``parent`` may read without defining them, in the placement's names:
    # the outputs of the trace's earlier top-level symbols and, at every level above, the
    # arguments of each enclosing bound symbol and the outputs of its earlier kept siblings.
    outer: frozenset = frozenset()
    # The stock-to-placement renaming the alignment found (``child``'s names are stock's when removed).
    renaming: tuple[tuple[str, str], ...] = ()

    @property
    def symbol(self) -> str:
        return self.parent.sym


@dataclass
class TraceComparison:
    """A placement's traces against stock's on one path: the changes, and what was not compared."""

    changes: list[tuple[str, Change]] = field(default_factory=list)
    # Why some traces were left out, e.g. "thunderfx graph 0 fn 0 forward 0: top-level symbols differ".
    not_compared: list[str] = field(default_factory=list)
    # Symbols two Thunders decompose otherwise (see the module docstring), each once: not compared.
    decomposition_differs: list[str] = field(default_factory=list)


def align_children(
    stock_children, children, depth, parent, outer, renaming, out: list[Change], differs: list[str] | None = None
) -> None:
    """The changes among ``parent``'s subsymbols, and below, into ``out``. ``differs``: None for one
    Thunder; between two, the list a symbol decomposed otherwise is named in (its changes left out)."""
    if differs is not None:
        level: list[Change] = []
        _align_level(stock_children, children, depth, parent, outer, renaming, level, differs)
        if any(c.kind == "added" and _live_where_kept(c) for c in level if c.depth == depth):
            if parent.sym not in differs:
                differs.append(parent.sym)
            return
        out += level
        return
    _align_level(stock_children, children, depth, parent, outer, renaming, out, None)


def _live_where_kept(change: Change) -> bool:
    """Is the added subsymbol ``change.child`` live among the placement's own subsymbols (read by a
    later kept sibling, an output of its parent, or tagged to be kept)? Then no DCE of the same
    decomposition could have removed it from the reference's. Any read counts, shadowed or not: in
    doubt the symbol is left out rather than judged."""
    outs = change.child.out_names
    later = change.kept[change.position + 1 :]
    return bool(outs & change.parent.out_names or any(free_reads(k) & outs for k in later) or change.child.keep_tags)


def _align_level(stock_children, children, depth, parent, outer, renaming, out: list[Change], differs) -> None:
    kept = tuple(children)
    scope = frozenset(outer) | parent.arg_names  # what the parent's subsymbols may read unbound
    visible = set(scope)
    position = 0  # placement subsymbols passed so far: a removed one stood before children[position:]
    for i, j in align(stock_children, children, renaming):
        if j is None:
            out.append(Change("removed", depth, parent, stock_children[i], kept, position, scope))
            continue
        p = children[j]
        if i is None:
            if not _repeats_stock(p, stock_children, renaming):
                out.append(Change("added", depth, parent, p, kept, j, frozenset(visible)))
        else:
            s = stock_children[i]
            pruned = pruned_outputs(s, p)
            if pruned:  # checked as a removal of those outputs alone, where the kept symbol stands
                out.append(Change("pruned", depth, parent, Node(s.sym, s.args, pruned), kept, j + 1, frozenset(visible)))
            if s.subsymbols or p.subsymbols:
                align_children(s.subsymbols, p.subsymbols, depth + 1, p, frozenset(visible), renaming, out, differs)
        visible |= p.out_names
        position = j + 1


def _repeats_stock(node: Node, stock_children, renaming: Renaming) -> bool:
    """``node`` is, up to renaming and pruned outputs, one of stock's subsymbols of the same parent,
    kept in another place or once more (a pure computation kept twice is no edit, and no unsound
    DCE: Thunder's own duplicate ``shape`` queries under symbolic values are the common case)."""
    key = renaming.placement_key(node)
    for s in stock_children:
        if renaming.stock_key(s) == key and renaming.copy().unify(s, node):
            return True
    return False


def compare_traces(stock_trace, trace, differs: list[str] | None = None) -> tuple[list[Change], str]:
    """Every subsymbol difference between two traces of one label; the reason, when not compared.
    ``differs``: when the traces are two Thunders', where symbols they decompose otherwise are named."""
    stock_nodes = _as_portable(stock_trace).bound_symbols
    nodes = _as_portable(trace).bound_symbols
    renaming = Renaming()
    paired = align(stock_nodes, nodes, renaming)
    if any(i is None or j is None for i, j in paired):
        return [], "top-level symbols differ"
    out: list[Change] = []
    defined: set[str] = set()
    for i, j in paired:
        s, p = stock_nodes[i], nodes[j]
        if s.subsymbols or p.subsymbols:
            align_children(s.subsymbols, p.subsymbols, 0, p, frozenset(defined), renaming, out, differs)
        defined |= p.out_names
    pairs = tuple(sorted(renaming.forward.items()))
    return [dataclasses.replace(c, renaming=pairs) for c in out], ""


def _as_portable(trace) -> PortableTrace:
    return trace if isinstance(trace, PortableTrace) else portable_trace(trace, with_text=False)


def _is_trace(t: Any) -> bool:
    return hasattr(t, "bound_symbols")


def two_thunders(outcome, stock) -> bool:
    """Are the two outcomes two Thunders'? (``Outcome.build``: the build that ran each, empty for
    this process's Thunder, which every patch placement patches.)"""
    return getattr(outcome, "build", "") != getattr(stock, "build", "")


def _split_kinds(outcome) -> list[str]:
    return [getattr(r.reason_type, "name", str(r.reason_type)) for r in outcome.split_reasons]


def compare(outcome, stock) -> TraceComparison:
    """``outcome``'s traces against stock's on the same path (nothing when stock is None), made once
    per pair and kept on ``outcome``."""
    if stock is None:
        return TraceComparison()
    made = outcome.comparison
    if made is not None and made[0] is stock and made[1] is outcome.traces and made[2] is stock.traces:
        return made[3]
    result = _compare(outcome, stock)
    outcome.comparison = (stock, outcome.traces, stock.traces, result)
    return result


def _compare(outcome, stock) -> TraceComparison:
    result = TraceComparison()
    if stock is None:
        return result
    if _split_kinds(outcome) != _split_kinds(stock):
        result.not_compared.append("thunderfx split the program otherwise")
        return result
    stock_traces = {label: t for label, t in stock.traces if _is_trace(t)}
    differs = result.decomposition_differs if two_thunders(outcome, stock) else None
    for label, trace in outcome.traces:
        if label not in stock_traces or not _is_trace(trace):
            continue  # a path that stopped early (it raised) has fewer traces: the others say why
        found, reason = compare_traces(
            _portable_for_comparison(stock, stock_traces[label]), _portable_for_comparison(outcome, trace), differs
        )
        if reason:
            result.not_compared.append(f"{label}: {reason}")
        result.changes += [(label, c) for c in found]
    return result


def changes(outcome, stock) -> list[tuple[str, Change]]:
    """(label, change) for every subsymbol difference between ``outcome``'s traces and stock's."""
    return compare(outcome, stock).changes
