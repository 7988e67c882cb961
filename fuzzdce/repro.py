"""Support for reproducer scripts: rerun one finding's check and report it."""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass

from fuzzdce.execution import run_path
from fuzzdce.oracles import ORACLES
from fuzzdce.placements import resolve


@dataclass(frozen=True)
class ScriptProgram:
    """A program given as a plain function and a ``make_inputs(requires_grad)`` function."""

    fn: Callable
    inputs: Callable

    def function(self) -> Callable:
        return self.fn

    def make_inputs(self, *, requires_grad: bool = False):
        return self.inputs(requires_grad)


def reproduce(fn: Callable, make_inputs: Callable, *, path: str, placement: str, oracle: str) -> int:
    """Run ``fn`` through ``path`` under ``placement`` and apply ``oracle``; 1 if it fails, else 0."""
    program = ScriptProgram(fn, make_inputs)
    reference = run_path("eager", program, resolve("stock"))
    if reference.error is not None:
        print(f"eager itself fails: {reference.error}", file=sys.stderr)
        return 2
    outcome = run_path(path, program, resolve(placement))
    violations = ORACLES[oracle](outcome, reference, None)
    for v in violations:
        print(f"FAIL {v}")
    if not violations:
        print(f"ok: {oracle} holds on {path} under {placement}")
    return 1 if violations else 0
