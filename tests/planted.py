"""Planted faults, each a placement: oracles are proven by catching these and staying silent on stock.

Importable as ``planted:NAME`` when ``tests/`` is on the path, which also exercises user placements.
"""

from __future__ import annotations

import contextlib
import os
import time

from fuzzdce.running.patching import patch_everywhere
from fuzzdce.running.placements import dce_in_symbol_call


@contextlib.contextmanager
def _after_dce(edit):
    """Thunder's ``dce``, then ``edit(trace, result)`` changing the result in place: the shape of most faults here."""
    from thunder.core import transform_common

    original_dce = transform_common.dce

    def dce_then_edit(trace, *args, **kwargs):
        result = original_dce(trace, *args, **kwargs)
        edit(trace, result)
        return result

    with patch_everywhere(transform_common, "dce", dce_then_edit):
        yield


def _collide_last_output(trace, result) -> None:
    from thunder.core.trace import TraceCtx, tracectx

    for i in reversed(range(len(result.bound_symbols))):
        bsym = result.bound_symbols[i]
        if bsym.flat_proxy_args and len(bsym.flat_proxy_outs) == 1:
            victim = bsym.flat_proxy_args[0]
            with tracectx(TraceCtx()):
                clash = bsym.flat_proxy_outs[0].replace_name(victim.name)
            result.bound_symbols[i] = bsym.from_bsym(output=clash)
            return


def colliding_names():
    """After every DCE, the last computation's output is renamed to one of its inputs' names."""
    return _after_dce(_collide_last_output)


def torch_ops(trace) -> int:
    """The trace's top-level torch-level ops."""
    return sum(1 for b in trace.bound_symbols if getattr(b.sym.module, "__name__", "") == "thunder.torch")


def colliding_names_in_long_traces(min_computations: int = 4):
    """``colliding_names``, only in traces of at least ``min_computations`` torch-level ops.

    A fault that the simplest programs (Hypothesis's first draws) never trigger: finding it
    again at once, in a run of one program, shows an example database replaying it.
    """

    def collide_if_long(trace, result) -> None:
        if torch_ops(result) >= min_computations:
            _collide_last_output(trace, result)

    return _after_dce(collide_if_long)


def colliding_names_past_one_op():
    """``colliding_names`` in traces of two or more torch-level ops: Hypothesis's first draw, its
    simplest program, never shows it; most later ones of a few cheap ops do."""
    return colliding_names_in_long_traces(2)


def add_computes_sub():
    """After every DCE, each top-level ``ltorch.add`` is rebound to ``ltorch.sub``: values change."""
    import thunder.torch as ltorch

    def subtract(trace, result) -> None:
        result.bound_symbols = [
            bsym.from_bsym(sym=ltorch.sub, subsymbols=()) if bsym.sym is ltorch.add else bsym for bsym in result.bound_symbols
        ]

    return _after_dce(subtract)


def add_and_mul_computed_wrong():
    """Two faults in one placement: after every DCE, each top-level ``ltorch.add`` is rebound to
    ``ltorch.sub`` and each ``ltorch.mul`` to ``ltorch.true_divide``: wrong values at two ops."""
    import thunder.torch as ltorch

    wrong = {ltorch.add: ltorch.sub, ltorch.mul: ltorch.true_divide}

    def rebind(trace, result) -> None:
        result.bound_symbols = [
            bsym.from_bsym(sym=wrong[bsym.sym], subsymbols=()) if bsym.sym in wrong else bsym for bsym in result.bound_symbols
        ]

    return _after_dce(rebind)


@contextlib.contextmanager
def failing_splitter():
    """thunderfx's splitter sees every symbol raise, so every node is split off."""
    from thunder.dynamo import utils as dynamo_utils

    original = dynamo_utils.try_execute_thunder_symbol

    def raising_symbol(*args, **kwargs):
        raise KeyError("planted")

    def try_execute(thunder_symbol, node, thunder_options):
        return original(raising_symbol, node, thunder_options)

    with patch_everywhere(dynamo_utils, "try_execute_thunder_symbol", try_execute):
        yield


