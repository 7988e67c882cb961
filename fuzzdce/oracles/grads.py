"""Gradients agree with eager's, and each output's ``requires_grad`` matches.

Both sides backpropagate the same seeded cotangents (``execution.cotangents``); an input the
outputs do not depend on gets zeros on both sides.
"""

from __future__ import annotations

from fuzzdce.core.model import Oracle, Outcome, Violation
from fuzzdce.oracles.outputs import compare_calls


def requires_grad_mismatches(outcome: Outcome, reference: Outcome) -> list[Violation]:
    violations = []
    for label, call in outcome.calls.items():
        expected = reference.calls.get(label)
        if expected is None or call.output_requires_grad is None or expected.output_requires_grad is None:
            continue
        if call.output_requires_grad != expected.output_requires_grad:
            message = (
                f"{label} call: requires_grad of outputs is {call.output_requires_grad}, eager's {expected.output_requires_grad}"
            )
            violations.append(Violation("grads", outcome.path, message, "RequiresGradMismatch"))
    return violations


def check(outcome: Outcome, reference: Outcome, stock: Outcome | None = None) -> list[Violation]:
    if reference.error is not None:
        return []
    return requires_grad_mismatches(outcome, reference) + compare_calls(outcome, reference, "grads", "grads", "grad")


ORACLE = Oracle("grads", check, "gradients and each output's requires_grad agree with eager")
