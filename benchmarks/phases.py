"""Phases benchmark: where a campaign's time goes (new programs, shrinking, joining, confirming,
writing the findings folder), how many programs it evaluated in full, why each lane's generation ended, and whether
its bugs are minimal and distinct: the figures issue 23's "Done when" asks for.

Runs ``fuzzdce run`` with the arguments after ``--`` (default: stock and the built-in placements on
every path, 2 lanes, a 900-second budget) into a temporary findings folder, then prints from its
summary.json: programs evaluated in full, wall time, seconds and share per phase (lanes added up:
machine seconds), the share of the wall time spent generating new programs (generation's
lane-seconds over lanes x wall time), each lane's reason its generation ended (``GenerationEnd``: "time" or "programs"
is the budget spent; "nothing new" is Hypothesis out of programs), bugs by verdict and by
placement, bugs sharing a program (the function alone, and with its inputs), the bugs whose shrinking was cut short, and the bugs in whose
repro.py a dead statement or a returned value can be dropped with the same failure
(``minimality.droppable``, replayed in this process; ``--no-minimality`` skips it).

Usage: PYTHONPATH=.:tests python benchmarks/phases.py [--no-minimality] [-- fuzzdce run arguments ...]
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

from fuzzdce.core.vocabulary import Verdict
from fuzzdce.fuzzing import minimality
from fuzzdce.fuzzing.time_plan import Phase

DEFAULT = ["--jobs", "2", "--time-budget", "900", "--max-examples", "5000", "--seed", "1"]
PHASES = tuple(Phase)


def lanes_of(summary: dict) -> int:
    """How many lanes the campaign ran (its memory entries name them), at least 1."""
    processes = (summary.get("memory") or {}).get("processes", [])
    return max(1, len({p["process"] for p in processes if p["process"].startswith("lane ") and "worker" not in p["process"]}))


def program_and_inputs(repro: str) -> tuple[str, str]:
    """A reproducer's ``def program`` and ``def make_inputs``, as text: what two bugs share when
    they hold the same program (the function alone, or with its inputs too)."""

    def function(name: str) -> str:
        return repro.split(f"def {name}(", 1)[-1].split("\n\n", 1)[0]

    return function("program"), function("make_inputs")


def main() -> None:
    argv = sys.argv[1:]
    check_minimality = "--no-minimality" not in argv[: argv.index("--")] if "--" in argv else "--no-minimality" not in argv
    args = argv[argv.index("--") + 1 :] if "--" in argv else DEFAULT
    with tempfile.TemporaryDirectory() as tmp:
        # A --findings DIR among the arguments keeps the campaign's folder; else a temporary one.
        findings = Path(args[args.index("--findings") + 1]) if "--findings" in args else Path(tmp) / "findings"
        command = [sys.executable, "-m", "fuzzdce", "run", *args]
        if "--findings" not in args:
            command += ["--findings", str(findings)]
        if "--database" not in args:  # nothing replays an earlier run's programs
            command += ["--database", "none"]
        print("running:", " ".join(command), flush=True)
        start = time.monotonic()
        run = subprocess.run(command, stdout=subprocess.PIPE, text=True)
        wall = time.monotonic() - start
        summary = json.loads((findings / "summary.json").read_text())
        records = [json.loads(p.read_text()) for p in findings.glob("*/bug.json")]
        sources = {p.parent.name: program_and_inputs((p.parent / "repro.py").read_text()) for p in findings.glob("*/bug.json")}
        droppable = minimality.droppable(findings) if check_minimality else None
    phases = summary.get("phases", {})
    total = sum(phases.values()) or 1.0
    print(f"\nexit code {run.returncode}; wall {wall:.0f} s (campaign's own: {summary['wall_seconds']:.0f} s)")
    print(f"programs evaluated in full: {summary['programs']} ({summary['programs_per_minute']:.1f} per minute)")
    lanes = lanes_of(summary)
    generating = phases.get(Phase.GENERATION, 0.0) / (lanes * max(wall, 1e-9))
    print(f"share of the wall time spent generating new programs: {100 * generating:.1f}% ({lanes} lane(s))")
    print("time per phase (machine seconds, lanes added up):")
    for phase in PHASES + tuple(sorted(set(phases) - set(PHASES))):
        seconds = phases.get(phase, 0.0)
        label = "new programs" if phase == Phase.GENERATION else phase
        print(f"  {label:<14} {seconds:8.0f} s  {100 * seconds / total:5.1f}%")
    print(f"generation ended, per lane process: {', '.join(summary.get('generation_ended', [])) or 'unknown'}")
    by_verdict: dict[str, int] = {}
    for r in records:
        by_verdict[r["verdict"]] = by_verdict.get(r["verdict"], 0) + 1
    print("bugs: " + (", ".join(f"{v} {n}" for v, n in sorted(by_verdict.items())) or "none"))
    by_placement: dict[str, int] = {}
    for r in records:
        if r["verdict"] == Verdict.REGRESSION:
            for name in r["placements"]:
                by_placement[name] = by_placement.get(name, 0) + 1
    print("placement-induced bugs per placement: " + (", ".join(f"{p} {n}" for p, n in sorted(by_placement.items())) or "none"))
    for label, part in (("a program", 0), ("a program and its inputs", slice(None))):
        groups: dict[object, list[str]] = {}
        for bug_id, texts in sorted(sources.items()):
            groups.setdefault(texts[part], []).append(bug_id)
        sharing = [ids for ids in groups.values() if len(ids) > 1]
        print(
            f"bugs sharing {label} with another bug: {sum(map(len, sharing))} of {len(sources)}"
            + "".join(f"\n  {', '.join(ids)}" for ids in sharing)
        )
    cut = [r for r in records if r.get("shrink")]
    print(f"bugs whose shrinking was cut short: {len(cut)}" + "".join(f"\n  {r['id']}: {r['shrink']}" for r in cut))
    sizes = sorted(r["n_ops"] for r in records)
    if sizes:
        print(f"bug sizes (ops): {sizes}")
    if droppable is not None:
        bugs_with = len({line.split(":", 1)[0] for line in droppable})
        print(f"bugs with a droppable dead statement or returned value: {bugs_with} of {len(records)}")
        for line in droppable:
            print(f"  {line}")


if __name__ == "__main__":
    main()
