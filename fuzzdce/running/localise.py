"""Where a wrong value first goes wrong: the op of the first statement Thunder gets wrong in any way.

A wrong value's message says which output differs, not why; two faults on two ops read alike. So a
wrong value is localised (as PyTorch's minifier analysis compares intermediate values): each
prefix of the program, up to a statement the outputs depend on and returning what of that statement
the rest of the program reads (``Program.read_prefix``), is run on the same path under the same Thunder, and the first prefix that is wrong on the
same call names the op (``faults.WrongValue.localised_at``). Wrong in any way: a value, a ``requires_grad`` flag
lost or invented, a dtype or a shape, whichever oracle comparing with eager saw it (hstack of 1-D
inputs loses ``requires_grad`` with right values, and addcdiv's gradient through it is then wrong:
the op to blame is hstack). The message then says what is wrong there and what it causes. Returning
an intermediate value changes what Thunder compiles, so a prefix counts only when it is wrong
itself; when none is, the value stays "not localised" (its fault is then the oracle, the call and the path).
A long program (a model block's 20-80 steps) is localised by bisection over its prefixes
(``SCANNED_STEPS``): a few prefix runs instead of one per step, searched over the program's
dependences (``first_wrong``), since a program of several outputs computes values side by side.

The one localisation: the evaluator localises every wrong value it reports (``localised``), a
campaign's and ``fuzzdce minify``'s candidates alike, and minify reads where its target first
differs from the violation (``first_differs_at``). The prefixes are jobs like any other (the
evaluator's cache runs each once per campaign), scoped to what judging them needs
(``evaluate.Scope``): the path's calls up to the wrong one, the oracles that can be wrong alike
(``judges_alike``), nothing observed, and the reference compiled beside them only for an oracle
comparing with it. A Thunder that ran the reference's execution traces shows the reference's wrong
value bit for bit; the evaluator gives it the reference's localisation, running no prefix.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from fuzzdce.core.faults import WrongValue
from fuzzdce.core.model import JobFailure, Judges, Violation
from fuzzdce.core.program import Program
from fuzzdce.core.program_source import called_op
from fuzzdce.oracles import ORACLES

# Runs ``program`` on the violation's path under its Thunder: the violations, or None (no result).
RunPrefix = Callable[[Program], "list[Violation] | None"]


def needs_localising(violation: Violation) -> bool:
    """A wrong value whose fault does not yet say where it first differs."""
    return isinstance(violation.fault, WrongValue) and violation.fault.localisable


def first_differs_at(violation: Violation) -> str | None:
    """The op where a wrong value first differs, as ``localised`` found it (its site); None for
    another violation, or a wrong value no prefix showed (not localised) or with no op to blame
    (a flag an autograd Function of Thunder's marked)."""
    return violation.fault.op if isinstance(violation.fault, WrongValue) else None


# The oracles comparing a call with eager's: a prefix wrong by any of them is wrong. (``exact``
# compares with the reference's bits, a wrongness of its own.)
AGAINST_EAGER = frozenset(o.name for o in ORACLES.values() if o.judges == Judges.VALUE and not o.needs_stock)


def judges_alike(violation: Violation) -> frozenset[str]:
    """The oracles whose violation of a prefix can be wrong alike (``wrong_alike``): all that a
    prefix's run needs judged."""
    return AGAINST_EAGER if violation.oracle in AGAINST_EAGER else frozenset({violation.oracle})


def wrong_alike(violation: Violation, other: Violation) -> bool:
    """Is ``other`` (a prefix's) wrong where ``violation`` is: on the same call, a wrong value, flag,
    dtype or shape by any oracle comparing with eager (the same oracle for one that does not)?"""
    if other.call != violation.call or not isinstance(other.fault, WrongValue):
        return False
    if violation.oracle in AGAINST_EAGER:
        return other.oracle in AGAINST_EAGER
    return other.oracle == violation.oracle


# A program of more live steps than this is localised by bisection over its prefixes (about log2 of
# its steps prefix runs for a chain, not one per step): a model block's 60-step program wrong on four
# paths ran some 240 prefix compiles, minutes for one program. Up to this many, each prefix runs, in order.
SCANNED_STEPS = 16


def bisected(program: Program) -> bool:
    """Is a wrong value of ``program`` localised by bisection (past ``SCANNED_STEPS`` live steps),
    not by every prefix in order?"""
    return len(program.live_steps()) > SCANNED_STEPS


def ancestors(program: Program, step: int) -> set[int]:
    """The steps whose values ``step`` reads, directly or through others: those a wrong value of
    which reaches it."""
    return program.steps_reaching(program.steps[step].refs())


def may_change(program: Program, step: int) -> set[int]:
    """The steps before ``step`` that may change what it computes: its ancestors, and every step
    before it that reads a value they or it read (a step may write its operand in place, as
    ``zero_`` does, and a view shares its base's storage; the program does not say which), an
    input's views and base read alike. Wider than ``ancestors``: where ``step`` is wrong, the op at
    fault is among these."""
    alias = {i: spec.view_of for i, spec in enumerate(program.inputs) if spec.view_of is not None}

    def aliased(values: set[int]) -> set[int]:
        bases = {alias.get(v, v) for v in values}
        return values | bases | {v for v, base in alias.items() if base in bases}

    found: set[int] = set()
    read = aliased(set(program.steps[step].refs()))
    grown = True
    while grown:
        grown = False
        for earlier in range(step):
            if earlier in found:
                continue
            first = program.first_value(earlier)
            defined = set(range(first, first + program.steps[earlier].n_out))
            refs = set(program.steps[earlier].refs())
            if defined & read or refs & read:
                found.add(earlier)
                read |= aliased(refs | defined)
                grown = True
    return found


def first_wrong(
    program: Program, violation: Violation, run: RunPrefix, *, exhaustive: bool = False
) -> tuple[int, Violation] | None:
    """The first step, in program order, among those the outputs depend on, whose prefix is wrong
    where ``violation`` is, and the prefix's violation (None: none is).

    Past ``SCANNED_STEPS`` live steps (and not ``exhaustive``), the step is found by bisection over
    the program's dependences, not its order: a prefix that is right clears its step and the steps
    it reads (``ancestors``: a wrong value among them would reach it), nothing else; a prefix that
    is wrong leaves only the steps that may change it (``may_change``) to search. Program order
    alone is no bisection's order: a program of several outputs computes independent values side by
    side, and the prefix of a step computing one of them is right, however wrong an earlier step
    of another is. Where a wrong value stays wrong downstream, the step found is wrong and no step
    it reads is: where only one op is at fault, the first wrong step's op, as the scan finds it;
    where an op after it computes a right value from it, the search may name a later op that is
    wrong too. Deterministic either way: one program names one op. ``exhaustive``: every prefix,
    in order, however long the program (what checks a bisection's answer)."""

    def wrong_at(step: int) -> Violation | None:
        shown = run(program.read_prefix(step))
        wrong = [v for v in shown or [] if wrong_alike(violation, v)]
        same = [v for v in wrong if (v.oracle, v.error_type) == (violation.oracle, violation.error_type)]
        return (same or wrong)[0] if wrong else None

    live = sorted(program.live_steps())
    if exhaustive or not bisected(program):
        for step in live:
            there = wrong_at(step)
            if there is not None:
                return step, there
        return None
    candidates, found = live, None  # the step at fault is among the candidates, or is found
    while candidates:
        middle = candidates[(len(candidates) - 1) // 2]
        there = wrong_at(middle)
        if there is not None:
            found, suspects = (middle, there), may_change(program, middle)
            candidates = [s for s in candidates if s in suspects]
        else:
            cleared = ancestors(program, middle) | {middle}
            candidates = [s for s in candidates if s not in cleared]
    return found


def localised(program: Program, violation: Violation, run: RunPrefix, *, exhaustive: bool = False) -> Violation:
    """``violation`` with its fault and site set to where it is first wrong (unchanged when no
    prefix is); where that prefix is wrong otherwise (a flag where the whole program's value
    differs), the message says so first, then what it causes. ``exhaustive``: by every prefix
    in order (``first_wrong``)."""
    found = first_wrong(program, violation, run, exhaustive=exhaustive)
    if found is None:
        return violation
    step, there = found
    statement = program.statement(step)
    op = called_op(statement)
    if (there.oracle, there.error_type) == (violation.oracle, violation.error_type):
        message = f"{violation.message} (values first differ at `{statement}`)"
    else:
        message = f"{op} is wrong first, at `{statement}`: {there.message}; which makes: {violation.message}"
    return dataclasses.replace(
        violation,
        fault=violation.fault.localised_at(op),
        site=op,
        message=message,
    )


def violations_or_none(result) -> list[Violation] | None:
    """A job's violations, or None when it gave no result (hung, crashed)."""
    return None if isinstance(result, JobFailure) else result.violations
