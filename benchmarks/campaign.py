"""Campaign benchmark: harness overhead, lane throughput and time to first finding; every ratio from
settings interleaved in one run.

Prints, from one run on this machine:
- fuzzdce's per-program cost over a bare baseline that makes the very calls the paths make: each
  path's own compile function in its own context (Dynamo without Inductor, through the same
  stand-in for ``torch._inductor.compile``, which takes Thunder main's ``options=`` too), its calls
  in order (backward on the grad call, the resized call), its guard calls, and its trace recording,
  but no oracle, no comparison with stock and no sandbox. The bare loop compiles every placement on
  every path; fuzzdce compiles a placement only where stock's compile, probing it, saw it change
  something (``running.compile_sharing``; the figure says on how many paths stock's served). Bare, fuzzdce in process and fuzzdce
  sandboxed are interleaved program by program, in rotating order, so a machine's changing load
  weighs on all three alike. The baseline fails loudly: a call that raises where fuzzdce's own run
  of the same program, path and placement recorded no error stops the benchmark (a baseline that
  skipped its work in silence made the ratio look better than it was);
- programs per second with 1 lane and with N lanes, in generation's steady state (from each lane's
  first timeline sample to the first at its final count: start-up, shrinking and joining left out;
  the lanes' rates added up), the two settings alternating in short campaigns (1, N, N, 1, ...);
  a campaign too short for a lane to sample twice after its start-up is said so, not counted;
- seconds from start to the first regression under symcall (a campaign's start-up included: that
  is what a user waits).

Every campaign runs with no example database (``database="none"``): none replays an earlier run's
programs, which would find bugs sooner than a first run does.

Usage: PYTHONPATH=.:benchmarks python benchmarks/campaign.py [--programs 20] [--lane-seconds 60]
       [--rounds 2] [--jobs N] [--paths P ...] [--placements NAME ...] [--only overhead|lanes|first] [--first-limit 120]
  (default: the six CPU paths; the overhead's placements stock, rdnp, symcall, symcall-fixed)
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
import warnings

from paths import draw_programs  # the same programs benchmarks/paths.py draws

# The CPU paths a campaign runs by default.
SIX_CPU_PATHS = ("jit", "jit-grad", "jit-symbolic", "jit-torchcompile", "thunderfx", "thunderfx-dynamic")

# --- the harness overhead ------------------------------------------------------------------------------


def extra_calls(program) -> tuple:
    """The programs of the calls besides the first that fuzzdce's paths make on ``program``: the
    resized call's (None without one) and each guard call's (label, program). Computed once, outside
    the timing, as inputs of the bare baseline (fuzzdce computes them per path, which is its cost)."""
    from fuzzdce.running.variants import guard_variants, resized_program

    resized, _ = resized_program(program)
    guards = guard_variants(program)
    return resized, guards


def differentiate(result, inputs) -> None:
    """Backward through every output that requires grad, to every input that does."""
    import torch

    outputs = [o for o in (result if isinstance(result, (tuple, list)) else [result]) if isinstance(o, torch.Tensor)]
    differentiable = [o for o in outputs if o.requires_grad]
    leaves = [x for x in inputs if isinstance(x, torch.Tensor) and x.requires_grad]
    if differentiable and leaves:
        torch.autograd.grad(differentiable, leaves, [torch.ones_like(o) for o in differentiable], allow_unused=True)


def bare_path(name: str, program, calls: tuple, placement_name: str) -> dict:
    """One path's Thunder work, plainly: its compile function in its context, its calls in order,
    its guard calls, and its traces recorded as the path records them. Raises what Thunder raises,
    but for a guard call's exception, returned by its label (a guard call raising ends no path)."""
    from fuzzdce.core.model import CallLabel, Outcome
    from fuzzdce.running.paths import PATHS

    path = PATHS[name]
    resized, guards = calls
    with path.context():
        compiled = path.compile(program.function())
        try:
            for label in path.calls:
                if label.is_guard:
                    continue
                if label == CallLabel.RESIZED:
                    if resized is not None:
                        compiled(*resized.make_inputs())
                elif label == CallLabel.GRAD:
                    inputs = program.make_inputs(requires_grad=True)
                    differentiate(compiled(*inputs), inputs)
                else:
                    compiled(*program.make_inputs())
        finally:
            path.collect(compiled, Outcome(name, placement_name))  # what the paths record
        raised = {}
        for label in path.calls:  # after the traces, as the paths make them
            if label.is_guard and label in guards:
                try:
                    compiled(*guards[label].make_inputs(requires_grad=label == CallLabel.GUARD_REQUIRES_GRAD))
                except Exception as e:  # held against fuzzdce's guard call: never swallowed
                    raised[label] = e
        return raised


