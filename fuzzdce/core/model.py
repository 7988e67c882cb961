"""The records every part of fuzzdce passes around, and the three extension points.

Of fuzzdce it imports only the vocabulary (the kinds the records hold) and ``tracebacks`` (where
an exception was raised, for ``ErrorInfo``), which import nothing of fuzzdce (tests/test_architecture.py
checks it): a contributor reads here what an ``Outcome`` holds, what an ``Oracle``, a ``CompilePath`` and a
``Placement`` must declare, and nothing more. The flow::

    Program -> (Placement x CompilePath) runs -> Outcome -> Oracle checks -> Violations

- An **Oracle** reads outcomes only: a path's outcome under a placement, eager's (``reference``)
  and stock Thunder's on the same path (``stock``, None for stock itself). It never compiles.
- A **CompilePath** compiles a program once and makes labelled calls on the result.
- A **Placement** is a context manager that patches Thunder while active and restores it exactly.
"""

from __future__ import annotations

import contextlib
import traceback
from collections.abc import Callable
from contextlib import AbstractContextManager as ContextManager
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from fuzzdce.core.tracebacks import raised_where
from fuzzdce.core.vocabulary import CallLabel, CallStage, FailureKind, TraceKind, Verdict  # noqa: F401  (the records' types, here for their readers)

# The placement every other one is compared with: Thunder as installed.
STOCK = "stock"
# The reference "path": the program run by PyTorch itself.
EAGER = "eager"


@dataclass(frozen=True)
class ErrorInfo:
    """An exception, reduced to what findings need (it must outlive the objects it referenced)."""

    type: str
    message: str
    # Where it was raised: the innermost "thunder/...py:function" (or torch) that is not a generic
    # helper (``tracebacks.HELPER_FRAMES``), or "file.py:function" when a placement's own code (outside
    # installed packages) raised it; for torch.compile refusing Thunder's own code, that code's
    # frame (``tracebacks.thunder_frame_in_user_code``).
    frame: str
    traceback: str
    # The op Thunder was working on: the outermost Thunder symbol on the stack ("logsumexp" when
    # its ``squeeze`` raised), else the statement torch.compile failed on in a trace Thunder handed
    # it (``tracebacks.symbol_in_user_code``), "" when none was.
    symbol: str = ""

    @classmethod
    def from_exception(cls, e: BaseException) -> ErrorInfo:
        frame, symbol = raised_where(e)
        text = str(e)
        message = text.strip().splitlines()[0] if text.strip() else ""
        tb = "".join(traceback.format_exception(type(e), e, e.__traceback__))
        return cls(type(e).__name__, message[:500], frame, tb[-8000:], symbol)

    def __str__(self) -> str:
        return f"{self.type}: {self.message}"


@dataclass
class Call:
    """One call of a compiled (or eager) function, with everything oracles compare."""

    label: CallLabel
    outputs: list[Any] | None = None
    output_requires_grad: list[bool] | None = None  # one flag per output tensor, in output order
    # Per output tensor, the ``torch.autograd.Function`` whose node made it ("module.qualname"), or
    # None (a built-in op's node, or none): such a Function decides its outputs' flags itself.
    output_functions: list[str | None] | None = None
    grads: list[Any] | None = None  # d(outputs . cotangents)/d(input), per input that requires grad
    # The positions of the inputs that required grad (what ``grads`` follows): each input's own
    # flag, drawn per input (``TensorInput.requires_grad``)
    grad_inputs: list[int] | None = None
    inputs_after: list[Any] | None = None  # every input's value once the call (and backward) ran
    error: ErrorInfo | None = None
    stage: CallStage | str = ""  # where ``error`` happened; empty while none did
    # Whether the call reused a cached computation ("hit") or compiled anew ("miss"), where the
    # compiled function says (``thunder.cache_misses``); empty otherwise.
    cache: str = ""
    # Eager's only: the kernels the call ran that torch says have no deterministic implementation
    # (``calls.nondeterministic_kernels``): its values may differ between two runs of the same code,
    # so no oracle compares them (``has_deterministic_values``).
    nondeterministic: tuple[str, ...] = ()


def has_deterministic_values(eager_call: Call | None) -> bool:
    """Can a value of eager's call ``eager_call`` be compared with another run's? Not where torch
    says a kernel it ran has no deterministic implementation (``Call.nondeterministic``): there two
    runs of the same execution trace differ (max_unpool2d through repeated indices: 1 of 54
    elements, once in hundreds of runs)."""
    return eager_call is None or not eager_call.nondeterministic


@dataclass(frozen=True)
class JobFailure:
    """A job that produced no result, and why (``FailureKind``)."""

    kind: FailureKind
    message: str