@contextlib.contextmanager
def cos_grad_flipped():
    """The grad rule of ``prims.cos`` forgets the minus sign: forward right, backward wrong."""
    from unittest import mock

    from thunder.core import prims, transforms
    from thunder.core.langctxs import Languages, langctx

    def flipped(a):
        forward = prims.cos(a)
        transforms.put_grad(a, transforms.get_grad(forward) * prims.sin(a))
        return forward

    with mock.patch.dict(transforms._grad_fn_map, {prims.PrimIDs.COS: langctx(Languages.TORCH)(flipped)}):
        yield


@contextlib.contextmanager
def cos_grad_nan_at_zero():
    """The grad rule of ``prims.cos`` is right but for a factor ``a / a``: NaN where its input is 0
    (as a rewritten formula that divides by its input is), where eager's gradient is finite (0)."""
    from unittest import mock

    from thunder.core import prims, transforms
    from thunder.core.langctxs import Languages, langctx

    def nan_at_zero(a):
        forward = prims.cos(a)
        grad = prims.mul(prims.mul(transforms.get_grad(forward), prims.sin(a)), prims.div(a, a))
        transforms.put_grad(a, prims.neg(grad))
        return forward

    with mock.patch.dict(transforms._grad_fn_map, {prims.PrimIDs.COS: langctx(Languages.TORCH)(nan_at_zero)}):
        yield


def inplace_made_functional():
    """After every DCE, each top-level in-place op (``mul_``) is rebound to its out-of-place twin (``mul``).

    Results stay right; the inputs the program mutated are left untouched.
    """
    import thunder.torch as ltorch

    def twin(bsym):
        name = bsym.sym.name
        functional = getattr(ltorch, name[:-1], None) if name.endswith("_") else None
        return bsym if functional is None else bsym.from_bsym(sym=functional, subsymbols=())

    def functionalize(trace, result) -> None:
        result.bound_symbols = [twin(bsym) for bsym in result.bound_symbols]

    return _after_dce(functionalize)


@contextlib.contextmanager
def exp_unsupported_in_splitter():
    """thunderfx's splitter reports ``torch.exp`` nodes as missing op support: a split appears, no exception."""
    import torch
    from thunder.dynamo import utils as dynamo_utils

    original = dynamo_utils.is_node_supported_by_thunder

    def is_supported(node, thunder_options):
        if node.op == "call_function" and node.target is torch.exp:
            reason = dynamo_utils.SplitReason(dynamo_utils.SplitReasonType.MISSING_OP_SUPPORT, f"planted: {node.name}")
            return False, reason
        return original(node, thunder_options)

    with patch_everywhere(dynamo_utils, "is_node_supported_by_thunder", is_supported):
        yield


def lazy_dce():
    """DCE keeps the first dead bound symbol whose inputs are still defined: DCE is no longer a fixed point."""

    def keep_one(trace, result) -> None:
        defined = {o.name for b in result.bound_symbols for o in b.flat_proxy_outs}
        dead = [b for b in trace.bound_symbols if b.flat_proxy_outs and not any(o.name in defined for o in b.flat_proxy_outs)]
        revived = next((b for b in dead if all(a.name in defined for a in b.flat_proxy_args)), None)
        if revived is not None:  # just before the return, where everything it reads is defined
            result.bound_symbols = [*result.bound_symbols[:-1], revived, result.bound_symbols[-1]]

    return _after_dce(keep_one)


def failing_dce_in_long_traces(min_computations: int = 2):
    """Thunder's ``dce`` raises on traces of at least ``min_computations`` torch-level ops.

    Applied around a whole campaign it stands for a bug in stock Thunder (a baseline bug) that
    shows on every path, with a known minimum: programs of ``min_computations`` ops.
    """
    from thunder.core import transform_common

    original_dce = transform_common.dce

    def torch_ops(trace) -> int:
        return sum(1 for b in trace.bound_symbols if getattr(b.sym.module, "__name__", "") == "thunder.torch")

    def dce_or_raise(trace, *args, **kwargs):
        if torch_ops(trace) >= min_computations:
            raise RuntimeError("planted: dce fails on long traces")
        return original_dce(trace, *args, **kwargs)

    return patch_everywhere(transform_common, "dce", dce_or_raise)


def _edit_subsymbols(edit):
    """After every DCE, ``edit(subsymbols) -> subsymbols`` applied to every kept bound symbol's
    decomposition, at every depth (new bound symbols: earlier traces keep theirs)."""

    def rebuild(bsym):
        if not bsym.subsymbols:
            return bsym
        return bsym.from_bsym(subsymbols=[rebuild(s) for s in edit(list(bsym.subsymbols))])

    def apply(trace, result) -> None:
        result.bound_symbols = [rebuild(b) for b in result.bound_symbols]

    return _after_dce(apply)


