"""Gradients agree with eager's, and each output's ``requires_grad`` matches.

Both sides backpropagate the same seeded cotangents (``calls.cotangents``); an input the
outputs do not depend on gets zeros on both sides. Only gradient elements whose input element was
finite are compared (``finite_grads``): PyTorch's own gradient tests draw finite inputs, and at a
NaN or infinite input a derivative is a convention (elu's at NaN: eager 1.0, Thunder NaN), not a
value either side computes wrong.
"""

from __future__ import annotations

import dataclasses

import torch

from fuzzdce.core.faults import Flag, flag_fault
from fuzzdce.core.model import Call, Judges, Oracle, Outcome, ScriptCheck, Violation
from fuzzdce.oracles.outputs import compare_calls

ORACLE_NAME = "grads"


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
            function = marking_function(call, expected)
            if function is not None:
                message += f" (the output is made by {function}, which marks it differentiable)"
            violations.append(
                Violation(
                    ORACLE_NAME,
                    outcome.path,
                    message,
                    "RequiresGradMismatch",
                    key=mismatch_key(label, call, expected),
                    fault=requires_grad_fault(outcome.path, label, call, expected, function),
                    call=label,
                    site=function or "",
                )
            )
    return violations


def first_mismatch(call: Call, expected: Call) -> int | None:
    """The first output whose requires_grad differs from eager's (None: another number of outputs)."""
    actual, wanted = call.output_requires_grad, expected.output_requires_grad
    if len(actual) != len(wanted):
        return None
    return next(i for i, (a, w) in enumerate(zip(actual, wanted)) if a != w)


def mismatch_key(label: str, call: Call, expected: Call) -> str:
    """What identifies a requires_grad mismatch: the first differing output's flag against eager's,
    not the lists, which change with every returned value a reduction drops (an output that does
    not require grad where eager's does is one fault, returned alone or beside others)."""
    first = first_mismatch(call, expected)
    if first is None:
        return f"{label} call: {len(call.output_requires_grad)} outputs, eager's {len(expected.output_requires_grad)}"
    return f"{label} call: an output's requires_grad is {call.output_requires_grad[first]}, eager's {expected.output_requires_grad[first]}"


def requires_grad_fault(path: str, label: str, call: Call, expected: Call, function: str | None) -> Flag:
    """A requires_grad mismatch's fault: its direction, and where the flag was decided. An
    output that requires grad where eager's does not, made by an autograd Function of Thunder's own
    (``function``: ``marking_function``), has its flag from that Function (it marks which outputs
    are differentiable, whatever op computed them): one fault at the Function, however many ops show
    it (``thunder.jit`` marking every output differentiable was four bugs, at new_full, ones_like,
    softplus and not localised). Otherwise the op where it first differs (``localise``)."""
    return flag_fault(ORACLE_NAME, label, path, requires_grad_direction(call, expected), function)


def marking_function(call: Call, expected: Call) -> str | None:
    """The autograd Function of Thunder's (``Call.output_functions``) that made the first output
    requiring grad where eager's does not, or None (no such output, or not made by one)."""
    first, functions = first_mismatch(call, expected), call.output_functions
    if first is None or functions is None or len(functions) != len(call.output_requires_grad):
        return None
    function = functions[first]
    invented = call.output_requires_grad[first] and not expected.output_requires_grad[first]
    return function if invented and function is not None and function.startswith("thunder.") else None


def requires_grad_direction(call: Call, expected: Call) -> str:
    """Which way a requires_grad mismatch goes: one of two faults (a flag lost, a flag invented)."""
    first = first_mismatch(call, expected)
    if first is None:
        return "another number of outputs"
    return f"requires_grad {call.output_requires_grad[first]} where eager's is {expected.output_requires_grad[first]}"


def finite_grads(call: Call, inputs: list | None, grad_inputs: list[int] | None = None) -> Call:
    """``call`` with each gradient's elements zeroed where its input's were not finite. Gradients
    are those of the inputs that required grad (``grad_inputs``: their positions, eager's call's),
    in order; without positions, of the floating inputs."""
    if call.grads is None or not inputs:
        return call
    if grad_inputs is None:
        grad_inputs = [i for i, x in enumerate(inputs) if isinstance(x, torch.Tensor) and x.is_floating_point()]
    floating = [inputs[i] for i in grad_inputs if i < len(inputs)]
    grads = []
    for grad, x in zip(call.grads, floating):
        if isinstance(grad, torch.Tensor) and grad.shape == x.shape and not bool(torch.isfinite(x).all()):
            grad = torch.where(torch.isfinite(x).to(grad.device), grad, torch.zeros((), dtype=grad.dtype, device=grad.device))
        grads.append(grad)
    return dataclasses.replace(call, grads=grads + list(call.grads[len(grads) :]))


def finite_only(outcome: Outcome, reference: Outcome) -> tuple[Outcome, Outcome]:
    """Both outcomes (eager's float64 twins too) with their gradients compared at finite inputs only
    (eager's inputs, which both sides drew alike)."""

    def masked_calls(calls: dict) -> dict:
        masked = {}
        for label, call in calls.items():
            expected = reference.calls.get(label)
            masked[label] = finite_grads(
                call,
                expected.inputs_after if expected is not None else None,
                expected.grad_inputs if expected is not None else None,
            )
        return masked

    def masked(o: Outcome) -> Outcome:
        return dataclasses.replace(o, calls=masked_calls(o.calls), float64_calls=masked_calls(o.float64_calls))

    return masked(outcome), masked(reference)


def check(outcome: Outcome, reference: Outcome, stock: Outcome | None = None) -> list[Violation]:
    if reference.error is not None:
        return []
    flags = requires_grad_mismatches(outcome, reference)
    # A call whose outputs require grad where eager's do not (or the other way) backpropagates
    # through other outputs than eager's: its gradients differ because of the flag, and comparing
    # them would file that one fault again as a wrong value. Its gradients are compared once the
    # flags agree.
    flagged = {v.call for v in flags}
    finite_outcome, finite_reference = finite_only(outcome, reference)
    finite_outcome = dataclasses.replace(
        finite_outcome, calls={label: call for label, call in finite_outcome.calls.items() if label not in flagged}
    )
    return flags + compare_calls(finite_outcome, finite_reference, ORACLE_NAME, "grads", "grad")


ORACLE = Oracle(
    ORACLE_NAME,
    check,
    "gradients and each output's requires_grad agree with eager",
    "the gradients agree with eager",
    judges=Judges.VALUE,
    script_check=ScriptCheck.GRADS,
    minify_priority=4,
)
