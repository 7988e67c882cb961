"""The kinds fuzzdce names: a verdict, a failed job's kind, a call's label and stage, what a program
is to a finding, a bug's standing (which list of the report holds it). Imports nothing of fuzzdce.

Each is a ``StrEnum``: its members are the strings that findings folders, summary.json and known
files hold.
"""

from __future__ import annotations

from enum import StrEnum


class Verdict(StrEnum):
    """The triage of a finding against the campaign's reference Thunder (stock, unless ``--against``
    or ``--reference`` names another): which of the reference and the Thunders under test fail."""

    REGRESSION = "regression"  # a Thunder under test fails it, the reference passes: exit 1
    SHARED = "shared"  # the reference fails it the same way as a Thunder under test
    FIXED = "fixed"  # the reference fails it and every Thunder under test passes: listed, exit 0
    # The reference fails it; a Thunder under test does not, but fails the same program and path first
    # in a way of its own that stops the run there (a raise, a split): that hides it. Never fixed.
    MASKED = "masked"


class FailureKind(StrEnum):
    """Why a job produced no result (``JobFailure.kind``)."""

    TIMEOUT = "timeout"  # past its time limit: a ``timeout`` finding
    CRASH = "crash"  # the worker died (segfault, abort, out of memory): a ``crash`` finding
    HARNESS = "harness"  # fuzzdce's own code failed: never a finding, the campaign stops


class CallLabel(StrEnum):
    """Which call of a compiled (or eager) function a ``Call`` records (``Outcome.calls``' keys).

    A compile path declares the labelled calls it makes, in order; eager makes every one, so each
    has a reference to be compared with.
    """

    PLAIN = "plain"  # the inputs as drawn
    GRAD = "grad"  # the floating inputs drawn to require grad do: forward, then backward
    RESIZED = "resized"  # other input shapes, on the same compiled function (symbolic values)
    # Guard calls (``Outcome.guard_calls``), made after the traces are recorded: each differs from the
    # plain call in one property the prologue checks, so the cached computation must not be reused
    # as it is (symbolic values reuse it for other shapes and numbers, which then must hit).
    GUARD_SHAPE = "guard-shape"  # other sizes, every size above 1 grown alike
    GUARD_RANK = "guard-rank"  # one more leading dimension on every tensor input
    GUARD_DTYPE = "guard-dtype"  # the first tensor input in another dtype (float32 <-> float64, ...)
    GUARD_REQUIRES_GRAD = "guard-requires-grad"  # the inputs drawn to require grad do (forward only)
    GUARD_STRIDES = "guard-strides"  # the first tensor input transposed (or strided) the other way
    GUARD_NUMBER_VALUE = "guard-number-value"  # the first number input with another value of its type
    GUARD_NUMBER_TYPE = "guard-number-type"  # the first number input as another type (int <-> float, bool -> int)
    GUARD_STRING_VALUE = "guard-string-value"  # the first string input with another of its choices

    @property
    def is_guard(self) -> bool:
        return self in GUARD_CALLS

    @property
    def property_varied(self) -> str:
        """What a guard call varies, in words: ``number-value``."""
        return GUARD_CALLS.get(self, "")


# Each guard call and what it varies, in words (``CallLabel.property_varied``).
GUARD_CALLS: dict[CallLabel, str] = {
    CallLabel.GUARD_SHAPE: "shape",
    CallLabel.GUARD_RANK: "rank",
    CallLabel.GUARD_DTYPE: "dtype",
    CallLabel.GUARD_REQUIRES_GRAD: "requires-grad",
    CallLabel.GUARD_STRIDES: "strides",
    CallLabel.GUARD_NUMBER_VALUE: "number-value",
    CallLabel.GUARD_NUMBER_TYPE: "number-type",
    CallLabel.GUARD_STRING_VALUE: "string-value",
}


class CallStage(StrEnum):
    """Where in a call its error happened (``Call.stage``; empty while none did)."""

    INPUTS = "inputs"  # making the call's inputs
    FORWARD = "forward"
    BACKWARD = "backward"


class TraceKind(StrEnum):
    """The traces of a jit function that are no computation, as their labels name them
    (``jit prologue 1``); a computation trace is labelled by its ``CallStage`` (forward, backward)."""

    PROLOGUE = "prologue"  # checks a call's inputs before a cached computation is reused
    EPILOGUE = "epilogue"  # runs after the computation (Thunder keeps one where a program needs it)


class TraceLabel(str):
    """Which trace a path recorded, as data: the path's prefix (``jit``, ``thunderfx graph 0 fn 1``),
    its kind (a ``CallStage`` for a computation trace, else a ``TraceKind``) and its index among
    that kind's. Its text ("jit forward 2") names it: stock's trace of the same text is the one it
    is compared with, and its file is named after it; nothing reads the parts back from the text."""

    prefix: str
    kind: str
    index: int

    def __new__(cls, prefix: str, kind: str, index: int) -> TraceLabel:
        made = super().__new__(cls, f"{prefix} {kind} {index}")
        made.prefix, made.kind, made.index = prefix, str(kind), index
        return made

    def __reduce__(self):  # traces cross processes (workers, build workers) pickled
        return TraceLabel, (self.prefix, self.kind, self.index)

    @property
    def family(self) -> str:
        """Every trace of its prefix and kind, whatever the index ("jit forward")."""
        return f"{self.prefix} {self.kind}"


class AddResult(StrEnum):
    """What one occurrence is to its finding (``FindingStore.add``), in order of news."""

    NEW = "new"  # the first occurrence: a new finding
    SMALLER = "smaller"  # a smaller program than the finding's: it becomes the finding's program
    SEEN = "seen"  # nothing the finding did not have


class Standing(StrEnum):
    """A bug's standing: which list of the report holds it (``fuzzdce run``, ``merge``, ``report``
    and the HTML page alike)."""

    NEW = "new"  # a regression not in the known-findings file: makes the run exit 1
    KNOWN = "known"  # a regression suppressed by the known-findings file
    FIXED = "fixed"  # the reference fails; each Thunder under test runs that path cleanly, or a named edit of its makes it go
    # The reference fails; the Thunders under test do not, but one still fails that path (the
    # reference's other failures) and no edit of its is named for it (a build, which cannot be
    # gated; a bisection that found none): gone, not counted fixed
    UNEXPLAINED = "unexplained"
    MASKED = "masked"  # the reference fails; a Thunder under test fails that path first its own way
    SHARED = "shared"  # the reference fails the same way
