"""Statement-level reductions of a program, the passes PyTorch's ``fx_minifier`` runs, in its order:

1. drop a statement whose results nothing reads (``drop_dead``);
2. drop an input nothing reads, and a returned value beyond the first (``drop_unused_inputs``,
   ``drop_outputs``);
3. move the return earlier: the program cut after a statement, returning what it defines
   (``truncations``);
4. delta-debug ranges of statements: each removed statement's results that later ones read become
   fresh inputs of the same shape and dtype (``without_range``).

Each pass proposes candidates; ``reduce`` keeps one only when ``fails(candidate)`` (the caller's
replay: the same failure, on the same configuration). Nothing is guessed: a dead statement can
matter (``torch.frexp(v1)[1]`` alone does not fail where the program with its dead twin does), so
every candidate is replayed. Pure functions of ``Program``: the shrinker (``shrinking``) supplies
the replay, ``tests/test_reductions.py`` a stand-in.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from typing import Any

import torch

from fuzzdce.core.findings import size
from fuzzdce.core.program import DTYPES, Program, Ref, TensorInput

Fails = Callable[[Program], bool]


def producers(program: Program) -> dict[int, int]:
    """Value index -> the index of the step defining it (inputs are defined by no step)."""
    owner, index = {}, len(program.inputs)
    for i, step in enumerate(program.steps):
        for _ in range(step.n_out):
            owner[index] = i
            index += 1
    return owner


def first_value(program: Program, step_index: int) -> int:
    """The first value step ``step_index`` defines."""
    return len(program.inputs) + sum(s.n_out for s in program.steps[:step_index])


def _renumbered(value: Any, mapping: dict[int, int]) -> Any:
    return Ref(mapping[value.index]) if isinstance(value, Ref) else value


def rebuilt(
    program: Program,
    kept_inputs: list[int],
    kept_steps: list[int],
    outputs: tuple[int, ...],
    fresh: tuple[tuple[int, TensorInput], ...] = (),
) -> Program | None:
    """A program of the old inputs ``kept_inputs``, then one new input per ``fresh`` entry (the old
    value it stands for, and its spec), the old steps ``kept_steps``, returning the old values
    ``outputs``: every reference renumbered. None when a kept step or output reads a value no
    longer defined, or a kept input is a view of a dropped one."""
    mapping = {old: new for new, old in enumerate(kept_inputs)}
    mapping |= {value: len(kept_inputs) + j for j, (value, _) in enumerate(fresh)}
    inputs = []
    for old in kept_inputs:
        spec = program.inputs[old]
        if spec.view_of is not None:
            if spec.view_of not in mapping:
                return None
            spec = dataclasses.replace(spec, view_of=mapping[spec.view_of])
        inputs.append(spec)
    inputs += [spec for _, spec in fresh]
    index, steps = len(inputs), []
    for i in kept_steps:
        step = program.steps[i]
        if any(r not in mapping for r in step.refs()):
            return None
        steps.append(
            dataclasses.replace(
                step,
                args=tuple(_renumbered(a, mapping) for a in step.args),
                kwargs=tuple((k, _renumbered(v, mapping)) for k, v in step.kwargs),
            )
        )
        for offset in range(step.n_out):
            mapping[first_value(program, i) + offset] = index
            index += 1
    if not outputs or any(o not in mapping for o in outputs):
        return None
    return dataclasses.replace(program, inputs=tuple(inputs), steps=tuple(steps), outputs=tuple(mapping[o] for o in outputs))


def without_steps(program: Program, dropped: set[int]) -> Program | None:
    """The program without the steps ``dropped`` (None when something kept reads their results)."""
    kept = [i for i in range(program.n_ops) if i not in dropped]
    return rebuilt(program, list(range(len(program.inputs))), kept, program.outputs)


def drop_dead(program: Program) -> Iterator[Program]:
    """Candidates: the program without one statement whose results nothing reads, last first."""
    live = program.live_steps()
    for i in reversed(range(program.n_ops)):
        if i not in live and (candidate := without_steps(program, {i})) is not None:
            yield candidate


def read_inputs(program: Program) -> set[int]:
    """Inputs some step or output reads, or that another input is a view of."""
    read = {r for step in program.steps for r in step.refs()} | set(program.outputs)
    read |= {spec.view_of for spec in program.inputs if spec.view_of is not None}
    return {i for i in range(len(program.inputs)) if i in read}


def drop_unused_inputs(program: Program) -> Iterator[Program]:
    """Candidates: the program without one input nothing reads (the later inputs' values change:
    they are drawn from one seeded generator in order, so this too is replayed)."""
    read = read_inputs(program)
    for i in reversed(range(len(program.inputs))):
        if i in read:
            continue
        kept = [j for j in range(len(program.inputs)) if j != i]
        candidate = rebuilt(program, kept, list(range(program.n_ops)), program.outputs)
        if candidate is not None:
            yield candidate


def drop_outputs(program: Program) -> Iterator[Program]:
    """Candidates: the program returning one value fewer (never none)."""
    if len(program.outputs) < 2:
        return
    for i in reversed(range(len(program.outputs))):
        yield dataclasses.replace(program, outputs=program.outputs[:i] + program.outputs[i + 1 :])


def truncations(program: Program) -> Iterator[Program]:
    """Candidates: the program cut after statement k, returning what it defines, shortest first
    (the values before it keep their numbers)."""
    for k in range(program.n_ops - 1):
        first = first_value(program, k)
        outputs = tuple(range(first, first + program.steps[k].n_out))
        yield dataclasses.replace(program, steps=program.steps[: k + 1], outputs=outputs)


def value_specs(program: Program) -> dict[int, TensorInput]:
    """Each value the program defines that is a tensor, as an input of its shape and dtype (from
    one eager run here; {} when it does not run). What a delta-debugging step's fresh inputs are."""
    every = dataclasses.replace(program, outputs=tuple(range(len(program.inputs), first_value(program, program.n_ops))))
    try:
        with torch.no_grad():
            values = every.function()(*program.make_inputs())
    except Exception:  # eager rejects it: no delta debugging, the other passes still run
        return {}
    dtypes = {v: k for k, v in DTYPES.items()}
    specs = {}
    for index, value in zip(every.outputs, values):
        if isinstance(value, torch.Tensor) and value.dtype in dtypes and value.layout == torch.strided:
            specs[index] = TensorInput(tuple(value.shape), dtypes[value.dtype])
    return specs


