"""One compile for every placement that would change nothing on a path: stock's, with each
placement's replacements run beside Thunder's own as shadows.

A placement replaces some of Thunder's functions (``interception.replaced_by`` finds which). While
stock compiles a program on a path, each call of a function some placement replaced is first made
as each placement would make it, on the trace being recorded, which is then restored
(``interception.TraceState``, the snapshot a recording gated run takes), and then as stock makes it.
A placement whose every call produced what stock's did (the same bound symbols, their proxies'
names, shapes, dtypes and devices, their decompositions at every depth; the same value; the same
exception) would have compiled this path exactly as stock did: its outcome there is stock's
(``Outcome.shared_from``), judged by every oracle again, and it is not compiled.

A placement is probed no further after its first call that differs: it compiles as usual. It is
never shared where
- it replaced nothing (``identity``, whose point is to compile again), or no call of what it
  replaced ran; or it is another Thunder build, or a gated run (``Placement.gating``);
- entering it changes more than Thunder's functions: a function outside Thunder (torch's), an
  attribute of Thunder's that is not a function (a flag), or an entry of a dict of Thunder's (a
  grad rule registered otherwise: ``other_effects``);
- a call gave back what is not plain data here (a tensor, a function: the placement computes
  values when the program runs, where only running it shows what it does);
- a shadow changed what the call was given (the arguments, compared before and after).
The probe compares what the calls made outside the trace (``interception.outside_the_trace``): under
symbolic values reading a tensor proxy's shape is a ``prims.shape`` call, which would otherwise be
recorded into stock's trace.
A probed run that fails (a time-out, running out of memory, fuzzdce's own error), or whose shadow
changed its arguments, is run again as plain stock and shares nothing (``path_running.run_path``).
A placement whose version once changed its call's arguments is not probed again in that process
(``changes_arguments``): one such placement would otherwise spoil every later probe, and so every
other placement's sharing, with a plain stock compile made again on each path.

Nested calls: inside a shadow, a call of something the shadowed placement replaced is made as that
placement makes it (as its own compile would). Inside stock's probed call, a nested call is probed
for the other placements only: the outer comparison covers what the shadowed ones produce.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import enum
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from fuzzdce.core.model import Placement
from fuzzdce.running.interception import (
    Produced,
    Replaced,
    TraceState,
    outside_the_trace,
    produce,
    replaced_by,
    thunder_modules,
    thunder_namespaces,
)
from fuzzdce.running.patching import set_attribute

# How deep a value is compared; deeper, it is not plain data here (never shared).
MAX_DEPTH = 64


class NotPlainData(Exception):
    """A value a probe cannot compare: a tensor, a function, an object of unknown kind."""


def _plain_scalar(value: Any) -> bool:
    """A value its ``repr`` says all of: a number, a string, a dtype or device (torch's, Thunder's)."""
    import torch
    from thunder.core.devices import Device
    from thunder.core.dtypes import dtype

    plain = (bool, int, float, complex, str, bytes, slice, enum.Enum, torch.dtype, torch.device, dtype, Device)
    return value is None or value is Ellipsis or isinstance(value, plain)


# What a proxy is besides its name: two proxies of one name that differ here are two values.
PROXY_FIELDS = ("shape", "dtype", "device", "requires_grad", "value")


def _same_proxy(a, b) -> bool:
    if a.name != b.name:
        return False
    for attr in PROXY_FIELDS:
        x, y = getattr(a, attr, None), getattr(b, attr, None)
        if x is not y and repr(x) != repr(y):
            return False
    return True


def same(a: Any, b: Any, depth: int = 0) -> bool:
    """Do two values a call made say the same as plain data: proxies by name and metadata, bound
    symbols by symbol, arguments, outputs, tags and decomposition, traces by their bound symbols,
    containers item by item? Raises ``NotPlainData`` where one is neither (a tensor, a function):
    what it would do when the program runs is not compared here."""
    from thunder.core.proxies import Proxy
    from thunder.core.symbol import BoundSymbol
    from thunder.core.trace import TraceCtx

    if depth > MAX_DEPTH:
        raise NotPlainData("nested too deep")
    if type(a) is not type(b):
        return False
    if _plain_scalar(a):
        return a is b or repr(a) == repr(b)  # NaN, -0.0 and 0.0 told apart as printed
    if a is b and not isinstance(a, list | dict | TraceCtx | BoundSymbol):  # an immutable object shared
        return True
    deeper = depth + 1
    if isinstance(a, Proxy):
        return _same_proxy(a, b)
    if isinstance(a, BoundSymbol):
        return (
            (a.sym is b.sym or (a.sym.name, repr(a.sym.id)) == (b.sym.name, repr(b.sym.id)))
            and same(a.args, b.args, deeper)
            and same(a.kwargs, b.kwargs, deeper)
            and same(tuple(a.flat_outs), tuple(b.flat_outs), deeper)
            and sorted(map(str, getattr(a, "tags", None) or ())) == sorted(map(str, getattr(b, "tags", None) or ()))
            and same(list(a.subsymbols), list(b.subsymbols), deeper)
        )
    if isinstance(a, TraceCtx):
        return same(list(a.bound_symbols), list(b.bound_symbols), deeper)
    if isinstance(a, list | tuple):
        return len(a) == len(b) and all(same(x, y, deeper) for x, y in zip(a, b))
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k], deeper) for k in a)
    if dataclasses.is_dataclass(a) and not isinstance(a, type):
        return all(same(getattr(a, f.name), getattr(b, f.name), deeper) for f in dataclasses.fields(a))
    if isinstance(getattr(a, "name", None), str) and type(a).__module__.startswith("thunder"):
        return a.name == b.name  # a Symbol, an enum of Thunder's
    raise NotPlainData(type(a).__name__)


def given_state(args, kwargs) -> tuple:
    """What a call was given, shallowly by identity: each argument, the items of a list, dict or
    trace it is, and each bound symbol's subsymbols and arguments there. A shadow that changed any
    of it in place changed what stock's call is then given."""
    from thunder.core.symbol import BoundSymbol
    from thunder.core.trace import TraceCtx

    def of(value):
        if isinstance(value, BoundSymbol):
            return (id(value), id(value.subsymbols), tuple(map(id, value.subsymbols)), id(value.args))
        if isinstance(value, TraceCtx):
            return (id(value), tuple(of(b) for b in value.bound_symbols))
        if isinstance(value, list):
            return (id(value), tuple(of(v) for v in value))
        if isinstance(value, dict):
            return (id(value), tuple((k, id(v)) for k, v in value.items()))
        return id(value)

    return tuple(of(a) for a in args), tuple((k, of(v)) for k, v in kwargs.items())


