"""Inputs mutated by in-place ops end in the same state as in eager (and untouched ones stay so)."""

from __future__ import annotations

from fuzzdce.core.model import Judges, Oracle, Outcome, ScriptCheck, Violation
from fuzzdce.oracles.outputs import compare_calls


def check(outcome: Outcome, reference: Outcome, stock: Outcome | None = None) -> list[Violation]:
    return compare_calls(outcome, reference, "mutations", "inputs_after", "input after the call")


ORACLE = Oracle(
    "mutations",
    check,
    "inputs end in the same state as in eager (in-place ops)",
    "the inputs are mutated as in eager",
    judges=Judges.VALUE,
    script_check=ScriptCheck.MUTATIONS,
    minify_priority=5,
)
