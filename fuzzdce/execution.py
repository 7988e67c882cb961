"""Compile paths: run one program in eager or through Thunder, and record what happened.

A path compiles the program once and returns an ``Outcome`` that every oracle reads: outputs,
the exception (if any), the traces Thunder produced, and thunderfx's split reasons. Compile time
is the whole cost of fuzzing, so nothing here compiles twice.
"""

from __future__ import annotations

import contextlib
import re
import signal
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import torch

from fuzzdce.program import Program


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
class Outcome:
    """What one compile path did with one program under one placement."""

    path: str
    placement: str
    outputs: list[Any] | None = None
    error: ErrorInfo | None = None
    # (label, trace) for every trace Thunder produced, e.g. ("jit forward 3", TraceCtx).
    traces: list[tuple[str, Any]] = field(default_factory=list)
    split_reasons: list[Any] = field(default_factory=list)
    seconds: float = 0.0


def _detach(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return value.detach().clone()
    if isinstance(value, (tuple, list)):
        return [_detach(v) for v in value]
    return value


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


# --- the paths -------------------------------------------------------------------------------------


def run_eager(program: Program, outcome: Outcome) -> None:
    outcome.outputs = _detach(program.function()(*program.make_inputs()))


def run_jit(program: Program, outcome: Outcome) -> None:
    """``thunder.jit`` forward on inputs as drawn (no grad)."""
    import thunder

    jfn = thunder.jit(program.function())
    try:
        outcome.outputs = _detach(jfn(*program.make_inputs()))
    finally:
        outcome.traces += [(f"jit forward {i}", t) for i, t in enumerate(thunder.last_traces(jfn) or [])]


def _eager_fallback(gm, example_inputs):
    """Stands in for torch._inductor.compile on regions thunderfx does not give to Thunder.

    Inductor compiles C++ for each such region (seconds each on CPU); those regions never run
    Thunder, so running them eagerly changes nothing fuzzdce checks and keeps throughput.
    """
    return gm


def run_thunderfx(program: Program, outcome: Outcome) -> None:
    """``thunder.dynamo.thunderfx`` on inputs that require grad, so the splitter sees autograd."""
    import thunder
    from thunder.dynamo import thunderfx
    from unittest import mock

    torch._dynamo.reset()
    compiled = thunderfx(program.function())
    backend = compiled._backend
    try:
        with mock.patch("torch._inductor.compile", _eager_fallback):
            outcome.outputs = _detach(compiled(*program.make_inputs(requires_grad=True)))
    finally:
        for g, info in enumerate(backend.subgraph_infos):
            outcome.split_reasons += list(info.split_reasons)
            for k, fn in enumerate(info.thunder_compiled_fns or []):
                with contextlib.suppress(Exception):
                    outcome.traces += [(f"thunderfx graph {g} fn {k} forward {i}", t) for i, t in enumerate(thunder.last_traces(fn) or [])]
        torch._dynamo.reset()


PATHS: dict[str, Callable[[Program, Outcome], None]] = {
    "jit": run_jit,
    "thunderfx": run_thunderfx,
}
DEFAULT_PATHS = tuple(PATHS)


def run_path(path: str, program: Program, placement, *, timeout: float | None = 60.0) -> Outcome:
    """Run ``program`` through ``path`` ("eager" or a key of PATHS) under ``placement``.

    Never raises for anything the program or Thunder does: exceptions become ``Outcome.error``.
    """
    import time

    runner = run_eager if path == "eager" else PATHS[path]
    outcome = Outcome(path, placement.name)
    start = time.perf_counter()
    try:
        with time_limit(timeout), placement():
            runner(program, outcome)
    except Exception as e:
        outcome.error = ErrorInfo.from_exception(e)
    outcome.seconds = time.perf_counter() - start
    return outcome
