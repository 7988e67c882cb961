"""Running a program: eager once for reference, then a compile path under a placement.

``run_path`` compiles once and returns an ``Outcome`` every oracle reads: one ``Call`` per call of
the compiled function (outputs, ``requires_grad`` of each output, gradients, the inputs' state after
the call, the exception if any), the traces Thunder produced and thunderfx's split reasons. Compile
time is the whole cost of fuzzing, so nothing here compiles twice.

Calls are labelled, and eager's reference outcome makes every labelled call a path can make:

- ``plain``: inputs as drawn, no grad;
- ``grad``: the floating inputs drawn to require grad do, forward then backward with seeded cotangents;
- ``resized``: no grad, on other input shapes consistent with the program (see ``resized_program``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import runpy
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch.overrides import TorchFunctionMode

from fuzzdce.core.errors import (
    CompileTimeout,
    DeviceLost,
    environment_fault,
    environment_message,
    harness_fault,
    harness_message,
    read_as_its_user,
)
from fuzzdce.core.model import (
    EAGER,
    Call,
    CallLabel,
    CallStage,
    CompilePath,
    ErrorInfo,
    FailureKind,
    JobFailure,
    Outcome,
    Placement,
)
from fuzzdce.core.program import NumberInput, StringInput, TensorInput, views_follow_bases
from fuzzdce.oracles.guards import unsupported
from fuzzdce.running.dce_calls import observed_dce
from fuzzdce.running.decisions import observed_edits
from fuzzdce.running.grad_rules import observed_grad_rules
from fuzzdce.running.paths import PATHS
from fuzzdce.running.stated_metadata import observed_metadata


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


class time_limit:
    """A compile path's time limit, acted on only at fuzzdce's own safe points.

    The limit is never raised where the alarm strikes. Raising from a ``SIGALRM`` handler lands the
    exception in whatever Python code is running, which inside a compile is often torch's or
    Dynamo's, called back from C++ (fake tensors, dispatch modes): unwinding through those frames
    aborted the interpreter ("Fatal Python error: Aborted") or left a lock held and hung it. So the
    alarm only *marks* the frames of this module's own callers of Thunder (``SAFE_POINTS``) still on
    the stack; the first line one of them runs after Thunder hands control back raises
    ``CompileTimeout``, and a limit that expired with no safe point left raises on exit. A compile
    that never hands control back is ended from outside: a sandboxed job's parent kills its child
    ``GRACE_SECONDS`` after the limit (``running.workers``), so a hang never stalls a campaign.

    No-op without ``seconds``, off the main thread, or where there is no ``setitimer``.
    """

    def __init__(self, seconds: float | None) -> None:
        self.seconds = seconds
        self.expired = False
        self.armed = False
        self.marked: list = []  # frames whose next line raises
        self.previous_handler = None
        self.previous_trace = None

    def __enter__(self) -> time_limit:
        if not self.seconds or not hasattr(signal, "setitimer"):
            return self
        try:
            self.previous_handler = signal.signal(signal.SIGALRM, self._expire)
        except ValueError:  # not the main thread
            return self
        self.armed = True
        self.previous_trace = sys.gettrace()
        signal.setitimer(signal.ITIMER_REAL, self.seconds)
        return self

    def __exit__(self, kind, error, traceback) -> bool:
        if not self.armed:
            return False
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, self.previous_handler)
        self._disarm()
        if self.expired and kind is None:
            raise CompileTimeout("compile path ran past its time limit")
        return False

    def _expire(self, signum, frame) -> None:
        """The alarm: raise here only if this is a safe point, else mark the safe points below."""
        if self.expired:
            return
        self.expired = True
        if frame is not None and frame.f_code in SAFE_POINTS:
            self._disarm()
            raise CompileTimeout("compile path ran past its time limit")
        while frame is not None:
            if frame.f_code in SAFE_POINTS:
                frame.f_trace = self._raise_at_safe_point
                frame.f_trace_lines = True
                self.marked.append(frame)
            frame = frame.f_back
        if self.marked:
            # Line events reach a frame's f_trace only while a global trace function is set; ours
            # traces no new frame (or hands it to a tracer already there, such as coverage's).
            sys.settrace(self.previous_trace or _trace_no_new_frames)

    def _raise_at_safe_point(self, frame, event, arg):
        if event == "line":
            self._disarm()
            raise CompileTimeout("compile path ran past its time limit")
        return self._raise_at_safe_point

    def _disarm(self) -> None:
        """Unmark every frame (one raise per limit) and put the previous tracer back."""
        if not self.marked:
            return
        for frame in self.marked:
            frame.f_trace = None
        self.marked.clear()
        sys.settrace(self.previous_trace)


def _trace_no_new_frames(frame, event, arg):
    return None


def behind(e: BaseException | None, kind: type[BaseException]) -> BaseException | None:
    """The exception of ``kind`` behind ``e`` (itself, or along its causes and contexts: Dynamo
    re-raises errors wrapped in its own), or None."""
    seen = set()
    while e is not None and id(e) not in seen:
        if isinstance(e, kind):
            return e
        seen.add(id(e))
        e = e.__cause__ or e.__context__
    return None


def timed_out(e: BaseException | None) -> CompileTimeout | None:
    """The CompileTimeout behind ``e``, if any."""
    return behind(e, CompileTimeout)


def out_of_memory(e: BaseException | None) -> BaseException | None:
    """The MemoryError behind ``e``, or the device's out-of-memory error, if any (a worker's memory
    limit, the machine's or the device's): the process ran out of memory, which is a crash."""
    return behind(e, MemoryError) or behind(e, torch.OutOfMemoryError)


# --- calls -----------------------------------------------------------------------------------------


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
        if environment_fault(e):
            raise  # ends the path: the machine's fault (``run_path``), neither Thunder's nor eager's
        fault = harness_fault(e) if outcome.path != EAGER else ""
        if fault:  # fuzzdce's own fault: never a Thunder finding (the evaluator stops the campaign)
            outcome.failure = outcome.failure or JobFailure(
                FailureKind.HARNESS, harness_line(outcome, f"{label} call, {call.stage}: {fault}")
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


def harness_line(outcome: Outcome, fault: str) -> str:
    """The one line a harness error stops a campaign with: path, placement, versions, what to do."""
    return harness_message(f"{outcome.path} under {outcome.placement}", fault)


# A program is a ``core.program.Program`` or, a reproducer's, a ``ScriptProgram``.


@dataclass(frozen=True)
class ScriptProgram:
    """A program given as a plain function and a ``make_inputs(requires_grad)`` function.

    ``script``: the reproducer file defining them; then it pickles as that file's path, and a build's
    process loads the same program from it.
    """

    fn: Callable
    inputs: Callable
    script: str | None = None
    # (guard call label, its make_inputs): the reproducer's ``GUARD_INPUTS``
    guards: tuple[tuple[str, Callable], ...] = ()

    def __reduce__(self):
        if self.script is None:
            raise TypeError("a ScriptProgram crosses processes only when made from a reproducer file")
        return load_script, (self.script,)

    def function(self) -> Callable:
        return self.fn

    def make_inputs(self, *, requires_grad: bool = False):
        return self.inputs(requires_grad)

    def guard_variant(self, label: str) -> ScriptProgram | None:
        """The program of the guard call ``label``: the same function on that call's inputs."""
        inputs = dict(self.guards).get(str(label))
        return None if inputs is None else ScriptProgram(self.fn, inputs, self.script)


