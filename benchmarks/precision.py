"""Precision benchmark: how many placement-induced bugs fuzzdce reports under placements that are correct.

Runs two campaigns with the same seed on every path this machine supports:
- stock + identity (a placement that patches nothing): anything reported is the harness's own
  false alarm, so every figure must be 0;
- stock + rdnp + symcall-fixed (the correct DCE placements): every placement-induced bug is either
  a false alarm to fix or a real behaviour change, to be shown by hand (an output, an error, a
  ``check_trace`` or scoping failure that stock does not have).

Prints, per campaign, the programs evaluated, placement-induced bugs per oracle and placement (each
with its message and program size), and each placement's DCE activity and traces not compared.

Usage: python benchmarks/precision.py [--seed 1] [--time-budget 300] [--jobs 2] [--path jit ...]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections import Counter

CAMPAIGNS = {
    "calibration": ("stock", "identity"),
    "correct DCE": ("stock", "rdnp", "symcall-fixed"),
}


def run_campaign(placements, args, folder: str) -> dict:
    command = [sys.executable, "-m", "fuzzdce", "run", "--seed", str(args.seed), "--findings", folder]
    command += ["--time-budget", str(args.time_budget), "--max-examples", str(args.max_examples), "--jobs", str(args.jobs)]
    for p in placements:
        command += ["--placement", p]
    for path in args.path or []:
        command += ["--path", path]
    subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    with open(os.path.join(folder, "summary.json")) as f:
        return json.load(f)


def report(name: str, placements, summary: dict) -> None:
    print(f"== {name}: {' + '.join(placements)} ==")
    print(f"programs {summary['programs']} (invalid {summary['invalid_programs']}), wall {summary['wall_seconds']:.0f} s")
    induced = summary["bugs"]["regression"]
    per_cell = Counter((oracle, p) for bug in induced for oracle in bug["oracles"] for p in bug["placements"])
    for p in placements[1:]:
        cells = ", ".join(f"{o} {n}" for (o, q), n in sorted(per_cell.items()) if q == p) or "none"
        print(f"  placement-induced bugs under {p}: {sum(p in b['placements'] for b in induced)} ({cells})")
    for bug in induced:
        print(f"    {bug['id']} under {', '.join(bug['placements'])}, {bug['n_ops']} ops: {bug['message'][:160]}")
    print(f"  baseline bugs: {len(summary['bugs']['shared'])}")
    for p, entry in summary.get("dce_activity", {}).items():
        print(
            f"  {p}: changed subsymbols in {entry['programs_changed']}/{entry['programs']} programs; "
            f"traces not compared in {entry.get('programs_not_compared', 0)} programs"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--time-budget", type=int, default=300, help="seconds of generation per campaign")
    parser.add_argument("--max-examples", type=int, default=5000)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--path", action="append", help="compile paths (default: every available)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        for name, placements in CAMPAIGNS.items():
            summary = run_campaign(placements, args, os.path.join(scratch, name.replace(" ", "-")))
            report(name, placements, summary)


if __name__ == "__main__":
    main()
