"""Ablation benchmark: what each part of fuzzdce's own work costs a program, against the bare loop.

Each program is evaluated in this process under the overhead's placements (stock, rdnp, symcall,
symcall-fixed) on the six CPU paths, once with everything on and once with each part switched off
alone (an observer: the DCE calls, the grad rules, the stated metadata, the gated edits; the DCE
activity against stock; the names oracle; every oracle; the localisation of wrong values), then with
all of them off, and by the bare loop of ``benchmarks/campaign.py``: every setting interleaved program
by program in rotating order. Prints seconds per program and the ratio to the bare loop for each.
A part whose removal saves little is not where the time goes. ``--compile-every-placement`` turns
off the compiles stock's probe shares (``running.compile_sharing``): the figures before that mechanism.

This is how issue 55's cut was chosen: with every part off, fuzzdce still cost 1.07x the bare loop
in process; the floor could only be met by compiling less, not by checking less.

Usage: PYTHONPATH=.:benchmarks python benchmarks/ablation.py [--programs 8] [--seed 0] [--compile-every-placement]
"""

from __future__ import annotations

import argparse
import contextlib
import time
import warnings

from campaign import SIX_CPU_PATHS, bare_cost, extra_calls
from paths import draw_programs

PLACEMENTS = ("stock", "rdnp", "symcall", "symcall-fixed")
# Each part that can be switched off alone, by what it is called here.
PARTS = ("dce calls", "grad rules", "metadata", "edits", "dce activity", "names oracle", "oracles", "localisation")


def evaluation(off: frozenset[str], share: bool):
    """One program's evaluation with the parts ``off`` switched off (restored after)."""
    from fuzzdce.oracles import ORACLES
    from fuzzdce.running import evaluate, path_running
    from fuzzdce.running.evaluate import Evaluator
    from fuzzdce.running.placements import PLACEMENTS as BUILT_IN

    placements = [BUILT_IN[name] for name in PLACEMENTS]

    def none(outcome):
        return contextlib.nullcontext()

    switched = {
        "dce calls": (path_running, "observed_dce", none),
        "grad rules": (path_running, "observed_grad_rules", none),
        "metadata": (path_running, "observed_metadata", none),
        "edits": (path_running, "observed_edits", none),
        "dce activity": (evaluate, "note_dce_activity", lambda outcome, base: None),
    }

    def run(program) -> float:
        saved = {part: getattr(module, name) for part, (module, name, _) in switched.items()}
        oracles = dict(ORACLES)
        try:
            for part, (module, name, stand_in) in switched.items():
                if part in off:
                    setattr(module, name, stand_in)
            if "oracles" in off:
                ORACLES.clear()
            elif "names oracle" in off:
                del ORACLES["names"]
            start = time.perf_counter()
            Evaluator(share_compiles=share)(program, placements, paths=SIX_CPU_PATHS, localise="localisation" not in off)
            return time.perf_counter() - start
        finally:
            for part, (module, name, _) in switched.items():
                setattr(module, name, saved[part])
            ORACLES.clear()
            ORACLES.update(oracles)

    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--programs", type=int, default=8)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--compile-every-placement", action="store_true")
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    from fuzzdce.running.placements import PLACEMENTS as BUILT_IN

    share = not args.compile_every_placement
    programs = draw_programs(args.programs + 1, args.seed)
    placements = [BUILT_IN[name] for name in PLACEMENTS]
    settings = {"bare loop": lambda p: bare_cost(p, placements, SIX_CPU_PATHS, extra_calls(p))[0]}
    settings["everything on"] = evaluation(frozenset(), share)
    settings |= {f"without {part}": evaluation(frozenset({part}), share) for part in PARTS}
    settings["everything off"] = evaluation(frozenset(PARTS), share)
    for run in settings.values():  # warm-up outside the timing
        run(programs[0])
    totals = dict.fromkeys(settings, 0.0)
    names = list(settings)
    for i, program in enumerate(programs[1:]):
        for name in names[i % len(names) :] + names[: i % len(names)]:
            totals[name] += settings[name](program)
    print(f"{args.programs} programs (seed {args.seed}), {', '.join(PLACEMENTS)} on the six CPU paths, shared compiles {share}")
    for name, total in totals.items():
        print(f"  {name:26s} {total / args.programs:7.3f} s/program  x{total / totals['bare loop']:.2f}")


if __name__ == "__main__":
    main()