def _differs(stock: Produced, mine: Produced) -> str:
    """Why a placement's call did otherwise than stock's ("" when it did the same)."""
    if stock.error is not None or mine.error is not None:
        if stock.error is None or mine.error is None:
            return "one of the two raised"
        alike = type(stock.error) is type(mine.error) and str(stock.error) == str(mine.error)
        return "" if alike else "raised otherwise"
    try:
        return "" if same((stock.raw, stock.bsyms), (mine.raw, mine.bsyms)) else "made otherwise"
    except NotPlainData as e:
        return f"made what is not plain data here ({e})"


class Probe:
    """The probed run in progress: which placements still did as stock at every call."""

    def __init__(self, placements: Sequence[str]) -> None:
        self.placements = list(placements)
        self.called: set[str] = set()
        self.diverged: dict[str, str] = {}  # placement -> why, at its first call that differed
        self.spoiled = ""  # a shadow changed its call's arguments: this run is not stock's
        self.shadow_of: str | None = None  # the placement whose shadow is running
        # Inside stock's probed call, the placements whose shadows made it: their nested calls are
        # unprobed (the outer comparison covers what those produce); another placement's are probed.
        self.covered: frozenset[str] = frozenset()

    @property
    def shadowing(self) -> bool:
        return self.shadow_of is not None

    def unchanged(self) -> tuple[str, ...]:
        """The placements whose every call did as stock (and that made one at all)."""
        if self.spoiled:
            return ()
        return tuple(p for p in self.placements if p in self.called and p not in self.diverged)

    def wrap(self, original: Callable, replacements: dict[str, Callable]) -> Callable:
        def probed_call(*args, **kwargs):
            if self.shadow_of is not None:
                return replacements.get(self.shadow_of, original)(*args, **kwargs)
            live = [(name, r) for name, r in replacements.items() if name not in self.diverged and name not in self.covered]
            if self.spoiled or not live:
                return original(*args, **kwargs)
            state = TraceState()
            given = given_state(args, kwargs)
            mine: dict[str, Produced] = {}
            for name, replacement in live:
                self.shadow_of = name
                try:
                    mine[name] = produce(replacement, args, kwargs, state, as_nodes=False)
                finally:
                    self.shadow_of = None
                    state.restore()
                if given_state(args, kwargs) != given:
                    self.spoiled = f"{name}'s version of {getattr(original, '__qualname__', original)} changed its arguments"
                    _CHANGES_ARGUMENTS[name] = self.spoiled
                    return original(*args, **kwargs)
            outer = self.covered
            self.covered = outer | mine.keys()
            try:
                stock = produce(original, args, kwargs, state, as_nodes=False)
            finally:
                self.covered = outer
            with outside_the_trace():
                for name, made in mine.items():
                    self.called.add(name)
                    why = _differs(stock, made)
                    if why:
                        self.diverged[name] = why
            if stock.error is not None:
                raise stock.error
            return stock.raw

        probed_call.__wrapped__ = original  # type: ignore[attr-defined]
        return probed_call


