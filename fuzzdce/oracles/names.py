"""Names unique and traces well-formed, in every trace Thunder produced, at every level.

Thunder's own ``thunder.dev_utils.check_trace`` does most of it (every argument defined before
use, a name bound to one proxy, the same at each level of subsymbols); this adds what it lets
through: a top-level name defined by two bound symbols, and a bound symbol whose output is named
like one of its inputs while being a different proxy.
"""

from __future__ import annotations

from fuzzdce.execution import Outcome


def extra_problems(trace) -> list[str]:
    problems = []
    defined: dict[str, object] = {}
    for bsym in trace.bound_symbols:
        problems += _same_name_as_input(bsym)
        for out in bsym.flat_proxy_outs:
            if out.name in defined and defined[out.name] is not bsym:
                problems.append(f"name {out.name} defined twice at top level (by {bsym.sym.name})")
            defined.setdefault(out.name, bsym)
    return problems


def _same_name_as_input(bsym) -> list[str]:
    inputs = {p.name: p for p in bsym.flat_proxy_args}
    problems = [
        f"{bsym.sym.name} outputs {out.name}, the name of a different input proxy"
        for out in bsym.flat_proxy_outs
        if out.name in inputs and inputs[out.name] is not out
    ]
    for sub in bsym.subsymbols:
        problems += _same_name_as_input(sub)
    return problems


def trace_problems(trace) -> list[str]:
    from thunder.dev_utils.check_trace import check_trace

    problems = []
    try:
        check_trace(trace)
    except Exception as e:  # check_trace asserts; anything it raises is a malformed trace
        first_line = (str(e).strip().splitlines() or [""])[0]
        problems.append(f"check_trace: {type(e).__name__}: {first_line}")
    return problems + extra_problems(trace)


def check(outcome: Outcome, reference: Outcome, baseline: Outcome | None = None) -> list:
    from fuzzdce.oracles import Violation

    violations = []
    for label, trace in outcome.traces:
        for problem in trace_problems(trace):
            violations.append(Violation("names", outcome.path, f"{label}: {problem}", "MalformedTrace", key=problem))
    return violations
