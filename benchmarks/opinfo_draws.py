"""Why an OpInfo step does not reach its op's grad rule, and Thunder's grad rules reached by the same
number of programs with each OpInfo step's dtype drawn evenly among those its OpInfo supports
(``before``) or floating in most draws (``after``: ``programs.opinfo_dtypes``).

    PYTHONPATH=.:benchmarks python benchmarks/opinfo_draws.py [--programs 120] [--seeds 0 1]
        [--path jit-grad] [--opinfo-rate R] [--arms before after]

Each arm draws programs as a default campaign does (``driver.HypothesisDriver``, OpInfo steps in
``--opinfo-rate`` of the programs, unsteered) until ``--programs`` distinct programs have run once
on ``--path`` under stock, in this process (``grad_rules.OnePath``). Per seed and arm it prints the
rules reached (of all Thunder registers; of them the automatically registered ops', which only
OpInfo steps reach), and, of the OpInfo steps whose op has a grad rule of its own
(``opinfo.Entry.rule``), how many reached it and why the others did not:

- ``no operand requiring grad``: no program input the step reads (through the steps before it) is
  a floating tensor that requires grad, so the grad transform has nothing to differentiate; by the
  dtype of those inputs;
- ``path failed``: the path raised or failed before its grad transform ran;
- ``other``: the step ran where a grad could flow, yet its rule was not asked for (an op whose
  result is not differentiable, a rule Thunder skips).
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from collections import Counter
from contextlib import ExitStack
from unittest import mock

from grad_rules import OnePath
from hypothesis import settings

from fuzzdce.core.program import DTYPES, Program
from fuzzdce.fuzzing.config import DriverSettings
from fuzzdce.fuzzing.driver import HypothesisDriver
from fuzzdce.running.grad_rules import AUTOMATIC, grad_rule_ids, rule_families
from fuzzdce.strategies.opinfo import DEFAULT_OPINFO_RATE, source
from fuzzdce.strategies.programs import INPUT_DTYPES
from fuzzdce.strategies.spec import choose

ARMS = ("before", "after")


def read_inputs(program: Program, step: int) -> set[int]:
    """The program inputs step ``step`` reads, directly or through the steps before it."""
    producer, value = {}, len(program.inputs)
    for k, s in enumerate(program.steps):
        for _ in range(s.n_out):
            producer[value], value = k, value + 1
    todo, seen = list(program.steps[step].refs()), set()
    while todo:
        i = todo.pop()
        if i not in seen:
            seen.add(i)
            todo.extend(program.steps[producer[i]].refs() if i in producer else ())
    return {i for i in seen if i < len(program.inputs)}


def why_not_reached(host: OnePath) -> Counter:
    """Of the OpInfo steps with a rule of their own: reached, or why not."""
    rule_of = {e.op: e.rule for e in source(INPUT_DTYPES).entries}
    reasons: Counter = Counter()
    for program, outcome in host.outcomes.items():
        for k, step in enumerate(program.steps):
            rule = rule_of.get(step.op)
            if rule is None:
                continue
            inputs = [program.inputs[i] for i in read_inputs(program, k)]
            if rule in outcome.grad_rules:
                reasons["reached"] += 1
            elif not any(getattr(i, "requires_grad", False) and DTYPES[i.dtype].is_floating_point for i in inputs):
                dtypes = "/".join(sorted({i.dtype for i in inputs if hasattr(i, "dtype")}))
                reasons[f"no operand requiring grad ({dtypes})"] += 1
            elif outcome.failure is not None or outcome.error is not None:
                reasons["path failed"] += 1
            else:
                reasons["other"] += 1
    return reasons


def arm_patches(arm: str, stack: ExitStack) -> None:
    """Draw each OpInfo's dtypes evenly in ``before``."""
    if arm == "before":
        stack.enter_context(mock.patch.object(sys.modules["fuzzdce.strategies.programs"], "opinfo_dtypes", choose))


def measure(arm: str, programs: int, seed_value: int, path: str, opinfo_rate: float) -> tuple[OnePath, float]:
    host = OnePath(path, programs)
    options = DriverSettings(hypothesis=settings(database=None), max_examples=programs, seed=seed_value, opinfo_rate=opinfo_rate)
    host.driver = HypothesisDriver(host, options)
    start = time.perf_counter()
    with ExitStack() as stack:
        arm_patches(arm, stack)
        host.driver.run()
    return host, time.perf_counter() - start


def main() -> None:
    warnings.filterwarnings("ignore")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--programs", type=int, default=120)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    parser.add_argument("--path", default="jit-grad")
    parser.add_argument("--arms", nargs="+", default=list(ARMS), choices=ARMS)
    parser.add_argument("--opinfo-rate", type=float, default=DEFAULT_OPINFO_RATE)
    args = parser.parse_args()
    total = len(grad_rule_ids())
    automatic = {r for family, rules in rule_families().items() if AUTOMATIC in family for r in rules}
    print(f"{args.programs} distinct programs per arm on {args.path} under stock, OpInfo rate {args.opinfo_rate}")
    for seed_value in args.seeds:
        for arm in args.arms:
            host, seconds = measure(arm, args.programs, seed_value, args.path, args.opinfo_rate)
            reasons = why_not_reached(host)
            print(
                f"seed {seed_value} {arm:<6} grad rules reached: {len(host.rules):3d} of {total} "
                f"(automatically registered {len(set(host.rules) & automatic)}); "
                f"{sum(reasons.values())} OpInfo steps with a rule of their own: "
                + ", ".join(f"{why} {n}" for why, n in reasons.most_common())
                + f" ({seconds:.0f} s)",
                flush=True,
            )


if __name__ == "__main__":
    main()
