"""Which DCE decision breaks: a placement's calls, gated one by one, bisected to the one that fails.

LLVM's ``-opt-bisect-limit``, GCC's debug counters and torch's ``CompilerBisector`` answer "which
application of this pass breaks the program?" by numbering the applications and applying only the
first N. Here the pass is a placement: whatever it replaced in Thunder (found by comparing Thunder's
module and class attributes before and after entering it: ``interception.replaced_by``), each call
of which is either done as the placement does it or as unpatched Thunder does (the attribute's
original).

- A **call** is one call of a replaced attribute, numbered in the order the run makes them.
- An **edit** (``Edit``) is a call whose outcome differs from the original's at that point: a
  decomposition with subsymbols removed or changed, a different value returned, or a raise where
  the original returns (and the reverse). A recording run (``Gating.record``) finds them by running
  the original first on a snapshot of the trace being recorded (``interception.TraceState``), then
  the placement's version, and comparing what each produced (``interception.Produced``: bound
  symbols as ``subsymbols.Node`` plain data, other values by shape).
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
import contextvars
import dataclasses
import functools
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from fuzzdce.core.decisions import Bisection, Edit, Removed
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
