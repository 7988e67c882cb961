"""Phases benchmark: where a campaign's time goes (new programs, shrinking, grouping, confirming),
how many programs it evaluated in full, and why each lane's generation ended.

Runs ``fuzzdce run`` with the arguments after ``--`` (default: stock and the built-in placements on
every path, 2 lanes, a 900-second budget) into a temporary findings folder, then prints from its
summary.json: programs evaluated in full, wall time, seconds and share per phase (lanes added up:
machine seconds), each lane's reason its generation ended ("time" or "programs" is the budget
spent; "nothing new" is Hypothesis out of programs), bugs by verdict and the bugs whose shrinking
was cut short.

Usage: PYTHONPATH=.:tests python benchmarks/phases.py [-- fuzzdce run arguments ...]
  e.g. PYTHONPATH=.:tests python benchmarks/phases.py -- --placement stock --placement rdnp \\
         --placement symcall --placement symcall-fixed --placement planted:dce_drops_live \\
         --placement planted:dce_drops_dont_dce --jobs 2 --time-budget 900 --max-examples 5000
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DEFAULT = ["--jobs", "2", "--time-budget", "900", "--max-examples", "5000", "--seed", "1"]
PHASES = ("generation", "shrinking", "grouping", "confirming")


def main() -> None:
    argv = sys.argv[1:]
    args = argv[argv.index("--") + 1 :] if "--" in argv else DEFAULT
    with tempfile.TemporaryDirectory() as tmp:
        # A --findings DIR among the arguments keeps the campaign's folder; else a temporary one.
        findings = Path(args[args.index("--findings") + 1]) if "--findings" in args else Path(tmp) / "findings"
        command = [sys.executable, "-m", "fuzzdce", "run", *args]
        if "--findings" not in args:
            command += ["--findings", str(findings)]
        print("running:", " ".join(command), flush=True)
        start = time.monotonic()
        run = subprocess.run(command, stdout=subprocess.PIPE, text=True)
        wall = time.monotonic() - start
        summary = json.loads((findings / "summary.json").read_text())
        records = [json.loads(p.read_text()) for p in findings.glob("*/bug.json")]
    phases = summary.get("phases", {})
    total = sum(phases.values()) or 1.0
    print(f"\nexit code {run.returncode}; wall {wall:.0f} s (campaign's own: {summary['wall_seconds']:.0f} s)")
    print(f"programs evaluated in full: {summary['programs']} ({summary['programs_per_minute']:.1f} per minute)")
    print("time per phase (machine seconds, lanes added up):")
    for phase in PHASES + tuple(sorted(set(phases) - set(PHASES))):
        seconds = phases.get(phase, 0.0)
        label = "new programs" if phase == "generation" else phase
        print(f"  {label:<14} {seconds:8.0f} s  {100 * seconds / total:5.1f}%")
    print(f"generation ended, per lane process: {', '.join(summary.get('generation_ended', [])) or 'unknown'}")
    by_verdict: dict[str, int] = {}
    for r in records:
        by_verdict[r["verdict"]] = by_verdict.get(r["verdict"], 0) + 1
    print("bugs: " + (", ".join(f"{v} {n}" for v, n in sorted(by_verdict.items())) or "none"))
    cut = [r for r in records if r.get("shrink")]
    print(f"bugs whose shrinking was cut short: {len(cut)}" + "".join(f"\n  {r['id']}: {r['shrink']}" for r in cut))
    sizes = sorted(r["n_ops"] for r in records)
    if sizes:
        print(f"bug sizes (ops): {sizes}")


if __name__ == "__main__":
    main()
