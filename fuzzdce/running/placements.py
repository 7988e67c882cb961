"""DCE placements: context managers that patch Thunder while active and restore it exactly.

A placement is a ``model.Placement``: a name, a zero-argument callable returning a context manager,
and its own test of whether the installed Thunder already does it natively. The built-in ones are
registered in ``PLACEMENTS``; any ``package.module:attr`` naming such a callable is a placement too,
which is how a user fuzzes a patch of their own.

Every patch goes through :func:`patch_everywhere`, which records each (owner, attribute, original)
it replaced inside a :func:`recording_patches` block, so that tests can prove the originals are back
once the context exits.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import inspect
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from thunder.core.symbol import BoundSymbol

from fuzzdce.core.errors import UsageError
from fuzzdce.core.model import STOCK, Placement
from fuzzdce.running.builds import build_placement, is_build_spec

# The calibration placement: patches nothing (see ``identity``).
IDENTITY = "identity"


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


def try_execute_thunder_symbol_in_one_trace(thunder_symbol, node, thunder_options):
    """Thunder 0.2.6's ``try_execute_thunder_symbol`` with the fix merged alongside symcall.

    The original makes the node's input proxies in one trace and runs the symbol in a fresh one, so
    names generated while running can equal input names. Here the trace that runs the symbol knows
    every input name before it generates any.
    """
    import thunder
    import torch
    from thunder.common import CompileData, CompileStats
    from thunder.core.compile_data import compile_data_and_stats
    from thunder.core.proxies import Proxy
    from thunder.core.pytree import tree_flatten
    from thunder.core.trace import TraceCtx
    from thunder.core.transforms import value_and_grad
    from thunder.dynamo import utils as dynamo_utils

    cd = CompileData(fn=lambda x: x, disable_preprocessing=True)
    cs = CompileStats()

    def requires_grad(arg_node):
        value = getattr(arg_node, "meta", {}).get("example_value") if isinstance(arg_node, torch.fx.Node) else None
        return any(isinstance(x, torch.Tensor) and x.requires_grad for x in tree_flatten(value)[0])

    flat_node_args, _ = tree_flatten((node.args, node.kwargs))
    with_grad = any(map(requires_grad, flat_node_args)) and not thunder_options.get("disable_torch_autograd", False)

    @compile_data_and_stats(cd, cs)
    @thunder._with_cache_info_ctx
    def run():
        cache_info = thunder._get_cache_info()
        cache_info["default_dtype"] = torch.get_default_dtype()
        cache_info["default_device"] = torch.get_default_device()
        try:
            proxy_args, proxy_kwargs = dynamo_utils.get_proxy_inputs_from_node(node)
        except Exception as e:
            return False, dynamo_utils.SplitReason(
                dynamo_utils.SplitReasonType.EXCEPTION_PROXY_THUNDER_OP,
                f"Failed while creating proxy for node with name: {node.name} and target: {node.target}, see exception field",
                exception=str(e),
            )
        trace = TraceCtx()
        for p in tree_flatten((proxy_args, proxy_kwargs))[0]:
            if isinstance(p, Proxy) and not trace.has_name(p.name):
                trace.add_name(p.name)
        function_to_run = value_and_grad(thunder_symbol) if with_grad else thunder_symbol
        with thunder.core.trace.tracectx(trace):
            try:
                function_to_run(*proxy_args, **proxy_kwargs)
            except Exception as e:
                return False, dynamo_utils.SplitReason(
                    dynamo_utils.SplitReasonType.EXCEPTION_META_THUNDER_OP,
                    f"Failed while running meta for node with name: {node.name} and target: {node.target}, see exception field",
                    exception=str(e),
                )
        return True, None

    return run()


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


# Reading a function's source and parsing it, each time a placement is entered, cost more than
# the rest of entering it: the answer is kept per function object (a patched one is another object).
@functools.lru_cache(maxsize=64)
def _calls(function, pattern: str) -> list[str]:
    """Names of the functions ``function``'s own code calls that contain ``pattern`` (not comments)."""
    import ast
    import textwrap

    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(function)))
    except (OSError, TypeError, SyntaxError):
        return []
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if pattern in name:
                names.append(name)
    return names


