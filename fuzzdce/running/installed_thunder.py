"""What the installed Thunder already does, or lacks, of each built-in placement.

*Native*: a newer Thunder may already run the DCE a placement patches in (patching again would run
it twice), so the placement leaves Thunder as it is. *Missing*: an older or newer Thunder may lack
the function a placement patches, so the placement cannot run there. Each is read from the
installed Thunder itself (its functions, their signatures and source), never from its version.
"""

from __future__ import annotations

import functools
import importlib
import inspect


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