@dataclass
class Outcome:
    """What one compile path (or eager) did with one program under one placement."""

    path: str
    placement: str
    calls: dict[CallLabel, Call] = field(default_factory=dict)
    # The guard calls (``CallLabel.is_guard``), apart: only the ``guards`` oracle reads them (a
    # recompile or a clear error there is fine; a wrong result is the finding).
    guard_calls: dict[CallLabel, Call] = field(default_factory=dict)
    # Eager's only: each call (guard calls too) made again with every floating input upcast to
    # float64, where some floating input is not (``path_running.run_float64``): what a result in a lower
    # precision is judged against (``oracles.outputs.compare``). Its tensors never cross processes.
    float64_calls: dict[CallLabel, Call] = field(default_factory=dict, repr=False)
    # The first exception: a call's, or the path's own (e.g. building the compiled function).
    error: ErrorInfo | None = None
    # (label, trace) for every trace Thunder produced, e.g. ("jit forward 3", TraceCtx); each trace's
    # ``get_provenance()`` names the pass that produced it. Printed text once it crossed processes.
    traces: list[tuple[str, Any]] = field(default_factory=list)
    split_reasons: list[Any] = field(default_factory=list)
    # Why the path or one of its calls was skipped (no resizable dimension, ...): shown in reports.
    notes: list[str] = field(default_factory=list)
    skipped: str = ""  # non-empty when the whole path cannot run on this machine
    # The sandboxed job itself hung or died: no calls, no traces, only this.
    failure: JobFailure | None = None
    seconds: float = 0.0
    # What each call of Thunder's ``dce`` while the path ran changed in the decompositions it kept,
    # against the trace it was given: ("dce call N", ``subsymbols.Change``) (``running.dce_calls``).
    # Plain data: it crosses processes; ``dce-sound`` judges it as it judges a trace's changes.
    dce_calls: list[tuple[str, Any]] = field(default_factory=list)
    # Per run of a forward or backward execution trace, the first tensor whose shape, dtype, device
    # or (an input's) requires_grad at run time differs from what the trace states
    # (``oracles.metadata.Misstated``, recorded by ``running.stated_metadata``). Plain data.
    misstated: list[Any] = field(default_factory=list)
    # DCE activity against stock on the same path: "symbol@depth" -> [subsymbols removed, added]
    # (``dce_activity.activity``); computed where the trace objects live, plain data so it crosses
    # processes. Empty for stock and when nothing differed.
    dce_activity: dict[tuple[str, int], list[int]] = field(default_factory=dict)
    # Where this path raised and stock's returned, or the reverse (``dce_activity.raise_edits``: the
    # ``decisions.Edit`` kinds "raise", "no raise"): activity too. Empty for stock.
    dce_raise_edits: list[str] = field(default_factory=list)
    # Traces of this path not compared with stock's, and why ("thunderfx split the program
    # otherwise", "<label>: top-level symbols differ"): they went another way, which is no DCE.
    dce_not_compared: list[str] = field(default_factory=list)
    # Made once where the trace objects live, for DCE activity and ``dce-sound`` alike (they read one
    # comparison): this outcome's traces as portable trees (``portable_trace.portable_trace``; stock's are
    # compared with every placement's), by the id of the trace object (held beside it), and the
    # comparison with stock's traces, with the stock outcome and the trace lists it was made of.
    # Neither crosses processes (``evaluate.portable`` drops them).
    compared_traces: dict[int, tuple[Any, Any]] = field(default_factory=dict, repr=False, compare=False)
    comparison: tuple[Any, Any, Any, Any] | None = field(default=None, repr=False, compare=False)
    # Symbols this Thunder and the reference, two Thunders, decompose otherwise: their subsymbols
    # were not compared (``subsymbols.TraceComparison.decomposition_differs``).
    dce_decomposition_differs: list[str] = field(default_factory=list)
    # The grad rules Thunder's grad transform found for the symbols it differentiated on this path
    # (``running.grad_rules``), by name: what the campaign's "grad rules reached" counts.
    grad_rules: list[str] = field(default_factory=list)
    # Labels of the last traces (what ran) that differ from the reference's beyond names, or why
    # they were not compared (``oracles.exact.execution_differences``): there, results are not
    # compared bit for bit with the reference's. Activity, never a finding. Empty for the reference.
    execution_differs: list[str] = field(default_factory=list)
    # Where the path ran its calls (``CompilePath.device``; eager: the device of the paths it is
    # the reference of); None: on the CPU.
    device: str | None = None
    # What Python code printed while the path ran (Thunder prints a failing program's traces): the
    # finding's, shown in its folder beside the traces, never in the report. Kept only where the
    # outcome has violations once it crosses processes (``evaluate.portable``).
    printed: str = ""
    # A gated run's (``running.decisions``): the edits its calls made against unpatched Thunder
    # (``core.decisions.Edit``, plain data) and how many calls it gated.
    edits: list[Any] = field(default_factory=list)
    gated_calls: int = 0
    # The build whose process ran it (its placement name); empty for the Thunder of this process.
    # Two outcomes of different builds are two Thunders', which may decompose a symbol otherwise.
    build: str = ""
    # Checks that could not be made on this outcome, each an exception swallowed where it was
    # raised, as (who: an oracle's name, or "dce-activity", "traces"; what it could not do, with the
    # exception's type): counted per path in summary.json's ``not_checked`` and printed in the
    # report, so that a check switched off by a fuzzdce regression never reads as a clean run.
    not_checked: list[tuple[str, str]] = field(default_factory=list)
    # Stock's run that probed other placements (``running.compile_sharing``): those that did as stock at every
    # call of what they replaced on this path, whose outcome here is this one.
    unchanged_by: tuple[str, ...] = ()
    # Set on such a placement's outcome: whose compile it is ("stock"), the placement not compiled.
    shared_from: str = ""

    def could_not_check(self, who: str, what: str, error: BaseException | None = None) -> None:
        """Record that ``who`` could not ``what`` on this outcome (``error``: the exception swallowed)."""
        self.not_checked.append((who, what if error is None else f"{what} ({type(error).__name__})"))


