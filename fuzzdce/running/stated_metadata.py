"""What each tensor of an execution trace is when it runs, against what the trace states it is.

Thunder states every tensor's shape, dtype, device and ``requires_grad`` in its traces (the proxy's
metadata, ``# t5: "cpu f32[2, 3]"``), and every later pass, executor and the grad transform act on
those statements. Thunder's own op tests compare them with what runs, at the outputs of the last
trace (``thunder/tests/test_ops.py``, ``assert_consistency_of_compiletime_and_runtime``); here
every tensor a top-level bound symbol defines is compared, in order, so the first op whose
statement is wrong is named.

How: while a path runs, each execution trace Thunder turns into the function it calls
(``TraceCtx.python_callable`` of the ``computation`` and ``backward_fn`` traces, forward and
backward) is turned into that function with one call after each bound symbol defining tensors,
given those tensors: the same mechanism as Thunder's ``dev_utils.debug_transform`` (a prim symbol
whose call context is the observer), on a copy of the trace, so the traces Thunder records, and
every other oracle reads, are its own. What runs is otherwise the very code Thunder made, on the
call's own inputs (the backward on its own saved tensors and cotangents), with no second run: one
comparison of four attributes per tensor, a few microseconds per op. The first tensor of each run
that differs is recorded as plain data (``oracles.metadata.Misstated``, in ``Outcome.misstated``)
for the ``metadata`` oracle to judge.

What a trace states:
- a dimension that is a number proxy (``cache="symbolic values"``) states its value for the inputs
  the trace was made from, the first run of its function; on later runs (other shapes, the cache
  hit) only a dimension that is a number is compared, and the rank;
- ``requires_grad`` is Thunder's statement about the inputs of the forward trace only (what its
  prologue checks and its grad transform reads): every execution trace runs under
  ``torch.no_grad()``, and an intermediate's flag is, by Thunder's design, not propagated
  (Lightning-AI/lightning-thunder#1570: "unused and misleading"), so it states nothing that runs; a
  backward trace's inputs are the forward's intermediates it saved and the cotangents autograd
  hands it. The flags of the tensors the forward trace unpacks from its arguments are compared.

fuzzdce's own failure to observe never changes what Thunder runs: a trace that cannot be observed
runs as Thunder made it, and is counted as not checked (``Outcome.could_not_check``), as is a run
whose forward function was never seen (a Thunder naming it otherwise).
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Iterator
from typing import Any

import torch

from fuzzdce.core.model import CallStage, Outcome
from fuzzdce.oracles.metadata import ORACLE_NAME, Misstated
from fuzzdce.running.compile_sharing import in_shadow
from fuzzdce.running.patching import patch_everywhere

# The execution traces whose functions run a program, by the name Thunder gives their function: the
# forward (the whole computation without grad) and the backward.
OBSERVED = {"computation": CallStage.FORWARD, "backward_fn": CallStage.BACKWARD}


class Stated:
    """One tensor proxy's metadata as its trace states it, in torch's terms, and how to compare."""

    __slots__ = ("name", "op", "stated_by", "shape", "dtype", "device", "requires_grad")

    def __init__(self, proxy, op: str, stated_by: str = "", *, is_input: bool) -> None:
        from thunder.core import devices, dtypes

        self.name = proxy.name
        self.op = op
        self.stated_by = stated_by
        # A number as itself; a number proxy's dimension as (None, the value it was traced with).
        self.shape = tuple(d if type(d) is int else (None, getattr(d, "value", None)) for d in _shape_of(proxy))
        self.dtype = dtypes.to_torch_dtype(proxy.dtype)
        self.device = devices.to_torch_device(proxy.device)
        self.requires_grad = bool(proxy.requires_grad) if is_input else None

    def differs(self, value: Any, traced_run: bool) -> tuple[str, str, str] | None:
        """(attribute, stated, actual) where ``value`` is not what this states, or None."""
        if not isinstance(value, torch.Tensor):
            return ("type", "Tensor", type(value).__name__)
        actual = tuple(value.shape)
        if len(actual) != len(self.shape) or any(not _holds(s, a, traced_run) for s, a in zip(self.shape, actual)):
            stated = tuple(s[1] if isinstance(s, tuple) else s for s in self.shape)
            return ("shape", str(list(stated)), str(list(actual)))
        if value.dtype != self.dtype:
            return ("dtype", str(self.dtype), str(value.dtype))
        if value.device != self.device:
            return ("device", str(self.device), str(value.device))
        if self.requires_grad is not None and value.requires_grad != self.requires_grad:
            return ("requires_grad", str(self.requires_grad), str(value.requires_grad))
        return None


def _holds(stated, actual: int, traced_run: bool) -> bool:
    """Does a stated dimension hold for ``actual``? A number always states its value; a number
    proxy's traced value is stated for the run on the inputs it was traced from alone."""
    if not isinstance(stated, tuple):
        return stated == actual
    traced = stated[1]
    return not traced_run or type(traced) is not int or traced == actual


def _shape_of(proxy) -> tuple:
    """The shape a tensor proxy states (its own record of it: ``shape`` traces a query under symbolic values)."""
    shape = getattr(proxy, "_shape", None)
    return tuple(shape if shape is not None else proxy.shape)


