"""Running a program: eager once for reference, then a compile path under a placement.

``run_path`` compiles once and returns an ``Outcome`` every oracle reads: one ``Call`` per call of
the compiled function (outputs, ``requires_grad`` of each output, gradients, the inputs' state after
the call, the exception if any), the traces Thunder produced and thunderfx's split reasons. Compile
time is the whole cost of fuzzing, so nothing here compiles twice.

Calls are labelled, and eager's reference outcome makes every labelled call a path can make:

- ``plain``: inputs as drawn, no grad;
- ``grad``: the floating inputs drawn to require grad do, forward then backward with seeded cotangents;
- ``resized``: no grad, on other input shapes consistent with the program (see ``variants.resized_program``).

The calls themselves are ``calls``'; the time limit, ``watchdog``'s.
"""

from __future__ import annotations

import contextlib
import io
import time
from collections.abc import Callable, Sequence
from typing import Any

import torch

from fuzzdce.core.errors import (
    CompileTimeout,
    DeviceLost,
    environment_message,
    why_fuzzdces_own,
    why_the_machines,
)
from fuzzdce.core.model import (
    EAGER,
    STOCK,
    Call,
    CallLabel,
    CompilePath,
    ErrorInfo,
    FailureKind,
    JobFailure,
    Outcome,
    Placement,
)
from fuzzdce.oracles.guards import unsupported
from fuzzdce.running.calls import cache_words, harness_line, make_call, needs_float64, nondeterministic_kernels
from fuzzdce.running.compile_sharing import probing, shares_compiles
from fuzzdce.running.dce_calls import observed_dce
from fuzzdce.running.decisions import observed_edits
from fuzzdce.running.grad_rules import observed_grad_rules
from fuzzdce.running.paths import PATHS
from fuzzdce.running.stated_metadata import observed_metadata
from fuzzdce.running.variants import guard_program, guard_variants, resized_program
from fuzzdce.running.watchdog import out_of_memory, safe_point, time_limit, timed_out

# How a path notes a guard call (``Outcome.notes``): the property varied and whether the call hit
# the cache. Counted per program, they are the report's line of guarded properties varied.
GUARD_NOTE = "guard call varied "
# How stock's outcome notes a probed run given up and made again plainly (``compile_sharing``).
PROBE_NOTE = "placements not probed here, stock compiled again: "


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


@safe_point
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
    for label, variant in guard_variants(program).items():
        requires_grad = dict(requires_grad=label == CallLabel.GUARD_REQUIRES_GRAD)
        made.append(
            (make_call(outcome, label, variant.function(), variant, **requires_grad), variant.function(), variant, requires_grad)
        )
    outcome.error = outcome.calls[CallLabel.PLAIN].error
    run_float64(outcome, made)
    note_nondeterminism(outcome, made)


# The note of an eager call that ran a kernel torch says is not deterministic (``Call.nondeterministic``).
NONDETERMINISTIC_NOTE = "values not compared: torch says a kernel has no deterministic implementation: "


@safe_point
def note_nondeterminism(outcome: Outcome, made: list[tuple[Call, Callable, Any, dict]]) -> None:
    """Each eager call that succeeded, made once more to learn which kernels it runs that torch says
    have no deterministic implementation (``calls.nondeterministic_kernels``; the run's values are
    thrown away: torch's deterministic mode may choose other kernels): recorded on the call
    (``Call.nondeterministic``), whose values no oracle then compares, and noted."""
    for call, fn, program, kwargs in made:
        if call.error is not None:
            continue
        with nondeterministic_kernels() as kernels:
            make_call(Outcome(EAGER, STOCK, device=outcome.device), call.label, fn, program, **kwargs)
        if kernels:
            call.nondeterministic = tuple(kernels)
            outcome.notes.append(f"{NONDETERMINISTIC_NOTE}{', '.join(kernels)} ({call.label} call)")


@safe_point
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


def calls_through(path: CompilePath, last: CallLabel | None) -> tuple[CallLabel, ...]:
    """The calls ``path`` makes, in its order, up to and including ``last`` (None: all of them):
    the guard calls come after every other call, as ``run_compiled`` makes them."""
    ordered = [label for label in path.calls if not label.is_guard] + [label for label in path.calls if label.is_guard]
    return tuple(ordered[: ordered.index(last) + 1]) if last in ordered else tuple(ordered)


