"""``fuzzdce replay``: rerun saved bugs under placements and say which still fail.

A bug still fails under a placement when that placement's run of its reproducer program, on the
paths its findings showed, shows any of its findings' violation signatures again (path, oracle,
exception type, normalised message, frame). It *fails differently* when it shows other failures
there and none of its own (both are printed: a program that now fails another way is not fixed),
and it is *not verified* when one of its checks could not be made (a path this machine skips, a
time-out, fuzzdce's own failure). The command exits 1 when any bug fails (itself or differently),
else 4 when any is not verified, else 0.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from fuzzdce.core.errors import HarnessError, UsageError
from fuzzdce.core.faults import identity
from fuzzdce.core.findings import triage
from fuzzdce.core.model import STOCK, Placement
from fuzzdce.results.records import BugRecord
from fuzzdce.results.repro import Reproduced, why_not_verified
from fuzzdce.results.store import REPRO_FILE, read_bug
from fuzzdce.running.evaluate import Evaluator, violations_of
from fuzzdce.running.placements import DEFAULT_PLACEMENTS, resolve
from fuzzdce.running.script_program import load_script


@dataclass
class Replay:
    """One bug replayed: under which placements it still shows, fails another way, passes, or
    could not be checked."""

    folder: Path
    record: BugRecord
    failing: list[str] = field(default_factory=list)
    passing: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # "name (why)" for placements that could not be applied
    invalid: bool = False  # eager itself rejects the program now
    # name -> the failures it shows now on the bug's paths, none of them the bug's ("[path/oracle] message")
    differently: dict[str, list[str]] = field(default_factory=dict)
    # name -> why the bug's checks could not be made under it (a path skipped here, a time-out, fuzzdce's failure)
    not_verified: dict[str, str] = field(default_factory=dict)

    @property
    def still_fails(self) -> bool:
        return bool(self.failing)

    @property
    def fails_differently(self) -> bool:
        return bool(self.differently)

    @property
    def result(self) -> Reproduced:
        """The bug as one ``Reproduced`` code: it fails (itself or another way), or not verified, or fixed."""
        if self.failing or self.differently:
            return Reproduced.FAILS
        if self.not_verified or self.skipped:
            return Reproduced.NOT_VERIFIED
        return Reproduced.FIXED

    def line(self) -> str:
        """What became of the bug: its head line, then under a placement that fails another way
        both failures, the bug's and the new one."""
        r = self.record
        head = f"{r.id} [{r.verdict}, was under {', '.join(r.placements)}] {', '.join(r.oracles)} on {', '.join(r.paths)}: "
        parts = []
        if self.invalid:
            parts.append("eager now rejects the program; nothing to reproduce")
        if self.failing:
            parts.append(f"STILL FAILS under {', '.join(self.failing)}")
        if self.differently:
            parts.append(f"FAILS DIFFERENTLY under {', '.join(self.differently)}")
        if self.not_verified:
            parts.append(f"NOT VERIFIED under {', '.join(f'{n} ({why})' for n, why in self.not_verified.items())}")
        if self.passing:
            fixed = not (self.invalid or self.failing or self.differently or self.not_verified or self.skipped)
            parts.append(f"{'fixed: ' if fixed else ''}passes under {', '.join(self.passing)}")
        if self.skipped:
            parts.append(f"not run: {', '.join(self.skipped)}")
        lines = [head + "; ".join(parts)]
        for name, new in self.differently.items():
            lines.append(f"    under {name}, was: [{'/'.join(r.paths)}/{'/'.join(r.oracles)}] {r.message[:300]}")
            lines += [f"    under {name}, now: {failure[:300]}" for failure in new[:3]]
        return "\n".join(lines)


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
    default, in this process). Under each placement the bug still fails (one of its findings
    again), fails differently (other failures on its paths, none of them its own), is not verified
    (one of its checks could not be made: ``repro.why_not_verified``; or fuzzdce's own failure),
    or passes."""
    record = read_bug(folder)
    placements, skipped = replay_placements(record, chosen)
    result = Replay(folder, record, skipped=skipped)
    names = [STOCK, *(p.name for p in placements if not p.is_stock)]
    program = load_script(folder / REPRO_FILE)
    try:
        evaluations = (evaluator or Evaluator())(program, placements, paths=list(record.paths), timeout=timeout)
    except HarnessError as e:  # fuzzdce's own failure: nothing was checked, which is no "fixed"
        result.not_verified = {name: f"fuzzdce failed: {e}" for name in names}
        return result
    result.invalid = evaluations[STOCK].invalid
    # A script's wrong values are not localised (no statements to take prefixes of): compared
    # without where they first differ.
    triaged = {identity(t.violation, localised=False): t for t in triage(violations_of(evaluations)).values()}
    own = {m.unlocalised_identity() for m in record.members}
    failing = {name for known_by in own if (t := triaged.get(known_by)) for name in t.placements}
    checks = sorted({(m.path, m.oracle) for m in record.members})
    for name in names:
        evaluation = evaluations[name]
        if name in failing:
            result.failing.append(name)
            continue
        other = [
            str(t.violation)
            for known_by, t in triaged.items()
            if name in t.placements and known_by not in own and t.violation.path in record.paths
        ]
        why = "; ".join(
            dict.fromkeys(
                w
                for path, oracle in checks
                if path in evaluation.outcomes and (w := why_not_verified(evaluation.outcomes[path], oracle))
            )
        )
        if other:
            result.differently[name] = other
        elif why and not result.invalid:
            result.not_verified[name] = why
        else:
            result.passing.append(name)
    return result
