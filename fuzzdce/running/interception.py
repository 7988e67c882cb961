"""Call interception: what a placement replaced in Thunder, and a call run as a shadow on a
snapshot of the trace being recorded, with what it produced.

- ``replaced_by``: enter a placement and find what it replaced (``Replaced``), by comparing the
  attributes of Thunder's modules and classes before and after (``thunder_namespaces``,
  ``attributes_of``).
- ``TraceState``: the trace being recorded, as a call may change it, taken before a call and
  restored after a shadow ran on it.
- ``produce``: one call on the trace being recorded, and what it did (``Produced``: its value or
  exception, the bound symbols it appended; as ``portable_trace.Node`` plain data, ``shape_of``, or as
  the objects themselves).
- ``outside_the_trace``: what fuzzdce reads of a proxy while Thunder traces, not recorded.

``decisions`` gates a placement's calls and finds its edits with these; ``compile_sharing`` shadows each
placement's calls beside stock's with them.
"""

from __future__ import annotations

import contextlib
import dataclasses
import inspect
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from fuzzdce.core.faults import without_annotations
from fuzzdce.core.portable_trace import Node, portable_node

# --- what a placement replaces ---------------------------------------------------------------------


@dataclass
class Replaced:
    """One object of Thunder's that a placement replaced, under every name it is known by there
    (``patch_everywhere`` replaces ``from x import f`` aliases too)."""

    label: str  # "thunder.core.symbol.Symbol.__call__": where it is defined
    function: str  # "Symbol.__call__": its name there
    original: Any
    replacement: Any
    owners: list[tuple[Any, str]] = field(default_factory=list)


def thunder_modules() -> list[tuple[str, Any]]:
    """(name, module) of every loaded Thunder module: where a placement's replacements, a probe's
    wrappers and Thunder's registries live."""
    return [
        (name, module)
        for name, module in list(sys.modules.items())
        if module is not None and (name == "thunder" or name.startswith("thunder."))
    ]


def thunder_namespaces() -> list[tuple[str, Any]]:
    """(qualified name, owner) of every loaded Thunder module and of each class defined in one."""
    owners = []
    for name, module in thunder_modules():
        owners.append((name, module))
        for attr, value in list(vars(module).items()):
            if inspect.isclass(value) and getattr(value, "__module__", None) == name:
                owners.append((f"{name}.{attr}", value))
    return owners


def attributes_of(owners) -> dict[tuple[int, str], tuple[str, Any, Any]]:
    """Every attribute of ``owners`` ((name, owner) pairs), keyed by (id of its owner, its name), as
    (owner's name, owner, value)."""
    return {(id(owner), attr): (name, owner, value) for name, owner in owners for attr, value in list(vars(owner).items())}


def replaced_by(enter: Callable[[], Any]) -> tuple[list[Replaced], contextlib.ExitStack]:
    """Enter ``enter()`` (a placement's context manager) and return what it replaced in Thunder's
    modules and classes, by original object, with the stack that exits it. Entered and left once
    before: a module it imports is then loaded before the attributes are compared (one imported on
    entering has no attribute before, and what the placement replaced there would go unseen)."""
    with enter():
        pass
    before = attributes_of(thunder_namespaces())
    stack = contextlib.ExitStack()
    stack.enter_context(enter())
    after = attributes_of(thunder_namespaces())
    found: dict[tuple[int, int], Replaced] = {}
    for key, (name, owner, value) in after.items():
        old = before.get(key)
        if old is None or old[2] is value:
            continue
        original = old[2]
        attr = key[1]
        replaced = found.get((id(original), id(value)))
        if replaced is None:
            defined = getattr(original, "__module__", None), getattr(original, "__qualname__", attr)
            label = f"{defined[0]}.{defined[1]}" if defined[0] else f"{name}.{attr}"
            replaced = found[(id(original), id(value))] = Replaced(label, defined[1], original, value)
        replaced.owners.append((owner, attr))
    return list(found.values()), stack


# --- what a call produced ------------------------------------------------------------------------


def shape_of(value: Any, bsyms: list | None = None, depth: int = 0) -> Any:
    """A value as comparable plain data: proxies by name, bound symbols and traces as ``Node`` trees,
    containers by their items, anything else by its type alone (an object's identity says nothing).
    ``bsyms`` collects the bound symbols met, in the order ``nodes_in`` lists their nodes."""
    from thunder.core.proxies import Proxy
    from thunder.core.symbol import BoundSymbol
    from thunder.core.trace import TraceCtx

    if depth > 6:
        return "..."
    if isinstance(value, Proxy):
        return f"<{value.name}>"
    if isinstance(value, TraceCtx):
        value = list(value.bound_symbols)
    if isinstance(value, BoundSymbol):
        if bsyms is not None:
            bsyms.append(value)
        return portable_node(value)
    if isinstance(value, list | tuple):
        return tuple(shape_of(v, bsyms, depth + 1) for v in value)
    if isinstance(value, dict):
        return tuple((repr(k), shape_of(v, bsyms, depth + 1)) for k, v in value.items())
    if value is None or isinstance(value, bool | int | float | str | complex):
        return repr(value)
    if dataclasses.is_dataclass(value):
        return (
            type(value).__name__,
            tuple(shape_of(getattr(value, f.name), bsyms, depth + 1) for f in dataclasses.fields(value)),
        )
    if isinstance(getattr(value, "name", None), str) and type(value).__module__.startswith("thunder"):
        return f"{type(value).__name__} {value.name}"  # a Symbol, an enum member
    return type(value).__name__


