"""Inputs mutated by in-place ops end in the same state as in eager (and untouched ones stay so)."""

from __future__ import annotations

from fuzzdce.execution import Outcome
from fuzzdce.oracles.outputs import compare_calls


def check(outcome: Outcome, reference: Outcome, baseline: Outcome | None = None) -> list:
    return compare_calls(outcome, reference, "mutations", "inputs_after", "input after the call")