@safe_point
def run_compiled(path: CompilePath, program, outcome: Outcome, *, through: CallLabel | None = None) -> None:
    """Compile ``program`` as ``path`` says, make its calls in order (up to ``through``: None, all),
    then record what it produced."""
    outcome.skipped = path.unavailable()
    if outcome.skipped:
        return
    made = calls_through(path, through)
    with path.context():
        compiled = path.compile(program.function())
        try:
            for label in made:
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
            for label in made:
                if label.is_guard:
                    make_guard_call(outcome, label, compiled, program)


def run_path(
    path: str,
    program,
    placement: Placement,
    *,
    timeout: float | None = 60.0,
    device: str | None = None,
    through: CallLabel | None = None,
    shadows: Sequence[Placement] = (),
) -> Outcome:
    """Run ``program`` through ``path`` ("eager" or a key of ``PATHS``) under ``placement``; eager
    on ``device`` (None: the CPU), a compile path on its own (``CompilePath.device``).

    ``through``: a compile path makes its calls up to this one only, and nothing but the calls is
    observed (no DCE calls, grad rules, stated metadata, gated edits): what judging that call's
    values needs (a localising prefix, ``evaluate.Scope``), at a fraction of the cost.

    ``shadows``: placements probed while stock (``placement``) compiles (``compile_sharing``); the outcome's
    ``unchanged_by`` names those that did as stock at every call. A probed run that failed, or that
    a shadow spoiled, is made again without them and names none.

    Never raises for anything the program or Thunder does: exceptions become ``Outcome.error``, a
    run past ``timeout`` seconds becomes ``Outcome.failure`` of kind ``FailureKind.TIMEOUT``, a
    ``MemoryError`` (or the device's out-of-memory error) one of kind ``FailureKind.CRASH`` (the
    crash oracle's, never ``raises``), a module outside Thunder failing to import one of kind
    ``FailureKind.HARNESS`` that says it is the environment's. What the run prints is the
    outcome's (``Outcome.printed``), never the report's. Raises ``DeviceLost`` when the device's
    context did not survive the run: nothing after it in this process could use the device.
    """
    shadows = [p for p in shadows if shares_compiles(p)] if path != EAGER and through is None else []
    outcome = Outcome(path, placement.name, device=device if path == EAGER else PATHS[path].device)
    start = time.perf_counter()
    probe = None
    with captured_output() as printed:
        try:
            with time_limit(timeout), uninitialised_memory_filled(), placement():
                if path == EAGER:
                    run_eager(program, outcome)
                elif through is not None:
                    run_compiled(PATHS[path], program, outcome, through=through)
                else:
                    with (
                        probing(shadows) if shadows else contextlib.nullcontext() as probe,
                        observed_edits(outcome),
                        observed_dce(outcome),
                        observed_grad_rules(outcome),
                        observed_metadata(outcome),
                    ):  # inside the placement: it wraps the placement's dce
                        run_compiled(PATHS[path], program, outcome)
        except (Exception, CompileTimeout) as e:
            record_failure(outcome, e, timeout)
        lost = device_lost(outcome.device) if outcome.device is not None and not outcome.skipped else ""
    if probe is not None and (outcome.failure is not None or probe.spoiled):
        # Stock's own run decides what stock does: the probe's shadows may be what failed.
        plain = run_path(path, program, placement, timeout=timeout, device=device)
        why = probe.spoiled or (outcome.failure.message.splitlines() or [""])[0][:200]
        plain.notes.append(f"{PROBE_NOTE}{why}")
        return plain
    if probe is not None:
        outcome.unchanged_by = probe.unchanged()
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
    own_error = why_fuzzdces_own(e) if path != EAGER else ""
    environment = why_the_machines(e)
    if timed_out(e):
        outcome.failure = JobFailure(FailureKind.TIMEOUT, f"{path} ran past its time limit of {timeout:g} s")
    elif path != EAGER and out_of_memory(e) is not None:
        # The memory limit (or the machine's, or the device's), not Thunder raising: the crash oracle's.
        outcome.failure = JobFailure(
            FailureKind.CRASH, f"MemoryError: {path} ran out of memory (the worker's limit, or the machine's or device's)"
        )
    elif environment:
        outcome.failure = JobFailure(FailureKind.HARNESS, environment_message(f"{path} under {outcome.placement}", environment))
    elif own_error:
        outcome.failure = JobFailure(FailureKind.HARNESS, harness_line(outcome, own_error))
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