def dce_drops_dont_dce():
    """After every DCE, subsymbols tagged ``DONT_DCE`` (``copy_`` of an in-place op) are dropped from
    every decomposition. In Thunder 0.2.6 every such subsymbol also produces its parent's output, so
    executors that flatten the parent notice too; ``dce-sound`` names the tag either way."""
    from thunder.core import prims
    from thunder.core.symbol import has_tags

    return _edit_subsymbols(lambda subs: [s for s in subs if not has_tags(s, {prims.OpTags.DONT_DCE})])


def dce_drops_live():
    """After every DCE, the first subsymbol of a decomposition that a later sibling reads is dropped
    (untagged: only its liveness makes it wrong)."""
    from thunder.core import prims
    from thunder.core.symbol import has_tags

    def drop_first_read(subs):
        for i, s in enumerate(subs):
            outs = {o.name for o in s.flat_proxy_outs}
            read = any(outs & {a.name for a in later.flat_proxy_args} for later in subs[i + 1 :])
            if read and not has_tags(s, {prims.OpTags.DONT_DCE, prims.OpTags.IN_PLACE}):
                return subs[:i] + subs[i + 1 :]
        return subs

    return _edit_subsymbols(drop_first_read)


def does_nothing():
    """A placement that patches nothing: a campaign under it must say it was not exercised."""
    return contextlib.nullcontext()


def dce_edits_kept():
    """After every DCE, the first subsymbol of each decomposition that reads two different proxies
    reads them the other way round: nothing is removed, a kept subsymbol is edited (executors run
    the top-level symbols, so outputs stay right)."""

    def swap_first_two_reads(subs):
        for i, s in enumerate(subs):
            proxies = [a for a in s.args if hasattr(a, "name")]
            if len(proxies) >= 2 and proxies[0].name != proxies[1].name and proxies[0] is s.args[0] and proxies[1] is s.args[1]:
                return [*subs[:i], s.from_bsym(args=(s.args[1], s.args[0], *s.args[2:])), *subs[i + 1 :]]
        return subs

    return _edit_subsymbols(swap_first_two_reads)


@contextlib.contextmanager
def dce_hangs():
    """Every DCE blocks for an hour in C (a lock acquired twice): the alarm cannot end it, only
    the sandbox's parent can."""
    import threading

    from thunder.core import transform_common

    def hang(trace, *args, **kwargs):
        lock = threading.Lock()
        lock.acquire()
        lock.acquire(timeout=3600)

    with patch_everywhere(transform_common, "dce", hang):
        yield


def _dce_by_outputs_only(bsym):
    """``bsym`` with its subsymbols kept only where their outputs reach its output: a DCE that
    knows no tag (``DONT_DCE`` checks, returns and ``copy_`` are collected like any dead value)."""
    if not bsym.subsymbols:
        return bsym
    needed = {o.name for o in bsym.flat_proxy_outs}
    kept = []
    for sub in reversed(bsym.subsymbols):
        if any(o.name in needed for o in sub.flat_proxy_outs):
            kept.append(sub)
            needed |= {a.name for a in sub.flat_proxy_args}
    return bsym.from_bsym(subsymbols=list(reversed(kept)))


@contextlib.contextmanager
def symcall_ignoring_dont_dce():
    """``symcall`` (subsymbol DCE in ``Symbol.__call__``) with a DCE that ignores ``DONT_DCE``: right
    in every other respect. In the prologue each top-level check (``check_len``,
    ``check_tensor_metadata``, ...) stays, since the trace's own DCE keeps it, but loses the
    ``prims.check_*`` it decomposes into; executors run the top-level checks, so every call stays
    right and only a structural oracle reading the prologue sees the broken contract."""
    with dce_in_symbol_call(_dce_by_outputs_only):
        yield