def nodes_in(shape: Any) -> list[Node]:
    if isinstance(shape, Node):
        return [shape]
    if isinstance(shape, tuple):
        return [n for item in shape for n in nodes_in(item)]
    return []


def printed_line(bsym) -> str:
    """A bound symbol's own line as Thunder prints it (``t1 = ltorch.add(t0, t1, alpha=1)``),
    without its decomposition and the annotation of its outputs."""
    try:
        return without_annotations(" ".join(line.strip() for line in bsym.python(indent=0, print_depth=1))).strip()
    except Exception:  # a bound symbol Thunder cannot print: its plain-data head stands in
        return portable_node(bsym).head


def lines_of(bsym, node: Node, lines: dict[int, str]) -> None:
    """``lines``: the printed line of each node of ``node``'s tree (made from ``bsym``), by id."""
    lines[id(node)] = printed_line(bsym)
    for sub_bsym, sub in zip(bsym.subsymbols, node.subsymbols):
        lines_of(sub_bsym, sub, lines)


@dataclass
class Produced:
    """What one call did: its value's shape or the exception it raised, the bound symbols it
    appended to the scope being recorded, and (``bsyms``) the bound symbol objects behind the
    nodes, in ``nodes``' order."""

    value: Any = None
    error: BaseException | None = None
    appended: tuple[Node, ...] = ()
    raw: Any = None
    bsyms: list = field(default_factory=list)

    @property
    def nodes(self) -> list[Node]:
        return [*self.appended, *nodes_in(self.value)]

    def lines(self) -> dict[int, str]:
        """Each node's printed line, by id (printing is dear: only an edit's are made)."""
        lines: dict[int, str] = {}
        for bsym, node in zip(self.bsyms, self.nodes):
            lines_of(bsym, node, lines)
        return lines


class TraceState:
    """The trace being recorded, as a call may change it (names, counters, the open scopes and what
    they hold): taken before a call, restored after the original ran on it as a shadow."""

    def __init__(self) -> None:
        from thunder.core.trace import get_tracectx

        self.trace = trace = get_tracectx()
        if trace is None:
            return
        self.counters = (trace.name_ctr, trace.obj_name_ctr)
        self.names = set(trace.names)
        self.objects = dict(getattr(trace, "_object_ctx", {}))
        self.scopes = list(trace.scopes)
        self.lengths = [len(s) if isinstance(s, list) else None for s in self.scopes]

    def scope(self) -> list | None:
        return self.trace.peek_scope() if self.trace is not None else None

    def restore(self) -> None:
        trace = self.trace
        if trace is None:
            return
        trace.name_ctr, trace.obj_name_ctr = self.counters
        # In place: another trace may hold these very objects (one made from this one shares its
        # names), and a name it takes after the restore must be this trace's too.
        trace.names.clear()
        trace.names.update(self.names)
        if hasattr(trace, "_object_ctx"):
            trace._object_ctx.clear()
            trace._object_ctx.update(self.objects)
        trace.scopes[:] = self.scopes
        for scope, length in zip(self.scopes, self.lengths):
            if length is not None:
                del scope[length:]


@contextlib.contextmanager
def outside_the_trace() -> Iterator[None]:
    """No trace is recorded inside: what fuzzdce reads of a proxy while Thunder traces is not
    recorded into the program's trace (under symbolic values a tensor proxy's ``shape`` is a
    ``prims.shape`` call, appended to the scope open at the time)."""
    from thunder.core.trace import reset_tracectx, set_tracectx

    token = set_tracectx(None)
    try:
        yield
    finally:
        reset_tracectx(token)


def produce(function, args, kwargs, state: TraceState, *, as_nodes: bool = True) -> Produced:
    """Call ``function`` on the trace being recorded: what it returned or raised, and the bound
    symbols it appended to the open scope. ``as_nodes``: also as ``Node`` trees (``appended``,
    ``value``), converted outside the trace; a probe compares the objects themselves."""
    scope = state.scope()
    start = len(scope) if isinstance(scope, list) else None
    produced = Produced()
    try:
        produced.raw = function(*args, **kwargs)
    except Exception as e:
        produced.error = e
    if start is not None:
        produced.bsyms = list(scope[start:])
    if as_nodes:
        with outside_the_trace():
            produced.appended = tuple(portable_node(b) for b in produced.bsyms)
            produced.value = shape_of(produced.raw, produced.bsyms)
    return produced
