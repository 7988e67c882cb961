"""A compile path does not kill the process running it (segfault, abort, out of memory).

Only a sandboxed worker can survive such a job to report it; the outcome then carries a
``JobFailure`` of kind ``FailureKind.CRASH`` with the worker's last words.
"""

from __future__ import annotations

from fuzzdce.core.faults import job_fault
from fuzzdce.core.model import FailureKind, Oracle, Outcome, Violation

# A job failure of this kind is the finding: the oracle is named after it.
ORACLE_NAME = str(FailureKind.CRASH)


def check(outcome: Outcome, reference: Outcome, stock: Outcome | None = None) -> list[Violation]:
    failure = outcome.failure
    if failure is None or failure.kind != FailureKind.CRASH:
        return []
    lines = failure.message.strip().splitlines()
    last = lines[-1] if lines else FailureKind.CRASH
    return [
        Violation(
            ORACLE_NAME,
            outcome.path,
            f"crash: {last}",
            "Crash",
            key=FailureKind.CRASH,
            fault=job_fault(ORACLE_NAME, failure.kind),
        )
    ]


ORACLE = Oracle(
    ORACLE_NAME,
    check,
    "the process running the compile path survives it",
    "the process running the path survives it",
    minify_priority=1,
)