def _prologue_without(check: str):
    """The prologue made callable without its top-level ``check`` of the call's own arguments (the
    cache-info checks stay): a call with another argument reuses a computation built for the first
    one, which may have folded it in."""
    from thunder.executors import passes

    original = passes.transform_for_execution

    def checked_from_args(trace) -> set[str]:
        """Names unpacked from the prologue's ``args``: the call's own arguments."""
        return {
            o.name for b in trace.bound_symbols if any(a.name == "args" for a in b.flat_proxy_args) for o in b.flat_proxy_outs
        }

    def without_checks(trace, executors_list, *args, **kwargs):
        # Thunder makes the prologue callable with the Python executor alone; computations get more.
        if [getattr(e, "name", "") for e in executors_list] == ["python"]:
            from thunder.core.trace import from_trace

            arguments = checked_from_args(trace)
            edited = from_trace(trace)
            edited.bound_symbols = [
                b for b in trace.bound_symbols if not (b.sym.name == check and {a.name for a in b.flat_proxy_args} & arguments)
            ]
            trace = edited
        return original(trace, executors_list, *args, **kwargs)

    return patch_everywhere(passes, "transform_for_execution", without_checks)


def prologue_skips_number_checks():
    """The prologue without its ``check_number_type_and_value`` of the call's own arguments: a call
    with another number reuses a computation built for the first one."""
    return _prologue_without("check_number_type_and_value")


def prologue_skips_string_checks():
    """The prologue without its ``check_string_value`` of the call's own arguments: a call with
    another string (``rounding_mode``) reuses a computation that folded the first one in."""
    return _prologue_without("check_string_value")


def dce_out_of_memory():
    """Every DCE raises ``MemoryError``, as a worker at its memory limit does: a crash, not Thunder raising."""

    def exhausted(trace, result) -> None:
        raise MemoryError

    return _after_dce(exhausted)


@contextlib.contextmanager
def computation_off_by_one_ulp():
    """Thunder's compiled forward computation returns its first floating output one unit in the
    last place up (``torch.nextafter`` towards +inf) while its trace stays stock's: an error eager's
    tolerance accepts, which only the bit-for-bit comparison with stock (``exact``) sees."""
    import torch
    from thunder.core.trace import TraceCtx
    from torch.utils import _pytree

    original = TraceCtx.python_callable

    def nudge_first_float(result):
        for leaf in _pytree.tree_leaves(result):
            if isinstance(leaf, torch.Tensor) and leaf.is_floating_point() and leaf.numel():
                with torch.no_grad():  # in place: the output keeps its identity and autograd state
                    leaf.copy_(torch.nextafter(leaf, torch.full_like(leaf, float("inf"))))
                break
        return result

    def python_callable(self, *args, **kwargs):
        fn = original(self, *args, **kwargs)
        if self.siginfo().name != "computation":
            return fn

        def off_by_one_ulp(*a, **k):
            return nudge_first_float(fn(*a, **k))

        return off_by_one_ulp

    with patch_everywhere(TraceCtx, "python_callable", python_callable):
        yield


def _compiling_for_float64_raises(error: Exception):
    """Thunder's ``transform_for_execution`` raises ``error`` on a trace reading a float64 tensor:
    a program compiled for float32 inputs runs, a call that varies an input's dtype to float64
    (the dtype guard call) fails while Thunder compiles again, where eager runs it."""
    import torch
    from thunder.core import dtypes
    from thunder.core.proxies import TensorProxy
    from thunder.executors import passes

    original = passes.transform_for_execution

    def reads_float64(trace) -> bool:
        return any(
            isinstance(p, TensorProxy) and dtypes.to_torch_dtype(p.dtype) == torch.float64
            for b in trace.bound_symbols
            for p in b.flat_proxy_args
        )

    def failing(trace, *args, **kwargs):
        if reads_float64(trace):
            raise error
        return original(trace, *args, **kwargs)

    return patch_everywhere(passes, "transform_for_execution", failing)


def recompile_fails_for_float64():
    """Compiling again for float64 inputs raises an internal ``KeyError``: a guard call's finding."""
    return _compiling_for_float64_raises(KeyError("planted: no entry for float64"))


def recompile_unsupported_for_float64():
    """Compiling again for float64 inputs raises ``NotImplementedError`` saying it is not supported:
    a clear refusal, activity and no finding."""
    return _compiling_for_float64_raises(NotImplementedError("planted: float64 inputs are not supported"))


def copy_skips_leaf_check():
    """After every DCE, each ``copy_`` (an in-place op's write) is bound with ``grad_enabled=False``:
    the executor then skips its runtime check that the target is no leaf requiring grad. Writes and
    results stay right; only a call that eager and stock reject (an in-place op on a leaf that
    requires grad) now returns a result."""

    def without_check(trace, result) -> None:
        result.bound_symbols = [
            bsym.from_bsym(kwargs={**bsym.kwargs, "grad_enabled": False})
            if bsym.sym.name == "copy_" and bsym.kwargs.get("grad_enabled")
            else bsym
            for bsym in result.bound_symbols
        ]

    return _after_dce(without_check)


