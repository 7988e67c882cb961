"""Generator benchmark: throughput (generation only), eager validity, and what gets generated.

    PYTHONPATH=. python benchmarks/generator.py [--programs 1000] [--seed 0]

Prints programs per second for drawing alone, the share of drawn programs that run in eager
without error (the catalog's promise is >= 95%), the share whose outputs are all NaN, and the
distributions of ops, families, input dtypes and program sizes.
"""

from __future__ import annotations

import argparse
import random
import time
import warnings
from collections import Counter

import torch
from hypothesis import HealthCheck, Verbosity, given, seed, settings

from fuzzdce.core.program import Program
from fuzzdce.strategies import BY_NAME, CATALOG, programs


def draw_programs(n: int, seed_value: int) -> list[Program]:
    """``n`` programs as the campaign's Hypothesis loop would draw them (generation phase only)."""
    drawn: list[Program] = []

    @settings(max_examples=n, database=None, deadline=None, suppress_health_check=list(HealthCheck), verbosity=Verbosity.quiet)
    @seed(seed_value)
    @given(programs())
    def collect(program):
        drawn.append(program)

    collect()
    return drawn


def eager_result(program: Program) -> str:
    """ "ok", "all-nan" (every floating output entirely NaN) or the exception type."""
    try:
        outputs = program.function()(*program.make_inputs())
    except Exception as e:  # invalid program: what the benchmark counts
        return f"error:{type(e).__name__}:{str(e).splitlines()[0][:80] if str(e) else ''}"
    floats = [o for o in outputs if o.is_floating_point() and o.numel()]
    if floats and all(torch.isnan(o).all() for o in floats):
        return "all-nan"
    return "ok"


def table(title: str, counts: Counter, total: int, limit: int | None = None) -> str:
    rows = [f"{title}:"]
    for key, n in counts.most_common(limit):
        rows.append(f"  {key:<28} {n:6d}  {100 * n / total:5.1f}%")
    return "\n".join(rows)


def main() -> None:
    warnings.filterwarnings("ignore")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--programs", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    random.seed(args.seed)

    start = time.perf_counter()
    drawn = draw_programs(args.programs, args.seed)
    seconds = time.perf_counter() - start
    print(f"generation: {len(drawn)} programs in {seconds:.1f} s = {len(drawn) / seconds:.1f} programs/s")

    results = Counter(eager_result(p) for p in drawn)
    valid = sum(n for r, n in results.items() if not r.startswith("error"))
    print(f"eager validity: {valid}/{len(drawn)} = {100 * valid / len(drawn):.1f}%  (all-NaN outputs: {results['all-nan']})")
    errors = Counter({r: n for r, n in results.items() if r.startswith("error")})
    if errors:
        print(table("eager errors", errors, len(drawn), 15))

    ops = Counter(op for p in drawn for op in p.ops)
    families = Counter(BY_NAME[op].family for op in ops.elements())
    print(f"ops exercised: {len(ops)}/{len(CATALOG)} catalog entries; never drawn: {sorted(set(BY_NAME) - set(ops))}")
    print(table("families", families, sum(families.values())))
    print(table("ops (top 20)", ops, sum(ops.values()), 20))
    print(table("input dtypes", Counter(i.dtype for p in drawn for i in p.inputs), sum(len(p.inputs) for p in drawn)))
    print(table("program sizes (ops)", Counter(p.n_ops for p in drawn), len(drawn)))
    dropped = Counter(op for p in drawn for op in p.dropped)
    kept = sum(p.n_ops for p in drawn)
    print(
        f"steps drawn but dropped (no operand fitted, or torch rejected them): {sum(dropped.values())} "
        f"against {kept} kept ({100 * sum(dropped.values()) / max(kept + sum(dropped.values()), 1):.1f}% of drawn)"
    )
    print(table("dropped steps by op (top 15)", dropped, sum(dropped.values()), 15))
    dead = sum(1 for p in drawn if len(p.live_steps()) < p.n_ops)
    print(f"programs with dead code: {dead}/{len(drawn)}")


if __name__ == "__main__":
    main()