def defining_symbol(bsym, name: str):
    """The symbol that defines proxy ``name`` in top-level ``bsym``: its own, or in a fusion region
    the first of its subsymbols defining it (the region is no op of the program's)."""
    if getattr(bsym.sym, "is_fusion", False):
        for sub in bsym.subsymbols:
            if any(p.name == name for p in sub.flat_proxy_outs):
                return sub.sym
    return bsym.sym


def stated_by(symbol) -> str:
    """The code that stated a tensor's metadata, given the ``symbol`` defining it, where it is not
    the op alone's: the meta function of a prim (``module.qualname``; every torch op Thunder
    registers automatically shares one); "" for an op its decomposition states."""
    meta = getattr(symbol, "meta", None) if getattr(symbol, "is_prim", False) else None
    if meta is None:
        return ""
    return f"{getattr(meta, '__module__', '')}.{getattr(meta, '__qualname__', type(meta).__name__)}"


def _defines_inputs(bsym) -> bool:
    """Does ``bsym`` unpack the trace function's arguments (``unpack_trivial``, ``unpack_sequence``)?"""
    return bsym.sym.name.startswith("unpack_")


class Observer:
    """The runs of one observed trace's function: checks each and records its first misstatement."""

    def __init__(self, trace_kind: str, outcome: Outcome) -> None:
        self.trace_kind = trace_kind
        self.outcome = outcome
        self.runs = 0  # started runs of the function; the first is on the inputs it was traced with
        self.found = False  # this run's first misstatement is recorded

    def check(self, stated: tuple[Stated, ...], *values) -> None:
        """Called by the running trace after a bound symbol with its tensors."""
        if self.found:
            return
        try:
            for s, value in zip(stated, values):
                wrong = s.differs(value, traced_run=self.runs == 1)
                if wrong is not None:
                    self.found = True
                    self.outcome.misstated.append(Misstated(str(self.trace_kind), s.op, s.name, *wrong, s.stated_by))
                    return
        except Exception as e:  # fuzzdce's own failure to compare: never Thunder's, never in its way
            self.found = True
            self.outcome.could_not_check(ORACLE_NAME, f"could not compare a {self.trace_kind} trace with what ran", e)


def observing_copy(trace, observer: Observer):
    """A copy of ``trace`` that calls ``observer.check`` after each top-level bound symbol defining
    tensors, with them (and at its start counts a run)."""
    from thunder.core.proxies import TensorProxy
    from thunder.core.symbol import Symbol
    from thunder.core.trace import from_trace

    copy = from_trace(trace)
    counter = itertools.count()

    def observing(name: str, call, *tensors):
        """A call of ``call`` with ``tensors``, as a bound symbol: a prim with no meta (nothing
        traces it), whose call context is ``call``, as ``debug_transform``'s symbols are."""
        return Symbol(name, is_prim=True).bind(*tensors, output=None, _call_ctx={name: call})

    def started() -> None:
        observer.runs += 1
        observer.found = False

    bound = [observing("fuzzdce_observe_start", started)]
    for bsym in trace.bound_symbols:
        bound.append(bsym)
        tensors = [p for p in bsym.flat_proxy_outs if isinstance(p, TensorProxy)]
        if not tensors:
            continue
        is_input = observer.trace_kind == CallStage.FORWARD and _defines_inputs(bsym)
        symbols = [defining_symbol(bsym, p.name) for p in tensors]
        stated = tuple(Stated(p, s.name, stated_by(s), is_input=is_input) for p, s in zip(tensors, symbols))
        name = f"fuzzdce_observe_{next(counter)}"

        def check(*values, stated=stated) -> None:
            observer.check(stated, *values)

        bound.append(observing(name, check, *tensors))
    copy.bound_symbols = bound  # the return defines nothing: it stays last
    return copy


@contextlib.contextmanager
def observed_metadata(outcome: Outcome) -> Iterator[None]:
    """While active, every forward and backward execution trace Thunder makes a function of runs
    with its tensors compared with what it states (``Outcome.misstated``)."""
    from thunder.core.trace import TraceCtx

    original = TraceCtx.python_callable
    observed: list[str] = []

    def python_callable(self, *args, **kwargs):
        if in_shadow():  # another placement's call, probed beside stock's (``compile_sharing``): not this run's
            return original(self, *args, **kwargs)
        try:
            kind = OBSERVED.get(self.siginfo().name)
        except Exception:
            kind = None
        if kind is None:
            return original(self, *args, **kwargs)
        try:
            function = original(observing_copy(self, Observer(kind, outcome)), *args, **kwargs)
        except Exception as e:  # a trace fuzzdce cannot observe runs as Thunder made it: not checked
            outcome.could_not_check(ORACLE_NAME, f"could not observe a {kind} trace", e)
            return original(self, *args, **kwargs)  # Thunder's own raise, if it is one, raised again
        observed.append(kind)
        return function

    try:
        with patch_everywhere(TraceCtx, "python_callable", python_callable):
            yield
    finally:
        # A Thunder that ran forward traces named otherwise than ``OBSERVED`` says: never a clean run.
        made = outcome.error is None and any(label.kind == CallStage.FORWARD for label, _ in outcome.traces)
        if made and not observed and not any(who == ORACLE_NAME for who, _ in outcome.not_checked):
            outcome.could_not_check(ORACLE_NAME, "observed no forward trace's function")
