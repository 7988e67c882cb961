"""Patching Thunder and restoring it exactly: the machinery every placement patches through.

:func:`patch_everywhere` replaces a function and every alias of it in loaded ``thunder`` modules,
and records each (owner, attribute, original) it replaced inside a :func:`recording_patches` block,
so that tests can prove the originals are back once the context exits.
"""

from __future__ import annotations

import contextlib
import inspect
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class PatchRecord:
    owner: Any
    attribute: str
    original: Any


# The lists of ``recording_patches`` blocks now open (none outside tests): a process records no
# patch unless asked, so a long campaign's workers do not keep one record of every patch they applied.
_RECORDINGS: list[list[PatchRecord]] = []


@contextlib.contextmanager
def recording_patches() -> Iterator[list[PatchRecord]]:
    """A list of every patch ``patch_everywhere`` applies inside the block, in order: tests read it
    to check that each original is back once a placement exits."""
    recorded: list[PatchRecord] = []
    _RECORDINGS.append(recorded)
    try:
        yield recorded
    finally:
        _RECORDINGS.remove(recorded)


@contextlib.contextmanager
def patch_everywhere(owner: Any, attribute: str, replacement: Any) -> Iterator[Any]:
    """Replace ``owner.attribute`` and every alias of it in loaded ``thunder`` modules.

    Modules that did ``from thunder.x import f`` hold their own reference to ``f``; patching only
    the defining module would miss them. Yields the original object.
    """
    original = inspect.getattr_static(owner, attribute)
    targets = [(owner, attribute)] if inspect.isclass(owner) else aliases(owner, attribute, original)
    with contextlib.ExitStack() as stack:
        for target, attr in targets:
            for recorded in _RECORDINGS:
                recorded.append(PatchRecord(target, attr, original))
            stack.enter_context(set_attribute(target, attr, replacement))
        _PATCHED_IN.append((replacement, targets))
        try:
            yield original
        finally:
            _PATCHED_IN.remove((replacement, targets))


# What each open ``patch_everywhere`` put where: a patch of a patch (an observer wrapping the
# placement's ``dce``, every job) replaces exactly those, found without a scan.
_PATCHED_IN: list[tuple[Any, list[tuple[Any, str]]]] = []
# Scans of the loaded ``thunder`` modules for an object's aliases, newest last, each with the
# number of modules loaded when it was made: a module imported since may hold another alias.
_SCANS: list[tuple[Any, int, list[tuple[Any, str]]]] = []
_SCANS_KEPT = 16


def aliases(owner: Any, attribute: str, original: Any) -> list[tuple[Any, str]]:
    """``(owner, attribute)`` and every (module, name) of a loaded ``thunder`` module holding
    ``original`` too. Scanning every module costs a job as much as an oracle, so a scan is kept
    while no module was imported since and each alias it found still holds ``original``."""
    for replacement, targets in reversed(_PATCHED_IN):
        if replacement is original and (owner, attribute) in targets:
            return list(targets)
    loaded = len(sys.modules)
    for scanned, modules, targets in reversed(_SCANS):
        if (
            scanned is original
            and modules == loaded
            and (owner, attribute) in targets
            and all(inspect.getattr_static(t, a, None) is original for t, a in targets)
        ):
            return list(targets)
    targets = [(owner, attribute)]
    for name, module in list(sys.modules.items()):
        if module is owner or not (name == "thunder" or name.startswith("thunder.")):
            continue
        for attr, value in list(vars(module).items()):
            if value is original:
                targets.append((module, attr))
    _SCANS.append((original, loaded, targets))
    del _SCANS[:-_SCANS_KEPT]
    return list(targets)


@contextlib.contextmanager
def set_attribute(owner: Any, attribute: str, value: Any) -> Iterator[None]:
    saved = inspect.getattr_static(owner, attribute)
    setattr(owner, attribute, value)
    try:
        yield
    finally:
        setattr(owner, attribute, saved)
