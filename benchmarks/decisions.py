"""Decisions benchmark: how many bugs each placement's regressions make, and how many a named
decision explains, from one or more findings folders (each a campaign's ``--findings DIR``).

Prints, per folder: programs evaluated, wall time, then per placement under test: its regression
bugs, how many of them are known by a decision (and which kinds), bisection runs per bug (min,
mean, max) and, for the rest, why none was named (not bisected for time, no single edit, ...).
Two folders side by side (a campaign before and after a change, on the same seed and placements)
make the before/after table of a closing note.

Usage: python benchmarks/decisions.py FINDINGS_DIR [FINDINGS_DIR ...]
A campaign to read, with the planted wrong placements of tests/planted_dce.py and their control:
  PYTHONPATH=.:tests fuzzdce run --placement stock --placement planted_dce:symcall_drops_output_producer \\
      --placement planted_dce:rdnp_ignores_dont_dce --placement planted_dce:user_dce_drops_read_by_kept \\
      --placement planted_dce:symcall_folds_number_proxy --placement planted_dce:symcall_dce_raises_on_broadcast \\
      --placement planted_dce:symcall_correct --time-budget 900 --seed 5 --profile nightly --database none --findings DIR
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from pathlib import Path


def read(folder: Path) -> tuple[dict, list[dict]]:
    summary = json.loads((folder / "summary.json").read_text())
    bugs = [json.loads(p.read_text()) for p in sorted(folder.glob("*/bug.json"))]
    return summary, bugs


def why_none(decision: dict | None) -> str:
    if decision is None:
        return "not bisected (time, or this fuzzdce names no decisions)"
    if decision.get("culprit") is None:
        return f"none found: {decision.get('note', '')[:80]}"
    return "no single edit (the culprit alone passes)"


def kind_of(decision: dict) -> str:
    culprit = decision["culprit"]
    narrowed = decision.get("narrowed")
    if narrowed:
        return f"removal of {narrowed['symbol']} ({', '.join(narrowed['reasons']) or 'dead'})"
    if culprit["kind"] == "raise":
        return f"raise {culprit['error_type']} at {culprit['error_frame']} ({', '.join(culprit['malformation_kinds']) or 'well-formed'})"
    removed = sorted({f"{r['symbol']} ({', '.join(r['reasons']) or 'dead'})" for r in culprit["removed"]})
    return f"{culprit['kind']} of {', '.join(removed)}" if removed else f"{culprit['kind']} in {culprit['label']}"


def report(folder: Path) -> None:
    summary, bugs = read(folder)
    print(f"== {folder}: {summary.get('programs')} programs, {summary.get('wall_seconds', 0):.0f} s ==")
    by_placement: dict[str, list[dict]] = defaultdict(list)
    for bug in bugs:
        if bug["verdict"] == "regression":
            by_placement[bug["placement"]].append(bug)
    under_test = [p for p in summary.get("placements", []) if p != summary.get("reference", "stock")]
    for placement in under_test:
        found = by_placement.get(placement, [])
        decided = [
            b for b in found if b.get("decision") and b["decision"].get("culprit") and b["decision"].get("alone") is not False
        ]
        runs = [b["decision"]["runs"] for b in found if b.get("decision") and b["decision"].get("runs")]
        line = f"  {placement}: {len(found)} bugs, {len(decided)} known by a decision"
        if runs:
            line += f"; bisection runs per bug {min(runs)}/{sum(runs) / len(runs):.1f}/{max(runs)} (min/mean/max)"
        print(line)
        for kind in sorted({kind_of(b["decision"]) for b in decided}):
            print(f"      decision: {kind}")
        for bug in found:
            if bug not in decided:
                print(f"      {bug['id']} ({', '.join(bug['oracles'])}): {why_none(bug.get('decision'))}")


def main() -> None:
    if len(sys.argv) < 2:
        raise SystemExit(__doc__)
    for folder in sys.argv[1:]:
        report(Path(folder))


if __name__ == "__main__":
    main()
