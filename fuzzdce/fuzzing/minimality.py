"""Is each bug of a findings folder at its statement-level minimum? The check a campaign's shrinking
must pass: in a bug's ``repro.py``, no single statement whose results nothing reads (``# dead``)
and no returned value can be dropped with the same failure.

It works on the reproducer's text, as a Thunder engineer would: drop one line (or one returned
value), replay the edited reproducer under the bug's placement and the reference on its paths
(``replay.replay_bug``), and see whether the bug still shows the same. Nothing is guessed: a dead
statement can matter. ``benchmarks/phases.py`` prints its figure; ``tests/test_shrink_passes.py``
runs it on a campaign's folder.
"""

from __future__ import annotations

import re
import shutil
import tempfile
from pathlib import Path

from fuzzdce.core.model import STOCK
from fuzzdce.core.vocabulary import Verdict
from fuzzdce.results.replay import replay_bug
from fuzzdce.results.store import REPRO_FILE, read_bug, read_bugs
from fuzzdce.running.placements import resolve

_RETURN = re.compile(r"^(    return )\((.*)\)$")


def program_lines(script: str) -> tuple[int, int]:
    """The first and last line numbers (0-based) of ``def program(...)``'s body in a reproducer."""
    lines = script.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("def program("))
    end = next(i for i in range(start + 1, len(lines)) if lines[i].startswith("    return "))
    return start + 1, end


def single_drops(script: str) -> list[tuple[str, str]]:
    """Every reproducer one dead statement or one returned value smaller than ``script``, each with
    what it dropped."""
    lines = script.splitlines()
    first, ret = program_lines(script)
    found = []
    for i in range(first, ret):
        if lines[i].endswith("# dead"):
            found.append((f"dead statement {lines[i].strip()!r}", "\n".join(lines[:i] + lines[i + 1 :]) + "\n"))
    match = _RETURN.match(lines[ret])
    values = [v.strip() for v in match.group(2).split(",") if v.strip()] if match else []
    if len(values) > 1:
        for j, value in enumerate(values):
            kept = values[:j] + values[j + 1 :]
            returned = f"({kept[0]},)" if len(kept) == 1 else f"({', '.join(kept)})"
            edited = lines[:ret] + [match.group(1) + returned] + lines[ret + 1 :]
            found.append((f"returned value {value}", "\n".join(edited) + "\n"))
    return found


def fails_the_same(folder: Path) -> bool:
    """Does the bug in ``folder`` still show, with its verdict: under its placement and not the
    reference for a regression, under the reference for any other?"""
    record = read_bug(folder)
    reference = record.reference or STOCK
    showing = record.placements[0] if record.verdict == Verdict.REGRESSION else reference
    chosen = dict.fromkeys((showing, reference))
    replay = replay_bug(folder, [resolve(record.builds.get(name, name)) for name in chosen])
    return (showing in replay.failing) and ((reference in replay.failing) == (record.verdict != Verdict.REGRESSION))


def droppable(root: Path) -> list[str]:
    """For each bug of the findings folder ``root``: each dead statement or returned value whose
    removal leaves the same failure, as "bug ID: what". Empty: every bug is minimal so."""
    found = []
    for record, folder in read_bugs(Path(root)):
        script = (folder / REPRO_FILE).read_text()
        for what, edited in single_drops(script):
            with tempfile.TemporaryDirectory() as tmp:
                copy = Path(tmp) / folder.name
                shutil.copytree(folder, copy)
                (copy / REPRO_FILE).write_text(edited)
                if fails_the_same(copy):
                    found.append(f"{record.id}: {what}")
    return found