def load_script(path) -> ScriptProgram:
    """The program and inputs of a reproducer file, without running its main."""
    namespace = runpy.run_path(str(path), run_name="fuzzdce_reproducer")
    guards = tuple(namespace.get("GUARD_INPUTS", {}).items())
    return ScriptProgram(namespace["program"], namespace["make_inputs"], str(Path(path).resolve()), guards)


def resized_program(program) -> tuple[Any | None, str]:
    """``program`` on other input shapes consistent with it, or None and the reason there is none.

    Every size above 1 grows by the same amount (so equal sizes stay equal and distinct ones
    distinct, and broadcasting size-1 dimensions stay 1); a candidate counts only if eager runs it.
    """
    specs = getattr(program, "inputs", None)
    if not dataclasses.is_dataclass(program) or not isinstance(specs, tuple):
        return None, "the program gives no input shapes to change (a plain function, as in a reproducer)"
    sizes = sorted({d for spec in specs if isinstance(spec, TensorInput) for d in spec.shape if d > 1})
    if not sizes:
        return None, "every input dimension is 1 or absent: other shapes would change broadcasting"
    for grow in (1, 2, 3):
        new_size = {d: d + grow for d in sizes}
        inputs = tuple(
            dataclasses.replace(s, shape=tuple(new_size.get(d, d) for d in s.shape)) if isinstance(s, TensorInput) else s
            for s in specs
        )
        candidate = dataclasses.replace(program, inputs=inputs)
        try:
            candidate.function()(*candidate.make_inputs())
        except Exception:
            continue
        return candidate, ""
    return None, "eager rejects the program on every resized shape tried"