# The probed run in progress in this context (``probing`` sets it), read by the observers (``in_shadow``).
ACTIVE_PROBE: contextvars.ContextVar[Probe | None] = contextvars.ContextVar("ACTIVE_PROBE", default=None)


def shares_compiles(placement: Placement) -> bool:
    """May ``placement``'s compile on a path be stock's where it changes nothing there? Never a gated
    run's (``Placement.gating``): its calls are counted as its own."""
    if placement.is_stock or placement.build is not None or placement.gating is not None:
        return False
    return not changes_arguments(placement) and not other_effects(placement)


def changes_arguments(placement: Placement) -> str:
    """Why ``placement`` is not probed in this process for what its calls do to their arguments: a
    probe saw its version of a call change what the call was given ("" if none has)."""
    return _CHANGES_ARGUMENTS.get(placement.name, "")


@contextlib.contextmanager
def probing(placements: Sequence[Placement]) -> Iterator[Probe]:
    """While active (inside stock, which patches nothing), each call of what ``placements``
    replaced is probed (``Probe``); afterwards ``probe.unchanged()`` names the placements that did
    as stock at every call. Each placement is entered only to find its replacements, and left."""
    probe = Probe([p.name for p in placements])
    with contextlib.ExitStack() as stack:
        by_original: dict[int, tuple[Callable, dict[str, Callable], list]] = {}
        for placement in placements:
            replaced, entered = _replaced(placement)
            # Left at once: its replacements are kept, nothing else of it stays in place while stock
            # runs (a change the probe cannot see, such as a dict's entry, is no stock's).
            entered.close()
            for r in replaced:
                _, replacements, owners = by_original.setdefault(id(r.original), (r.original, {}, []))
                replacements[placement.name] = r.replacement
                owners += [o for o in r.owners if o not in owners]
        wrappers: dict[int, Callable] = {}
        for original, replacements, owners in by_original.values():
            wrapper = probe.wrap(original, replacements)
            wrappers[id(wrapper)] = original
            for owner, attr in owners:
                stack.enter_context(set_attribute(owner, attr, wrapper))
        token = ACTIVE_PROBE.set(probe)
        loaded = len(sys.modules)
        try:
            yield probe
        finally:
            ACTIVE_PROBE.reset(token)
            if len(sys.modules) != loaded:
                stack.callback(_unbind, wrappers)


def _unbind(wrappers: dict[int, Callable]) -> None:
    """Thunder's own function back wherever a module imported during the probed run bound a
    probe's wrapper by name (``from x import f`` while ``f`` was wrapped), which would outlive it."""
    for _, module in thunder_modules():
        for attr, value in list(vars(module).items()):
            if id(value) in wrappers:
                setattr(module, attr, wrappers[id(value)])


# Where each placement replaced something, by (``_placement_key``, Thunder's modules loaded) when it
# was last entered: a placement entered again is checked at those places only (finding them scans every
# Thunder module and class twice, a cost per path and placement).
_TARGETS: dict[tuple[tuple, int], list[tuple[Any, str]]] = {}


# Placement name -> how a probe saw its version of a call change the call's arguments: in this
# process it is compiled on its own from then on (its shadow would spoil each later probe). By
# name, as a probe knows its placements: a gated run is never probed.
_CHANGES_ARGUMENTS: dict[str, str] = {}


# ``_placement_key`` -> what entering it changes besides Thunder's functions ("" if nothing): such a
# placement is never probed (its effect is not a call the probe can compare).
_OTHER_EFFECTS: dict[tuple, str] = {}


def _placement_key(placement: Placement) -> tuple:
    """What the caches above know a placement by: its name and gating (a gated run keeps its
    placement's name, and entering it installs the gate's wrappers, not the placement's)."""
    return (placement.name, placement.gating)


def _attributes_everywhere() -> dict[tuple[str, str], Any]:
    """Every loaded module's attributes, Thunder's classes' and torch's tensor classes', by identity."""
    import torch

    owners = [(name, m) for name, m in list(sys.modules.items()) if m is not None and not name.startswith("thunder")]
    owners += thunder_namespaces() + [("torch.Tensor", torch.Tensor), ("torch._C.TensorBase", torch._C.TensorBase)]
    snapshot = {}
    for name, owner in owners:
        try:
            items = list(vars(owner).items())
        except TypeError:
            continue
        snapshot.update(((name, attr), value) for attr, value in items if attr != "__warningregistry__")
    return snapshot