# --- does the installed Thunder already do it? (newer Thunder may; patching again would run DCE twice)


def rdnp_native() -> str | None:
    from thunder.core import transform_common

    if _calls(transform_common.remove_duplicate_number_proxies, "dce"):
        return "remove_duplicate_number_proxies of the installed Thunder already runs DCE on subsymbols"
    return None


def symcall_native() -> str | None:
    from thunder.core.symbol import Symbol

    if _calls(Symbol.__call__, "dce"):
        return "Symbol.__call__ of the installed Thunder already runs DCE on subsymbols"
    return None


def splitter_fix_native() -> str | None:
    from thunder.dynamo import utils as dynamo_utils

    return _splitter_fix_native(dynamo_utils.try_execute_thunder_symbol)


@functools.lru_cache(maxsize=16)
def _splitter_fix_native(try_execute_thunder_symbol) -> str | None:
    """The splitter makes the node's input proxies in the trace that runs the symbol: inside that
    trace's context (a ``tracectx(`` before the proxies), or handing the proxies the very trace it
    then enters (``get_proxy_inputs_from_node(node, T)`` and ``tracectx(T)``: Thunder since bc399d4a3)."""
    import ast
    import textwrap

    body = inspect.getsource(try_execute_thunder_symbol)
    proxies_at = body.find("get_proxy_inputs_from_node(")
    trace_at = body.find("tracectx(")
    if 0 <= trace_at < proxies_at:
        return "try_execute_thunder_symbol of the installed Thunder already makes proxies in the trace it runs"
    handed, entered = set(), set()
    for node in ast.walk(ast.parse(textwrap.dedent(body))):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            names = {a.id for a in node.args if isinstance(a, ast.Name)}
            if name == "get_proxy_inputs_from_node":
                handed |= {a.id for a in node.args[1:] if isinstance(a, ast.Name)}
                handed |= {k.value.id for k in node.keywords if isinstance(k.value, ast.Name)}
            elif name == "tracectx":
                entered |= names
    if handed & entered:
        return (
            "try_execute_thunder_symbol of the installed Thunder already makes proxies in the trace it runs "
            f"(get_proxy_inputs_from_node(node, {sorted(handed & entered)[0]}) and tracectx of the same trace)"
        )
    return None


def symcall_fixed_native() -> str | None:
    symcall, fix = symcall_native(), splitter_fix_native()
    return f"{symcall}; {fix}" if symcall and fix else None


# --- can the installed Thunder take the patch at all? (an older or newer Thunder may lack its target)


def _lacks(module_name: str, *attributes: str) -> str | None:
    """``module_name.attr[.attr...]`` when the installed Thunder lacks it, else None."""
    try:
        owner = importlib.import_module(module_name)
    except Exception as e:
        return f"{module_name} does not import ({type(e).__name__}: {e})"
    for attribute in attributes:
        owner = getattr(owner, attribute, None)
        if owner is None:
            return f"the installed Thunder has no {module_name}.{'.'.join(attributes)}"
    return None


def rdnp_missing() -> str | None:
    return _lacks("thunder.core.transform_common", "remove_duplicate_number_proxies") or _lacks(
        "thunder.core.transform_common", "dce"
    )


def symcall_missing() -> str | None:
    return _lacks("thunder.core.symbol", "Symbol", "__call__") or _lacks("thunder.core.trace", "get_tracectx")


def symcall_fixed_missing() -> str | None:
    missing = symcall_missing() or _lacks("thunder.dynamo.utils", "try_execute_thunder_symbol")
    if missing or splitter_fix_native():
        return missing
    # The emulated fix calls get_proxy_inputs_from_node(node) as Thunder 0.2.6 declares it.
    from thunder.dynamo import utils as dynamo_utils

    parameters = list(inspect.signature(dynamo_utils.get_proxy_inputs_from_node).parameters.values())
    required = [
        p for p in parameters if p.default is inspect.Parameter.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
    ]
    if len(required) != 1:
        return f"the emulated splitter fix calls get_proxy_inputs_from_node(node); this Thunder's takes {', '.join(p.name for p in parameters)}"
    return None


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