def eager_accepts(program) -> bool:
    """Eager runs ``program`` on its inputs without raising."""
    try:
        program.function()(*program.make_inputs())
    except Exception:
        return False
    return True


def _with_input(program, index: int, **changes):
    """``program`` with input ``index`` changed, and each view of it alike (``views_follow_bases``)."""
    inputs = list(program.inputs)
    inputs[index] = dataclasses.replace(inputs[index], **changes)
    return dataclasses.replace(program, inputs=views_follow_bases(inputs))


# Another dtype for an input, as the guard call on dtype gives it (bool has none it is sure to take).
OTHER_DTYPE = {
    "float32": "float64",
    "float64": "float32",
    "float16": "float32",
    "bfloat16": "float32",
    "int64": "int32",
    "int32": "int64",
}


def _other_number(value, *, same_type: bool):
    """Another number: of ``value``'s type (``same_type``: the other bool, or one more), or else
    the nearest of another type (int -> float, float -> int, bool -> int)."""
    if same_type:
        return (not value) if isinstance(value, bool) else value + 1
    if isinstance(value, bool):
        return int(value)
    return float(value) if isinstance(value, int) else int(value)


def guard_candidates(program, label: CallLabel) -> list:
    """The variants of ``program`` a guard call of ``label`` may make, in order of preference:
    each differs from ``program`` in the property ``label`` names and nothing else."""
    if isinstance(program, ScriptProgram):  # a reproducer's program: the variants are in its file
        variant = program.guard_variant(label)
        return [] if variant is None else [variant]
    specs = getattr(program, "inputs", None)
    if not dataclasses.is_dataclass(program) or not isinstance(specs, tuple):
        return []
    tensors = [(i, s) for i, s in enumerate(specs) if isinstance(s, TensorInput) and s.view_of is None]
    numbers = [(i, s) for i, s in enumerate(specs) if isinstance(s, NumberInput)]
    strings = [(i, s) for i, s in enumerate(specs) if isinstance(s, StringInput)]
    if label == CallLabel.GUARD_SHAPE:
        resized, _ = resized_program(program)
        return [resized] if resized is not None else []
    if label == CallLabel.GUARD_RANK and tensors:
        return [
            dataclasses.replace(
                program,
                inputs=tuple(dataclasses.replace(s, shape=(lead, *s.shape)) if isinstance(s, TensorInput) else s for s in specs),
            )
            for lead in (2, 1)
        ]
    if label == CallLabel.GUARD_DTYPE:
        return [_with_input(program, i, dtype=OTHER_DTYPE[s.dtype]) for i, s in tensors[:1] if s.dtype in OTHER_DTYPE]
    if label == CallLabel.GUARD_REQUIRES_GRAD:
        return [program] if any(s.can_require_grad for _, s in tensors) else []
    if label == CallLabel.GUARD_STRIDES:
        for i, s in tensors:
            if len(s.shape) >= 2 and s.shape[-1] > 1 and s.shape[-2] > 1:
                return [_with_input(program, i, transposed=not s.transposed)]
            if len(s.shape) >= 1 and s.shape[-1] > 1:
                return [_with_input(program, i, strided=not s.strided)]
        return []
    if label in (CallLabel.GUARD_NUMBER_VALUE, CallLabel.GUARD_NUMBER_TYPE) and numbers:
        i, s = numbers[0]
        return [_with_input(program, i, value=_other_number(s.value, same_type=label == CallLabel.GUARD_NUMBER_VALUE))]
    if label == CallLabel.GUARD_STRING_VALUE and strings:
        i, s = strings[0]  # its other choices, in order: the ops reading it accept each
        return [_with_input(program, i, value=other) for other in s.choices if other != s.value]
    return []