@dataclass(frozen=True)
class SplitKind:
    """The ``reason_type`` of a split that crossed processes: its name, as oracles read it."""

    name: str


@dataclass(frozen=True)
class SplitRecord:
    """A thunderfx split reason reduced to text (another Thunder's class cannot be unpickled here);
    oracles read it exactly as they read ``thunder.dynamo.utils.SplitReason``."""

    reason_type: SplitKind
    info: str
    exception: str

    @classmethod
    def from_reason(cls, reason: Any) -> SplitRecord:
        kind = getattr(reason.reason_type, "name", str(reason.reason_type))
        return cls(SplitKind(kind), str(reason.info), str(getattr(reason, "exception", None)))


@dataclass(frozen=True)
class Violation:
    """One oracle failing on one path's outcome."""

    oracle: str
    path: str
    message: str
    error_type: str = ""  # the exception type behind it, when there is one
    frame: str = ""  # where in Thunder it was raised, when known
    # The part of the message that says what went wrong, without which FX node or value it hit
    # (default: the message): an oracle that makes no ``fault`` is known by it.
    key: str = ""
    # Its fault, where Thunder fails: a ``faults.Fault`` (a module built on this one), made by the
    # oracle with one of that module's constructors; None for an oracle that makes none
    # (``faults.fault_of`` says what stands in).
    fault: Any = None
    # The op it is about, named by it or by its context (``faults``): one fault's failures on two
    # paths, in two wordings, share it. Empty when unknown.
    site: str = ""
    # The call whose value is wrong (a ``CallLabel``), for a wrong value.
    call: str = ""

    def __str__(self) -> str:
        return f"[{self.path}/{self.oracle}] {self.message}"


# --- the extension points ---------------------------------------------------------------------------

Check = Callable[[Outcome, Outcome, "Outcome | None"], list[Violation]]


class Judges(StrEnum):
    """What an oracle's failures are."""

    VALUE = "value"  # a value, flag, dtype or shape differs: localised where it first differs
    EXCEPTION = "exception"  # Thunder raised (to its caller, or to thunderfx's splitter)
    OBSERVER = "observer"  # what a fault did to a trace: it joins the fault its program shows


class ScriptCheck(StrEnum):
    """What a bug's standalone script checks (``results.reproducers``), in the order a bug's members
    are picked by: the kind of failure, written in torch and Thunder alone."""

    RAISES = "raises"  # Thunder raises where eager does not
    FLAGS = "requires_grad"  # an output's requires_grad differs from eager's
    GRADS = "grads"  # an input's gradient differs from eager's
    OUTPUTS = "outputs"  # an output differs from eager's
    MUTATIONS = "mutations"  # an input after the call differs from eager's
    SPLITS = "splits"  # thunderfx split a graph because Thunder raised on a node
    NAMES = "names"  # a trace Thunder made is malformed, by Thunder's own ``check_trace``
    GUARDS = "guards"  # a second call, on inputs the prologue must tell apart, differs from eager's
    RUNS = "runs"  # an oracle with no plain-Thunder form: the script runs the path and says so (exit 4)


