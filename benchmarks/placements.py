"""Placements benchmark: what a program costs a campaign as the placements grow, against the compile
floor, and (``--profile``) where fuzzdce's own time goes.

For 1, 2, 4 and 7 placements on the six CPU paths, each program is evaluated as a campaign's lane
evaluates it (a sandboxed worker, the job cache, every oracle, wrong values localised) and run by
the bare loop of ``benchmarks/campaign.py`` (each path's compile and calls under each placement,
no oracle, no sandbox: the compile floor). Every setting runs on every program, interleaved program
by program in rotating order, so a machine's changing load weighs on all alike; each set of
placements has its own worker (no set reuses another's results). Prints, per set: compiles per
program (placements x paths: the floor's), the paths fuzzdce compiled per program (the others served
by stock's compile, ``running.compile_sharing``), seconds per program and programs per minute for fuzzdce and for the
floor, their ratio, and fuzzdce's cost per compile against one placement's (1.00: cost grows as
the compiles do).

``--profile FILE``: instead, the largest set evaluated in this process under py-spy (a sampling
profiler, ``pip install py-spy``; its raw output kept in FILE), and the top entries printed: by the
innermost fuzzdce frame (a function of fuzzdce's and the Thunder and torch work it called directly)
and inclusive, with the floor beside it in the same profile.

Usage: PYTHONPATH=.:tests:benchmarks python benchmarks/placements.py [--programs 8] [--seed 0]
       [--sets 1 2 4 7] [--profile FILE [--top 25]]
"""

from __future__ import annotations

import argparse
import collections
import os
import re
import shutil
import subprocess
import sys
import time
import warnings

from campaign import bare_cost, check_bare_against, extra_calls
from paths import draw_programs

# The placements of each set: stock alone; a DCE change against stock; the change, its fix and the
# other placement; and those with the calibration placement and two wrong ones (findings to
# localise, as a campaign judging a wrong change meets them).
PLACEMENT_SETS = {
    1: ("stock",),
    2: ("stock", "symcall"),
    4: ("stock", "rdnp", "symcall", "symcall-fixed"),
    7: (
        "stock",
        "rdnp",
        "symcall",
        "symcall-fixed",
        "identity",
        "planted_dce:symcall_drops_output_producer",
        "planted_dce:rdnp_ignores_dont_dce",
    ),
}
TIMEOUT = 60.0


def figure(programs, sets, paths) -> dict[int, dict[str, float]]:
    """Per set: fuzzdce's and the floor's seconds per program, every setting interleaved."""
    from fuzzdce.running.evaluate import Evaluator
    from fuzzdce.running.placements import resolve
    from fuzzdce.running.sandbox import SandboxedJobs

    placements = {k: [resolve(name) for name in PLACEMENT_SETS[k]] for k in sets}
    evaluators = {k: Evaluator(SandboxedJobs(name=f"worker {k}"), cache=True) for k in sets}
    calls = {id(p): extra_calls(p) for p in programs}
    last = {}

    def bare(k, program):
        start = time.perf_counter()
        _, raised = bare_cost(program, placements[k], paths, calls[id(program)])
        last[k, "raised"] = raised
        return time.perf_counter() - start

    def fuzzdce(k, program):
        start = time.perf_counter()
        last[k, "evaluations"] = evaluators[k](program, placements[k], paths=paths, timeout=TIMEOUT)
        return time.perf_counter() - start

    settings = [(k, kind) for k in sets for kind in ("bare", "fuzzdce")]
    run = {"bare": bare, "fuzzdce": fuzzdce}
    for k, kind in settings:  # warm-up outside the timing: first-use imports, each worker's start
        run[kind](k, programs[0])
    seconds = {setting: 0.0 for setting in settings} | {(k, "compiled"): 0.0 for k in sets}
    timed = programs[1:]
    for i, program in enumerate(timed):
        shift = i % len(settings)
        for k, kind in settings[shift:] + settings[:shift]:
            seconds[k, kind] += run[kind](k, program)
        for k in sets:  # the floor failing where fuzzdce recorded no error: it did less work
            check_bare_against(last[k, "raised"], last[k, "evaluations"])
            outcomes = [o for e in last[k, "evaluations"].values() for o in e.outcomes.values()]
            seconds[k, "compiled"] += sum(not o.shared_from for o in outcomes)
        print(f"  {i + 1}/{len(timed)} programs", file=sys.stderr, flush=True)
    for evaluator in evaluators.values():
        evaluator.close()
    return {k: {kind: seconds[k, kind] / len(timed) for kind in ("bare", "fuzzdce", "compiled")} for k in sets}


def print_figure(costs: dict[int, dict[str, float]], paths) -> None:
    one = min(costs)
    per_compile_one = costs[one]["fuzzdce"] / (one * len(paths))
    print(
        f"{'placements':>10} {'compiles':>8} {'compiled':>8} {'floor s/prog':>12} {'fuzzdce s/prog':>14} {'prog/min':>8} "
        f"{'x floor':>7} {'per compile vs ' + str(one):>18}"
    )
    for k, cost in sorted(costs.items()):
        compiles = k * len(paths)
        per_compile = cost["fuzzdce"] / compiles / per_compile_one
        print(
            f"{k:>10} {compiles:>8} {cost['compiled']:>8.1f} {cost['bare']:>12.3f} {cost['fuzzdce']:>14.3f} {60 / cost['fuzzdce']:>8.1f} "
            f"{cost['fuzzdce'] / cost['bare']:>7.2f} {per_compile:>18.2f}"
        )


