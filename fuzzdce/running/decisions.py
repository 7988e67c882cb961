"""Which DCE decision breaks: a placement's calls, gated one by one, bisected to the one that fails.

LLVM's ``-opt-bisect-limit``, GCC's debug counters and torch's ``CompilerBisector`` answer "which
application of this pass breaks the program?" by numbering the applications and applying only the
first N. Here the pass is a placement: whatever it replaced in Thunder (found by comparing Thunder's
module and class attributes before and after entering it: ``replaced_by``), each call of which is
either done as the placement does it or as unpatched Thunder does (the attribute's original).

- A **call** is one call of a replaced attribute, numbered in the order the run makes them.
- An **edit** (``Edit``) is a call whose outcome differs from the original's at that point: a
  decomposition with subsymbols removed or changed, a different value returned, or a raise where
  the original returns (and the reverse). A recording run (``Gating.record``) finds them by running
  the original first on a snapshot of the trace being recorded (``_TraceState``), then the
  placement's version, and comparing what each produced (``_Produced``: bound symbols as
  ``subsymbols.Node`` plain data, other values by shape).
- A gated run (``Gating``) does calls ``< limit`` as the placement does them and the rest as
  unpatched Thunder does: the first ``limit`` calls of a run are those of the full run, so a prefix
  is well defined however later calls change. ``bisect`` searches the edits' indices for the first
  without which the failure goes: ``log2(edits)`` runs, plus one run each to check that no edit
  passes, that the culprit alone fails (the other edits do not matter) and that everything but the
  culprit passes.

What a run found crosses processes as plain data on ``Outcome.edits``; ``gated`` makes the placement
a campaign's evaluator runs like any other (picklable: its factory is a ``functools.partial`` of
module-level functions). A placement that is another Thunder build, or patches no attribute, is not
bisectable (``Bisection.note`` says why) and its bug keeps its failure's identity.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import inspect
import sys
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from fuzzdce.core.decisions import Bisection, Edit, Removed
from fuzzdce.core.faults import raised_kind, without_annotations
from fuzzdce.core.model import HELPER_FRAMES, ErrorInfo, Placement
from fuzzdce.core.subsymbols import Node, Renaming, align_children, portable_node, why_live
from fuzzdce.running.placements import set_attribute

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


def _thunder_namespaces() -> list[tuple[str, Any]]:
    """(qualified name, owner) of every loaded Thunder module and of each class defined in one."""
    owners = []
    for name, module in thunder_modules():
        owners.append((name, module))
        for attr, value in list(vars(module).items()):
            if inspect.isclass(value) and getattr(value, "__module__", None) == name:
                owners.append((f"{name}.{attr}", value))
    return owners


def _attributes(owners) -> dict[tuple[int, str], tuple[str, Any, Any]]:
    return {(id(owner), attr): (name, owner, value) for name, owner in owners for attr, value in list(vars(owner).items())}


def replaced_by(enter: Callable[[], Any]) -> tuple[list[Replaced], contextlib.ExitStack]:
    """Enter ``enter()`` (a placement's context manager) and return what it replaced in Thunder's
    modules and classes, by original object, with the stack that exits it. Entered and left once
    before: a module it imports is then loaded before the attributes are compared (one imported on
    entering has no attribute before, and what the placement replaced there would go unseen)."""
    with enter():
        pass
    before = _attributes(_thunder_namespaces())
    stack = contextlib.ExitStack()
    stack.enter_context(enter())
    after = _attributes(_thunder_namespaces())
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


def _shape_of(value: Any, bsyms: list | None = None, depth: int = 0) -> Any:
    """A value as comparable plain data: proxies by name, bound symbols and traces as ``Node`` trees,
    containers by their items, anything else by its type alone (an object's identity says nothing).
    ``bsyms`` collects the bound symbols met, in the order ``_nodes_in`` lists their nodes."""
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
        return tuple(_shape_of(v, bsyms, depth + 1) for v in value)
    if isinstance(value, dict):
        return tuple((repr(k), _shape_of(v, bsyms, depth + 1)) for k, v in value.items())
    if value is None or isinstance(value, bool | int | float | str | complex):
        return repr(value)
    if dataclasses.is_dataclass(value):
        return (
            type(value).__name__,
            tuple(_shape_of(getattr(value, f.name), bsyms, depth + 1) for f in dataclasses.fields(value)),
        )
    if isinstance(getattr(value, "name", None), str) and type(value).__module__.startswith("thunder"):
        return f"{type(value).__name__} {value.name}"  # a Symbol, an enum member
    return type(value).__name__


def _nodes_in(shape: Any) -> list[Node]:
    if isinstance(shape, Node):
        return [shape]
    if isinstance(shape, tuple):
        return [n for item in shape for n in _nodes_in(item)]
    return []


def printed_line(bsym) -> str:
    """A bound symbol's own line as Thunder prints it (``t1 = ltorch.add(t0, t1, alpha=1)``),
    without its decomposition and the annotation of its outputs."""
    try:
        return without_annotations(" ".join(line.strip() for line in bsym.python(indent=0, print_depth=1))).strip()
    except Exception:  # a bound symbol Thunder cannot print: its plain-data head stands in
        return portable_node(bsym).head


def _lines_of(bsym, node: Node, lines: dict[int, str]) -> None:
    """``lines``: the printed line of each node of ``node``'s tree (made from ``bsym``), by id."""
    lines[id(node)] = printed_line(bsym)
    for sub_bsym, sub in zip(bsym.subsymbols, node.subsymbols):
        _lines_of(sub_bsym, sub, lines)


@dataclass
class _Produced:
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
        return [*self.appended, *_nodes_in(self.value)]

    def lines(self) -> dict[int, str]:
        """Each node's printed line, by id (printing is dear: only an edit's are made)."""
        lines: dict[int, str] = {}
        for bsym, node in zip(self.bsyms, self.nodes):
            _lines_of(bsym, node, lines)
        return lines


class _TraceState:
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


def _produce(function, args, kwargs, state: _TraceState, *, as_nodes: bool = True) -> _Produced:
    """Call ``function`` on the trace being recorded: what it returned or raised, and the bound
    symbols it appended to the open scope. ``as_nodes``: also as ``Node`` trees (``appended``,
    ``value``), converted outside the trace; a probe compares the objects themselves."""
    scope = state.scope()
    start = len(scope) if isinstance(scope, list) else None
    produced = _Produced()
    try:
        produced.raw = function(*args, **kwargs)
    except Exception as e:
        produced.error = e
    if start is not None:
        produced.bsyms = list(scope[start:])
    if as_nodes:
        with outside_the_trace():
            produced.appended = tuple(portable_node(b) for b in produced.bsyms)
            produced.value = _shape_of(produced.raw, produced.bsyms)
    return produced


def _given(args, kwargs, base: _Produced) -> tuple[list, list[Node]]:
    """The bound symbols a call was given or made (what a raise's malformations are read from): those
    its original appended, else those among its arguments."""
    if base.appended:
        return base.bsyms[: len(base.appended)], list(base.appended)
    bsyms: list = []
    shape = _shape_of((args, kwargs), bsyms)
    return bsyms, _nodes_in(shape)


def raise_frame(e: BaseException) -> str:
    """Where in Thunder ``e`` was raised: the innermost Thunder frame that is neither a generic
    helper nor a container's dunder (a ``KeyError`` from a proxy table's ``__getitem__`` was
    raised by the function reading the table)."""
    import traceback

    frame = ErrorInfo.from_exception(e).frame
    if not frame.startswith("thunder/"):  # a placement's own code, or torch's: as every fault says it
        return frame
    frames = [f for f in traceback.extract_tb(e.__traceback__) if "/thunder/" in f.filename]
    for f in reversed(frames):
        if f.name not in HELPER_FRAMES and not (f.name.startswith("__") and f.name.endswith("__")):
            return f"thunder/{f.filename.rsplit('/thunder/', 1)[1]}:{f.name}"
    return frame


# --- what an edit is --------------------------------------------------------------------------------


# The kinds of malformation ``malformations`` names: what a raise's identity holds
# (``Edit.malformation_kinds``; never the names). Every way of defining a name that is already defined (an output that is also
# an input, of the bound symbol or of a subsymbol at any depth; a subsymbol defining an argument or
# an earlier subsymbol's output again) breaks one invariant, each name defined once, so it is one
# kind: the thunderfx splitter's names clash at the bound symbol (``t1 = ltorch.ge(t0, t1)``) or
# inside its decomposition (``t0 = prims.convert_element_type(t0, float32)`` under
# ``t2 = ltorch.exp(t0)``) as the same defect, and were two bugs when they were two kinds.
REUSES_A_NAME = "reuses a name"
READS_UNDEFINED = "reads an undefined name"


def malformations(node: Node) -> tuple[tuple[str, str], ...]:
    """What is wrong with a bound symbol as fuzzdce's well-formedness checks see it (Thunder's
    ``check_trace`` asks the same of a trace), as (kind, words), its decomposition checked at every
    depth: a name defined where it is already defined (``REUSES_A_NAME``: an output that is also an
    input, a subsymbol defining an argument or an earlier subsymbol's output again), a subsymbol
    reading a name neither the arguments nor an earlier subsymbol define (``READS_UNDEFINED``)."""
    reused: list[str] = []
    unknown: list[str] = []

    def check(bsym: Node, top: bool, outer: frozenset[str]) -> None:
        """``outer``: the names defined around ``bsym`` (a trace's names are one namespace at every depth)."""
        clash = sorted(bsym.out_names & bsym.arg_names)
        if clash:
            names = ", ".join(clash)
            reused.append(
                f"output name {names} is also an input" if top else f"subsymbol `{bsym.head}` defines {names}, also its input"
            )
        defined = set(bsym.arg_names)  # what its subsymbols may read
        for sub in bsym.subsymbols:
            unknown.extend(sorted(sub.arg_names - defined))
            again = sorted((sub.out_names & (defined | outer)) - sub.arg_names)  # a clash with its own input is said below
            if again:
                reused.append(f"subsymbol `{sub.head}` defines {', '.join(again)} again")
            check(sub, False, outer | defined)
            defined |= sub.out_names

    check(node, True, frozenset())
    problems = []
    if reused:  # the outermost in words: the others mostly repeat it a level down
        more = f" (and {len(reused) - 1} more)" if len(reused) > 1 else ""
        problems.append((REUSES_A_NAME, reused[0] + more))
    if unknown:
        problems.append(
            (READS_UNDEFINED, f"a subsymbol reads {', '.join(dict.fromkeys(unknown))}, which nothing before it defines")
        )
    return tuple(problems)


def _paths(node: Node, where: tuple[int, ...], paths: dict[int, tuple[int, ...]]) -> None:
    paths[id(node)] = where
    for i, sub in enumerate(node.subsymbols):
        _paths(sub, (*where, i), paths)


def _removals(original: Node, edited: Node, lines: dict[int, str], at: int) -> tuple[list[Removed], list[tuple[str, str]]]:
    """The subsymbols ``edited`` lacks against ``original`` (same symbol and arguments), with why
    unpatched Thunder would keep each, and the subsymbols it has that ``original`` lacks (``lines``:
    nodes' printed lines, by id; ``at``: ``original``'s index among what the call produced)."""
    paths: dict[int, tuple[int, ...]] = {}
    _paths(original, (at,), paths)
    changes: list = []
    names = Renaming.fixed(original.arg_names | edited.arg_names)
    align_children(original.subsymbols, edited.subsymbols, 0, edited, frozenset(), names, changes)
    removed, added = [], []
    for change in changes:
        line = lines.get(id(change.child), change.child.head)
        if change.kind == "added":
            added.append((line, change.child.sym))
            continue
        live = why_live(change)
        removed.append(
            Removed(
                line,
                change.child.sym,
                lines.get(id(change.parent), change.parent.head),
                change.depth,
                tuple(kind for kind, _ in live),
                tuple(text for _, text in live),
                pruned=change.kind == "pruned",
                where=paths.get(id(change.child), ()) if change.kind == "removed" else (),
            )
        )
    return removed, added


def edit_between(index: int, replaced: Replaced, base: _Produced, mine: _Produced, given: tuple[list, list[Node]]) -> Edit | None:
    """The edit a call made, its original having produced ``base`` and the placement's version
    ``mine`` (``given``: the bound symbols, objects and nodes, the call was given or made, whose
    malformations a raise names); None when they did the same."""
    if mine.error is not None or base.error is not None:
        if mine.error is not None and base.error is not None and type(mine.error) is type(base.error):
            return None
        error = mine.error if mine.error is not None else base.error
        info = ErrorInfo.from_exception(error)
        raised = dict(
            error_type=info.type,
            error_kind=raised_kind(info.type, f"{info.type}: {info.message}"),
            error_message=info.message,
            error_frame=raise_frame(error),
        )
        if mine.error is None:
            return Edit(index, replaced.label, "no raise", replaced.function, **raised)
        bsyms, nodes = given
        problems = malformations(nodes[-1]) if nodes else ()
        lines: dict[int, str] = {}
        if bsyms and nodes:
            _lines_of(bsyms[-1], nodes[-1], lines)
        return Edit(
            index,
            replaced.label,
            "raise",
            replaced.function,
            symbol=nodes[-1].sym if nodes else "",
            before=lines.get(id(nodes[-1]), "") if nodes else "",
            before_text=_text(nodes[-1], lines) if nodes else "",
            malformed=tuple(words for _, words in problems),
            malformation_kinds=tuple(dict.fromkeys(kind for kind, _ in problems)),
            **raised,
        )
    if (base.value, base.appended) == (mine.value, mine.appended):
        return None
    old, new = base.nodes, mine.nodes
    lines = {**base.lines(), **mine.lines()}
    removed: list[Removed] = []
    added: list[tuple[str, str]] = []
    paired = len(old) == len(new) and all((a.sym, a.args) == (b.sym, b.args) for a, b in zip(old, new))
    changed = [(i, a, b) for i, (a, b) in enumerate(zip(old, new)) if a != b] if paired else []
    for i, a, b in changed:
        r, d = _removals(a, b, lines, i)
        removed += r
        added += d
    before = changed[0][1] if changed else None
    after = changed[0][2] if changed else None
    kind = "removal" if removed and not added and not any(r.pruned for r in removed) else "change"
    rebound = () if paired else _rebound(old, new)
    return Edit(
        index,
        replaced.label,
        kind,
        replaced.function,
        symbol=before.sym if before is not None else "",
        before=lines.get(id(before), before.head) if before is not None else "",
        before_text=_text(before, lines) if before is not None else _value_text(base.value),
        after_text=_text(after, lines) if after is not None else _value_text(mine.value),
        removed=tuple(removed),
        added=tuple(line for line, _ in added),
        added_symbols=tuple(symbol for _, symbol in added),
        rebound=rebound,
    )


def _rebound(old: list[Node], new: list[Node]) -> tuple[str, ...]:
    """What the call produced as another symbol: position by position where it produced as many
    bound symbols, else the symbols one side has more of ("add -> (none)")."""
    if len(old) == len(new):
        return tuple(f"{a.sym} -> {b.sym}" for a, b in zip(old, new) if a.sym != b.sym)
    mine, theirs = Counter(n.sym for n in new), Counter(n.sym for n in old)
    return (*(f"{s} -> (none)" for s in sorted(theirs - mine)), *(f"(none) -> {s}" for s in sorted(mine - theirs)))


def _text(node: Node, lines: dict[int, str], indent: str = "") -> str:
    """A bound symbol and its decomposition, one line each, as Thunder prints them, its subsymbols
    indented below it."""
    return "\n".join([indent + lines.get(id(node), node.head), *(_text(sub, lines, indent + "  ") for sub in node.subsymbols)])


def _value_text(shape: Any) -> str:
    text = repr(shape)
    return text if len(text) <= 300 else text[:297] + "..."


# --- gated runs ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Gating:
    """Which calls a gated run does as the placement does them: those with index ``< limit`` (None:
    every one), but not ``skip``, or only ``only``. ``record``: find every edit (each call shadowed
    by its original); ``describe``: find only this call's edit."""

    limit: int | None = None
    skip: int | None = None
    only: int | None = None
    record: bool = False
    describe: int | None = None
    # (call index, ``Removed.where``): that call done as unpatched Thunder does it, then that one
    # subsymbol removed (a removal of several, narrowed to one).
    narrow: tuple[int, tuple[int, ...]] | None = None

    def applies(self, index: int) -> bool:
        if self.only is not None:
            return index == self.only
        return (self.limit is None or index < self.limit) and index != self.skip

    def __str__(self) -> str:
        parts = [f"{k}={v}" for k, v in dataclasses.asdict(self).items() if v is not None and v is not False]
        return ",".join(parts) or "all"


def _without(bsym, where: tuple[int, ...]):
    """``bsym`` with the subsymbol at ``where`` (an index per level) removed."""
    subs = list(bsym.subsymbols)
    if len(where) == 1:
        return bsym.from_bsym(subsymbols=subs[: where[0]] + subs[where[0] + 1 :])
    subs[where[0]] = _without(subs[where[0]], where[1:])
    return bsym.from_bsym(subsymbols=subs)


def _with_one_removed(original, args, kwargs, where: tuple[int, ...]):
    """The call done as unpatched Thunder does it, then the one subsymbol at ``where`` removed from
    what it produced (``Removed.where``): appended to the scope being recorded, or returned (a bound
    symbol, a list of them, a trace)."""
    from thunder.core.symbol import BoundSymbol
    from thunder.core.trace import TraceCtx, get_tracectx

    trace = get_tracectx()
    scope = trace.peek_scope() if trace is not None else None
    start = len(scope) if isinstance(scope, list) else 0
    result = original(*args, **kwargs)
    top, inner = where[0], where[1:]
    appended = len(scope) - start if isinstance(scope, list) else 0
    if top < appended:
        scope[start + top] = _without(scope[start + top], inner)
        return result
    top -= appended
    if isinstance(result, BoundSymbol) and top == 0:
        return _without(result, inner)
    held = result.bound_symbols if isinstance(result, TraceCtx) else result
    if isinstance(held, list | tuple) and top < len(held) and isinstance(held[top], BoundSymbol):
        changed = list(held)
        changed[top] = _without(held[top], inner)
        if isinstance(result, TraceCtx):
            result.bound_symbols = changed
            return result
        return type(held)(changed)
    return result  # nowhere to remove it: the run shows what unpatched Thunder does


class Gate:
    """The gated run in progress: numbers the calls, records the edits."""

    active: Gate | None = None  # the one in this process, read by ``observed_edits``

    def __init__(self, gating: Gating) -> None:
        self.gating = gating
        self.calls = 0
        self.edits: list[Edit] = []
        self.shadowing = 0  # inside an original run as a shadow: calls are not counted

    def wrap(self, replaced: Replaced) -> Callable:
        def gated_call(*args, **kwargs):
            if self.shadowing:
                return replaced.original(*args, **kwargs)
            index = self.calls
            self.calls += 1
            if self.gating.narrow is not None and self.gating.narrow[0] == index:
                return _with_one_removed(replaced.original, args, kwargs, self.gating.narrow[1])
            apply = self.gating.applies(index)
            if apply and (self.gating.record or self.gating.describe == index):
                return self.observed(index, replaced, args, kwargs)
            return (replaced.replacement if apply else replaced.original)(*args, **kwargs)

        # What reads the source of what it finds there (``placements.symcall_native``) reads the placement's.
        gated_call.__wrapped__ = replaced.replacement  # type: ignore[attr-defined]
        return gated_call

    def observed(self, index: int, replaced: Replaced, args, kwargs):
        """The call done as the placement does it, after its original ran as a shadow on a snapshot."""
        state = _TraceState()
        self.shadowing += 1
        try:
            base = _produce(replaced.original, args, kwargs, state)
        finally:
            self.shadowing -= 1
            state.restore()
        mine = _produce(replaced.replacement, args, kwargs, state)
        with outside_the_trace():
            edit = edit_between(index, replaced, base, mine, _given(args, kwargs, base))
        if edit is not None:
            self.edits.append(edit)
        if mine.error is not None:
            raise mine.error
        return mine.raw  # type: ignore[attr-defined]


@contextlib.contextmanager
def gated_context(factory: Callable[[], Any], gating: Gating) -> Iterator[Gate]:
    """``factory()``'s placement, each call of what it replaced gated by ``gating``."""
    replaced, stack = replaced_by(factory)
    gate = Gate(gating)
    with stack:
        for r in replaced:
            wrapper = gate.wrap(r)
            for owner, attr in r.owners:
                stack.enter_context(set_attribute(owner, attr, wrapper))
        previous, Gate.active = Gate.active, gate
        try:
            yield gate
        finally:
            Gate.active = previous


def gated(placement: Placement, gating: Gating) -> Placement:
    """``placement`` with its calls gated: a placement of its own name and gating (never the
    evaluator's cached runs of ``placement``)."""
    return Placement(
        f"{placement.name} [{gating}]",
        functools.partial(gated_context, placement.factory, gating),
        placement.description,
        placement.native,
        placement.missing,
        shares_compiles=False,
    )


@contextlib.contextmanager
def observed_edits(outcome) -> Iterator[None]:
    """While a path runs: afterwards, the edits and calls of the gated run in progress (if any) on
    ``outcome`` (plain data: they cross processes)."""
    try:
        yield
    finally:
        gate = Gate.active
        if gate is not None:
            # In call order: a call's edit is known once it returns, after the edits of the calls inside it.
            outcome.edits = sorted(gate.edits, key=lambda e: e.index)
            outcome.gated_calls = gate.calls


def not_bisectable(placement: Placement) -> str | None:
    """Why ``placement``'s decisions cannot be bisected, or None."""
    if placement.is_stock:
        return "stock Thunder makes no decision of a placement's"
    if placement.build is not None:
        return f"{placement.name} is another Thunder build, not a patch: its calls cannot be gated one by one"
    return None


def patched_labels(placement: Placement) -> list[str]:
    """What ``placement`` replaces in Thunder here, by where it is defined."""
    replaced, stack = replaced_by(placement.factory)
    with stack:
        return [r.label for r in replaced]


# --- the search ----------------------------------------------------------------------------------


RunGated = Callable[[Gating], tuple[bool, list[Edit], int]]
# The most single removals tried, to narrow a culprit that removed several (one run each, one per
# kind of removal: the same symbol removed for the same reason is one decision).
MAX_NARROWING_RUNS = 6


def bisect(placement: Placement, run: RunGated, *, path: str = "", oracle: str = "", fixes: bool = False) -> Bisection:
    """Bisect ``placement``'s edits to the first without which a failure goes. ``run(gating)`` runs
    the failing program on the failing path under ``gated(placement, gating)`` and says whether the
    failure shows, the edits recorded and the calls made.

    ``fixes``: the other way, for a failure of the reference's (unpatched Thunder's) that the
    placement does not show: the first edit with which it goes, without which it comes back. The
    same search, with "fails" read as "the failure is gone"."""
    result = functools.partial(Bisection, placement.name, path=path, oracle=oracle, fixes=fixes)
    why = not_bisectable(placement)
    if why:
        return result(note=why)
    runs = 0

    def fails(gating: Gating) -> tuple[bool, list[Edit]]:
        nonlocal runs
        runs += 1
        shown, edits, _ = run(gating)
        return shown != fixes, edits

    runs += 1
    shown, edits, calls = run(Gating(record=True))
    shown = shown != fixes
    edits = sorted(edits, key=lambda e: e.index)
    if not calls:
        note = (
            "no call of anything it replaced in Thunder's modules and classes ran (a patch of a dict's entries cannot be gated)"
        )
        return result(runs=runs, note=note)
    if not shown:
        flaky = "the failure showed under it" if fixes else "the failure did not show"
        return result(runs=runs, note=f"{flaky} with every call observed (a flaky failure)")
    if not edits:
        return result(runs=runs, note="no call of what the placement replaced did otherwise than unpatched Thunder")
    if fails(Gating(limit=0))[0]:
        note = (
            "the failure is gone with no edit applied: unpatched Thunder does not show it here"
            if fixes
            else "the failure shows with no edit applied: it is not the placement's"
        )
        return result(tuple(edits), runs=runs, note=note)
    # The first j whose prefix (edits 0..j) fails: j = len - 1 fails (the recording run).
    low, high = -1, len(edits) - 1
    described: dict[int, Edit] = {}
    while high - low > 1:
        middle = (low + high) // 2
        edit = edits[middle]
        shown, found = fails(Gating(limit=edit.index + 1, describe=edit.index))
        if shown:
            high = middle
            described.update((e.index, e) for e in found)
        else:
            low = middle
    culprit = described.get(edits[high].index, edits[high])
    alone_shown, alone_edits = fails(Gating(only=culprit.index, describe=culprit.index))
    same_call = any(e.index == culprit.index and e.before == culprit.before for e in alone_edits)
    alone = alone_shown if same_call else None
    without = not fails(Gating(skip=culprit.index))[0] if len(edits) > 1 else True
    narrowed = None
    if alone and len({r.head for r in culprit.removed}) > 1:
        # Live removals first: removing a dead one alone can break what the live one fed.
        kinds = {r.key(): r for r in sorted(culprit.removed, key=lambda r: not r.reasons) if r.where}
        for removed in list(kinds.values())[:MAX_NARROWING_RUNS]:
            if fails(Gating(limit=culprit.index, narrow=(culprit.index, removed.where)))[0]:
                narrowed = removed
                break
    return result(tuple(edits), culprit, alone=alone, without=without, runs=runs, narrowed=narrowed)