@dataclass(frozen=True)
class Oracle:
    """One property checked on every path's outcome: everything fuzzdce knows of an oracle is here,
    set where its module declares it (``fuzzdce/oracles/NAME.py``).

    ``check(outcome, reference, stock)`` returns the violations (none when it does not apply, for
    example when eager itself raised: such a program is invalid, not a finding). ``needs_stock``:
    it compares with stock's outcome on the same path, so a reproducer must run stock too.
    ``reads_traces``: it reads trace objects, which exist only in the process (and Thunder) that
    made them, so for another Thunder build it runs in that build's own process.
    ``reads_guard_calls``: it reads the guard calls (``Outcome.guard_calls``), whose inputs a
    reproducer must then carry.
    ``description`` is how reports and reproducers say what it checks; ``holds``, what holds once its
    failure goes, in a maintainer's words (how a decision's description ends: "With that one call
    done as unpatched Thunder does it, the graph is not split.").

    What it is, beside its code: ``judges`` (a wrong value, Thunder raising, or a trace observed);
    ``script_check``: what a bug's standalone script (torch and Thunder only) checks of its failure
    (None: it has no plain-Thunder form; a value oracle's flag or exception is checked as such,
    whatever it declares); ``minify_priority``: which of a program's failures ``fuzzdce minify``
    keeps by default, lowest first (None: kept only when nothing with a priority shows);
    ``judges_where_eager_rejects``: it judges a program eager rejects too (every other oracle judges
    only programs eager runs).
    """

    name: str
    check: Check = field(repr=False)
    description: str
    holds: str
    needs_stock: bool = False
    reads_traces: bool = False
    reads_guard_calls: bool = False
    judges: Judges = Judges.OBSERVER
    script_check: ScriptCheck | None = None
    minify_priority: int | None = None
    judges_where_eager_rejects: bool = False

    def __call__(self, outcome: Outcome, reference: Outcome, stock: Outcome | None = None) -> list[Violation]:
        return self.check(outcome, reference, stock)


def available_everywhere() -> str:
    return ""


@dataclass(frozen=True)
class CompilePath:
    """One way of running a program through Thunder.

    ``compile(fn)`` returns the compiled callable; it is self-contained (imports inside, no fuzzdce),
    so a reproducer prints its source as the plain-Thunder form of the path. The labelled ``calls``
    (``CallLabel``) are made on it in order. ``collect(compiled, outcome)`` records traces and
    split reasons afterwards, even when a call raised. ``context()`` is active around all of it.
    ``unavailable()`` says why this machine cannot run the path ("" when it can); such a path is
    left out of the defaults and records ``Outcome.skipped`` when chosen.
    """

    name: str
    compile: Callable[[Callable], Any] = field(repr=False)
    calls: tuple[CallLabel, ...]
    collect: Callable[[Any, Outcome], None] = field(repr=False)
    context: Callable[[], ContextManager[Any]] = field(default=contextlib.nullcontext, repr=False)
    unavailable: Callable[[], str] = field(default=available_everywhere, repr=False)
    splits_graphs: bool = False  # thunderfx: the splitter may hand FX nodes to another backend
    device: str | None = None  # where inputs live (None: as made, on the CPU)


PlacementFactory = Callable[[], ContextManager[Any]]


@dataclass(frozen=True)
class Build:
    """Another Thunder build: the interpreter that runs it and the directories put first on its
    ``sys.path`` (an overlay holding another ``thunder`` package, a checkout of a branch)."""

    python: str
    path: tuple[str, ...] = ()
    spec: str = ""  # as the user named it: DIR or PYTHON

    def __str__(self) -> str:
        return self.spec or ":".join((self.python, *self.path))


def never_native() -> str | None:
    return None


def nothing_missing() -> str | None:
    return None


@dataclass(frozen=True)
class Placement:
    """A named DCE placement: ``factory()`` returns the context manager that applies it.

    ``native()`` says why the installed Thunder already does what the placement patches in (the
    context manager then applies nothing), or None when the patch is needed. ``missing()`` names
    what the patch needs and the installed Thunder lacks (the placement cannot be applied), or None.
    ``build``: set when the placement is another Thunder build, whose jobs run in a process of
    their own (see ``fuzzdce.running.builds``); such a placement's context manager applies nothing there.
    """

    name: str
    factory: PlacementFactory = field(repr=False)
    description: str = ""
    native: Callable[[], str | None] = field(default=never_native, repr=False)
    missing: Callable[[], str | None] = field(default=nothing_missing, repr=False)
    build: Build | None = None
    # A gated run's gating (``running.decisions.Gating``: which calls it does as the placement does
    # them), None for the placement itself. A gated run keeps its placement's name: what must not
    # take one for the other (a shared compile, a cached job) reads this.
    gating: Any = None

    @property
    def is_stock(self) -> bool:
        return self.name == STOCK

    @property
    def display_name(self) -> str:
        """Its name as a log line prints it: a gated run's with its gating in words."""
        return self.name if self.gating is None else f"{self.name} [{self.gating}]"

    def __call__(self) -> ContextManager[Any]:
        return self.factory()