def without_range(program: Program, dropped: range, specs: dict[int, TensorInput]) -> Program | None:
    """The program without the steps in ``dropped``: each of their results that a kept step or the
    return reads becomes a fresh input of its shape and dtype (``specs``). None when one cannot."""
    owner = producers(program)
    kept_steps = [i for i in range(program.n_ops) if i not in dropped]
    read = {r for i in kept_steps for r in program.steps[i].refs()} | set(program.outputs)
    needed = sorted(v for v in read if owner.get(v) in dropped)
    if any(v not in specs for v in needed):
        return None
    fresh = tuple((v, specs[v]) for v in needed)
    return rebuilt(program, list(range(len(program.inputs))), kept_steps, program.outputs, fresh)


def delta_debugging(program: Program) -> Iterator[Program]:
    """Candidates: ranges of statements removed, halves first, then quarters, down to single ones."""
    if program.n_ops < 2:
        return
    specs = value_specs(program)
    chunk = program.n_ops // 2
    while chunk >= 1:
        for start in range(0, program.n_ops, chunk):
            dropped = range(start, min(start + chunk, program.n_ops))
            if len(dropped) < program.n_ops and (candidate := without_range(program, dropped, specs)) is not None:
                yield candidate
        chunk //= 2


PASSES: tuple[Callable[[Program], Iterator[Program]], ...] = (
    drop_dead,
    drop_unused_inputs,
    drop_outputs,
    truncations,
    delta_debugging,
)


def first_failing(candidates: Iterator[Program], fails: Fails, current: Program) -> Program | None:
    """The first candidate smaller than ``current`` that still fails."""
    for candidate in candidates:
        if size(candidate) < size(current) and fails(candidate):
            return candidate
    return None


def reduce(program: Program, fails: Fails, *, out_of_time: Callable[[], bool] = lambda: False) -> tuple[Program, bool]:
    """``program`` reduced by the passes, in order, each to its end, until none applies; returns the
    smallest failing program and whether the passes finished (False: ``out_of_time`` stopped them).
    ``fails`` is asked only of candidates smaller than the current program."""
    current = program
    while True:
        for reduction in PASSES:
            if out_of_time():
                return current, False
            smaller = first_failing(reduction(current), fails, current)
            if smaller is not None:
                current = smaller
                break  # start again from the cheapest pass on the smaller program
        else:
            return current, True
