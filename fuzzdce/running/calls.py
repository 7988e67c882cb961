"""One call of a program's function, recorded as a ``Call``, and its float64 twin.

``make_call`` makes fresh inputs, calls the function (forward, then backward with seeded
``cotangents`` for a grad call) and records outputs, gradients and the inputs' state after; an
exception is recorded, not raised. A call's float64 twin runs on the same inputs moved to float64
(``transfer``, ``InFloat64``): the reference a lower-precision result is judged against.
"""

from __future__ import annotations

import contextlib
import re
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import torch
from torch.overrides import TorchFunctionMode

from fuzzdce.core.errors import (
    harness_message,
    read_as_its_user,
    why_fuzzdces_own,
    why_the_machines,
)
from fuzzdce.core.model import (
    EAGER,
    Call,
    CallLabel,
    CallStage,
    ErrorInfo,
    FailureKind,
    JobFailure,
    Outcome,
)
from fuzzdce.running.watchdog import out_of_memory, safe_point, timed_out


def _detach(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return value.detach().to("cpu", copy=True)
    if isinstance(value, (tuple, list)):
        return [_detach(v) for v in value]
    return value


def autograd_function_of(tensor: torch.Tensor) -> str | None:
    """The ``torch.autograd.Function`` whose node made ``tensor`` ("module.qualname"), or None: a
    custom Function's node knows its class (``_forward_cls``), a built-in op's does not."""
    cls = getattr(tensor.grad_fn, "_forward_cls", None)
    return None if cls is None else f"{cls.__module__}.{cls.__qualname__}"


def _flat_tensors(value: Any) -> list[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (tuple, list)):
        return [t for v in value for t in _flat_tensors(v)]
    return []


def cotangents(outputs: list[torch.Tensor], rounded_to: list[torch.dtype] | None = None) -> list[torch.Tensor]:
    """Seeded cotangents, one per output position, drawn in output order for every output: the
    cotangent of output ``i`` is the same in eager and in Thunder, whichever other outputs require
    grad (drawing only for those that do would hand output ``i`` another's cotangent, and a
    requires_grad mismatch would show up again as a gradient mismatch).

    ``rounded_to``: each floating cotangent is first rounded to that dtype (eager's output dtype,
    for the float64 run: the same cotangents, exactly, as eager's)."""
    generator = torch.Generator().manual_seed(0)
    drawn = [torch.randn(o.shape, generator=generator, dtype=torch.float64) for o in outputs]
    if rounded_to is not None and len(rounded_to) == len(drawn):
        drawn = [c.to(d) if d.is_floating_point else c for c, d in zip(drawn, rounded_to)]
    return [c.to(dtype=o.dtype, device=o.device) if o.is_floating_point() else c for c, o in zip(drawn, outputs)]


def backward(
    outputs: list[torch.Tensor], inputs: list[torch.Tensor], rounded_to: list[torch.dtype] | None = None
) -> list[torch.Tensor] | None:
    """Gradients of ``sum(output * cotangent)`` w.r.t. each input requiring grad (zeros when unused)."""
    pairs = [(o, c) for o, c in zip(outputs, cotangents(outputs, rounded_to)) if o.requires_grad]
    leaves = [x for x in inputs if isinstance(x, torch.Tensor) and x.requires_grad]
    if not pairs or not leaves:
        return None
    differentiable, seeds = zip(*pairs)
    grads = torch.autograd.grad(list(differentiable), leaves, list(seeds), allow_unused=True, materialize_grads=True)
    return _detach(list(grads))


@safe_point
def make_call(
    outcome: Outcome,
    label: CallLabel,
    fn: Callable,
    program,
    *,
    grad: bool = False,
    requires_grad: bool | None = None,
    like: Call | None = None,
) -> Call:
    """Call ``fn`` on fresh inputs of ``program`` and record the call in ``outcome.calls[label]``
    (``outcome.guard_calls`` for a guard call, whose error is no error of the outcome).

    ``grad``: inputs require grad, and the call backpropagates; ``requires_grad`` overrides whether
    inputs require grad (a forward-only call with inputs that do). ``like``: eager's call of which
    this is the float64 twin: inputs in float64 (``transfer``), cotangents rounded as that call's were,
    recorded in ``outcome.float64_calls``. Inputs are made on ``outcome.device`` (``transfer``).
    Exceptions are recorded, not raised (a time-out, running out of memory and an environment
    error are re-raised: each ends the whole path).
    """
    calls = outcome.float64_calls if like is not None else outcome.guard_calls if label.is_guard else outcome.calls
    call = calls[label] = Call(label)
    misses_before = cache_misses(fn)
    try:
        call.stage = CallStage.INPUTS
        inputs = program.make_inputs(requires_grad=grad if requires_grad is None else requires_grad)
        if like is not None or outcome.device is not None:
            inputs = transfer(inputs, device=outcome.device, floating=torch.float64 if like is not None else None)
        call.stage = CallStage.FORWARD
        with InFloat64() if like is not None else contextlib.nullcontext():
            result = fn(*inputs)
        outputs = _flat_tensors(result)
        with read_as_its_user():
            call.outputs = _detach(list(result) if isinstance(result, (tuple, list)) else [result])
            call.output_requires_grad = [o.requires_grad for o in outputs]
            call.output_functions = [autograd_function_of(o) for o in outputs]
        if grad:
            call.stage = CallStage.BACKWARD
            call.grad_inputs = [i for i, x in enumerate(inputs) if isinstance(x, torch.Tensor) and x.requires_grad]
            call.grads = backward(outputs, inputs, [t.dtype for t in _flat_tensors(like.outputs)] if like is not None else None)
        call.stage = ""
        call.inputs_after = _detach(inputs)
    except Exception as e:
        if timed_out(e):
            raise timed_out(e) from None  # ends the path: the time limit is spent
        if out_of_memory(e) is not None and outcome.path != EAGER:
            raise  # ends the path: a crash (``run_path``), not an exception Thunder raised
        if why_the_machines(e):
            raise  # ends the path: the machine's environment (``run_path``), neither Thunder's nor eager's
        own_error = why_fuzzdces_own(e) if outcome.path != EAGER else ""
        if own_error:  # fuzzdce's own error: never a Thunder finding (the evaluator stops the campaign)
            outcome.failure = outcome.failure or JobFailure(
                FailureKind.HARNESS, harness_line(outcome, f"{label} call, {call.stage}: {own_error}")
            )
            return call
        call.error = ErrorInfo.from_exception(e)
        if not label.is_guard and like is None:
            outcome.error = outcome.error or call.error
    misses_after = cache_misses(fn)
    if misses_before is not None and misses_after is not None:
        call.cache = "miss" if misses_after > misses_before else "hit"
    return call


class InFloat64(TorchFunctionMode):
    """Every floating tensor a torch function returns in a lower precision is returned in float64
    instead: with its inputs in float64 (``transfer``), a program that converts a value down itself
    (``.half()``, ``dtype=torch.float32``) still computes in float64 throughout. Views and in-place
    results of float64 tensors are float64 already, so aliasing is kept."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        return _to_float64(func(*args, **(kwargs or {})))


def _to_float64(value: Any) -> Any:
    """``value`` with each floating tensor below float64 in it (itself, or an element of a tuple or
    list of results) in float64; anything else as it is (a ``torch.Size`` stays one)."""
    if isinstance(value, torch.Tensor):
        return value.to(torch.float64) if value.is_floating_point() and value.dtype != torch.float64 else value
    if type(value) in (tuple, list) and any(isinstance(v, torch.Tensor) for v in value):
        return type(value)(_to_float64(v) for v in value)
    return value


# How torch names a kernel that has no deterministic implementation, in the alert
# ``torch.use_deterministic_algorithms`` raises or warns with.
NONDETERMINISTIC_ALERT = re.compile(r"^(\S+) does not have a deterministic implementation")


@contextlib.contextmanager
def nondeterministic_kernels() -> Iterator[list[str]]:
    """The kernels run inside that torch says have no deterministic implementation: torch's own
    list (its ``alertNotDeterministic`` calls), read from the warnings of
    ``use_deterministic_algorithms(True, warn_only=True)``. Uninitialised memory stays as it is
    (``fill_uninitialized_memory`` off), and the settings are restored afterwards."""
    found: list[str] = []
    was = torch.are_deterministic_algorithms_enabled(), torch.is_deterministic_algorithms_warn_only_enabled()
    fill = torch.utils.deterministic.fill_uninitialized_memory
    torch.utils.deterministic.fill_uninitialized_memory = False
    torch.use_deterministic_algorithms(True, warn_only=True)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            yield found
    finally:
        torch.use_deterministic_algorithms(was[0], warn_only=was[1])
        torch.utils.deterministic.fill_uninitialized_memory = fill
        for warning in caught:
            match = NONDETERMINISTIC_ALERT.match(str(warning.message))
            if match and match[1] not in found:
                found.append(match[1])


@dataclass
class _StorageCopy:
    """One input storage's copy (``transfer``): its elements, whole and flat, and the copy of the
    first input on it (views of that input are made again through it)."""

    whole: torch.Tensor
    first: torch.Tensor


def transfer(inputs: list, *, device: str | torch.device | None = None, floating: torch.dtype | None = None) -> list:
    """``inputs`` copied to ``device`` (None: where each is) with every floating tensor in
    ``floating`` (None: its own dtype): the same values, shapes, strides and ``requires_grad``, and
    the same aliasing.

    Each storage is copied once, whole, and each input on it made again at its own size, strides
    and offset, so inputs sharing storage (``inputs[1] = inputs[0][...]``) share the copy's and a
    write through one still shows in the other. A later input on a storage that is a view (requiring
    grad as the first input on it does) is made a view of that input's copy, so gradients reach the
    first through it as they do in the inputs as made; every other input requiring grad is a leaf.
    Moving each tensor alone (``x.to(device)``) would make a view a leaf of its own."""
    copies: dict[tuple[int, torch.dtype], _StorageCopy] = {}
    moved: list = []
    for x in inputs:
        if not isinstance(x, torch.Tensor):
            moved.append(x)
            continue
        dtype = floating if floating is not None and x.is_floating_point() else x.dtype
        target = device if device is not None else x.device
        storage = x.untyped_storage()
        key = (storage.data_ptr(), x.dtype)
        if not storage.nbytes() or not key[0]:  # no data to share (empty, or meta): aliases nothing
            copy = torch.empty_strided(x.size(), x.stride(), dtype=dtype, device=target)
            moved.append(copy.requires_grad_(x.requires_grad))
            continue
        known = copies.get(key)
        if known is not None:
            if x._is_view() and x.requires_grad == known.first.requires_grad:
                moved.append(known.first.as_strided(x.size(), x.stride(), x.storage_offset()))
            else:
                view = known.whole.as_strided(x.size(), x.stride(), x.storage_offset())
                moved.append(view.detach().requires_grad_(x.requires_grad))
            continue
        elements = storage.nbytes() // x.element_size()
        whole = torch.empty(0, dtype=x.dtype, device=x.device).set_(storage, 0, (elements,), (1,))
        whole = whole.detach().to(device=target, dtype=dtype, copy=True)
        first = whole.as_strided(x.size(), x.stride(), x.storage_offset()).detach().requires_grad_(x.requires_grad)
        copies[key] = _StorageCopy(whole, first)
        moved.append(first)
    return moved


def needs_float64(call: Call) -> bool:
    """A call with a floating tensor input not in float64: its results are judged against a float64 run."""
    return any(
        isinstance(x, torch.Tensor) and x.is_floating_point() and x.dtype != torch.float64 for x in call.inputs_after or []
    )


def cache_misses(fn: Callable) -> int | None:
    """How often ``fn`` (a ``thunder.jit`` function) compiled so far; None for anything else."""
    try:
        import thunder

        stats = thunder.compile_stats(fn)
    except Exception:
        return None
    return None if stats is None else stats.cache_misses


def harness_line(outcome: Outcome, own_error: str) -> str:
    """The one line a harness error stops a campaign with: path, placement, versions, what to do."""
    return harness_message(f"{outcome.path} under {outcome.placement}", own_error)


def cache_words(call: Call) -> str:
    return "hit the cache" if call.cache == "hit" else "missed the cache"
