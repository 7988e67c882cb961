"""``fuzzdce replay``: rerun saved bugs under placements and say which still fail.

A bug still fails under a placement when that placement's run of its reproducer program, on the
paths its findings showed, shows any of its findings' violation signatures again (path, oracle,
exception type, normalised message, frame).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from fuzzdce.core.errors import UsageError
from fuzzdce.core.findings import triage
from fuzzdce.core.model import STOCK, Placement
from fuzzdce.results.records import BugRecord
from fuzzdce.results.store import REPRO_FILE, read_bug
from fuzzdce.running.evaluate import Evaluator, violations_of
from fuzzdce.running.execution import load_script
from fuzzdce.running.placements import DEFAULT_PLACEMENTS, resolve


@dataclass
class Replay:
    """One bug replayed: under which placements it still shows."""

    folder: Path
    record: BugRecord
    failing: list[str] = field(default_factory=list)
    passing: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # "name (why)" for placements that could not be applied
    invalid: bool = False  # eager itself rejects the program now

    @property
    def still_fails(self) -> bool:
        return bool(self.failing)

    def line(self) -> str:
        r = self.record
        head = f"{r.id} [{r.verdict}, was under {', '.join(r.placements)}] {', '.join(r.oracles)} on {', '.join(r.paths)}: "
        if self.invalid:
            status = "eager now rejects the program; nothing to reproduce"
        elif self.failing:
            status = f"STILL FAILS under {', '.join(self.failing)}"
            if self.passing:
                status += f"; passes under {', '.join(self.passing)}"
        else:
            status = f"fixed: passes under {', '.join(self.passing)}"
        if self.skipped:
            status += f"; not run: {', '.join(self.skipped)}"
        return head + status


def replay_placements(record: BugRecord, chosen: Sequence[Placement] | None) -> tuple[list[Placement], list[str]]:
    """The chosen placements, or every built-in plus those the bug was seen under (a build as
    bug.json names it: NAME=TARGET)."""
    if chosen:
        return list(chosen), []
    placements, skipped = [resolve(name) for name in DEFAULT_PLACEMENTS], []
    for name in record.placements:
        if name not in DEFAULT_PLACEMENTS:
            try:
                placements.append(resolve(record.builds.get(name, name)))
            except UsageError as e:  # a user placement not importable here: say so, replay the rest
                skipped.append(f"{name} ({e})")
    return placements, skipped


def replay_bug(
    folder: Path, chosen: Sequence[Placement] | None = None, *, timeout: float | None = 60.0, evaluator: Evaluator | None = None
) -> Replay:
    """Rerun the bug saved in ``folder`` under each placement on its paths (``evaluator``:
    default, in this process)."""
    record = read_bug(folder)
    placements, skipped = replay_placements(record, chosen)
    result = Replay(folder, record, skipped=skipped)
    program = load_script(folder / REPRO_FILE)
    evaluations = (evaluator or Evaluator())(program, placements, paths=list(record.paths), timeout=timeout)
    result.invalid = evaluations[STOCK].invalid
    triaged = triage(violations_of(evaluations))
    failing = {name for m in record.members if (t := triaged.get(m.violation_signature)) for name in t.placements}
    names = [STOCK, *(p.name for p in placements if not p.is_stock)]
    result.failing = [n for n in names if n in failing]
    result.passing = [n for n in names if n not in failing]
    return result
