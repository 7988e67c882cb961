"""Campaign benchmark: throughput with 1 and N lanes, harness overhead, time to first finding.

Prints, from one run on this machine:
- programs per second with 1 lane and with N lanes (each lane a process with a sandboxed worker);
- fuzzdce's per-program cost over the cost of bare Thunder compiles and runs of the same programs
  on the same paths and placements (the harness overhead), in-process and sandboxed;
- seconds from start to the first regression under symcall.

Usage: python benchmarks/campaign.py [--programs 20] [--lane-seconds 90] [--jobs N] [--paths jit thunderfx]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import warnings

from paths import draw_programs  # the same programs benchmarks/paths.py draws


def bare_cost(program, placement, paths) -> float:
    """Seconds for the Thunder work fuzzdce's paths do, done plainly: what any harness must pay.

    One eager call, then per path a compile and the same calls fuzzdce makes: ``jit`` forward;
    ``thunderfx`` forward and backward on inputs that require grad, with Inductor replaced by
    the same eager fallback fuzzdce uses. No oracles, no trace recording, no sandbox.
    """
    from unittest import mock

    import thunder
    import torch
    from thunder.dynamo import thunderfx

    start = time.perf_counter()
    fn = program.function()
    fn(*program.make_inputs())
    with placement():
        for path in paths:
            try:
                if path == "jit":
                    thunder.jit(fn)(*program.make_inputs())
                elif path == "thunderfx":
                    torch._dynamo.reset()
                    inputs = program.make_inputs(requires_grad=True)
                    with mock.patch("torch._inductor.compile", lambda gm, example_inputs: gm):
                        result = thunderfx(fn)(*inputs)
                        outputs = [
                            o
                            for o in (result if isinstance(result, (tuple, list)) else [result])
                            if isinstance(o, torch.Tensor) and o.requires_grad
                        ]
                        leaves = [x for x in inputs if isinstance(x, torch.Tensor) and x.requires_grad]
                        if outputs and leaves:
                            torch.autograd.grad([o.sum() for o in outputs], leaves, allow_unused=True)
                    torch._dynamo.reset()
            except Exception:
                pass
    return time.perf_counter() - start


def overhead(programs, placements, paths) -> tuple[float, float, float]:
    """(bare s/program, fuzzdce in-process s/program, fuzzdce sandboxed s/program)."""
    from fuzzdce.running.evaluate import Evaluator
    from fuzzdce.running.sandbox import SandboxedJobs

    evaluate_all = Evaluator()
    # Warm-up outside the timing: first-use imports and caches are not per-program cost.
    bare_cost(programs[0], placements[0], paths)
    evaluate_all(programs[0], placements, paths=paths, timeout=60)
    bare = fuzz = 0.0
    for program in programs:
        bare += sum(bare_cost(program, p, paths) for p in placements)
        start = time.perf_counter()
        evaluate_all(program, placements, paths=paths, timeout=60)
        fuzz += time.perf_counter() - start
    sandbox = Evaluator(SandboxedJobs())
    sandbox(programs[0], placements, paths=paths, timeout=60)  # start the child outside the timing
    start = time.perf_counter()
    for program in programs:
        sandbox(program, placements, paths=paths, timeout=60)
    sandboxed = time.perf_counter() - start
    sandbox.close()
    n = len(programs)
    return bare / n, fuzz / n, sandboxed / n


def throughput(jobs: int, seconds: int, paths) -> float:
    """Programs per second of a campaign (stock + symcall) run with ``jobs`` lanes for ``seconds``."""
    from fuzzdce.fuzzing.campaign import Campaign
    from fuzzdce.fuzzing.config import CampaignConfig
    from fuzzdce.fuzzing.lanes import run_lanes

    with tempfile.TemporaryDirectory() as folder:
        config = CampaignConfig.of(
            placements=("stock", "symcall"),
            paths=tuple(paths),
            max_examples=100_000,
            seed=1,
            time_budget=seconds,
            findings_dir=folder,
            profile="dev",
            database="none",
            sandbox=True,
        )
        start = time.perf_counter()
        if jobs == 1:
            campaign = Campaign(config, log=lambda line: None)
            campaign.run()
        else:
            campaign = run_lanes(config, jobs, log=lambda line: None)
        return campaign.stats.programs / (time.perf_counter() - start)


def time_to_first_finding(paths, limit: int = 600) -> float | None:
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
            sandbox=True,
            confirm=False,
        )
        campaign = Campaign(config, log=log)
        campaign.run()
    return found[0] if found else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--programs", type=int, default=20)
    parser.add_argument("--lane-seconds", type=int, default=90)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--paths", nargs="+", default=["jit", "thunderfx"], choices=["jit", "thunderfx"])
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    from fuzzdce.core.quiet import quiet_library_warnings
    from fuzzdce.running.placements import resolve

    quiet_library_warnings()
    print(f"machine: {os.cpu_count()} cores; paths {' '.join(args.paths)}; placements stock, symcall", flush=True)

    programs = draw_programs(args.programs, seed=0)
    bare, fuzz, sandboxed = overhead(programs, [resolve("stock"), resolve("symcall")], args.paths)
    print(f"bare Thunder compile+run:  {bare:.3f} s/program ({len(programs)} programs)")
    print(f"fuzzdce, in-process:       {fuzz:.3f} s/program  overhead ratio {fuzz / bare:.2f}")
    print(f"fuzzdce, sandboxed worker: {sandboxed:.3f} s/program  overhead ratio {sandboxed / bare:.2f}", flush=True)

    one = throughput(1, args.lane_seconds, args.paths)
    print(f"throughput, 1 lane:   {one:.2f} programs/s", flush=True)
    if args.jobs > 1:
        many = throughput(args.jobs, args.lane_seconds, args.paths)
        print(f"throughput, {args.jobs} lanes:  {many:.2f} programs/s  (x{many / one:.2f})", flush=True)

    first = time_to_first_finding(args.paths)
    shown = f"{first:.1f} s" if first is not None else "none within the limit"
    print(f"time to first regression under symcall: {shown}")


if __name__ == "__main__":
    sys.exit(main())
