"""Coverage benchmark: what N programs test, with and without steering.

    PYTHONPATH=. python benchmarks/coverage.py [--programs 300] [--seed 0] [--compile 100]
        [--paths jit,jit-grad] [--placements rdnp,symcall]

For each mode (unsteered: the default strategy in one Hypothesis run; steered: ``steering.Steering``,
rounds of weights plus ``target()``/``event()``) it prints the catalog entries, input dtypes and
value domains exercised by ``--programs`` programs and their eager validity; then, for the first
``--compile`` programs of a separate run in each mode (evaluated as a campaign would: stock and each
placement on each path, every oracle run), the fraction of programs in which each placement changed
subsymbols against stock, the symbols it changed them in, and what ``dce-sound`` and other oracles
reported. symcall-fixed differs from symcall on thunderfx only, so it is left out by default.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
import warnings
from collections import Counter
from pathlib import Path

from hypothesis import HealthCheck, Verbosity, given, seed, settings

sys.path.insert(0, str(Path(__file__).resolve().parent))

from generator import eager_result  # noqa: E402

from fuzzdce.core.program import Program  # noqa: E402
from fuzzdce.fuzzing.steering import ROUND, Steering  # noqa: E402
from fuzzdce.running.coverage import DceActivity, activity_lines  # noqa: E402
from fuzzdce.running.evaluate import Evaluator  # noqa: E402
from fuzzdce.running.placements import resolve  # noqa: E402
from fuzzdce.strategies import CATALOG, programs  # noqa: E402


def run(n: int, seed_value: int, steer: bool, examine=None) -> list[Program]:
    """``n`` programs, each handed to ``examine(program)`` (which may return evaluations) inside the
    Hypothesis test; steered: rounds of ``ROUND`` with fresh weights, targets and events."""
    drawn: list[Program] = []
    steering = Steering() if steer else None
    round_number = 0
    while len(drawn) < n:
        size = min(ROUND, n - len(drawn)) if steer else n - len(drawn)
        strategy = programs(weights=steering.weights()) if steer else programs()
        before = len(drawn)

        @settings(
            max_examples=size, database=None, deadline=None, suppress_health_check=list(HealthCheck), verbosity=Verbosity.quiet
        )
        @seed(random.Random(f"{seed_value}/{round_number}").getrandbits(32))
        @given(strategy)
        def collect(program):
            if len(drawn) >= n:
                return
            drawn.append(program)
            evaluations = examine(program) if examine is not None else None
            if steering is not None:
                steering.observe(program, evaluations)

        collect()
        round_number += 1
        if len(drawn) == before:
            break
    return drawn[:n]


def generation_figures(n: int, seed_value: int, steer: bool) -> None:
    start = time.perf_counter()
    drawn = run(n, seed_value, steer)
    seconds = time.perf_counter() - start
    ops = Counter(op for p in drawn for op in p.ops)
    results = Counter(eager_result(p) for p in drawn)
    valid = sum(k for r, k in results.items() if not r.startswith("error"))
    dtypes = Counter(i.dtype for p in drawn for i in p.inputs)
    domains = Counter(i.domain for p in drawn for i in p.inputs)
    print(
        f"  {len(drawn)} programs drawn in {seconds:.1f} s, {sum(ops.values())} ops ({sum(ops.values()) / len(drawn):.1f}/program)"
    )
    print(
        f"  catalog entries exercised: {len(ops)}/{len(CATALOG)} = {100 * len(ops) / len(CATALOG):.0f}%; most drawn: {ops.most_common(3)}"
    )
    print(f"  eager validity: {valid}/{len(drawn)} = {100 * valid / len(drawn):.1f}% (all-NaN outputs {results['all-nan']})")
    print(f"  input dtypes: {dict(dtypes.most_common())}")
    print(f"  value domains: {dict(domains.most_common())}")
    errors = Counter({r: k for r, k in results.items() if r.startswith("error")})
    if errors:
        print(f"  eager errors: {dict(errors.most_common(5))}")


def activity_figures(n: int, seed_value: int, steer: bool, paths: list[str], placements: list[str]) -> None:
    evaluator = Evaluator()
    chosen = [resolve(p) for p in placements]
    activity = DceActivity()
    oracles: Counter = Counter()
    sound: list[str] = []

    def examine(program):
        evaluations = evaluator(program, chosen, paths=paths, timeout=60.0)
        activity.add(evaluations)
        for name, evaluation in evaluations.items():
            for v in evaluation.violations:
                oracles[(name, v.oracle)] += 1
                if v.oracle == "dce-sound":
                    sound.append(f"{name}: {v.message[:200]}")
        return evaluations

    start = time.perf_counter()
    drawn = run(n, seed_value, steer, examine)
    print(f"  {len(drawn)} programs evaluated on {', '.join(paths)} in {time.perf_counter() - start:.0f} s")
    data = activity.summary(placements)
    for line in activity_lines(data, limit=10):
        print(f"  {line}")
    for name in placements:
        print(f"  {name}: symbols with changed subsymbols: {len(data[name]['symbols'])}")
    print(f"  violations per (placement, oracle): {dict(sorted(oracles.items()))}")
    print(f"  dce-sound violations: {len(sound)}" + "".join(f"\n    {s}" for s in sound[:10]))


def main() -> None:
    warnings.filterwarnings("ignore")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--programs", type=int, default=300)
    parser.add_argument("--compile", type=int, default=100, help="programs evaluated for DCE activity (0: none)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--paths", default="jit,jit-grad,jit-symbolic")
    parser.add_argument("--placements", default="rdnp,symcall")
    parser.add_argument("--modes", default="unsteered,steered")
    args = parser.parse_args()
    for mode in args.modes.split(","):
        steer = mode == "steered"
        print(f"== {mode}: generation ==", flush=True)
        generation_figures(args.programs, args.seed, steer)
        if args.compile:
            print(f"== {mode}: DCE activity ==", flush=True)
            activity_figures(args.compile, args.seed, steer, args.paths.split(","), args.placements.split(","))
        sys.stdout.flush()


if __name__ == "__main__":
    main()
