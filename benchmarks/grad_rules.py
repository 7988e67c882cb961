"""Thunder's grad rules reached by the same number of programs, before and after issue 47's generation
(values at each op's edges, indexing and in-place entries, training shapes, grad-rule steering).

    PYTHONPATH=. python benchmarks/grad_rules.py [--programs 200] [--seeds 0 1] [--path jit-grad]

Each arm draws programs as a campaign does (``driver.HypothesisDriver``: its rounds, its seeds, a
program drawn again not evaluated again) until ``--programs`` distinct programs have run once on
``--path`` under stock, in this process, with the grad rules each ran recorded (``running.grad_rules``).
The arms:

- ``before``: the catalog without the entries issue 47 added (families ``indexing`` and ``training``,
  median, mode, kthvalue), every input left to its value domain (no edges), unsteered (a campaign's
  default);
- ``after``: the catalog and generator as they are, unsteered;
- ``before --steer``: the old catalog, no edges, steered as ``--steer`` did before issue 47 (novelty
  only: the grad rules a program reached neither weigh its entries nor are a target);
- ``after --steer``: the catalog as it is, steered as ``--steer`` does now (novelty, and entries
  whose programs reached a rule not reached before).

Prints, per seed and arm, the rules reached of all Thunder registers, the programs drawn again
(Hypothesis's), the seconds taken, then the rules only one arm of a pair reached.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from collections import Counter
from contextlib import nullcontext
from types import SimpleNamespace
from unittest import mock

import hypothesis.strategies as st
from hypothesis import settings

from fuzzdce.core.model import STOCK
from fuzzdce.core.program import Program
from fuzzdce.fuzzing.config import DriverSettings
from fuzzdce.fuzzing.driver import HypothesisDriver
from fuzzdce.fuzzing.steering import Steering
from fuzzdce.running.grad_rules import grad_rule_ids
from fuzzdce.running.path_running import run_path
from fuzzdce.running.placements import resolve
from fuzzdce.strategies import CATALOG

ADDED_FAMILIES = ("indexing", "training")
ADDED_ENTRIES = ("median_dim", "median_all", "mode", "kthvalue")
BEFORE = tuple(s for s in CATALOG if s.family not in ADDED_FAMILIES and s.name not in ADDED_ENTRIES)
ARMS = ("before", "after", "before --steer", "after --steer")


class NoveltySteering(Steering):
    """Steering as it was before issue 47: what a program drew is counted, the grad rules it reached
    are not (no entry weighs more for them, and they are no target)."""

    def reached(self, evaluations) -> int:
        return 0


class OnePath:
    """The campaign's side of the driver (``DriverHost``) for one path under stock: each distinct
    program run once, the grad rules it ran counted, the steering (if any) told what it reached."""

    def __init__(self, path: str, budget: int) -> None:
        self.path, self.budget = path, budget
        self.stock = resolve("stock")
        self.seen: set[Program] = set()
        self.outcomes: dict[Program, object] = {}  # each distinct program's outcome on the path
        self.drawn_again = 0
        self.rules: Counter = Counter()
        self.driver: HypothesisDriver | None = None

    def examine(self, program: Program, choices, weights) -> None:
        if program in self.seen:
            self.drawn_again += 1
            return
        if len(self.seen) >= self.budget:
            return
        outcome = run_path(self.path, program, self.stock, timeout=60.0)
        self.seen.add(program)
        self.outcomes[program] = outcome
        self.rules.update(set(outcome.grad_rules))
        if self.driver is not None and self.driver.steering is not None:
            self.driver.steering.observe(program, {STOCK: SimpleNamespace(outcomes={self.path: outcome}, invalid=False)})

    def evaluated(self) -> int:
        return len(self.seen)

    def distinct(self) -> int:
        return len(self.seen)

    def new_round(self) -> None:
        """Nothing to do between rounds."""

    def progress(self) -> None:
        """No progress lines."""

    def should_pause(self) -> bool:
        return False

    def generation_over(self) -> bool:
        return False

    def log(self, line: str) -> None:
        print(line, file=sys.stderr)


def no_edges():
    """Every input left to its value domain, as before issue 47 (``strategies.edges``)."""
    return mock.patch.object(sys.modules["fuzzdce.strategies.programs"], "edge_modes", lambda n: st.just(("domain",) * n))


def measure(arm: str, programs: int, seed_value: int, path: str) -> tuple[OnePath, float]:
    """One arm's campaign-like generation of ``programs`` distinct programs; the host and its seconds."""
    before, steer = arm.startswith("before"), arm.endswith("--steer")
    host = OnePath(path, programs)
    options = DriverSettings(
        hypothesis=settings(database=None),
        max_examples=programs,
        seed=seed_value,
        catalog=BEFORE if before else CATALOG,
        steer=steer,
    )
    driver = host.driver = HypothesisDriver(host, options)
    if steer and before:
        driver.steering = NoveltySteering()
    start = time.perf_counter()
    with no_edges() if before else nullcontext():
        driver.run()
    return host, time.perf_counter() - start


def only(a: Counter, b: Counter) -> str:
    """The rules ``a`` reached and ``b`` did not, with their count."""
    names = sorted(set(a) - set(b))
    return f"({len(names)}): {', '.join(names)}"


def main() -> None:
    warnings.filterwarnings("ignore")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--programs", type=int, default=200)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    parser.add_argument("--path", default="jit-grad")
    parser.add_argument("--arms", nargs="+", default=list(ARMS), choices=ARMS)
    args = parser.parse_args()
    total = len(grad_rule_ids())
    print(f"{args.programs} distinct programs per arm, {args.path} under stock; Thunder registers {total} grad rules")
    print(f"catalog before: {len(BEFORE)} entries; after: {len(CATALOG)} entries")
    for seed_value in args.seeds:
        hosts = {}
        for arm in args.arms:
            host, seconds = measure(arm, args.programs, seed_value, args.path)
            hosts[arm] = host
            print(
                f"seed {seed_value} {arm:<15} grad rules reached: {len(host.rules):3d} of {total} "
                f"({host.drawn_again} drawn again, {seconds:.0f} s)",
                flush=True,
            )
        for a, b in (("after", "before"), ("after --steer", "before --steer")):
            if a in hosts and b in hosts:
                print(f"  seed {seed_value} only {a} {only(hosts[a].rules, hosts[b].rules)}")
                print(f"  seed {seed_value} only {b} {only(hosts[b].rules, hosts[a].rules)}")


if __name__ == "__main__":
    main()
