"""Where a wrong value first goes wrong: the op of the first statement whose value Thunder gets wrong.

A wrong value's message says which output differs, not why; two faults on two ops read alike. So a
wrong value is localised (as PyTorch's minifier analysis compares intermediate values): each
prefix of the program, up to a statement the outputs depend on and returning what that statement
defines, is run on the same path under the same Thunder, and the first prefix that fails the same
oracle on the same call names the op (``faults.value_fault``). Returning an intermediate value
changes what Thunder compiles, so a prefix counts only when it fails the same way itself; when
none does, the value stays "not localised" (its identity is then the oracle and the call).

The prefixes are jobs like any other: the evaluator's cache runs each once per campaign.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from fuzzdce.core.faults import is_value, value_fault
from fuzzdce.core.model import JobFailure, Violation
from fuzzdce.core.program import Program

# Runs ``program`` on the violation's path under its Thunder: the violations, or None (no result).
RunPrefix = Callable[[Program], "list[Violation] | None"]


def needs_localising(violation: Violation) -> bool:
    """A wrong value whose identity does not yet say where it first differs."""
    return is_value(violation) and value_fault(violation.oracle, violation.call, None) in violation.fault


def fails_alike(violation: Violation, other: Violation) -> bool:
    """Does ``other`` (a prefix's) fail as ``violation`` does: same oracle, call and kind of mismatch?"""
    return (other.oracle, other.call, other.error_type) == (violation.oracle, violation.call, violation.error_type)


def first_wrong_step(program: Program, violation: Violation, run: RunPrefix) -> int | None:
    """The first step, in program order, among those the outputs depend on, whose prefix fails like
    ``violation`` (None: none does)."""
    live = program.live_steps()
    for step in range(program.n_ops):
        if step not in live:
            continue
        shown = run(program.prefix(step))
        if shown is not None and any(fails_alike(violation, v) for v in shown):
            return step
    return None


def localised(program: Program, violation: Violation, run: RunPrefix) -> Violation:
    """``violation`` with its identity and site set to where its values first differ (unchanged
    when no prefix fails alike)."""
    step = first_wrong_step(program, violation, run)
    if step is None:
        return violation
    op = program.steps[step].op
    return dataclasses.replace(
        violation,
        fault=violation.fault.replace(
            value_fault(violation.oracle, violation.call, None), value_fault(violation.oracle, violation.call, op)
        ),
        site=op,
        message=f"{violation.message} (values first differ at `{program.statement(step)}`)",
    )


def violations_or_none(result) -> list[Violation] | None:
    """A job's violations, or None when it gave no result (hung, crashed)."""
    return None if isinstance(result, JobFailure) else result.violations
