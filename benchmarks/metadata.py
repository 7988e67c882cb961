"""What the ``metadata`` oracle's observer costs per program, on every default path.

    PYTHONPATH=. python benchmarks/metadata.py [--programs 10] [--seed 0]

The observer (``running.stated_metadata``) makes each forward and backward execution trace's
function from a copy of the trace with a call after each bound symbol. Its cost is measured where it
is spent: making the copy, building the longer function (against building Thunder's own from the
same trace, timed beside it, each warm), and the comparisons while the calls run. Then, as a check, each
program's paths end to end with the observer and without it (noisy on a shared machine: compile
time dominates).
"""

from __future__ import annotations

import argparse
import contextlib
import time
import warnings

from benchmarks.paths import draw_programs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--programs", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    warnings.filterwarnings("ignore")

    from thunder.core.trace import TraceCtx, from_trace

    from fuzzdce.running import path_running, stated_metadata
    from fuzzdce.running.paths import DEFAULT_PATHS
    from fuzzdce.running.placements import resolve

    programs = draw_programs(args.programs, args.seed)
    stock = resolve("stock")
    spent = {"copy": 0.0, "build observed": 0.0, "build plain": 0.0, "checks": 0.0}
    copy, check, build = stated_metadata.observing_copy, stated_metadata.Observer.check, TraceCtx.python_callable

    def timed_copy(trace, observer):
        start = time.perf_counter()
        try:
            return copy(trace, observer)
        finally:
            spent["copy"] += time.perf_counter() - start

    def timed_check(self, stated, *values):
        start = time.perf_counter()
        check(self, stated, *values)
        spent["checks"] += time.perf_counter() - start

    def timed_build(self, *a, **k):
        observers = [b for b in self.bound_symbols if b.sym.name.startswith("fuzzdce_observe")]
        if not observers:
            return build(self, *a, **k)
        plain = from_trace(self)  # the trace Thunder made, built beside it for the comparison
        plain.bound_symbols = [b for b in self.bound_symbols if not b.sym.name.startswith("fuzzdce_observe")]
        build(plain, *a, **k)  # each built once first: the second of each, warm alike, is timed
        build(self, *a, **k)
        start = time.perf_counter()
        build(plain, *a, **k)
        middle = time.perf_counter()
        result = build(self, *a, **k)
        spent["build plain"] += middle - start
        spent["build observed"] += time.perf_counter() - middle
        return result

    stated_metadata.observing_copy, stated_metadata.Observer.check = timed_copy, timed_check
    TraceCtx.python_callable = timed_build
    for program in programs:
        for path in DEFAULT_PATHS:
            path_running.run_path(path, program, stock)
    TraceCtx.python_callable = build
    stated_metadata.observing_copy, stated_metadata.Observer.check = copy, check
    n = len(programs)
    extra = spent["copy"] + spent["build observed"] - spent["build plain"] + spent["checks"]
    print(f"{n} programs on {', '.join(DEFAULT_PATHS)}")
    print(
        f"observer per program: {extra / n * 1000:.1f} ms (copy {spent['copy'] / n * 1000:.1f}, longer function "
        f"{(spent['build observed'] - spent['build plain']) / n * 1000:.1f}, comparisons {spent['checks'] / n * 1000:.2f})"
    )

    observed = path_running.observed_metadata
    totals = {True: 0.0, False: 0.0}
    for program in programs:
        for on in (False, True, False, True):
            path_running.observed_metadata = observed if on else (lambda outcome: contextlib.nullcontext())
            start = time.perf_counter()
            for path in DEFAULT_PATHS:
                path_running.run_path(path, program, stock)
            totals[on] += (time.perf_counter() - start) / 2
    path_running.observed_metadata = observed
    print(
        f"end to end per program: {totals[False] / n * 1000:.0f} ms without the observer, {totals[True] / n * 1000:.0f} ms with it"
    )


if __name__ == "__main__":
    main()
