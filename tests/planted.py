"""Planted faults, each a placement: oracles are proven by catching these and staying silent on stock.

Importable as ``planted:NAME`` when ``tests/`` is on the path, which also exercises user placements.
"""

from __future__ import annotations

import contextlib
from fuzzdce.placements import patch_everywhere


@contextlib.contextmanager
def colliding_names():
    """After every DCE, the last computation's output is renamed to one of its inputs' names."""
    from thunder.core import transform_common
    from thunder.core.trace import TraceCtx, tracectx

    original_dce = transform_common.dce

    def dce_then_collide(trace, *args, **kwargs):
        result = original_dce(trace, *args, **kwargs)
        for i in reversed(range(len(result.bound_symbols))):
            bsym = result.bound_symbols[i]
            if bsym.flat_proxy_args and len(bsym.flat_proxy_outs) == 1:
                victim = bsym.flat_proxy_args[0]
                with tracectx(TraceCtx()):
                    clash = bsym.flat_proxy_outs[0].replace_name(victim.name)
                result.bound_symbols[i] = bsym.from_bsym(output=clash)
                break
        return result

    with patch_everywhere(transform_common, "dce", dce_then_collide):
        yield


@contextlib.contextmanager
def add_computes_sub():
    """After every DCE, each top-level ``ltorch.add`` is rebound to ``ltorch.sub``: values change."""
    import thunder.torch as ltorch
    from thunder.core import transform_common

    original_dce = transform_common.dce

    def dce_then_subtract(trace, *args, **kwargs):
        result = original_dce(trace, *args, **kwargs)
        result.bound_symbols = [
            bsym.from_bsym(sym=ltorch.sub, subsymbols=()) if bsym.sym is ltorch.add else bsym
            for bsym in result.bound_symbols
        ]
        return result

    with patch_everywhere(transform_common, "dce", dce_then_subtract):
        yield


@contextlib.contextmanager
def failing_splitter():
    """thunderfx's splitter sees every symbol raise, so every node is split off."""
    from thunder.dynamo import utils as dynamo_utils

    original = dynamo_utils.try_execute_thunder_symbol

    def raising_symbol(*args, **kwargs):
        raise KeyError("planted")

    def try_execute(thunder_symbol, node, thunder_options):
        return original(raising_symbol, node, thunder_options)

    with patch_everywhere(dynamo_utils, "try_execute_thunder_symbol", try_execute):
        yield