# How a path notes a guard call (``Outcome.notes``): the property varied and whether the call hit
# the cache. Counted per program, they are the report's line of guarded properties varied.
GUARD_NOTE = "guard call varied "

# Guard calls cost a compile each (a miss is the point), so each program varies one guarded
# property: the one its seed picks among those it has (a seed shrinks towards 0, and so keeps its
# pick stable enough to shrink by). The report says how many programs varied each.
GUARDS_PER_PROGRAM = 1


def guard_labels(program) -> list[CallLabel]:
    """The guarded properties ``program`` varies (``GUARDS_PER_PROGRAM`` of those it has; all of
    them when that is None)."""
    present = [label for label in CallLabel if label.is_guard and guard_candidates(program, label)]
    if GUARDS_PER_PROGRAM is None or len(present) <= GUARDS_PER_PROGRAM or isinstance(program, ScriptProgram):
        return present
    start = getattr(program, "seed", 0) % len(present)
    return [present[(start + k) % len(present)] for k in range(GUARDS_PER_PROGRAM)]


def guard_program(program, label: CallLabel) -> tuple[Any | None, str]:
    """The program a guard call of ``label`` runs (the first candidate eager accepts), or None and why."""
    if label not in guard_labels(program):
        return None, f"no {label.property_varied} guard call: the program varies another property, or has none to vary"
    for candidate in guard_candidates(program, label):
        if eager_accepts(candidate):
            return candidate, ""
    return None, f"no {label.property_varied} guard call: eager rejects every variant tried"


def cache_words(call: Call) -> str:
    return "hit the cache" if call.cache == "hit" else "missed the cache"


def make_guard_call(outcome: Outcome, label: CallLabel, fn: Callable, program) -> Call | None:
    """The guard call of ``label`` on ``fn``, where ``program`` has the property to vary."""
    variant, _ = guard_program(program, label)
    if variant is None:
        return None
    call = make_call(outcome, label, fn, variant, requires_grad=label == CallLabel.GUARD_REQUIRES_GRAD)
    if outcome.path != EAGER and call.cache:
        refused = ", Thunder does not support it" if call.error is not None and unsupported(call.error) else ""
        outcome.notes.append(f"{GUARD_NOTE}{label.property_varied}, {cache_words(call)}{refused}")
    return call


# --- running eager and the paths ------------------------------------------------------------------


def run_eager(program, outcome: Outcome) -> None:
    """Every labelled call, in eager: the reference the paths are compared with; then each again in
    float64 where the program computes in a lower precision (``run_float64``)."""
    fn = program.function()
    made = [(make_call(outcome, CallLabel.PLAIN, fn, program), fn, program, {})]
    outcome.error = outcome.calls[CallLabel.PLAIN].error  # only a plain failure makes the program invalid
    if outcome.error is not None:
        return
    grad_call = make_call(outcome, CallLabel.GRAD, fn, program, grad=True)
    made.append((grad_call, fn, program, dict(grad=True)))
    if grad_call.error is not None:
        outcome.notes.append(f"eager rejects the grad call: {grad_call.error}")
    resized, why_not = resized_program(program)
    if resized is None:
        outcome.notes.append(f"no resized call: {why_not}")
    else:
        made.append((make_call(outcome, CallLabel.RESIZED, resized.function(), resized), resized.function(), resized, {}))
    for label in guard_labels(program):
        variant, _ = guard_program(program, label)
        if variant is not None:
            requires_grad = dict(requires_grad=label == CallLabel.GUARD_REQUIRES_GRAD)
            made.append(
                (
                    make_call(outcome, label, variant.function(), variant, **requires_grad),
                    variant.function(),
                    variant,
                    requires_grad,
                )
            )
    outcome.error = outcome.calls[CallLabel.PLAIN].error
    run_float64(outcome, made)


