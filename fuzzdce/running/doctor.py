"""``fuzzdce doctor``: what this environment is, and what each built-in placement will mean in it.

A user on another Thunder (an editable checkout, an older release) reads here, before a campaign,
which Thunder is imported (its path shows an editable checkout), and for each placement whether
this Thunder already does it natively (the placement then equals stock), needs the patch, or
cannot take it (the patch target is missing: choose another placement or another Thunder).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from pathlib import Path

import thunder
import torch

from fuzzdce import __version__
from fuzzdce.core.model import Placement
from fuzzdce.running.placements import PLACEMENTS, splitter_fix_native, symcall_native

NATIVE, NEEDS_PATCH, CANNOT = "native", "needs patch", "cannot take it"


def placement_status(placement: Placement) -> tuple[str, str]:
    """(status, why) of one placement under the installed Thunder."""
    if placement.is_stock:
        return "reference", "Thunder as installed, unpatched"
    try:
        missing = placement.missing()
        if missing:
            return CANNOT, missing
        native = placement.native()
    except Exception as e:  # a check that cannot even look is a target it cannot take
        return CANNOT, f"checking it raised {type(e).__name__}: {e}"
    return (NATIVE, native) if native else (NEEDS_PATCH, placement.description)


def environment_lines() -> list[str]:
    """Python, torch, Thunder (with where it is imported from) and fuzzdce."""
    return [
        f"python   {sys.version.split()[0]} ({sys.executable})",
        f"torch    {torch.__version__} ({Path(torch.__file__).parent})",
        f"thunder  {getattr(thunder, '__version__', 'unknown')} ({Path(thunder.__file__).parent})",
        f"fuzzdce  {__version__} ({Path(__file__).parent})",
        f"hashseed {os.environ.get('PYTHONHASHSEED', 'random')} (PYTHONHASHSEED: a build's traces compare with stock's only when both hash alike)",
    ]


def placement_lines(placements: Iterable[Placement] = PLACEMENTS.values()) -> list[str]:
    lines = []
    for placement in placements:
        status, why = placement_status(placement)
        lines.append(f"  {placement.name:<14} {status:<15} {why}")
    return lines


# The changes the built-in placements emulate, as this Thunder may already have them natively.
CHANGES = (
    ("subsymbol DCE in Symbol.__call__", symcall_native),
    ("thunderfx splitter: proxies and symbol in one trace", splitter_fix_native),
)


def change_lines() -> list[str]:
    """For each emulated change: ``native`` (with the evidence) or ``absent`` in this Thunder."""
    lines = []
    for what, native in CHANGES:
        try:
            why = native()
        except Exception as e:
            why, status = f"checking it raised {type(e).__name__}: {e}", "unknown"
        else:
            status = NATIVE if why else "absent"
        lines.append(f"  {what:<52} {status}" + (f" ({why})" if why else ""))
    return lines


def diagnosis() -> str:
    """The whole ``fuzzdce doctor`` text for this process."""
    return "\n".join([*environment_lines(), "this Thunder:", *change_lines(), "placements:", *placement_lines()])
