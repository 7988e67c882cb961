"""The thunderfx splitter fix the ``symcall-fixed`` placement emulates: a node's input proxies and
the symbol it runs share one trace's names.

Provenance: ``try_execute_thunder_symbol_in_one_trace`` is a copy of Thunder 0.2.6's
``thunder.dynamo.utils.try_execute_thunder_symbol`` (Lightning Thunder, Apache-2.0) with that fix
merged (its docstring says how). A copy, not a patch of a part: the fix moves which trace the
proxies are made in, in the middle of the function. Where the installed Thunder already does this
(``installed_thunder.splitter_fix_native``), the placement leaves Thunder's own in place.
"""

from __future__ import annotations


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