def _top_level_ops(trace) -> set[str]:
    return {b.sym.name for b in trace.bound_symbols}


def _raise_on_exp(trace, result) -> None:
    if "exp" in _top_level_ops(result):
        raise RuntimeError("planted: exp is broken")


def exp_raises():
    """After every DCE, a trace holding ``exp`` raises: one op broken, every other one fine."""
    return _after_dce(_raise_on_exp)


def exp_aborts():
    """After every DCE, a trace holding ``exp`` aborts the process, as a C++ assertion in torch or
    Thunder does: no exception to catch, only a process that dies (a ``crash`` in a sandbox)."""
    import os

    def abort_on_exp(trace, result) -> None:
        if "exp" in _top_level_ops(result):
            os.abort()

    return _after_dce(abort_on_exp)


def exp_raises_tanh_hangs():
    """``exp_raises``, and a trace holding ``tanh`` but no ``exp`` hangs for an hour (in Python, so the
    time limit's safe points are never reached: only the sandbox's parent ends it)."""
    import time

    def edit(trace, result) -> None:
        ops = _top_level_ops(result)
        _raise_on_exp(trace, result)
        if "tanh" in ops:
            deadline = time.monotonic() + 3600
            while time.monotonic() < deadline:
                time.sleep(0.1)

    return _after_dce(edit)


def _restated(op: str, **changes):
    """After every DCE, the tensor the first top-level ``op`` defines is stated with ``changes``
    (its name kept, and each later reader of it given the new statement): the trace misstates it,
    and what runs is the same code on the same values."""

    def restate(trace, result) -> None:
        from thunder.core.proxies import TensorProxy, variableify
        from thunder.core.trace import TraceCtx, tracectx

        swap: dict = {}
        bound = []
        for bsym in result.bound_symbols:
            out = next((p for p in bsym.flat_proxy_outs if isinstance(p, TensorProxy)), None)
            if not swap and bsym.sym.name == op and out is not None:
                with tracectx(TraceCtx()):
                    swap = {variableify(out): out.replace(**changes)}
            bound.append(bsym.from_bsym_swap_proxies(swap) if swap else bsym)
        result.bound_symbols = bound

    return _after_dce(restate)


@contextlib.contextmanager
def cos_states_float64():
    """``torch.cos``'s Thunder symbol computes, in its decomposition, a float64 result whatever its
    input's dtype: the trace states ``cos``'s tensor float64 while the torch executor runs
    ``torch.cos``, in the input's dtype. The ops after it are traced from the wrong statement and
    misstate theirs too: the first op whose statement is wrong is ``cos``."""
    from thunder import clang
    from thunder.core import dtypes

    original = clang.cos

    def cos_in_float64(a):
        return clang.maybe_convert_to_dtype(original(a), dtypes.float64)

    with patch_everywhere(clang, "cos", cos_in_float64):
        yield


def input_states_requires_grad():
    """The first tensor input a trace unpacks is stated to require grad, whether or not it does."""
    return _restated("unpack_trivial", requires_grad=True)


def aborts_past_one_op():
    """The process compiling aborts (``os.abort``: SIGABRT, as a failed C++ assertion or glibc's
    "double free" does) after a DCE of a trace of two or more torch-level ops: Hypothesis's first,
    simplest program passes, and most later ones kill whatever process runs their compile."""

    def abort_if_long(trace, result) -> None:
        if torch_ops(result) >= 2:
            os.abort()

    return _after_dce(abort_if_long)


# How long ``sleeps_past_one_op`` sleeps, once per compile: well under a test's job time limit.
SLEEP_SECONDS = 2.5


def sleeps_past_one_op():
    """Changes nothing, but sleeps ``SLEEP_SECONDS`` once per compile (the first DCE of a trace of
    two or more torch-level ops): a slow program, never a wrong one, where the first is quick."""
    slept = []

    def sleep_once(trace, result) -> None:
        if not slept and torch_ops(result) >= 2:
            slept.append(True)
            time.sleep(SLEEP_SECONDS)

    return _after_dce(sleep_once)
