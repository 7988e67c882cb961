"""DCE placements: context managers that patch Thunder while active and restore it exactly.

A placement is a ``model.Placement``: a name, a zero-argument callable returning a context manager,
and its own test of whether the installed Thunder already does it natively. The built-in ones are
registered in ``PLACEMENTS``; any ``package.module:attr`` naming such a callable is a placement too,
which is how a user fuzzes a patch of their own.

Every patch goes through ``patching.patch_everywhere``. What the installed Thunder already does or
lacks of each built-in placement is read in ``installed_thunder``; the splitter fix ``symcall-fixed``
adds is ``splitter_fix``.
"""

from __future__ import annotations

import contextlib
import importlib
import inspect
from collections.abc import Callable, Iterator
from typing import Any

from thunder.core.symbol import BoundSymbol

from fuzzdce.core.errors import UsageError
from fuzzdce.core.model import STOCK, Placement
from fuzzdce.running.builds import build_placement, is_build_spec
from fuzzdce.running.installed_thunder import (
    rdnp_missing,
    rdnp_native,
    splitter_fix_native,
    symcall_fixed_missing,
    symcall_fixed_native,
    symcall_missing,
    symcall_native,
)
from fuzzdce.running.patching import patch_everywhere
from fuzzdce.running.splitter_fix import try_execute_thunder_symbol_in_one_trace

# The calibration placement: patches nothing (see ``identity``).
IDENTITY = "identity"


# --- DCE of a bound symbol's subsymbols -----------------------------------------------------------


def dce_subsymbols(bsym: BoundSymbol) -> BoundSymbol:
    """Return ``bsym`` with its subsymbols dead-code-eliminated against its own output.

    Uses Thunder's ``transform_common.dce`` (looked up at call time, so placements that patch it are
    honoured) on a scratch trace ending in a return of the bound symbol's output.
    """
    from thunder.core import prims, transform_common
    from thunder.core.trace import TraceCtx

    if not bsym.subsymbols:
        return bsym
    scratch = TraceCtx()
    scratch.bound_symbols = [*bsym.subsymbols, prims.python_return.bind(bsym.output, output=None)]
    kept = transform_common.dce(scratch).bound_symbols
    assert kept and kept[-1].sym.id is prims.PrimIDs.RETURN, "dce must keep the return it was given"
    return bsym.from_bsym(subsymbols=kept[:-1])


# --- built-in placements -----------------------------------------------------------------------------


@contextlib.contextmanager
def stock() -> Iterator[None]:
    """Thunder as installed, unpatched."""
    yield


@contextlib.contextmanager
def identity() -> Iterator[None]:
    """Patches nothing, yet runs as a placement: compiled again, compared with stock like any other.

    A calibration: Thunder under it is stock, so anything a campaign reports under it is the
    harness's own false alarm (nondeterminism, a tolerance, state left from an earlier compile).
    """
    yield


@contextlib.contextmanager
def rdnp() -> Iterator[None]:
    """DCE of each kept bound symbol's subsymbols inside ``remove_duplicate_number_proxies``.

    ``dce`` calls ``remove_duplicate_number_proxies`` itself, so the subsymbol DCE recurses.
    """
    from thunder.core import transform_common

    if rdnp_native():
        yield
        return
    original = transform_common.remove_duplicate_number_proxies

    def remove_duplicate_number_proxies_with_dce(bsyms):
        return [dce_subsymbols(bsym) for bsym in original(bsyms)]

    with patch_everywhere(transform_common, "remove_duplicate_number_proxies", remove_duplicate_number_proxies_with_dce):
        yield


@contextlib.contextmanager
def symcall() -> Iterator[None]:
    """DCE of each new bound symbol's subsymbols inside ``Symbol.__call__``, before anyone sees it."""
    if symcall_native():
        yield
        return
    with dce_in_symbol_call(dce_subsymbols):
        yield


@contextlib.contextmanager
def dce_in_symbol_call(dce: Callable[[Any], Any]) -> Iterator[None]:
    """``Symbol.__call__`` patched to replace each bound symbol it creates by ``dce(bound symbol)``:
    the symcall placement's mechanism, with the DCE given (a planted fault gives a wrong one)."""
    from thunder.core.symbol import Symbol
    from thunder.core.trace import get_tracectx

    original_call = Symbol.__call__

    def call_with_dce(self, *args, **kwargs):
        trace = get_tracectx()
        scope = trace.peek_scope() if trace is not None else None
        before = len(scope) if scope is not None else None
        result = original_call(self, *args, **kwargs)
        # The original appended exactly one bound symbol to the scope: DCE it in place, so the
        # effect is that of running DCE just before the append.
        if scope is not None and len(scope) == before + 1:
            scope[-1] = dce(scope[-1])
        return result

    with patch_everywhere(Symbol, "__call__", call_with_dce):
        yield


@contextlib.contextmanager
def symcall_fixed() -> Iterator[None]:
    """``symcall`` plus the splitter fix: input proxies and the symbol share one trace's names."""
    from thunder.dynamo import utils as dynamo_utils

    with contextlib.ExitStack() as stack:
        stack.enter_context(symcall())
        if not splitter_fix_native():
            stack.enter_context(
                patch_everywhere(dynamo_utils, "try_execute_thunder_symbol", try_execute_thunder_symbol_in_one_trace)
            )
        yield


PLACEMENTS: dict[str, Placement] = {
    p.name: p
    for p in (
        Placement(STOCK, stock, "Thunder as installed"),
        Placement(
            "rdnp", rdnp, "subsymbol DCE inside transform_common.remove_duplicate_number_proxies", rdnp_native, rdnp_missing
        ),
        Placement("symcall", symcall, "subsymbol DCE inside Symbol.__call__", symcall_native, symcall_missing),
        Placement(
            "symcall-fixed", symcall_fixed, "symcall plus the thunderfx splitter fix", symcall_fixed_native, symcall_fixed_missing
        ),
        Placement(IDENTITY, identity, "patches nothing: anything shown under it is the harness's false alarm"),
    )
}
# A campaign's placements when none is named: the DCE placements. ``identity`` is named on purpose,
# to calibrate (benchmarks/precision.py); it would only double stock's compile time by default.
DEFAULT_PLACEMENTS = tuple(name for name in PLACEMENTS if name != IDENTITY)


def resolve(name: str) -> Placement:
    """Look up a built-in placement, import ``package.module:attr``, or make the placement of
    another Thunder build, ``NAME=DIR`` or ``NAME=PYTHON`` (see ``fuzzdce.running.builds``).

    Raises UsageError naming the valid choices when the name is none of these.
    """
    if name in PLACEMENTS:
        return PLACEMENTS[name]
    if is_build_spec(name):
        return build_placement(name)
    if ":" not in name:
        choices = ", ".join(PLACEMENTS)
        raise UsageError(
            f"unknown placement {name!r}: choose one of {choices}, give package.module:attr, or a build NAME=DIR|PYTHON"
        )
    module_name, _, attr = name.partition(":")
    try:
        module = importlib.import_module(module_name)
    except Exception as e:  # an import error of any kind is the user's to fix
        raise UsageError(f"placement {name!r}: cannot import {module_name!r} ({type(e).__name__}: {e})") from None
    factory = module
    for part in attr.split("."):
        factory = getattr(factory, part, None)
        if factory is None:
            raise UsageError(f"placement {name!r}: module {module_name!r} has no attribute {attr!r}")
    if not callable(factory):
        raise UsageError(f"placement {name!r}: {attr!r} is not callable; it must return a context manager")
    return Placement(name, factory, (inspect.getdoc(factory) or "").split("\n")[0])
