"""Names unique and traces well-formed, in every trace Thunder produced, at every level.

Thunder's own ``thunder.dev_utils.check_trace`` does most of it (every argument defined before
use, a name bound to one proxy, the same at each level of subsymbols); this adds what it lets
through, at every level of subsymbols:
- a name defined by two bound symbols of the same level;
- a bound symbol whose output is named like one of its inputs while being a different proxy;
- a bound symbol with subsymbols whose output none of them produces and that is not one of its
  inputs passed through.
"""

from __future__ import annotations

from typing import NamedTuple

import thunder
import torch
from thunder.core.proxies import NumberProxy
from thunder.dev_utils.check_trace import check_trace

from fuzzdce.core.model import Oracle, Outcome, TraceKind, Violation
from fuzzdce.core.signatures import normalise


class Problem(NamedTuple):
    """One malformation: ``kind`` identifies it (no op or proxy names: the same malformation in
    another program is the same finding), ``detail`` says where it is."""

    kind: str
    detail: str


def _defined_twice(bsyms, where: str, *, same_number_allowed: bool = False) -> list[Problem]:
    """Names defined by two bound symbols of ``bsyms``.

    With ``same_number_allowed``, one number proxy defined again by another bound symbol is let
    through: under symbolic values each shape query re-defines the same ``i0``, and Thunder removes
    those duplicates only at top level (``remove_duplicate_number_proxies``).
    """
    problems, defined = [], {}
    for bsym in bsyms:
        for out in bsym.flat_proxy_outs:
            first = defined.get(out.name)
            if (
                same_number_allowed
                and isinstance(out, NumberProxy)
                and first is not None
                and any(o is out for o in first.flat_proxy_outs)
            ):
                continue
            if first is not None and first is not bsym:
                detail = f"name {out.name} defined twice {where} (by {defined[out.name].sym.name} and {bsym.sym.name})"
                problems.append(Problem(f"a name defined twice {where.split(' of ')[0]}", detail))
            defined.setdefault(out.name, bsym)
    return problems


def _same_name_as_input(bsym) -> list[Problem]:
    inputs = {p.name: p for p in bsym.flat_proxy_args}
    return [
        Problem(
            "an output named like a different input proxy",
            f"{bsym.sym.name} outputs {out.name}, the name of a different input proxy",
        )
        for out in bsym.flat_proxy_outs
        if out.name in inputs and inputs[out.name] is not out
    ]


def _not_produced(bsym) -> list[Problem]:
    if not bsym.subsymbols:
        return []
    available = {p.name for p in bsym.flat_proxy_args}
    for sub in bsym.subsymbols:
        available.update(o.name for o in sub.flat_proxy_outs)
    return [
        Problem(
            "an output none of the subsymbols produces",
            f"{bsym.sym.name} outputs {out.name}, which none of its subsymbols produces and it does not take",
        )
        for out in bsym.flat_proxy_outs
        if out.name not in available
    ]


def _nested_problems(bsym) -> list[Problem]:
    problems = _same_name_as_input(bsym) + _not_produced(bsym)
    problems += _defined_twice(bsym.subsymbols, f"in the subsymbols of {bsym.sym.name}", same_number_allowed=True)
    for sub in bsym.subsymbols:
        problems += _nested_problems(sub)
    return problems


def extra_problems(trace, *, same_number_allowed: bool = False) -> list[Problem]:
    problems = _defined_twice(trace.bound_symbols, "at top level", same_number_allowed=same_number_allowed)
    for bsym in trace.bound_symbols:
        problems += _nested_problems(bsym)
    return problems


def check_trace_as_thunder_does(trace) -> None:
    """``check_trace`` inside the cache-info context Thunder sets while it compiles: re-executing
    some symbols (``index_put``, ...) reads it, and outside it raises ``LookupError``, a problem of
    the harness's making, not Thunder's."""

    @thunder._with_cache_info_ctx
    def check():
        cache_info = thunder._get_cache_info()
        cache_info["default_dtype"] = torch.get_default_dtype()
        cache_info["default_device"] = torch.get_default_device()
        check_trace(trace)

    check()


def trace_problems(trace, *, same_number_allowed: bool = False) -> list[Problem]:
    """``same_number_allowed``: at top level too, as in subsymbols (a prologue under symbolic
    values unpacks each shape's number proxies again where it checks them, before the execution
    transform removes the duplicates)."""
    problems = []
    try:
        check_trace_as_thunder_does(trace)
    except NotImplementedError:
        pass  # its re-execution step meets an executor's fusion symbol, which has no meta function
    except Exception as e:  # check_trace asserts; anything else it raises is a malformed trace too
        first_line = (str(e).strip().splitlines() or [""])[0]
        # check_trace's messages name the proxy, then " in " the bound symbol: the kind is before that.
        kind = f"check_trace: {type(e).__name__}: {first_line.split(' in ')[0]}"
        problems.append(Problem(normalise(kind), f"check_trace: {type(e).__name__}: {first_line}"))
    return problems + extra_problems(trace, same_number_allowed=same_number_allowed)


def check(outcome: Outcome, reference: Outcome, stock: Outcome | None = None) -> list[Violation]:
    violations = []
    for label, trace in outcome.traces:
        for problem in trace_problems(trace, same_number_allowed=TraceKind.PROLOGUE.labels(label)):
            violations.append(Violation("names", outcome.path, f"{label}: {problem.detail}", "MalformedTrace", key=problem.kind))
    return violations


ORACLE = Oracle("names", check, "every trace is well-formed and defines each name once, at every level", reads_traces=True)
