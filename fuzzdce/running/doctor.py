"""``fuzzdce doctor``: what this environment is, and what each built-in placement will mean in it.

A user on another Thunder (an editable checkout, an older release) reads here, before a campaign,
which Thunder is imported (its path shows an editable checkout), and for each placement whether
this Thunder already does it natively (the placement then equals stock), needs the patch, or
cannot take it (the patch target is missing: choose another placement or another Thunder); and
which compile paths run on this machine (a CUDA path needs CUDA, nvFuser's needs nvFuser to load
beside this torch), and why not where they do not.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from pathlib import Path

import thunder
import torch

from fuzzdce import __version__
from fuzzdce.core.model import CompilePath, Placement
from fuzzdce.running.installed_thunder import splitter_fix_native, symcall_native
from fuzzdce.running.paths import PATHS, cuda_unavailable
from fuzzdce.running.placements import PLACEMENTS
from fuzzdce.strategies.model_blocks import BLOCKS, MODELS, model_files_missing
from fuzzdce.strategies.opinfo import MODULE, TORCH_MODULE, available, torch_available

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


def opinfo_line() -> str:
    """Which OpInfos programs draw steps from (``strategies.opinfo``): Thunder's own, torch's for
    the ops Thunder registers automatically, or neither, and why not."""
    thunder_why, torch_why = available(), torch_available()
    if thunder_why and torch_why:
        return f"opinfos  none: {thunder_why}; {torch_why}; programs draw from the catalog alone (--opinfo-rate has no effect)"
    suites = [MODULE if not thunder_why else f"not Thunder's ({thunder_why})"]
    suites.append(
        f"{TORCH_MODULE}.op_db for the ops Thunder registers automatically" if not torch_why else f"not torch's ({torch_why})"
    )
    return f"opinfos  {'; '.join(suites)} (--opinfo-rate: the share of programs holding OpInfo steps)"


def blocks_line() -> str:
    """Which model files Thunder ships here that ``--block-rate`` draws blocks from, and those absent
    (an older Thunder) or not importing (a package they need not installed): their blocks are skipped."""
    missing = model_files_missing(BLOCKS)
    files = list(dict.fromkeys(f"{MODELS}.{b.model}" for b in BLOCKS))
    present = [f.removeprefix(MODELS + ".") for f in files if f not in missing]
    line = f"blocks   {len(BLOCKS)} model blocks from {MODELS}: {', '.join(present) or 'none'} (--block-rate)"
    if missing:
        line += "; skipped: " + "; ".join(f"{f.removeprefix(MODELS + '.')} ({why})" for f, why in missing.items())
    return line


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


def device_lines() -> list[str]:
    """The CUDA device torch sees, if any (a CUDA path runs there)."""
    if not torch.cuda.is_available():
        return [f"cuda     none ({cuda_unavailable()})"]
    name = torch.cuda.get_device_name(0)
    return [f"cuda     {torch.cuda.device_count()} device(s), {name}; torch built with CUDA {torch.version.cuda}"]


def path_lines(paths: Iterable[CompilePath] = PATHS.values()) -> list[str]:
    """Each compile path: whether it runs here (and is a default), or why not."""
    lines = []
    for path in paths:
        why = path.unavailable()
        where = f"on {path.device}" if path.device else "on the CPU"
        status = f"runs ({where})" if not why else "cannot run here"
        lines.append(f"  {path.name:<18} {status:<18} {why or path.compile.__doc__.strip().splitlines()[0]}")
    return lines


def diagnosis() -> str:
    """The whole ``fuzzdce doctor`` text for this process."""
    return "\n".join(
        [
            *environment_lines(),
            *device_lines(),
            opinfo_line(),
            blocks_line(),
            "this Thunder:",
            *change_lines(),
            "placements:",
            *placement_lines(),
            "paths (the defaults are those that run here):",
            *path_lines(),
        ]
    )