def bare_cost(program, placements, paths, calls) -> tuple[float, dict]:
    """Seconds for the Thunder work of fuzzdce's paths on ``program`` under ``placements``, done
    plainly (eager once, then each path under each placement), and (placement, path) -> the
    exception a path raised ((placement, path, label) -> a guard call's), for the caller to hold
    against fuzzdce's run of the same program."""
    raised = {}
    start = time.perf_counter()
    program.function()(*program.make_inputs())
    for placement in placements:
        with placement():
            for name in paths:
                try:
                    for label, e in bare_path(name, program, calls, placement.name).items():
                        raised[(placement.name, name, label)] = e
                except Exception as e:  # held against fuzzdce's outcome below: never swallowed
                    raised[(placement.name, name)] = e
    return time.perf_counter() - start, raised


def check_bare_against(raised: dict, evaluations) -> None:
    """Stop loudly when the bare baseline raised where fuzzdce's run recorded no error: the baseline
    then did less work than the paths (a stand-in that no longer takes what Thunder passes)."""
    for (placement, path, *guard), error in raised.items():
        outcome = evaluations[placement].outcomes.get(path)
        if guard and outcome is not None and outcome.failure is None:
            call = outcome.guard_calls.get(guard[0])
            if call is not None and call.error is not None:
                continue
            raise RuntimeError(
                f"the bare baseline's {guard[0]} call raised on {path} under {placement} where fuzzdce's did not: {error!r}"
            ) from error
        if outcome is None or (outcome.error is None and outcome.failure is None):
            raise RuntimeError(
                f"the bare baseline raised on {path} under {placement} where fuzzdce did not: {error!r}"
            ) from error


def overhead(programs, placements, paths) -> dict[str, float]:
    """Seconds per program of each setting (bare, fuzzdce in process, fuzzdce sandboxed), the three
    interleaved program by program in rotating order."""
    from fuzzdce.running.evaluate import Evaluator
    from fuzzdce.running.sandbox import SandboxedJobs

    in_process, sandboxed = Evaluator(), Evaluator(SandboxedJobs())
    calls = {id(p): extra_calls(p) for p in programs}
    last = {}

    def bare(program):
        seconds, raised = bare_cost(program, placements, paths, calls[id(program)])
        last["raised"] = raised
        return seconds

    def timed(evaluator):
        def run(program):
            start = time.perf_counter()
            last["evaluations"] = evaluator(program, placements, paths=paths, timeout=60)
            return time.perf_counter() - start

        return run

    settings = {"bare": bare, "in process": timed(in_process), "sandboxed": timed(sandboxed)}
    for run in settings.values():  # warm-up outside the timing: first-use imports, the worker's start
        run(programs[0])
    totals = dict.fromkeys(settings, 0.0)
    names = list(settings)
    served = compiled = 0
    for i, program in enumerate(programs):
        for name in names[i % 3 :] + names[: i % 3]:
            totals[name] += settings[name](program)
        check_bare_against(last["raised"], last["evaluations"])  # the sandboxed outcomes carry their errors too
        for placement, evaluation in last["evaluations"].items():
            if placement != "stock":
                served += sum(bool(o.shared_from) for o in evaluation.outcomes.values())
                compiled += sum(not o.shared_from for o in evaluation.outcomes.values())
    sandboxed.close()
    print(f"  placements' paths served by stock's compile (running.compile_sharing): {served} of {served + compiled}")
    return {name: total / len(programs) for name, total in totals.items()}


# --- lanes -----------------------------------------------------------------------------------------------


def steady_rate(timeline) -> float | None:
    """Programs per second in generation's steady state: from the first sample with a program
    evaluated to the first sample at the final count (start-up before, shrinking after: left out)."""
    started = [(s["seconds"], s["programs"]) for s in timeline or () if s["programs"] > 0]
    if len(started) < 2:
        return None
    final = started[-1][1]
    (t0, p0), t1 = started[0], min(t for t, p in started if p == final)
    return (final - p0) / (t1 - t0) if t1 > t0 and final > p0 else None


def lane_rate(jobs: int, seconds: int, paths, seed: int) -> float | None:
    """Steady-state programs per second of one campaign (stock + symcall) with ``jobs`` lanes."""
    from fuzzdce.fuzzing.campaign import Campaign
    from fuzzdce.fuzzing.config import CampaignConfig
    from fuzzdce.fuzzing.lanes import run_lanes

    with tempfile.TemporaryDirectory() as folder:
        config = CampaignConfig.of(
            placements=("stock", "symcall"),
            paths=tuple(paths),
            max_examples=100_000,
            seed=seed,
            time_budget=seconds,
            findings_dir=folder,
            profile="dev",
            database="none",
            sandbox=True,
            confirm=False,
            progress_every=2.0,
        )
        if jobs == 1:
            campaign = Campaign(config, log=lambda line: None)
            campaign.run()
            return steady_rate(campaign.stats.timeline)
        campaign = run_lanes(config, jobs, log=lambda line: None)
        # Each lane's own steady rate, added up: the lanes' combined timeline mixes their start-ups.
        rates = [steady_rate(timeline) for timeline in campaign.stats.lane_timelines]
        return sum(rates) if rates and None not in rates else None


