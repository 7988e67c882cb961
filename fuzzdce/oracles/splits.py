"""No thunderfx split caused by an exception.

The thunderfx splitter tries each FX node under Thunder and, when that raises, silently hands the
node to another backend. A split for an op Thunder does not support is expected and not reported
here (the campaign counts those separately); a split because Thunder *raised* is a finding.
"""

from __future__ import annotations

from fuzzdce.core.faults import split_fault
from fuzzdce.core.model import Judges, Oracle, Outcome, ScriptCheck, Violation

EXCEPTION_SPLITS = ("EXCEPTION_PROXY_THUNDER_OP", "EXCEPTION_META_THUNDER_OP")


def is_exception_split(reason) -> bool:
    return getattr(reason.reason_type, "name", "") in EXCEPTION_SPLITS


def check(outcome: Outcome, reference: Outcome, stock: Outcome | None = None) -> list[Violation]:
    if reference.error is not None:
        return []
    violations = []
    for reason in outcome.split_reasons:
        if is_exception_split(reason):
            message = f"{reason.reason_type.name}: {reason.info} -- exception: {reason.exception}"
            key = f"{reason.reason_type.name}: {reason.exception}"
            fault, site = split_fault(reason.reason_type.name, str(reason.info), str(reason.exception))
            violations.append(
                Violation("splits", outcome.path, message, reason.reason_type.name, key=key, fault=fault, site=site)
            )
    return violations


ORACLE = Oracle(
    "splits",
    check,
    "thunderfx splits no graph because Thunder raised",
    "the graph is not split",
    judges=Judges.EXCEPTION,
    script_check=ScriptCheck.SPLITS,
    minify_priority=6,
)
