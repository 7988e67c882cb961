"""What a campaign tested: each placement's DCE activity against the reference (stock, unless the
campaign names another), per program and in total.

A placement's edits (``core.decisions.Edit``'s kinds) are counted per program: the subsymbols it
removed or changed (``dce_activity.activity`` measures them per path, in ``Outcome.dce_activity``),
and where it raised while the reference returned, or the reverse (``dce_activity.raise_edits``, in
``Outcome.dce_raise_edits``: a DCE that raises on a bound symbol changes no subsymbol, yet did
something). A program where the placement shows a failure the reference does not is counted too: a
regression is what it did. A program in which a placement did none of these tested nothing that
placement does; a placement that did nothing in a whole campaign is *not exercised*, and a clean
result under it is no pass.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from fuzzdce.core.dce_activity import merge_activity
from fuzzdce.core.faults import identity
from fuzzdce.core.model import STOCK


def program_activity(outcomes: Iterable[Any]) -> Counter:
    """One program's activity under one placement, every path together:
    ``((symbol, depth), "removed"|"added") -> subsymbols``."""
    return merge_activity(o.dce_activity for o in outcomes)


@dataclass
class DceActivity:
    """Per placement: programs evaluated, programs in which it changed subsymbols, and where."""

    programs: Counter = field(default_factory=Counter)  # placement -> valid programs evaluated
    changed: Counter = field(default_factory=Counter)  # placement -> programs with any edit (or a regression)
    # placement -> programs in which some path raised where the reference's returned, and the reverse
    raised: Counter = field(default_factory=Counter)
    returned: Counter = field(default_factory=Counter)
    # placement -> programs in which it showed a failure the reference does not
    regressed: Counter = field(default_factory=Counter)
    # (placement, (symbol, depth), "removed"|"added") -> subsymbols, summed over programs
    symbols: Counter = field(default_factory=Counter)
    # placement -> subsymbols changed in each program, in order (0: nothing changed)
    per_program: dict[str, list[int]] = field(default_factory=dict)
    # placement -> programs with traces not compared with stock's (they went another way: a split,
    # other traces; ``Outcome.dce_not_compared``): DCE activity and ``dce-sound`` did not see them
    not_compared: Counter = field(default_factory=Counter)
    # (placement, symbol) -> programs in which it and the reference, two Thunders, decompose the
    # symbol otherwise (``Outcome.dce_decomposition_differs``): those subsymbols were not compared
    decomposition: Counter = field(default_factory=Counter)
    # placement -> programs in which some path ran other execution traces (last traces, names
    # aside) than the reference's (``Outcome.execution_differs``): ``exact`` compared no bits there
    execution_differs: Counter = field(default_factory=Counter)
    reference: str = STOCK  # what the others are compared with: it has no activity of its own

    def add(self, evaluations: Mapping[str, Any]) -> None:
        """Count one program's evaluations (placement name -> ``Evaluation``) against the reference's."""
        reference = evaluations.get(self.reference)
        passed = {identity(v) for v in reference.violations} if reference is not None else set()
        for name, evaluation in evaluations.items():
            if name == self.reference or evaluation.invalid:
                continue
            differs = {sym for o in evaluation.outcomes.values() for sym in o.dce_decomposition_differs}
            self.decomposition.update((name, sym) for sym in differs)
            counts = program_activity(evaluation.outcomes.values())
            raises = {kind for o in evaluation.outcomes.values() for kind in o.dce_raise_edits}
            regressed = reference is not None and any(identity(v) not in passed for v in evaluation.violations)
            self.programs[name] += 1
            self.raised[name] += "raise" in raises
            self.returned[name] += "no raise" in raises
            self.regressed[name] += regressed
            self.changed[name] += bool(counts) or bool(raises) or regressed
            self.symbols.update({(name, key, kind): n for (key, kind), n in counts.items()})
            self.per_program.setdefault(name, []).append(sum(counts.values()))
            self.not_compared[name] += any(o.dce_not_compared for o in evaluation.outcomes.values())
            self.execution_differs[name] += any(o.execution_differs for o in evaluation.outcomes.values())

    @classmethod
    def from_summary(cls, data: Mapping[str, Any]) -> DceActivity:
        """The counters behind ``summary``'s output (summary.json's ``dce_activity``): runs merge by these."""
        activity = cls()
        for name, entry in data.items():
            activity.programs[name] += entry["programs"]
            activity.changed[name] += entry["programs_changed"]
            activity.raised[name] += entry.get("programs_raised", 0)
            activity.returned[name] += entry.get("programs_returned", 0)
            activity.regressed[name] += entry.get("programs_regressed", 0)
            activity.per_program[name] = list(entry.get("per_program", []))
            activity.not_compared[name] += entry.get("programs_not_compared", 0)
            activity.execution_differs[name] += entry.get("programs_execution_differs", 0)
            activity.decomposition.update({(name, sym): n for sym, n in entry.get("decomposition_differs", {}).items()})
            for s in entry["symbols"]:
                for kind in ("removed", "added"):
                    activity.symbols[(name, (s["symbol"], s["depth"]), kind)] += s[kind]
        return activity

    def merge(self, other: DceActivity) -> None:
        self.programs.update(other.programs)
        self.changed.update(other.changed)
        self.raised.update(other.raised)
        self.returned.update(other.returned)
        self.regressed.update(other.regressed)
        self.symbols.update(other.symbols)
        self.not_compared.update(other.not_compared)
        self.execution_differs.update(other.execution_differs)
        self.decomposition.update(other.decomposition)
        for name, values in other.per_program.items():
            self.per_program.setdefault(name, []).extend(values)

    def placement_summary(self, name: str) -> dict[str, Any]:
        programs, changed = self.programs[name], self.changed[name]
        by_symbol: dict[tuple[str, int], dict[str, int]] = {}
        for (placement, key, kind), n in self.symbols.items():
            if placement == name:
                by_symbol.setdefault(key, {"removed": 0, "added": 0})[kind] += n
        ranked = sorted(by_symbol.items(), key=lambda kv: (-kv[1]["removed"] - kv[1]["added"], kv[0]))
        return {
            "programs": programs,
            "programs_changed": changed,
            "fraction_changed": round(changed / programs, 4) if programs else 0.0,
            "exercised": changed > 0,
            "symbols": [{"symbol": symbol, "depth": depth, **v} for (symbol, depth), v in ranked],
            # programs in which it raised where the reference returned, the reverse, and showed a
            # failure the reference does not
            "programs_raised": self.raised[name],
            "programs_returned": self.returned[name],
            "programs_regressed": self.regressed[name],
            "per_program": self.per_program.get(name, []),
            "programs_not_compared": self.not_compared[name],
            "programs_execution_differs": self.execution_differs[name],
            # symbol -> programs, most first
            "decomposition_differs": dict(
                sorted(((sym, n) for (p, sym), n in self.decomposition.items() if p == name), key=lambda kv: (-kv[1], kv[0]))
            ),
        }

    def summary(self, names: Iterable[str]) -> dict[str, Any]:
        """summary.json's ``dce_activity``: one entry per placement other than the reference."""
        return {name: self.placement_summary(name) for name in names if name != self.reference}


