"""The kinds fuzzdce names: what a verdict, a failed job's kind can be. Imports nothing of fuzzdce.

Each is a ``StrEnum``: its members are the strings that findings folders, summary.json and known
files hold, so records written before these types existed read back unchanged.
"""

from __future__ import annotations

from enum import StrEnum


class Verdict(StrEnum):
    """What stock Thunder does with a program a placement fails: the triage of a finding."""

    PLACEMENT_INDUCED = "placement-induced"  # stock passes it: the placement's doing
    BASELINE = "baseline"  # stock fails it the same way: a Thunder bug independent of the placement


class FailureKind(StrEnum):
    """Why a job produced no result (``JobFailure.kind``)."""

    TIMEOUT = "timeout"  # past its time limit: a ``timeout`` finding
    CRASH = "crash"  # the worker died (segfault, abort, out of memory): a ``crash`` finding
    HARNESS = "harness"  # fuzzdce's own code failed: never a finding, the campaign stops
