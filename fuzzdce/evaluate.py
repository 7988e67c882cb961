"""Evaluate one program: eager once, then each path under each placement, every oracle on each.

Stock Thunder is evaluated alongside every other placement: oracles may compare a placement's
outcome with stock's on the same path (``baseline``), and triage needs stock's verdict anyway.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from fuzzdce.execution import DEFAULT_PATHS, Outcome, run_path
from fuzzdce.oracles import ORACLES, Violation
from fuzzdce.placements import PLACEMENTS, Placement
from fuzzdce.program import Program


@dataclass
class Evaluation:
    """One program under one placement: eager's outcome, each path's, and the violations."""

    program: Program
    placement: str
    reference: Outcome
    outcomes: dict[str, Outcome] = field(default_factory=dict)
    violations: list[Violation] = field(default_factory=list)

    @property
    def invalid(self) -> bool:
        """Eager itself rejected the program: not a finding."""
        return self.reference.error is not None


def evaluate(
    program: Program,
    placement: Placement,
    *,
    paths: Sequence[str] = DEFAULT_PATHS,
    oracles: dict = ORACLES,
    timeout: float | None = 60.0,
    reference: Outcome | None = None,
    baseline: Evaluation | None = None,
) -> Evaluation:
    """Run ``program`` through each path under ``placement`` and apply every oracle.

    ``reference`` is eager's outcome (computed when not given); ``baseline`` is stock's evaluation
    of the same program, handed to oracles that compare with it.
    """
    if reference is None:
        reference = run_path("eager", program, PLACEMENTS["stock"], timeout=timeout)
    evaluation = Evaluation(program, placement.name, reference)
    if evaluation.invalid:
        return evaluation
    for path in paths:
        outcome = run_path(path, program, placement, timeout=timeout)
        evaluation.outcomes[path] = outcome
        stock_outcome = baseline.outcomes.get(path) if baseline is not None else None
        for check in oracles.values():
            evaluation.violations += check(outcome, reference, stock_outcome)
    return evaluation


def evaluate_all(
    program: Program, placements: Sequence[Placement], *, paths: Sequence[str] = DEFAULT_PATHS, **options
) -> dict[str, Evaluation]:
    """Evaluate under stock and each of ``placements``; eager runs once, stock compiles once."""
    reference = run_path("eager", program, PLACEMENTS["stock"], timeout=options.get("timeout", 60.0))
    stock = evaluate(program, PLACEMENTS["stock"], paths=paths, reference=reference, **options)
    results = {"stock": stock}
    for placement in placements:
        if not placement.is_stock:
            results[placement.name] = evaluate(
                program, placement, paths=paths, reference=reference, baseline=stock, **options
            )
    return results
