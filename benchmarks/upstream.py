"""The worked case: Thunder's upstream merge of subsymbol DCE (bc399d4a3) against its parent (8236d1c97).

    PYTHONPATH=. python benchmarks/upstream.py [--minutes 12] [--jobs 2] [--seed 1] [--compare 60]
        [--snapshots ../shared/thunder-upstream] [--out upstream-results]

Both come from the snapshots in ``../shared/thunder-upstream/`` (extracted once into the build
cache). Two parts, each in processes of its own:

1. **The campaign**: ``fuzzdce run --build merged=<bc399d4a3>`` with the parent first on
   ``PYTHONPATH`` (so stock is the parent), every default path, ``--minutes`` of generation. Printed:
   fuzzdce's report, then the merge's DCE activity against the parent (in the report's words) and the bugs by verdict, from
   ``OUT/campaign/summary.json``. Every placement-induced bug is the merge's behaviour change (or a
   false alarm): check each by hand (``fuzzdce replay``, ``repro.py``).
2. **Emulation against the real merge**: ``--compare`` programs drawn once (here, seeded), then
   evaluated (a) under Thunder 0.2.6 as installed with fuzzdce's emulation ``symcall-fixed``, and (b)
   under the parent with the merge as a build, on every path. Printed: for each symbol, in how many
   programs each one changed its subsymbols against its own stock; the symbols only one of them
   changes; and the (program, path) pairs where they disagree, with examples.

``--minutes 1 --compare 3 --jobs 1`` is a smoke test (a few minutes on two shared cores).
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import random
import subprocess
import sys
import time
import warnings
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from fuzzdce.core.model import STOCK  # noqa: E402
from fuzzdce.running.builds import materialize_archive  # noqa: E402
from fuzzdce.running.coverage import activity_lines  # noqa: E402

PARENT, MERGE = "8236d1c97", "bc399d4a3"
EMULATION = "symcall-fixed"


def snapshot_dir(snapshots: Path, commit: str) -> Path:
    archive = snapshots / f"thunder-{commit}.tar.gz"
    if not archive.is_file():
        sys.exit(f"upstream.py: no snapshot {archive}; give --snapshots DIR (the folder of thunder-<commit>.tar.gz)")
    return materialize_archive(archive)


def environment(first: Path | None) -> dict[str, str]:
    """This repository's fuzzdce on the path; ``first`` (a Thunder) before it, when given."""
    entries = [str(p) for p in (first, ROOT) if p is not None]
    path = os.pathsep.join([*entries, os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    # One hash seed for stock and the build's worker: Thunder's traces depend on it.
    return {**os.environ, "PYTHONPATH": path, "PYTHONHASHSEED": os.environ.get("PYTHONHASHSEED", "0")}


# --- 1. the campaign ---------------------------------------------------------------------------------


def campaign(parent: Path, merge: Path, args, out: Path) -> dict:
    findings = out / "campaign"
    command = [
        sys.executable,
        "-m",
        "fuzzdce.cli",
        "run",
        "--build",
        f"merged={merge}",
        "--seed",
        str(args.seed),
        "--jobs",
        str(args.jobs),
        "--time-budget",
        str(int(args.minutes * 60)),
        "--database",
        "none",
        "--findings",
        str(findings),
        "--max-examples",
        str(args.max_examples),
    ]
    print(f"== campaign: stock = parent {PARENT} ({parent}), build merged = {MERGE} ({merge})", flush=True)
    print("   " + " ".join(command), flush=True)
    start = time.monotonic()
    done = subprocess.run(command, env=environment(parent), stdout=subprocess.PIPE, text=True)
    print(done.stdout)
    print(f"   exit {done.returncode} after {time.monotonic() - start:.0f} s")
    summary_file = findings / "summary.json"
    if not summary_file.is_file():
        sys.exit(f"upstream.py: the campaign wrote no {summary_file}")
    summary = json.loads(summary_file.read_text())
    activity = summary.get("dce_activity", {}).get("merged", {})
    print("== the merge's DCE activity against its parent (every path):")
    if activity:
        # In the report's words (``activity_lines``): a program counts where the merge did otherwise
        # than its parent (changed subsymbols, raised where it returns or the reverse, failed beyond it).
        for line in activity_lines({"merged": activity}, limit=20, reference=summary.get("reference", STOCK)):
            print(f"   {line}")
    print("== bugs by verdict:")
    for verdict, bugs in summary.get("bugs", {}).items():
        print(f"   {verdict}: {len(bugs)}")
        for bug in bugs:
            placements = ", ".join(bug["placements"])
            print(
                f"     {bug['id']} under {placements}: {', '.join(bug['oracles'])} on {', '.join(bug['paths'])}: {bug['message'][:160]}"
            )
    print(f"   programs {summary['programs']}, wall {summary['wall_seconds']:.0f} s")
    return summary


# --- 2. emulation against the real merge -------------------------------------------------------------


def draw(n: int, seed_value: int) -> list:
    """``n`` programs of the default strategy, seeded (drawn here, evaluated in both children)."""
    from hypothesis import HealthCheck, Verbosity, given, seed, settings

    from fuzzdce.strategies import programs

    drawn: list = []

    @settings(max_examples=n, database=None, deadline=None, suppress_health_check=list(HealthCheck), verbosity=Verbosity.quiet)
    @seed(random.Random(f"upstream/{seed_value}").getrandbits(32))
    @given(programs())
    def collect(program):
        if len(drawn) < n:
            drawn.append(program)

    collect()
    return drawn


def side(programs_file: Path, placement: str, result_file: Path) -> None:
    """A child: every program on every default path under ``placement``; per (program, path) the
    symbols whose subsymbols it changed against this process's stock, and its dce-sound findings."""
    from fuzzdce.running.evaluate import Evaluator
    from fuzzdce.running.paths import DEFAULT_PATHS
    from fuzzdce.running.placements import resolve

    chosen = resolve(placement)
    programs = pickle.loads(programs_file.read_bytes())
    evaluator = Evaluator()
    rows = []
    try:
        for i, program in enumerate(programs):
            evaluation = evaluator(program, [chosen], paths=DEFAULT_PATHS, timeout=120.0)[chosen.name]
            if evaluation.invalid:
                continue
            for path, outcome in evaluation.outcomes.items():
                rows.append(
                    {
                        "program": i,
                        "path": path,
                        "symbols": sorted(outcome.dce_activity),
                        "activity": outcome.dce_activity,  # symbol@depth -> [removed, added]
                        "not_compared": outcome.dce_not_compared,  # why traces were left out, if any
                        "dce_sound": [
                            v.message[:200] for v in evaluation.violations if v.oracle == "dce-sound" and v.path == path
                        ],
                        "failed": bool(outcome.error or outcome.failure),
                    }
                )
    finally:
        evaluator.close()
    result_file.write_text(json.dumps(rows))


def compare(parent: Path, merge: Path, args, out: Path) -> None:
    programs = draw(args.compare, args.seed)
    programs_file = out / "programs.pickle"
    programs_file.write_bytes(pickle.dumps(programs))
    print(f"== emulation ({EMULATION} on the installed Thunder) against the real merge, on {len(programs)} programs, every path")
    results = {}
    for name, first, placement in (("emulation", None, EMULATION), ("merge", parent, f"merged={merge}")):
        result_file = out / f"compare-{name}.json"
        command = [
            sys.executable,
            __file__,
            "--side",
            placement,
            "--programs-file",
            str(programs_file),
            "--result",
            str(result_file),
        ]
        start = time.monotonic()
        done = subprocess.run(command, env=environment(first), stderr=subprocess.PIPE, text=True)
        if done.returncode != 0:
            sys.exit(f"upstream.py: the {name} side failed:\n{done.stderr[-3000:]}")
        results[name] = {(r["program"], r["path"]): r for r in json.loads(result_file.read_text())}
        print(f"   {name}: {len(results[name])} (program, path) outcomes in {time.monotonic() - start:.0f} s")
    emulated, real = results["emulation"], results["merge"]
    both = sorted(set(emulated) & set(real))
    counts = {name: Counter() for name in results}
    for key in both:
        for name in results:
            for symbol in results[name][key]["symbols"]:
                counts[name][symbol] += 1
    symbols = sorted(
        set(counts["emulation"]) | set(counts["merge"]), key=lambda s: -(counts["emulation"][s] + counts["merge"][s])
    )
    print(f"   (program, path) pairs in both: {len(both)}; symbol@depth: (program, path) pairs changed by emulation / merge")
    for s in symbols:
        print(f"     {s:<28} {counts['emulation'][s]:>5} / {counts['merge'][s]:<5}")
    only_emulated = sorted(s for s in counts["emulation"] if s not in counts["merge"])
    only_real = sorted(s for s in counts["merge"] if s not in counts["emulation"])
    print(f"   symbols only the emulation changes: {', '.join(only_emulated) or 'none'}")
    print(f"   symbols only the merge changes: {', '.join(only_real) or 'none'}")
    disagree = [k for k in both if set(emulated[k]["symbols"]) != set(real[k]["symbols"])]
    skipped = [k for k in both if emulated[k]["not_compared"] or real[k]["not_compared"]]
    print(f"   pairs where they disagree: {len(disagree)}/{len(both)} ({len(skipped)} with traces not compared on one side)")
    counts_differ = [k for k in both if k not in disagree and emulated[k].get("activity") != real[k].get("activity")]
    print(f"   pairs changing the same symbols but removing or adding other numbers of subsymbols: {len(counts_differ)}")
    for program, path in counts_differ[:5]:
        print(
            f"     program {program} on {path}: emulation {emulated[(program, path)]['activity']}, merge {real[(program, path)]['activity']}"
        )
    by_path = Counter(path for _, path in disagree)
    print(f"   disagreements by path: {dict(by_path.most_common())}")
    for program, path in disagree[:10]:
        e, r = set(emulated[(program, path)]["symbols"]), set(real[(program, path)]["symbols"])
        print(f"     program {program} on {path}: emulation only {sorted(e - r)}, merge only {sorted(r - e)}")
    for name in results:
        sound = [(k, m) for k, row in results[name].items() for m in row["dce_sound"]]
        print(f"   dce-sound findings under the {name}: {len(sound)}" + "".join(f"\n     {k}: {m}" for k, m in sound[:5]))


def main() -> None:
    warnings.filterwarnings("ignore")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--minutes",
        type=float,
        default=12.0,
        help="the campaign's wall time, every phase (fuzzdce run --time-budget; default 12)",
    )
    parser.add_argument("--max-examples", type=int, default=100000, help="the campaign's programs per lane (default: no limit)")
    parser.add_argument("--jobs", type=int, default=2, help="the campaign's lanes (default 2)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--compare", type=int, default=60, help="programs for emulation against the merge (0: skip)")
    parser.add_argument("--snapshots", type=Path, default=ROOT.parent / "shared" / "thunder-upstream")
    parser.add_argument("--out", type=Path, default=Path("upstream-results"))
    parser.add_argument("--no-campaign", action="store_true", help="only the emulation comparison")
    parser.add_argument("--side", help=argparse.SUPPRESS)
    parser.add_argument("--programs-file", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--result", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.side:
        side(args.programs_file, args.side, args.result)
        return
    parent, merge = snapshot_dir(args.snapshots, PARENT), snapshot_dir(args.snapshots, MERGE)
    args.out.mkdir(parents=True, exist_ok=True)
    if not args.no_campaign:
        campaign(parent, merge, args, args.out)
    if args.compare:
        compare(parent, merge, args, args.out)


if __name__ == "__main__":
    main()