def run_float64(outcome: Outcome, made: list[tuple[Call, Callable, Any, dict]]) -> None:
    """Each eager call that succeeded on a floating input below float64, made again on its inputs
    upcast to float64 (``Outcome.float64_calls``): the result a lower-precision one is judged
    against, as ``torch._dynamo.utils.same(ref, res, fp64_ref)`` judges a compiled result. The
    program runs as written (a cast to a lower dtype in it stays); a twin that raises is left out."""
    for call, fn, program, kwargs in made:
        if call.error is None and needs_float64(call):
            twin = make_call(outcome, call.label, fn, program, like=call, **kwargs)
            if twin.error is not None:
                del outcome.float64_calls[call.label]


def run_compiled(path: CompilePath, program, outcome: Outcome) -> None:
    """Compile ``program`` as ``path`` says, make its calls in order, then record what it produced."""
    outcome.skipped = path.unavailable()
    if outcome.skipped:
        return
    with path.context():
        compiled = path.compile(program.function())
        try:
            for label in path.calls:
                if label.is_guard:
                    continue
                if label == CallLabel.RESIZED:
                    resized, why_not = resized_program(program)
                    if resized is None:
                        outcome.notes.append(f"second call skipped: {why_not}")
                        continue
                    call = make_call(outcome, label, compiled, resized)
                    if call.cache:  # under symbolic values other shapes must hit the cache
                        outcome.notes.append(f"{GUARD_NOTE}shape (the resized call), {cache_words(call)}")
                else:
                    make_call(outcome, label, compiled, program, grad=label == CallLabel.GRAD)
        finally:
            path.collect(compiled, outcome)
        # After the traces are recorded: a guard call that misses the cache compiles again, and
        # Thunder's last traces would be that compilation's.
        if outcome.error is None:
            for label in path.calls:
                if label.is_guard:
                    make_guard_call(outcome, label, compiled, program)


# fuzzdce's own frames that call into Thunder and torch: between their lines nothing of Thunder's or
# torch's is on the stack, so a CompileTimeout raised there unwinds only fuzzdce's code.
SAFE_POINTS = frozenset(f.__code__ for f in (make_call, run_eager, run_float64, run_compiled))


def run_path(path: str, program, placement: Placement, *, timeout: float | None = 60.0, device: str | None = None) -> Outcome:
    """Run ``program`` through ``path`` ("eager" or a key of ``PATHS``) under ``placement``; eager
    on ``device`` (None: the CPU), a compile path on its own (``CompilePath.device``).

    Never raises for anything the program or Thunder does: exceptions become ``Outcome.error``, a
    run past ``timeout`` seconds becomes ``Outcome.failure`` of kind ``FailureKind.TIMEOUT``, a
    ``MemoryError`` (or the device's out-of-memory error) one of kind ``FailureKind.CRASH`` (the
    crash oracle's, never ``raises``), a module outside Thunder failing to import one of kind
    ``FailureKind.HARNESS`` that says it is the environment's. What the run prints is the
    outcome's (``Outcome.printed``), never the report's. Raises ``DeviceLost`` when the device's
    context did not survive the run: nothing after it in this process could use the device.
    """
    outcome = Outcome(path, placement.name, device=device if path == EAGER else PATHS[path].device)
    start = time.perf_counter()
    with captured_output() as printed:
        try:
            with time_limit(timeout), uninitialised_memory_filled(), placement():
                if path == EAGER:
                    run_eager(program, outcome)
                else:
                    with (
                        observed_edits(outcome),
                        observed_dce(outcome),
                        observed_grad_rules(outcome),
                        observed_metadata(outcome),
                    ):  # inside the placement: it wraps the placement's dce
                        run_compiled(PATHS[path], program, outcome)
        except (Exception, CompileTimeout) as e:
            record_failure(outcome, e, timeout)
        lost = device_lost(outcome.device) if outcome.device is not None and not outcome.skipped else ""
    outcome.printed = printed.getvalue()[-PRINTED_CHARACTERS:]
    outcome.seconds = time.perf_counter() - start
    if lost:
        raised = f" after {outcome.error.type}: {outcome.error.message[:300]}" if outcome.error is not None else ""
        raise DeviceLost(f"{path} under {placement.name} lost the {outcome.device} context{raised} ({lost})")
    return outcome


