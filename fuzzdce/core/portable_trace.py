"""A Thunder trace as plain data (``PortableTrace``): the form every subsymbol comparison reads.

Each bound symbol becomes a ``Node``: its symbol's name, its arguments and outputs as proxy names
(``Name``) or constants, the keep-tags found on it or in its decomposition, and its subsymbols,
one level down each. Plain data crosses processes and Thunder versions: traces made here and traces
another Thunder build sent back from its own process (``running.buildworker``) read alike.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

# Tags that make Thunder keep a subsymbol (or anything in its decomposition) whatever its
# outputs: DONT_DCE (checks, ``copy_``, ``sink``, returns) and in-place ops. Tag names, so that a
# portable trace from another build carries them as plain strings.
KEEP_TAGS = ("DONT_DCE", "IN_PLACE")


@dataclass(frozen=True)
class Name:
    """A proxy, by its name in the trace (everything else a bound symbol holds is a constant)."""

    name: str

    def __str__(self) -> str:
        return self.name


Atom = Name | str


@dataclass(frozen=True)
class Node:
    """One bound symbol as plain data: what the alignment and the liveness rule read."""

    sym: str
    args: tuple[Atom, ...]
    outs: tuple[Atom, ...]
    # The KEEP_TAGS found on this bound symbol or anywhere in its decomposition (Thunder's
    # ``has_tags`` reads them the same way).
    keep_tags: frozenset[str] = frozenset()
    subsymbols: tuple[Node, ...] = ()

    @property
    def head(self) -> str:
        """The bound symbol without its decomposition: ``t3 = add(t1, t2, None)``."""
        return f"{', '.join(map(str, self.outs))} = {self.sym}({', '.join(map(str, self.args))})"

    @property
    def arg_names(self) -> set[str]:
        return {a.name for a in self.args if isinstance(a, Name)}

    @property
    def out_names(self) -> set[str]:
        return {a.name for a in self.outs if isinstance(a, Name)}


@dataclass(frozen=True)
class PortableTrace:
    """A trace as plain data (picklable across processes and Thunder versions), with its text."""

    bound_symbols: tuple[Node, ...]
    text: str = field(default="", compare=False)

    def __str__(self) -> str:
        return self.text


def _atom(value: Any) -> Atom:
    from thunder.core.proxies import Proxy

    if isinstance(value, Proxy):
        return Name(value.name)
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _tag_names(bsym) -> set[str]:
    tags = set(getattr(bsym.sym, "tags", None) or ()) | set(getattr(bsym, "tags", None) or ())
    return {getattr(t, "name", str(t)) for t in tags} & set(KEEP_TAGS)


def portable_node(bsym) -> Node:
    """``bsym`` (a Thunder ``BoundSymbol``) and its decomposition as a ``Node``."""
    subsymbols = tuple(portable_node(s) for s in bsym.subsymbols)
    keep = frozenset(_tag_names(bsym).union(*(s.keep_tags for s in subsymbols)))
    return Node(
        bsym.sym.name,
        tuple(_atom(a) for a in bsym.flat_args),
        tuple(_atom(o) for o in bsym.flat_outs),
        keep,
        subsymbols,
    )


def portable_trace(trace, *, with_text: bool = True) -> PortableTrace:
    """A Thunder trace as a ``PortableTrace``; one already portable is returned as it is.

    ``with_text``: keep the printed trace too (for a findings folder). Printing costs more than the
    rest together (Thunder prints every subsymbol), so comparisons leave it out.
    """
    if isinstance(trace, PortableTrace):
        return trace
    return PortableTrace(tuple(portable_node(b) for b in trace.bound_symbols), printed(trace) if with_text else "")


def top_level_nodes(trace) -> tuple[Node, ...]:
    """A trace's top-level bound symbols as ``Node``s without their decompositions (what an
    execution trace runs), for a Thunder trace and a portable one alike."""
    if isinstance(trace, PortableTrace):
        return tuple(dataclasses.replace(n, subsymbols=()) for n in trace.bound_symbols)
    return tuple(
        Node(b.sym.name, tuple(_atom(a) for a in b.flat_args), tuple(_atom(o) for o in b.flat_outs), frozenset(), ())
        for b in trace.bound_symbols
    )


def printed(trace) -> str:
    """The trace as Thunder prints it (a portable one: as it printed), or, for a malformed trace
    that cannot print, a comment saying why (the names oracle says what is wrong with it)."""
    try:
        return str(trace)
    except Exception as e:
        return f"# str(trace) raised {type(e).__name__}: {e}\n"


def free_reads(node: Node) -> set[str]:
    """The names ``node`` reads from the scope it runs in: its arguments, and whatever its
    decomposition reads that no earlier subsymbol in it defined."""
    return node.arg_names | _free_reads_of(node.subsymbols, node.arg_names)


def _free_reads_of(nodes: Iterable[Node], visible: set[str]) -> set[str]:
    reads: set[str] = set()
    defined = set(visible)
    for n in nodes:
        reads |= free_reads(n) - defined
        defined |= n.out_names
    return reads