def lanes_interleaved(jobs: int, seconds: int, rounds: int, paths) -> dict[int, list[float]]:
    """Each setting's steady rates, 1 lane and ``jobs`` lanes alternating (1, N, N, 1, ...), each
    campaign with a seed of its own."""
    rates: dict[int, list[float]] = {1: [], jobs: []}
    order = [s for r in range(rounds) for s in ((1, jobs) if r % 2 == 0 else (jobs, 1))]
    for k, setting in enumerate(order):
        rate = lane_rate(setting, seconds, paths, seed=100 + k)
        print(
            f"  campaign {k + 1}/{len(order)}: {setting} lane(s), {seconds} s: "
            + (f"{rate:.2f} programs/s" if rate else "too short to measure"),
            flush=True,
        )
        if rate:
            rates[setting].append(rate)
    return rates


# --- time to the first finding -------------------------------------------------------------------------


def time_to_first_finding(paths, limit: int) -> float | None:
    """Seconds from start until the first regression under symcall is logged."""
    from fuzzdce.fuzzing.campaign import Campaign
    from fuzzdce.fuzzing.config import CampaignConfig

    start = time.perf_counter()
    found: list[float] = []

    def log(line: str) -> None:
        if "[regression] new finding" in line and not found:
            found.append(time.perf_counter() - start)
            campaign.stop()  # the figure is measured

    with tempfile.TemporaryDirectory() as folder:
        config = CampaignConfig.of(
            placements=("stock", "symcall"),
            paths=tuple(paths),
            max_examples=10_000,
            seed=7,
            time_budget=limit,
            findings_dir=folder,
            database="none",
            sandbox=True,
            confirm=False,
        )
        campaign = Campaign(config, log=log)
        campaign.run()
    return found[0] if found else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--programs", type=int, default=20)
    parser.add_argument("--lane-seconds", type=int, default=60, help="wall time of each campaign of the lanes comparison")
    parser.add_argument("--rounds", type=int, default=2, help="rounds of the lanes comparison, each one campaign per setting")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--paths", nargs="+", default=list(SIX_CPU_PATHS))
    parser.add_argument(
        "--placements", nargs="+", default=["stock", "rdnp", "symcall", "symcall-fixed"], help="the overhead's placements"
    )
    parser.add_argument("--only", choices=["overhead", "lanes", "first"], action="append", help="measure only these (repeatable)")
    parser.add_argument("--first-limit", type=int, default=120, help="wall time of the time-to-first-finding campaign")
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    from fuzzdce.core.quiet import quiet_library_warnings
    from fuzzdce.running.placements import resolve
    from fuzzdce.running.variants import eager_accepts

    quiet_library_warnings()
    only = set(args.only or ["overhead", "lanes", "first"])
    print(f"machine: {os.cpu_count()} cores; paths {' '.join(args.paths)}", flush=True)

    if "overhead" in only:
        programs = [p for p in draw_programs(args.programs, seed=0) if eager_accepts(p)]
        print(f"overhead: placements {', '.join(args.placements)}", flush=True)
        cost = overhead(programs, [resolve(name) for name in args.placements], args.paths)
        bare = cost["bare"]
        print(f"bare Thunder, the paths' calls and trace recording: {bare:.3f} s/program ({len(programs)} programs, interleaved)")
        print(f"fuzzdce, in process:       {cost['in process']:.3f} s/program  overhead ratio {cost['in process'] / bare:.2f}")
        print(
            f"fuzzdce, sandboxed worker: {cost['sandboxed']:.3f} s/program  overhead ratio {cost['sandboxed'] / bare:.2f}",
            flush=True,
        )

    if "lanes" in only and args.jobs > 1:
        rates = lanes_interleaved(args.jobs, args.lane_seconds, args.rounds, args.paths)
        one, many = rates[1], rates[args.jobs]
        if one and many:
            print(
                f"throughput in steady state: 1 lane {statistics.mean(one):.2f} programs/s, {args.jobs} lanes "
                f"{statistics.mean(many):.2f} programs/s (x{statistics.mean(many) / statistics.mean(one):.2f}; "
                f"{len(one)} + {len(many)} campaigns interleaved)",
                flush=True,
            )

    if "first" in only:
        first = time_to_first_finding(args.paths, args.first_limit)
        shown = f"{first:.1f} s" if first is not None else f"none within {args.first_limit} s"
        print(f"time to first regression under symcall: {shown}")


if __name__ == "__main__":
    sys.exit(main())