# --- the profile -------------------------------------------------------------------------------------

FRAME = re.compile(r"\s*(?P<function>\S+) \((?P<file>[^:]+):\d+\)")
OURS = ("fuzzdce/", "benchmarks/")


def frame_name(frame: str) -> str | None:
    """``function (module.py)`` for a frame of fuzzdce's or of a benchmark's, else None."""
    match = FRAME.match(frame)
    if match is None or not any(part in match["file"] for part in OURS):
        return None
    return f"{match['function']} ({match['file'].rsplit('/', 1)[-1]})"


def top_entries(raw: str, top: int) -> str:
    """py-spy's raw (collapsed) stacks as two tables of shares of all samples: by the innermost
    frame of ours (its own time and the library work it called directly) and inclusive."""
    innermost, inclusive, total = collections.Counter(), collections.Counter(), 0
    for line in raw.splitlines():
        stack, _, count = line.rpartition(" ")
        total += int(count)
        ours = [name for name in map(frame_name, stack.split(";")) if name is not None]
        if ours:
            innermost[ours[-1]] += int(count)
        for name in dict.fromkeys(ours):
            inclusive[name] += int(count)
    lines = [f"{total} samples", "by innermost frame of fuzzdce's (or the floor's):"]
    lines += [f"  {100 * n / total:5.1f}%  {name}" for name, n in innermost.most_common(top)]
    lines += ["inclusive:"]
    lines += [f"  {100 * n / total:5.1f}%  {name}" for name, n in inclusive.most_common(top)]
    return "\n".join(lines)


def profiled(programs_n: int, seed: int, k: int, paths) -> None:
    """The child of ``--profile``: the set of ``k`` placements, fuzzdce in this process (the profiler
    sees one process) and the floor, interleaved, on ``programs_n`` programs."""
    from fuzzdce.running.evaluate import Evaluator
    from fuzzdce.running.placements import resolve
    from fuzzdce.running.variants import eager_accepts

    placements = [resolve(name) for name in PLACEMENT_SETS[k]]
    programs = [p for p in draw_programs(programs_n, seed) if eager_accepts(p)]
    evaluator = Evaluator(cache=True)
    spent = collections.Counter()
    for program in programs:
        start = time.perf_counter()
        evaluator(program, placements, paths=paths, timeout=TIMEOUT)
        spent["fuzzdce"] += time.perf_counter() - start
        start = time.perf_counter()
        bare_cost(program, placements, paths, extra_calls(program))
        spent["bare"] += time.perf_counter() - start
    print(
        f"{len(programs)} programs, {k} placements, in process: fuzzdce {spent['fuzzdce'] / len(programs):.3f} s/program, "
        f"floor {spent['bare'] / len(programs):.3f} s/program (x{spent['fuzzdce'] / spent['bare']:.2f})",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--programs", type=int, default=8)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--sets", type=int, nargs="+", default=sorted(PLACEMENT_SETS), choices=sorted(PLACEMENT_SETS))
    parser.add_argument("--profile", metavar="FILE", help="profile the largest set under py-spy, raw stacks into FILE")
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--profiled-child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    from fuzzdce.core.quiet import quiet_library_warnings
    from fuzzdce.running.paths import DEFAULT_PATHS
    from fuzzdce.running.variants import eager_accepts

    quiet_library_warnings()
    paths = [
        p for p in DEFAULT_PATHS if p in ("jit", "jit-grad", "jit-symbolic", "jit-torchcompile", "thunderfx", "thunderfx-dynamic")
    ]
    if args.profiled_child:
        profiled(args.programs, args.seed, max(args.sets), paths)
        return
    if args.profile:
        spy = shutil.which("py-spy")
        if spy is None:
            sys.exit("--profile needs py-spy on PATH (pip install py-spy): a sampling profiler, not a dependency of fuzzdce")
        child = [sys.executable, __file__, "--profiled-child", "--programs", str(args.programs), "--seed", str(args.seed)]
        child += ["--sets", str(max(args.sets))]
        subprocess.run([spy, "record", "--rate", "100", "--format", "raw", "-o", args.profile, "--", *child], check=True)
        with open(args.profile) as raw:
            print(top_entries(raw.read(), args.top))
        return
    programs = [p for p in draw_programs(args.programs + 1, seed=args.seed) if eager_accepts(p)]
    print(
        f"machine: {os.cpu_count()} cores; paths {' '.join(paths)}; {len(programs) - 1} programs (seed {args.seed}) "
        f"after one warm-up; every setting interleaved",
        flush=True,
    )
    for k in args.sets:
        print(f"  {k}: {', '.join(PLACEMENT_SETS[k])}")
    print_figure(figure(programs, args.sets, paths), paths)


if __name__ == "__main__":
    sys.exit(main())
