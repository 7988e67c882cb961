"""The kinds fuzzdce names: a verdict, a failed job's kind, a call's label and stage, what a program
is to a finding, the group a report lists a bug in. Imports nothing of fuzzdce.

Each is a ``StrEnum``: its members are the strings that findings folders, summary.json and known
files hold, so records written before these types existed read back unchanged.
"""

from __future__ import annotations

from enum import StrEnum


class Verdict(StrEnum):
    """The triage of a finding against the campaign's reference Thunder (stock, unless ``--against``
    or ``--reference`` names another): which of the reference and the Thunders under test fail."""

    REGRESSION = "regression"  # a Thunder under test fails it, the reference passes: exit 1
    SHARED = "shared"  # the reference fails it the same way as a Thunder under test
    FIXED = "fixed"  # the reference fails it and every Thunder under test passes: listed, exit 0

    @classmethod
    def _missing_(cls, value):
        # The words of records written before the reference had a name.
        return {"placement-induced": cls.REGRESSION, "baseline": cls.SHARED}.get(value)


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
    GRAD = "grad"  # floating inputs require grad: forward, then backward
    RESIZED = "resized"  # other input shapes, on the same compiled function (symbolic values)


class CallStage(StrEnum):
    """Where in a call its error happened (``Call.stage``; empty while none did)."""

    INPUTS = "inputs"  # making the call's inputs
    FORWARD = "forward"
    BACKWARD = "backward"


class AddResult(StrEnum):
    """What one occurrence is to its finding (``FindingStore.add``), in order of news."""

    NEW = "new"  # the first occurrence: a new finding
    SMALLER = "smaller"  # a smaller program than the finding's: it becomes the finding's program
    SEEN = "seen"  # nothing the finding did not have


class BugGroup(StrEnum):
    """Which group of the report a bug is listed in (``fuzzdce run``, ``merge`` and the HTML page alike)."""

    NEW = "new"  # a regression not in the known-findings file: makes the run exit 1
    KNOWN = "known"  # a regression suppressed by the known-findings file
    FIXED = "fixed"  # the reference fails, the Thunders under test pass
    SHARED = "shared"  # the reference fails the same way