def _thunder_tables() -> dict[tuple[str, str], dict]:
    """A shallow copy of each dict held by a Thunder module (its registries: grad rules, ops,
    executors' implementations): a placement may change an entry (``mock.patch.dict``)."""
    return {
        (name, attr): dict(value)
        for name, module in thunder_modules()
        for attr, value in list(vars(module).items())
        if isinstance(value, dict) and not attr.startswith("__")
    }


def _entries_changed(before: dict[tuple[str, str], dict], after: dict[tuple[str, str], dict]) -> list[str]:
    changed = []
    for key, table in after.items():
        old = before.get(key, {})
        if table.keys() != old.keys() or any(table[k] is not old[k] for k in table):
            changed.append(f"entries of {key[0]}.{key[1]}")
    return changed


def other_effects(placement: Placement) -> str:
    """What entering ``placement`` changes besides replacing functions in Thunder's modules and
    classes: an attribute elsewhere (torch's), or one of Thunder's that is not a function (a flag).
    "" when nothing: then its effect is its calls, which a probe compares. Asked once per process."""
    known = _OTHER_EFFECTS.get(_placement_key(placement))
    if known is not None:
        return known
    with placement.factory():  # what it imports is loaded before the comparison
        pass
    before, tables = _attributes_everywhere(), _thunder_tables()
    with placement.factory():
        after, tables_after = _attributes_everywhere(), _thunder_tables()
    missing = object()
    changed = [key for key in before.keys() | after.keys() if before.get(key, missing) is not after.get(key, missing)]
    thunders = ("thunder.", "thunder")
    # Outside Thunder, a function replaced (torch's); a number that moved there is a counter or a
    # clock of another library's (Hypothesis times its garbage collections), not the placement's.
    other = [f"{o}.{a}" for o, a in changed if not o.startswith(thunders) and callable(after.get((o, a), before.get((o, a))))]
    other += [f"{o}.{a}" for o, a in changed if o.startswith(thunders) and not callable(after.get((o, a), before.get((o, a))))]
    other += _entries_changed(tables, tables_after)
    _OTHER_EFFECTS[_placement_key(placement)] = why = f"it changes {', '.join(sorted(other)[:3])}" if other else ""
    return why


def _thunder_modules() -> int:
    """How many of Thunder's modules are loaded: one loaded since may hold another alias."""
    return len(thunder_modules())


def _replaced(placement: Placement) -> tuple[list[Replaced], contextlib.ExitStack]:
    """``interception.replaced_by(placement.factory)``, from the places found when it was last
    entered while as many modules were loaded, if it replaced each of them again."""
    key = (_placement_key(placement), _thunder_modules())
    targets = _TARGETS.get(key)
    if targets:
        before = [vars(owner).get(attr) for owner, attr in targets]
        stack = contextlib.ExitStack()
        stack.enter_context(placement.factory())
        after = [vars(owner).get(attr) for owner, attr in targets]
        if all(b is not None and a is not b for b, a in zip(before, after)):
            found: dict[tuple[int, int], Replaced] = {}
            for (owner, attr), original, replacement in zip(targets, before, after):
                label = f"{getattr(original, '__module__', '')}.{getattr(original, '__qualname__', attr)}"
                r = found.setdefault((id(original), id(replacement)), Replaced(label, attr, original, replacement))
                r.owners.append((owner, attr))
            return list(found.values()), stack
        stack.close()
    replaced, stack = replaced_by(placement.factory)
    _TARGETS[(_placement_key(placement), _thunder_modules())] = [target for r in replaced for target in r.owners]
    return replaced, stack


def in_shadow() -> bool:
    """Is a placement's shadow running (an observer stands aside: it is not stock's call)?"""
    probe = ACTIVE_PROBE.get()
    return probe is not None and probe.shadowing


def shared_outcome(stock, placement: str):
    """Stock's outcome on a path as ``placement``'s, which did as stock at every call there: a copy
    whose lists the oracles may extend without touching stock's."""
    return dataclasses.replace(
        stock,
        placement=placement,
        notes=list(stock.notes),
        not_checked=list(stock.not_checked),
        misstated=list(stock.misstated),
        dce_calls=list(stock.dce_calls),
        grad_rules=list(stock.grad_rules),
        split_reasons=list(stock.split_reasons),
        compared_traces=dict(stock.compared_traces),
        comparison=None,
        unchanged_by=(),
        shared_from=stock.placement,
    )
