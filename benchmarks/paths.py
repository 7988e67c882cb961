"""Compile cost per path: mean and max seconds per program, for N programs from the strategy.

    PYTHONPATH=. python benchmarks/paths.py [--programs 20] [--seed 0] [--placement stock]

Each program runs once per path under one placement, exactly as a campaign would; the figures
are the ``Outcome.seconds`` the paths record (compile plus calls, backward included).
"""

from __future__ import annotations

import argparse
import statistics
import warnings
from collections import defaultdict


def draw_programs(n: int, seed: int) -> list:
    """``n`` programs from the program strategy, reproducible by ``seed``."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import seed as hypothesis_seed

    from fuzzdce.strategies import programs

    drawn = []

    @settings(max_examples=n, database=None, deadline=None, suppress_health_check=list(HealthCheck))
    @hypothesis_seed(seed)
    @given(programs())
    def collect(program):
        drawn.append(program)

    collect()
    return drawn[:n]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--programs", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--placement", default="stock")
    args = parser.parse_args()
    warnings.filterwarnings("ignore")

    from fuzzdce.running.path_running import run_path
    from fuzzdce.running.paths import DEFAULT_PATHS
    from fuzzdce.running.placements import resolve

    placement = resolve(args.placement)
    seconds, second_calls = defaultdict(list), 0
    programs = draw_programs(args.programs, args.seed)
    run_path("jit", programs[0], placement)  # warm-up: first-use imports are not compile cost
    for program in programs:
        seconds["eager"].append(run_path("eager", program, placement).seconds)
        for path in DEFAULT_PATHS:
            outcome = run_path(path, program, placement)
            seconds[path].append(outcome.seconds)
            second_calls += "resized" in outcome.calls
    print(f"{len(programs)} programs, placement {placement.name}, seed {args.seed}")
    print(f"{'path':<20}{'mean s':>10}{'max s':>10}")
    for path, values in seconds.items():
        print(f"{path:<20}{statistics.mean(values):>10.3f}{max(values):>10.3f}")
    total = sum(statistics.mean(v) for p, v in seconds.items() if p != "eager")
    print(f"{'all paths':<20}{total:>10.3f}")
    print(f"symbolic-values second call made on {second_calls}/{len(programs)} programs")


if __name__ == "__main__":
    main()
