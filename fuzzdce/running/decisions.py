"""Gating: a placement's calls done one by one as the placement does them or as unpatched Thunder
does, and the edit each call made. The mechanism ``fuzzing.bisection`` searches with (it says what
a call, an edit and a gated run are, and how the decision that breaks is found); the data it
produces is ``core.decisions``'.

- What a placement replaced, and a call run as a shadow on a snapshot of the trace being recorded,
  are ``interception``'s (``replaced_by``, ``TraceState``, ``produce``).
- ``Gating`` says which calls a run does as the placement does them and which it observes, by one
  constructor per kind of run (``Gating.recording()``, ``Gating.first(n)``, ...); ``Gate`` numbers
  a run's calls and gates each one by it, and an observed call's original runs first as a shadow,
  so ``edit_between`` can compare what each produced (``interception.Produced``: bound symbols as
  ``subsymbols.Node`` plain data, other values by shape) and say the ``core.decisions.Edit``; for
  a raise, ``malformations`` says what is wrong with the bound symbol the call was given and
  ``raise_frame`` where in Thunder it raised.
- ``gated(placement, gating)`` is the placement a campaign's evaluator runs like any other: of the
  placement's name, its gating as data (``Placement.gating``), picklable (its factory is a
  ``functools.partial`` of module-level functions). What must not take a gated run for its
  placement reads ``Placement.gating``: it shares no compile (``probes.shares_compiles``), and the
  evaluator's job key holds it. What a run found crosses processes as plain data on
  ``Outcome.edits`` (``observed_edits``).
- ``not_bisectable``: a placement that is another Thunder build, or stock, cannot be gated.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import enum
import functools
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from fuzzdce.core.decisions import Edit, Removed
from fuzzdce.core.faults import raised_kind
from fuzzdce.core.liveness import why_live
from fuzzdce.core.model import ErrorInfo, Placement
from fuzzdce.core.portable_trace import Node
from fuzzdce.core.subsymbols import Renaming, align_children
from fuzzdce.core.tracebacks import HELPER_FRAMES
from fuzzdce.running.interception import (
    Produced,
    Replaced,
    TraceState,
    lines_of,
    nodes_in,
    outside_the_trace,
    produce,
    replaced_by,
    shape_of,
)
from fuzzdce.running.patching import set_attribute

# --- what a call was given, where it raised ----------------------------------------------------------


def _given(args, kwargs, base: Produced) -> tuple[list, list[Node]]:
    """The bound symbols a call was given or made (what a raise's malformations are read from): those
    its original appended, else those among its arguments."""
    if base.appended:
        return base.bsyms[: len(base.appended)], list(base.appended)
    bsyms: list = []
    shape = shape_of((args, kwargs), bsyms)
    return bsyms, nodes_in(shape)


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


def edit_between(index: int, replaced: Replaced, base: Produced, mine: Produced, given: tuple[list, list[Node]]) -> Edit | None:
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
            lines_of(bsyms[-1], nodes[-1], lines)
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


class Calls(enum.Enum):
    """Which calls a gated run does as the placement does them (the rest as unpatched Thunder does)."""

    FIRST = "first"  # those numbered below ``Gating.n`` (None: every call)
    ALL_BUT = "all but"  # every call but call ``n``
    ONLY = "only"  # call ``n`` alone


@dataclass(frozen=True)
class Gating:
    """Which calls of a placement's run a gated run does as the placement does them, and which of
    those it observes (runs its original first as a shadow, to find the call's edit). Made by its
    constructors, each one kind of run, never from raw fields:

    - ``recording()``: every call, each observed: the run that finds every edit.
    - ``every()``: every call, none observed: the placement as it is, its calls counted.
    - ``first(n, observe=i)``: the first ``n`` calls (``first(0)``: none, unpatched Thunder
      throughout), observing call ``i`` among them (None: none).
    - ``all_but(i)``: every call but call ``i``, none observed.
    - ``only_call(i)``: call ``i`` alone, observed.
    - ``narrowed(i, where)``: the first ``i`` calls; call ``i`` as unpatched Thunder does it, less
      the one subsymbol at ``where`` (``Removed.where``: one removal of several, tried alone); none
      after.

    Each call is under one rule, so no field overrides another: ``applies`` (done as the placement
    does it) follows ``calls`` and ``n`` alone; ``observes`` only a call it applies; ``narrows`` only
    call ``n`` after a prefix, which ``applies`` leaves out (``__post_init__`` refuses a gating whose
    fields would disagree). Plain data (it crosses processes inside a gated placement's factory, and
    is the placement's ``gating``); ``str`` says it in words, for a log line."""

    calls: Calls
    n: int | None = None  # FIRST: how many (None: every call); ALL_BUT, ONLY: the call's index
    observed: int | None = None  # the one call observed, if done as the placement does it
    observes_every: bool = False
    narrowing: tuple[int, ...] | None = None  # FIRST only: call ``n``, less the subsymbol at this place

    def __post_init__(self) -> None:
        if self.calls is not Calls.FIRST and self.n is None:
            raise ValueError(f"a gating of {self.calls.value} calls needs the call's index")
        if self.observes_every and self.observed is not None:
            raise ValueError("a gating observes every call or one")
        if self.narrowing is not None and (self.calls is not Calls.FIRST or self.n is None):
            raise ValueError("a narrowed call follows the first n calls")

    @staticmethod
    def recording() -> Gating:
        return Gating(Calls.FIRST, observes_every=True)

    @staticmethod
    def every() -> Gating:
        return Gating(Calls.FIRST)

    @staticmethod
    def first(n: int, *, observe: int | None = None) -> Gating:
        return Gating(Calls.FIRST, n, observed=observe)

    @staticmethod
    def all_but(index: int) -> Gating:
        return Gating(Calls.ALL_BUT, index)

    @staticmethod
    def only_call(index: int) -> Gating:
        return Gating(Calls.ONLY, index, observed=index)

    @staticmethod
    def narrowed(index: int, where: tuple[int, ...]) -> Gating:
        return Gating(Calls.FIRST, index, narrowing=tuple(where))

    def applies(self, index: int) -> bool:
        """Is call ``index`` done as the placement does it?"""
        if self.calls is Calls.ONLY:
            return index == self.n
        if self.calls is Calls.ALL_BUT:
            return index != self.n
        return self.n is None or index < self.n

    def observes(self, index: int) -> bool:
        """Is call ``index`` observed (shadowed by its original, its edit found)?"""
        return self.applies(index) and (self.observes_every or index == self.observed)

    def narrows(self, index: int) -> bool:
        """Is call ``index`` the narrowed one (unpatched Thunder's, less one subsymbol)?"""
        return self.narrowing is not None and index == self.n

    def __str__(self) -> str:
        if self.calls is Calls.FIRST:
            said = "every call" if self.n is None else f"the first {self.n} calls" if self.n else "no call"
        else:
            said = f"{self.calls.value} call {self.n}"
        if self.observes_every:
            said += ", each observed"
        elif self.observed is not None:
            said += f", call {self.observed} observed"
        if self.narrowing is not None:
            said += f", then call {self.n} less the subsymbol at {list(self.narrowing)}"
        return said


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
            gating = self.gating
            if gating.narrows(index):
                return _with_one_removed(replaced.original, args, kwargs, gating.narrowing)
            if gating.observes(index):
                return self.observed(index, replaced, args, kwargs)
            return (replaced.replacement if gating.applies(index) else replaced.original)(*args, **kwargs)

        # What reads the source of what it finds there (``placements.symcall_native``) reads the placement's.
        gated_call.__wrapped__ = replaced.replacement  # type: ignore[attr-defined]
        return gated_call

    def observed(self, index: int, replaced: Replaced, args, kwargs):
        """The call done as the placement does it, after its original ran as a shadow on a snapshot."""
        state = TraceState()
        self.shadowing += 1
        try:
            base = produce(replaced.original, args, kwargs, state)
        finally:
            self.shadowing -= 1
            state.restore()
        mine = produce(replaced.replacement, args, kwargs, state)
        with outside_the_trace():
            edit = edit_between(index, replaced, base, mine, _given(args, kwargs, base))
        if edit is not None:
            self.edits.append(edit)
        if mine.error is not None:
            raise mine.error
        return mine.raw  # type: ignore[attr-defined]


# The gated run in progress in this context (``gated_context`` sets it), read by ``observed_edits``.
ACTIVE_GATE: contextvars.ContextVar[Gate | None] = contextvars.ContextVar("ACTIVE_GATE", default=None)


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
        token = ACTIVE_GATE.set(gate)
        try:
            yield gate
        finally:
            ACTIVE_GATE.reset(token)


def gated(placement: Placement, gating: Gating) -> Placement:
    """``placement`` with its calls gated by ``gating``: of the placement's name, told apart from it by
    data (``Placement.gating``), never by a name: it shares no compile and no cached job of the
    placement's."""
    return dataclasses.replace(placement, factory=functools.partial(gated_context, placement.factory, gating), gating=gating)


@contextlib.contextmanager
def observed_edits(outcome) -> Iterator[None]:
    """While a path runs: afterwards, the edits and calls of the gated run in progress (if any) on
    ``outcome`` (plain data: they cross processes)."""
    try:
        yield
    finally:
        gate = ACTIVE_GATE.get()
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
