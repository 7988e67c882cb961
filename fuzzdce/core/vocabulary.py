"""The kinds fuzzdce names: a verdict, a failed job's kind, a call's label and stage, what a program
is to a finding, the group a report lists a bug in. Imports nothing of fuzzdce.

Each is a ``StrEnum``: its members are the strings that findings folders, summary.json and known
files hold, so records written before these types existed read back unchanged.
"""

from __future__ import annotations

from enum import StrEnum


class Verdict(StrEnum):
    """What stock Thunder does with a program a placement fails: the triage of a finding."""

    REGRESSION = "regression"  # stock passes it: the placement's doing
    SHARED = "shared"  # stock fails it the same way: a Thunder bug independent of the placement


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

    NEW = "new"  # placement-induced, not in the known-findings file: makes the run exit 1
    KNOWN = "known"  # placement-induced, suppressed by the known-findings file
    SHARED = "shared"  # stock Thunder fails the same way
