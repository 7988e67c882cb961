"""Precision benchmark: how many bugs fuzzdce reports under placements that are correct.

Runs two campaigns with the same seed on every path this machine supports, each with no example
database (``--database none``: nothing replays the programs of an earlier run):
- stock + identity (a placement that patches nothing): a finding under identity is either the
  harness's own false alarm or a fault of stock Thunder's, whatever its verdict (a false alarm
  against eager shows under stock too, and is *shared*; one stock alone shows is *fixed*). A
  regression or fixed bug under identity is always a false alarm (identity is stock). Each shared
  one is told apart by its standalone reproducer (``fuzzdce issue --script``: torch and Thunder
  alone, no fuzzdce oracle, default tolerances): one that fails there is stock Thunder's fault;
  one that passes there is counted as a false alarm until shown otherwise by hand;
- stock + rdnp + symcall-fixed (the correct DCE placements): every placement-induced bug is either
  a false alarm to fix or a real behaviour change, to be shown by hand (an output, an error, a
  ``check_trace`` or scoping failure that stock does not have).

Prints, per campaign, the programs evaluated, bugs per verdict (under identity: every bug, each with
its findings, message, program size and standalone outcome, and the false alarms among them; under
the correct placements: the placement-induced ones),
the checks an oracle could not make, and each placement's DCE activity as the report words it (the
programs in which it did otherwise than the reference: changed subsymbols, raised where it returns
or the reverse, failed beyond it; traces not compared).

Usage: python benchmarks/precision.py [--seed 1] [--time-budget 300] [--jobs 2] [--path jit ...] [--only calibration]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fuzzdce.core.model import STOCK  # noqa: E402
from fuzzdce.running.coverage import activity_lines  # noqa: E402

CAMPAIGNS = {
    "calibration": ("stock", "identity"),
    "correct DCE": ("stock", "rdnp", "symcall-fixed"),
}


def run_campaign(placements, args, folder: str) -> dict:
    command = [sys.executable, "-m", "fuzzdce", "run", "--seed", str(args.seed), "--findings", folder]
    command += ["--time-budget", str(args.time_budget), "--max-examples", str(args.max_examples), "--jobs", str(args.jobs)]
    command += ["--database", "none"]
    for p in placements:
        command += ["--placement", p]
    for path in args.path or []:
        command += ["--path", path]
    subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    with open(os.path.join(folder, "summary.json")) as f:
        return json.load(f)


def bugs_under(summary: dict, placement: str) -> dict[str, list[dict]]:
    """Verdict -> the bugs ``placement`` shows (for a ``fixed`` bug: the bugs it does not, which the
    reference alone shows), from summary.json."""
    return {
        verdict: [b for b in listed if (placement in b["placements"]) != (verdict == "fixed")]
        for verdict, listed in summary["bugs"].items()
    }


def standalone_outcome(folder: str, bug_id: str) -> str:
    """Run bug ``bug_id``'s standalone reproducer (torch and Thunder alone) in a fresh process:
    "fails" (Thunder's fault, shown without fuzzdce), "passes" (not shown without fuzzdce's
    oracles: a false alarm until shown otherwise by hand) or "not run" (its script could not be
    written, or it timed out)."""
    written = subprocess.run(
        [sys.executable, "-m", "fuzzdce", "issue", "--script", bug_id, "--findings", folder],
        capture_output=True,
        text=True,
        check=False,
    )
    if written.returncode != 0:
        return "not run"
    with tempfile.TemporaryDirectory() as scratch:  # a folder of its own: fuzzdce is not importable from it
        script = os.path.join(scratch, f"standalone_{bug_id}.py")
        with open(script, "w") as f:
            f.write(written.stdout)
        try:
            ran = subprocess.run([sys.executable, script], cwd=scratch, capture_output=True, timeout=600, check=False)
        except subprocess.TimeoutExpired:
            return "not run"
    return {0: "passes", 1: "fails"}.get(ran.returncode, "not run")


def false_alarm(verdict: str, outcome: str | None) -> bool:
    """Under identity, which patches nothing: a bug identity shows and stock does not (or the other
    way) is fuzzdce's; a shared one is Thunder's when its standalone reproducer fails."""
    return verdict != "shared" or outcome != "fails"


def report(name: str, placements, summary: dict, folder: str) -> None:
    print(f"== {name}: {' + '.join(placements)} ==")
    print(f"programs {summary['programs']} (invalid {summary['invalid_programs']}), wall {summary['wall_seconds']:.0f} s")
    for p in placements[1:]:
        # Under identity every finding counts, shared and fixed ones too: identity is stock.
        shown = bugs_under(summary, p) if p == "identity" else {"regression": bugs_under(summary, p)["regression"]}
        findings = sum(len(b.get("members", [])) or 1 for listed in shown.values() for b in listed)
        per_oracle = Counter(oracle for listed in shown.values() for b in listed for oracle in b["oracles"])
        by_verdict = ", ".join(f"{verdict} {len(listed)}" for verdict, listed in shown.items())
        cells = ", ".join(f"{o} {n}" for o, n in sorted(per_oracle.items())) or "none"
        print(f"  bugs under {p}: {sum(map(len, shown.values()))} ({by_verdict}; {findings} findings; {cells})")
        alarms = 0
        for verdict, listed in shown.items():
            for bug in listed:
                outcome = standalone_outcome(folder, bug["id"]) if p == "identity" else None
                alarms += p == "identity" and false_alarm(verdict, outcome)
                standalone = f", standalone reproducer {outcome}" if outcome else ""
                print(
                    f"    [{verdict}] {bug['id']} under {', '.join(bug['placements'])}, {bug['n_ops']} ops{standalone}: "
                    f"{bug['message'][:160]}"
                )
        if p == "identity":
            print(f"  false alarms under identity (not stock Thunder's fault shown without fuzzdce): {alarms}")
    print(f"  shared bugs (the reference shows them too): {len(summary['bugs']['shared'])}")
    for entry in summary.get("not_checked", []):
        print(f"  not checked: {entry['oracle']} {entry['what']} on {entry['path']}: {entry['times']} times")
    # In the report's words (``activity_lines``): a program counts where the placement did otherwise
    # than the reference (changed subsymbols, raised where it returns or the reverse, failed beyond it).
    for line in activity_lines(summary.get("dce_activity", {}), reference=summary.get("reference", STOCK)):
        print(f"  {line}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--time-budget",
        type=int,
        default=300,
        help="each campaign's wall time in seconds (fuzzdce run --time-budget: every phase)",
    )
    parser.add_argument("--max-examples", type=int, default=5000)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--path", action="append", help="compile paths (default: every available)")
    parser.add_argument("--only", action="append", choices=list(CAMPAIGNS), help="run only these campaigns (repeatable)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        for name, placements in CAMPAIGNS.items():
            if args.only and name not in args.only:
                continue
            folder = os.path.join(scratch, name.replace(" ", "-"))
            summary = run_campaign(placements, args, folder)
            report(name, placements, summary, folder)


if __name__ == "__main__":
    main()
