"""Thunder's grad rules reached by the same number of programs, before and after issue 47's generation
(values at each op's edges, indexing and in-place entries, training shapes).

    PYTHONPATH=. python benchmarks/grad_rules.py [--programs 150] [--seed 0] [--path jit-grad]

Draws ``--programs`` programs with the same Hypothesis seed from two generators: "before", the
catalog without the entries issue 47 added (families ``indexing`` and ``training``, median, mode,
kthvalue) and every input left to its value domain (no edges); "after", the catalog and generator
as they are. Each program runs once on ``--path`` under stock, in this process, with the grad rules
it ran recorded (``running.grad_rules``); prints the rules each reached, of all Thunder registers,
the rules only one of them reached, and the seconds each took.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from collections import Counter
from unittest import mock

import hypothesis.strategies as st
from hypothesis import HealthCheck, Phase, given, seed, settings

from fuzzdce.core.program import Program
from fuzzdce.running.execution import run_path
from fuzzdce.running.grad_rules import grad_rule_ids
from fuzzdce.running.placements import resolve
from fuzzdce.strategies import CATALOG, programs

ADDED_FAMILIES = ("indexing", "training")
ADDED_ENTRIES = ("median_dim", "median_all", "mode", "kthvalue")
BEFORE = tuple(s for s in CATALOG if s.family not in ADDED_FAMILIES and s.name not in ADDED_ENTRIES)


def draw(catalog, n: int, seed_value: int) -> list[Program]:
    drawn: list[Program] = []

    @settings(max_examples=n, database=None, deadline=None, phases=[Phase.generate], suppress_health_check=list(HealthCheck))
    @seed(seed_value)
    @given(programs(catalog=catalog))
    def collect(program):
        drawn.append(program)

    collect()
    return drawn


def reached(drawn: list[Program], path: str) -> tuple[Counter, float]:
    stock = resolve("stock")
    counts: Counter = Counter()
    start = time.perf_counter()
    for program in drawn:
        counts.update(set(run_path(path, program, stock, timeout=60.0).grad_rules))
    return counts, time.perf_counter() - start


def main() -> None:
    warnings.filterwarnings("ignore")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--programs", type=int, default=150)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--path", default="jit-grad")
    args = parser.parse_args()
    total = len(grad_rule_ids())
    module = sys.modules["fuzzdce.strategies.programs"]
    with mock.patch.object(module, "edge_modes", lambda n: st.just(("domain",) * n)):
        before_programs = draw(BEFORE, args.programs, args.seed)
    after_programs = draw(CATALOG, args.programs, args.seed)
    before, before_s = reached(before_programs, args.path)
    after, after_s = reached(after_programs, args.path)
    print(f"{args.programs} programs, seed {args.seed}, {args.path} under stock; Thunder registers {total} grad rules")
    print(
        f"before (catalog of {len(BEFORE)} entries, no edges): grad rules reached: {len(before)} of {total} in {before_s:.0f} s"
    )
    print(f"after  (catalog of {len(CATALOG)} entries, edges):    grad rules reached: {len(after)} of {total} in {after_s:.0f} s")
    print(f"only after ({len(set(after) - set(before))}): {', '.join(sorted(set(after) - set(before)))}")
    print(f"only before ({len(set(before) - set(after))}): {', '.join(sorted(set(before) - set(after)))}")


if __name__ == "__main__":
    main()
