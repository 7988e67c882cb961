"""Bugs benchmark: how many findings a campaign reports, how many bugs they join into, how far bugs
are shrunk, and how long it takes.

Prints, for one campaign (the defaults, or one with planted faults on top of the built-in placements):
findings and bugs by verdict, the largest shrunk bug of each verdict in ops, and the wall time.

Usage: PYTHONPATH=.:tests python benchmarks/bugs.py [--seed 1] [--time-budget 300] [--jobs 2]
           [--planted planted:colliding_names ...] [--path jit ...]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import warnings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--time-budget", type=int, default=300)
    parser.add_argument("--max-examples", type=int, default=60)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--planted", action="append", default=[], help="extra placements (tests/planted.py faults)")
    parser.add_argument("--path", action="append", help="compile paths (default: every available)")
    args = parser.parse_args()
    warnings.filterwarnings("ignore")

    from fuzzdce.core.quiet import quiet_library_warnings
    from fuzzdce.core.vocabulary import Verdict
    from fuzzdce.fuzzing.campaign import Campaign
    from fuzzdce.fuzzing.config import CampaignConfig
    from fuzzdce.fuzzing.lanes import run_lanes
    from fuzzdce.running.paths import DEFAULT_PATHS
    from fuzzdce.running.placements import DEFAULT_PLACEMENTS

    quiet_library_warnings()
    with tempfile.TemporaryDirectory() as folder:
        config = CampaignConfig.of(
            placements=(*DEFAULT_PLACEMENTS, *args.planted),
            paths=tuple(args.path or DEFAULT_PATHS),
            max_examples=args.max_examples,
            seed=args.seed,
            time_budget=args.time_budget,
            findings_dir=folder,
            profile="dev",
            database="none",
        )
        start = time.perf_counter()
        if args.jobs == 1:
            campaign = Campaign(config, log=lambda line: None)
            campaign.run()
        else:
            campaign = run_lanes(config, args.jobs, log=lambda line: None)
        wall = time.perf_counter() - start
    bugs = campaign.ledger.bugs()
    print(
        f"campaign: placements {', '.join(config.scope.placements)}; {len(config.scope.paths)} paths; seed {args.seed}; "
        f"budget {args.time_budget} s; {args.jobs} lanes; {campaign.stats.programs} programs; wall {wall:.0f} s"
    )
    for verdict in (Verdict.REGRESSION, Verdict.SHARED):
        findings = [f for f in campaign.store if f.verdict == verdict]
        mine = [b for b in bugs if b.verdict == verdict]
        largest = max((b.program.n_ops for b in mine), default=0)
        print(
            f"{verdict:>18}: {len(findings)} findings in {len(mine)} bugs; largest shrunk bug {largest} ops; "
            f"sizes {sorted(b.program.n_ops for b in mine)}"
        )
    for bug in bugs:
        print(
            f"  {bug.id} [{bug.verdict}] {', '.join(bug.placements)}: {', '.join(bug.oracles())} on "
            f"{', '.join(bug.paths())}; {len(bug.members)} findings; {bug.program.n_ops} ops: "
            f"{bug.smallest.violation.message[:100]}"
        )


if __name__ == "__main__":
    sys.exit(main())