def record_failure(outcome: Outcome, e: BaseException, timeout: float | None) -> None:
    """What an exception that ended ``outcome``'s path was: a time-out, running out of memory (a
    crash), the machine's environment or fuzzdce's own code (harness failures, never findings), or
    else an exception the program or Thunder raised (``Outcome.error``)."""
    path = outcome.path
    fault = harness_fault(e) if path != EAGER else ""
    environment = environment_fault(e)
    if timed_out(e):
        outcome.failure = JobFailure(FailureKind.TIMEOUT, f"{path} ran past its time limit of {timeout:g} s")
    elif path != EAGER and out_of_memory(e) is not None:
        # The memory limit (or the machine's, or the device's), not Thunder raising: the crash oracle's.
        outcome.failure = JobFailure(
            FailureKind.CRASH, f"MemoryError: {path} ran out of memory (the worker's limit, or the machine's or device's)"
        )
    elif environment:
        outcome.failure = JobFailure(FailureKind.HARNESS, environment_message(f"{path} under {outcome.placement}", environment))
    elif fault:
        outcome.failure = JobFailure(FailureKind.HARNESS, harness_line(outcome, fault))
    else:
        outcome.error = ErrorInfo.from_exception(e)


@contextlib.contextmanager
def uninitialised_memory_filled():
    """Memory no op wrote (``torch.empty``, ``empty_like``, ``new_empty``) filled alike in every
    run, eager's and Thunder's: NaN for a float, the largest value for an integer, as PyTorch's
    deterministic mode fills it. Otherwise such a value is whatever the allocator last held, another
    in each run, and two runs differ with no fault in either (a shrink that took
    ``torch.empty_like(x).fill_(0.5)`` apart to ``torch.empty_like(x)`` filed two runs' leftover
    memory as a wrong value under the placement that patches nothing). ``warn_only``: an op with no
    deterministic kernel runs as it would, with a warning. The process's own settings come back after."""
    before = (
        torch.are_deterministic_algorithms_enabled(),
        torch.is_deterministic_algorithms_warn_only_enabled(),
        torch.utils.deterministic.fill_uninitialized_memory,
    )
    torch.use_deterministic_algorithms(True, warn_only=True)
    torch.utils.deterministic.fill_uninitialized_memory = True
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(before[0], warn_only=before[1])
        torch.utils.deterministic.fill_uninitialized_memory = before[2]


# What an outcome keeps of what its run printed: the end, where the exception's own lines are.
PRINTED_CHARACTERS = 20_000


@contextlib.contextmanager
def captured_output():
    """What Python code prints to stdout and stderr meanwhile (Thunder prints a failing program's
    traces, warnings go to stderr), collected instead of shown: a finding's, never the report's.
    A C++ library's own printf passes by; a worker child's stdout is its stderr (``workers``)."""
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer), contextlib.redirect_stderr(buffer):
        yield buffer


def device_lost(device: str) -> str:
    """Why ``device``'s context is unusable after a run ("" when it is not): a CUDA error is sticky
    (an illegal memory access, a device-side assert), so work on it after the run fails too. A
    device this process never started (or no CUDA device at all) has no context to lose."""
    if not str(device).startswith("cuda") or not torch.cuda.is_initialized():
        return ""
    try:
        torch.cuda.synchronize(device)
        (torch.ones(1, device=device) + 1).cpu()
    except Exception as e:
        return f"{type(e).__name__}: {str(e).strip().splitlines()[0][:300] if str(e).strip() else ''}"
    return ""