def decomposition_line(name: str, entry: Mapping[str, Any], reference: str, limit: int = 12) -> str | None:
    """The report's line for the symbols ``name`` and the reference decompose otherwise, if any."""
    differs = entry.get("decomposition_differs") or {}
    if not differs:
        return None
    shown = ", ".join(f"{sym} ({n} programs)" for sym, n in list(differs.items())[:limit])
    more = f", ... ({len(differs) - limit} more)" if len(differs) > limit else ""
    return (
        f"{name}: decomposition differs from {reference}'s in {len(differs)} symbol{'' if len(differs) == 1 else 's'}: "
        f"{shown}{more} (their subsymbols not compared: no DCE finding)"
    )


def activity_lines(data: Mapping[str, Any], limit: int = 12, reference: str = STOCK) -> list[str]:
    """The report's lines for summary.json's ``dce_activity``, against ``reference``."""
    lines = []
    for name, entry in data.items():
        differs = decomposition_line(name, entry, reference, limit)
        if not entry["programs"]:
            lines.append(f"{name}: no valid program evaluated")
            continue
        if not entry["exercised"]:
            lines.append(
                f"{name}: NOT EXERCISED: changed no subsymbol, raised nowhere otherwise and failed nothing beyond "
                f"{reference} in {entry['programs']} programs (a clean result under it is no pass)"
            )
            lines += [differs] if differs else []
            continue
        symbols = entry["symbols"]
        shown = ", ".join(
            f"{s['symbol']}{'' if s['depth'] == 0 else '@' + str(s['depth'])} {s['removed']}"
            + (f"+{s['added']} added" if s["added"] else "")
            for s in symbols[:limit]
        )
        more = f", ... ({len(symbols) - limit} more)" if len(symbols) > limit else ""
        otherwise = [
            f"{what} in {n} program{'' if n == 1 else 's'}"
            for what, n in (
                (f"raised where {reference} returns", entry.get("programs_raised", 0)),
                (f"returned where {reference} raises", entry.get("programs_returned", 0)),
                (f"failed where {reference} passes", entry.get("programs_regressed", 0)),
            )
            if n
        ]
        more += "".join(f"; {said}" for said in otherwise)
        not_compared = entry.get("programs_not_compared", 0)
        if not_compared:
            more += f"; traces not compared with {reference}'s in {not_compared} programs (they went another way)"
        ran_otherwise = entry.get("programs_execution_differs", 0)
        if ran_otherwise:
            more += f"; ran other execution traces than {reference}'s in {ran_otherwise} programs (no bits compared there)"
        changed = (
            f"changed subsymbols in {len(symbols)} symbol{'' if len(symbols) == 1 else 's'}: {shown}"
            if symbols
            else "changed no subsymbol"
        )
        lines.append(
            f"{name} did otherwise than {reference} in {100 * entry['fraction_changed']:.0f}% of programs "
            f"({entry['programs_changed']}/{entry['programs']}): {changed}{more}"
        )
        lines += [differs] if differs else []
    return lines
