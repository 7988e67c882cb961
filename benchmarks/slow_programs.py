"""The slowest programs of the generator's current mix, with their per-path seconds and sizes.

    PYTHONPATH=. python benchmarks/slow_programs.py [--programs 40] [--seconds 120] [--seed 0]
        [--placement stock] [--show 5]

Draws programs as a campaign's generation does (``HypothesisDriver.strategy``'s mix: catalog
programs, OpInfo steps in ``--opinfo-rate`` of them, model blocks in ``--block-rate``), runs each
in this process in eager and on every default path under ``--placement`` (until ``--seconds`` are
spent), and prints the time per source, then the ``--show`` slowest programs: their seconds per path,
size (ops, input elements, the largest input), the calls and traces each path made (a path that
recompiles makes more traces), and their source. What a campaign's program limit cuts
(``fuzzdce/fuzzing/program_cost.py``) is what this shows, before a campaign meets it.
"""

from __future__ import annotations

import argparse
import math
import statistics
import time
import warnings
from collections import defaultdict


def draw_programs(n: int, seed: int, opinfo_rate: float, block_rate: float) -> list:
    """``n`` programs of the campaign's mix, reproducible by ``seed``."""
    from hypothesis import HealthCheck, Verbosity, given, settings
    from hypothesis import seed as hypothesis_seed

    from fuzzdce.strategies import CATALOG, programs
    from fuzzdce.strategies.model_blocks import programs_with_blocks

    strategy = (
        programs_with_blocks(block_rate=block_rate, catalog=CATALOG, weights=None, opinfo_rate=opinfo_rate)
        if block_rate > 0
        else programs(catalog=CATALOG, weights=None, opinfo_rate=opinfo_rate)
    )
    drawn = []

    @settings(max_examples=n, database=None, deadline=None, suppress_health_check=list(HealthCheck), verbosity=Verbosity.quiet)
    @hypothesis_seed(seed)
    @given(strategy)
    def collect(program):
        drawn.append(program)

    collect()
    return drawn[:n]


def input_elements(program) -> tuple[int, str]:
    """All inputs' elements, and the largest input as dtype[shape]."""
    tensors = [s for s in program.inputs if getattr(s, "shape", None) is not None]
    if not tensors:
        return 0, "-"
    largest = max(tensors, key=lambda s: math.prod(s.shape))
    return sum(math.prod(s.shape) for s in tensors), f"{largest.dtype}{list(largest.shape)}"


def main() -> None:
    from fuzzdce.strategies.model_blocks import DEFAULT_BLOCK_RATE
    from fuzzdce.strategies.opinfo import DEFAULT_OPINFO_RATE

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--programs", type=int, default=40)
    parser.add_argument("--seconds", type=float, default=120.0, help="stop evaluating after this long")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--placement", default="stock")
    parser.add_argument("--opinfo-rate", type=float, default=DEFAULT_OPINFO_RATE)
    parser.add_argument("--block-rate", type=float, default=DEFAULT_BLOCK_RATE)
    parser.add_argument("--show", type=int, default=5)
    args = parser.parse_args()
    warnings.filterwarnings("ignore")

    from fuzzdce.core.quiet import quiet_library_warnings
    from fuzzdce.running.path_running import run_path
    from fuzzdce.running.paths import DEFAULT_PATHS, PATHS
    from fuzzdce.running.placements import resolve
    from fuzzdce.strategies.sources import source_of

    quiet_library_warnings()
    placement = resolve(args.placement)
    paths = [p for p in DEFAULT_PATHS if p in PATHS and not PATHS[p].unavailable()]
    programs = draw_programs(args.programs, args.seed, args.opinfo_rate, args.block_rate)
    run_path("jit", programs[0], placement)  # warm-up: first-use imports are not a program's cost
    rows, started = [], time.monotonic()
    for program in programs:
        if time.monotonic() - started > args.seconds:
            break
        per_path = {}
        for path in ["eager", *paths]:
            t0 = time.perf_counter()
            outcome = run_path(path, program, placement)
            per_path[path] = (time.perf_counter() - t0, len(outcome.calls) + len(outcome.guard_calls), len(outcome.traces))
        elements, largest = input_elements(program)
        rows.append((sum(s for s, _, _ in per_path.values()), program, per_path, elements, largest))
    print(
        f"{len(rows)} of {len(programs)} programs evaluated in {time.monotonic() - started:.0f} s; placement {placement.name}; seed {args.seed}"
    )
    by_source = defaultdict(list)
    for total, program, *_ in rows:
        by_source[source_of(program.ops)].append(total)
    print(f"{'source':<18}{'programs':>9}{'median s':>10}{'max s':>9}")
    for name, values in sorted(by_source.items()):
        print(f"{name:<18}{len(values):>9}{statistics.median(values):>10.2f}{max(values):>9.2f}")
    totals = [r[0] for r in rows]
    if totals:
        print(f"all: median {statistics.median(totals):.2f} s, max {max(totals):.2f} s")
    for total, program, per_path, elements, largest in sorted(rows, key=lambda r: -r[0])[: args.show]:
        print(
            f"\n--- {total:.2f} s: {program.n_ops} ops ({source_of(program.ops)}), {elements} input elements, largest {largest}"
        )
        for path, (seconds, calls, traces) in sorted(per_path.items(), key=lambda item: -item[1][0]):
            print(f"    {path:<20}{seconds:>8.2f} s  {calls} calls  {traces} traces")
        print("    ops: " + ", ".join(program.ops))
        print("\n".join("    | " + line for line in program.source().splitlines()))


if __name__ == "__main__":
    main()
