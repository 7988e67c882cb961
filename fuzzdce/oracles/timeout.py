"""A compile path finishes within its time limit: a hung compile is a finding, not a stalled campaign.

In-process the path acts on its limit at its own safe points, between Thunder's calls
(``watchdog.time_limit``); in a sandboxed worker the parent also kills a child that never reaches
one (a hang inside a compile). Either way the outcome carries a ``JobFailure``.
"""

from __future__ import annotations

from fuzzdce.core.faults import job_fault
from fuzzdce.core.model import FailureKind, Oracle, Outcome, Violation

# A job failure of this kind is the finding: the oracle is named after it.
ORACLE_NAME = str(FailureKind.TIMEOUT)


def check(outcome: Outcome, reference: Outcome, stock: Outcome | None = None) -> list[Violation]:
    failure = outcome.failure
    if failure is None or failure.kind != FailureKind.TIMEOUT:
        return []
    return [
        Violation(
            ORACLE_NAME,
            outcome.path,
            f"timeout: {failure.message}",
            "Timeout",
            key=FailureKind.TIMEOUT,
            fault=job_fault(ORACLE_NAME, failure.kind),
        )
    ]


ORACLE = Oracle(
    ORACLE_NAME,
    check,
    "the compile path finishes within its time limit",
    "the path finishes within its time limit",
    minify_priority=2,
)
