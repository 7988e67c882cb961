"""Compile paths: run one program in eager or through Thunder, and record what happened.

A path compiles the program once and returns an ``Outcome`` that every oracle reads. The outcome
holds one ``Call`` per call of the compiled function (outputs, ``requires_grad`` of each output,
gradients, the inputs' state after the call, the exception if any), the traces Thunder produced
(each carrying its provenance) and thunderfx's split reasons. Compile time is the whole cost of
fuzzing, so nothing here compiles twice.

Calls are labelled, and eager's reference outcome makes every labelled call a path can make:

- ``plain``: inputs as drawn, no grad;
- ``grad``: floating inputs require grad, forward then backward with seeded cotangents;
- ``resized``: no grad, on other input shapes consistent with the program (see ``resized_program``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import re
import signal
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import torch


class CompileTimeout(Exception):
    """Raised in the main thread when a path runs past its time limit."""


@dataclass(frozen=True)
class ErrorInfo:
    """An exception, reduced to what findings need (it must outlive the objects it referenced)."""

    type: str
    message: str
    frame: str  # innermost "module:function" inside thunder or torch, where it was raised
    traceback: str

    @classmethod
    def from_exception(cls, e: BaseException) -> ErrorInfo:
        frames = traceback.extract_tb(e.__traceback__)
        frame = ""
        for f in reversed(frames):
            match = re.search(r"/(thunder|torch)/(.*)\.py$", f.filename)
            if match:
                frame = f"{match.group(1)}/{match.group(2)}.py:{f.name}"
                break
        message = str(e).strip().splitlines()[0] if str(e).strip() else ""
        tb = "".join(traceback.format_exception(type(e), e, e.__traceback__))
        return cls(type(e).__name__, message[:500], frame, tb[-8000:])

    def __str__(self) -> str:
        return f"{self.type}: {self.message}"


@dataclass
class Call:
    """One call of a compiled (or eager) function, with everything oracles compare."""

    label: str  # "plain", "grad" or "resized"
    outputs: list[Any] | None = None
    output_requires_grad: list[bool] | None = None  # one flag per output tensor, in output order
    grads: list[Any] | None = None  # d(outputs . cotangents)/d(input), per input that requires grad
    inputs_after: list[Any] | None = None  # every input's value once the call (and backward) ran
    error: ErrorInfo | None = None
    stage: str = ""  # where ``error`` happened: "inputs", "forward" or "backward"


@dataclass
class Outcome:
    """What one compile path did with one program under one placement."""

    path: str
    placement: str
    calls: dict[str, Call] = field(default_factory=dict)
    # The first exception: a call's, or the path's own (e.g. building the compiled function).
    error: ErrorInfo | None = None
    # (label, trace) for every trace Thunder produced, e.g. ("jit forward 3", TraceCtx); each trace's
    # ``get_provenance()`` names the pass that produced it.
    traces: list[tuple[str, Any]] = field(default_factory=list)
    split_reasons: list[Any] = field(default_factory=list)
    # Why the path or one of its calls was skipped (no CUDA, no resizable dimension, ...).
    notes: list[str] = field(default_factory=list)
    skipped: str = ""  # non-empty when the whole path cannot run on this machine
    seconds: float = 0.0
    # The program run, so that an oracle handed no baseline (a reproducer) can compute stock's.
    program: Any = field(default=None, repr=False, compare=False)

    @property
    def outputs(self) -> list[Any] | None:
        """Outputs of the first call (what a single-call path returned)."""
        first = next(iter(self.calls.values()), None)
        return first.outputs if first is not None else None


def _detach(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return value.detach().to("cpu", copy=True)
    if isinstance(value, (tuple, list)):
        return [_detach(v) for v in value]
    return value


def _flat_tensors(value: Any) -> list[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (tuple, list)):
        return [t for v in value for t in _flat_tensors(v)]
    return []


@contextlib.contextmanager
def time_limit(seconds: float | None) -> Iterator[None]:
    """Raise CompileTimeout in the main thread after ``seconds`` (no-op off the main thread)."""
    if not seconds or not hasattr(signal, "setitimer"):
        yield
        return
    try:
        previous = signal.signal(signal.SIGALRM, _raise_timeout)
    except ValueError:  # not the main thread
        yield
        return
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _raise_timeout(signum, frame):
    raise CompileTimeout("compile path ran past its time limit")


def timed_out(e: BaseException | None) -> CompileTimeout | None:
    """The CompileTimeout behind ``e``, if any: Dynamo re-raises it wrapped in its own errors."""
    seen = set()
    while e is not None and id(e) not in seen:
        if isinstance(e, CompileTimeout):
            return e
        seen.add(id(e))
        e = e.__cause__ or e.__context__
    return None


# --- calls -----------------------------------------------------------------------------------------


def cotangents(outputs: list[torch.Tensor]) -> list[torch.Tensor]:
    """Seeded cotangents, one per output, drawn in output order: eager and Thunder get the same ones."""
    generator = torch.Generator().manual_seed(0)
    return [torch.randn(o.shape, generator=generator, dtype=o.dtype).to(o.device) for o in outputs]


def backward(outputs: list[torch.Tensor], inputs: list[torch.Tensor]) -> list[torch.Tensor] | None:
    """Gradients of ``sum(output * cotangent)`` w.r.t. each input requiring grad (zeros when unused)."""
    differentiable = [o for o in outputs if o.requires_grad]
    leaves = [x for x in inputs if isinstance(x, torch.Tensor) and x.requires_grad]
    if not differentiable or not leaves:
        return None
    grads = torch.autograd.grad(
        differentiable, leaves, cotangents(differentiable), allow_unused=True, materialize_grads=True
    )
    return _detach(list(grads))


def make_call(
    outcome: Outcome, label: str, fn: Callable, program, *, grad: bool = False, device: str | None = None
) -> Call:
    """Call ``fn`` on fresh inputs of ``program`` and record the call in ``outcome.calls[label]``.

    Exceptions are recorded, not raised (a time-out is re-raised: it ends the whole path).
    """
    call = outcome.calls[label] = Call(label)
    try:
        call.stage = "inputs"
        inputs = program.make_inputs(requires_grad=grad)
        if device is not None:  # leaves on the device, keeping requires_grad
            inputs = [x.detach().to(device).requires_grad_(x.requires_grad) for x in inputs]
        call.stage = "forward"
        result = fn(*inputs)
        outputs = _flat_tensors(result)
        call.outputs = _detach(list(result) if isinstance(result, (tuple, list)) else [result])
        call.output_requires_grad = [o.requires_grad for o in outputs]
        if grad:
            call.stage = "backward"
            call.grads = backward(outputs, inputs)
        call.stage = ""
        call.inputs_after = _detach(inputs)
    except Exception as e:
        if timed_out(e):
            raise timed_out(e) from None  # ends the path: the time limit is spent
        call.error = ErrorInfo.from_exception(e)
        outcome.error = outcome.error or call.error
    return call


def resized_program(program) -> tuple[Any | None, str]:
    """``program`` on other input shapes consistent with it, or None and the reason there is none.

    Every size above 1 grows by the same amount (so equal sizes stay equal and distinct ones
    distinct, and broadcasting size-1 dimensions stay 1); a candidate counts only if eager runs it.
    """
    specs = getattr(program, "inputs", None)
    if not dataclasses.is_dataclass(program) or not isinstance(specs, tuple) or not all(hasattr(s, "shape") for s in specs):
        return None, "the program gives no input shapes to change (a plain function, as in a reproducer)"
    sizes = sorted({d for spec in specs for d in spec.shape if d > 1})
    if not sizes:
        return None, "every input dimension is 1 or absent: other shapes would change broadcasting"
    for grow in (1, 2, 3):
        new_size = {d: d + grow for d in sizes}
        inputs = tuple(dataclasses.replace(s, shape=tuple(new_size.get(d, d) for d in s.shape)) for s in specs)
        candidate = dataclasses.replace(program, inputs=inputs)
        try:
            candidate.function()(*candidate.make_inputs())
        except Exception:
            continue
        return candidate, ""
    return None, "eager rejects the program on every resized shape tried"


# --- the paths -------------------------------------------------------------------------------------


def run_eager(program, outcome: Outcome) -> None:
    """Every labelled call, in eager: the reference the paths are compared with."""
    fn = program.function()
    make_call(outcome, "plain", fn, program)
    outcome.error = outcome.calls["plain"].error  # only a plain failure makes the program invalid
    if outcome.error is not None:
        return
    grad_call = make_call(outcome, "grad", fn, program, grad=True)
    if grad_call.error is not None:
        outcome.notes.append(f"eager rejects the grad call: {grad_call.error}")
    resized, why_not = resized_program(program)
    if resized is None:
        outcome.notes.append(f"no resized call: {why_not}")
    else:
        make_call(outcome, "resized", resized.function(), resized)
    outcome.error = outcome.calls["plain"].error


def _record_jit_traces(outcome: Outcome, jfn, prefix: str) -> None:
    import thunder

    for kind, getter in (("forward", thunder.last_traces), ("backward", thunder.last_backward_traces)):
        with contextlib.suppress(Exception):  # no traces when compilation failed early
            outcome.traces += [(f"{prefix} {kind} {i}", t) for i, t in enumerate(getter(jfn) or [])]


def _jit_path(label_calls: tuple[str, ...], **jit_options) -> Callable:
    """A path compiling with ``thunder.jit(**jit_options)`` and making the given calls, in order."""

    def run(program, outcome: Outcome) -> None:
        import thunder

        options = {k: (v() if callable(v) else v) for k, v in jit_options.items()}
        jfn = thunder.jit(program.function(), **options)
        try:
            for label in label_calls:
                if label == "resized":
                    resized, why_not = resized_program(program)
                    if resized is None:
                        outcome.notes.append(f"second call skipped: {why_not}")
                        continue
                    make_call(outcome, label, jfn, resized)
                else:
                    make_call(outcome, label, jfn, program, grad=label == "grad")
        finally:
            _record_jit_traces(outcome, jfn, "jit")

    return run


def _torch_compile_executors() -> list:
    import thunder
    from thunder.executors.torch_compile import torch_compile_ex

    return [torch_compile_ex, *thunder.get_default_executors()]


@contextlib.contextmanager
def dynamo_without_inductor() -> Iterator[None]:
    """``torch.compile`` traces with Dynamo but runs the captured graph eagerly.

    Thunder's torch.compile executor hands each fused region (built from its decompositions) to
    ``torch.compile``; Inductor would then spend seconds per region compiling C++ that never runs
    Thunder. Dynamo still captures the region with ``fullgraph=True``, so a region Dynamo cannot
    trace still fails as it would for a user.
    """
    from unittest import mock

    original = torch.compile

    def compile_with_eager_backend(fn=None, *args, mode=None, backend=None, **kwargs):
        return original(fn, *args, backend="eager", **kwargs)

    with mock.patch("torch.compile", compile_with_eager_backend):
        yield


def run_jit_torch_compile(program, outcome: Outcome) -> None:
    """``thunder.jit`` with the torch.compile fusion executor first, forward and backward."""
    with dynamo_without_inductor():
        _jit_path(("grad",), executors=_torch_compile_executors)(program, outcome)


def nvfuser_unavailable() -> str:
    """Why the nvFuser path cannot run here ("" when it can)."""
    if not torch.cuda.is_available():
        return "nvFuser needs CUDA, and torch sees no CUDA device"
    try:
        from thunder.executors import nvfuser_available

        if not nvfuser_available():
            return "nvFuser is not installed for this Thunder"
    except Exception as e:
        return f"nvFuser could not be checked ({type(e).__name__}: {e})"
    return ""


def run_jit_nvfuser(program, outcome: Outcome) -> None:
    """``thunder.jit`` with nvFuser on CUDA, forward and backward; a clean skip without CUDA."""
    import thunder

    outcome.skipped = nvfuser_unavailable()
    if outcome.skipped:
        return
    from thunder.executors.nvfuserex import nvfuserex

    jfn = thunder.jit(program.function(), executors=[nvfuserex, *thunder.get_default_executors()])
    try:
        make_call(outcome, "grad", jfn, program, grad=True, device="cuda")
    finally:
        _record_jit_traces(outcome, jfn, "jit")


def _eager_fallback(gm, example_inputs):
    """Stands in for torch._inductor.compile on regions thunderfx does not give to Thunder.

    Inductor compiles C++ for each such region (seconds each on CPU); those regions never run
    Thunder, so running them eagerly changes nothing fuzzdce checks and keeps throughput.
    """
    return gm


def _thunderfx_path(*, dynamic: bool | None) -> Callable:
    """``thunder.dynamo.thunderfx`` on inputs that require grad, forward and backward."""

    def run(program, outcome: Outcome) -> None:
        import thunder
        from thunder.dynamo import thunderfx
        from unittest import mock

        torch._dynamo.reset()
        compiled = thunderfx(program.function(), dynamic=dynamic)
        backend = compiled._backend
        try:
            with mock.patch("torch._inductor.compile", _eager_fallback):
                make_call(outcome, "grad", compiled, program, grad=True)
        finally:
            for g, info in enumerate(backend.subgraph_infos):
                outcome.split_reasons += list(info.split_reasons)
                for k, fn in enumerate(info.thunder_compiled_fns or []):
                    _record_jit_traces(outcome, fn, f"thunderfx graph {g} fn {k}")
            torch._dynamo.reset()

    return run


PATHS: dict[str, Callable[[Any, Outcome], None]] = {
    "jit": _jit_path(("plain",)),
    "jit-grad": _jit_path(("grad",)),
    "jit-symbolic": _jit_path(("plain", "resized"), cache="symbolic values"),
    "jit-torchcompile": run_jit_torch_compile,
    "jit-nvfuser": run_jit_nvfuser,
    "thunderfx": _thunderfx_path(dynamic=None),
    "thunderfx-dynamic": _thunderfx_path(dynamic=True),
}
# Paths whose machine requirements are not met are left out of the defaults (still selectable:
# they then record ``Outcome.skipped``).
UNAVAILABLE: dict[str, Callable[[], str]] = {"jit-nvfuser": nvfuser_unavailable}
DEFAULT_PATHS = tuple(name for name in PATHS if not (name in UNAVAILABLE and UNAVAILABLE[name]()))


def run_path(path: str, program, placement, *, timeout: float | None = 60.0) -> Outcome:
    """Run ``program`` through ``path`` ("eager" or a key of PATHS) under ``placement``.

    Never raises for anything the program or Thunder does: exceptions become ``Outcome.error``.
    """
    runner = run_eager if path == "eager" else PATHS[path]
    outcome = Outcome(path, placement.name, program=program)
    start = time.perf_counter()
    try:
        with time_limit(timeout), placement():
            runner(program, outcome)
    except Exception as e:
        outcome.error = ErrorInfo.from_exception(timed_out(e) or e)
    outcome.seconds = time.perf_counter() - start
    return outcome
