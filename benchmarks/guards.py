"""The ``guards`` oracle's cost: programs per minute with no guard calls, with a campaign's one
guarded property per program, and with every property a program has, on the same programs.

    PYTHONPATH=. python benchmarks/guards.py [--programs 20] [--seed 0] [--placement stock --placement symcall]

Each program is evaluated as a campaign evaluates it (eager, then every path under each placement,
oracles included), once per setting of ``variants.GUARDS_PER_PROGRAM``; the figures are wall
seconds of those evaluations. Guard calls run on the ``jit`` and ``jit-symbolic`` paths; each one
that misses the cache compiles again. Also printed: how many programs varied each property.
"""

from __future__ import annotations

import argparse
import time
import warnings
from collections import Counter

from paths import draw_programs

SETTINGS = {"no guard calls": 0, "one property per program (campaigns)": 1, "every property": None}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--programs", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--placement", action="append", default=None)
    args = parser.parse_args()
    warnings.filterwarnings("ignore")

    from fuzzdce.running import variants
    from fuzzdce.running.evaluate import Evaluator
    from fuzzdce.running.paths import DEFAULT_PATHS
    from fuzzdce.running.placements import resolve

    placements = [resolve(name) for name in args.placement or ["stock", "symcall"]]
    programs = draw_programs(args.programs, args.seed)
    # One evaluator per setting (each keeps its current program's eager reference), and the
    # settings interleaved program by program, so that a machine's changing load weighs on all alike.
    evaluators = {name: Evaluator() for name in SETTINGS}
    variants.GUARDS_PER_PROGRAM = 0
    Evaluator()(programs[-1], placements, paths=DEFAULT_PATHS)  # warm-up: first-use imports are no cost
    seconds, varied = Counter(), {name: Counter() for name in SETTINGS}
    for program in programs:
        for name, per_program in SETTINGS.items():
            variants.GUARDS_PER_PROGRAM = per_program
            start = time.perf_counter()
            evaluations = evaluators[name](program, placements, paths=DEFAULT_PATHS)
            seconds[name] += time.perf_counter() - start
            varied[name].update(label.property_varied for label in evaluations["stock"].reference.guard_calls)
    print(f"{len(programs)} programs, placements {', '.join(p.name for p in placements)}, paths {', '.join(DEFAULT_PATHS)}")
    baseline = 60 * len(programs) / seconds["no guard calls"]
    for name in SETTINGS:
        per_minute = 60 * len(programs) / seconds[name]
        drop = 100 * (1 - per_minute / baseline)
        print(f"{name:<40}{seconds[name] / len(programs):>8.2f} s/program {per_minute:>8.1f} programs/min  drop {drop:>5.1f}%")
        if varied[name]:
            print(f"{'':<40}varied: {', '.join(f'{k} {n}' for k, n in varied[name].most_common())}")
    variants.GUARDS_PER_PROGRAM = 1


if __name__ == "__main__":
    main()
