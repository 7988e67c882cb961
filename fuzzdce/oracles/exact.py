"""Two Thunders that ran the same execution trace give the same bits.

Subsymbol DCE changes no top-level symbol, and on the CPU one execution trace (the last trace of
each kind, after every transform and fusion: what actually runs) computes the same bits from the
same inputs whichever Thunder made it. So where a placement's last traces are stock's up to a
consistent renaming of proxies (``same_execution``: top-level symbols only; a fusion whose
decomposition lost dead subsymbols still computes the same values), its outputs, gradients and
inputs after each call must equal stock's bit for bit: a difference eager's tolerance would accept
(one unit in the last place) is still a finding of its own. Where the last traces differ, nothing
is compared; ``evaluate`` records that as activity (``Outcome.execution_differs``), never a finding.

Left out: calls either side raised, guard calls (they compile again after the traces are
recorded), paths that run on a device (``Outcome.device``: kernels there need not be
deterministic), and calls whose eager twin ran a kernel torch says is not deterministic on the CPU
either (``model.has_deterministic_values``).
"""

from __future__ import annotations

import math
from typing import Any

import torch

from fuzzdce.core.faults import value_fault
from fuzzdce.core.model import Judges, Oracle, Outcome, Violation, has_deterministic_values
from fuzzdce.core.portable_trace import top_level_nodes
from fuzzdce.core.subsymbols import Renaming, align

NAME = "exact"

# What each call's record holds, as the finding names it.
COMPARED = (("outputs", "output"), ("grads", "gradient"), ("inputs_after", "input after the call"))

# The integer dtype of each floating dtype's width: a float compared as its bits (NaN payloads and
# the sign of zero included).
BITS = {2: torch.int16, 4: torch.int32, 8: torch.int64}


def last_traces(outcome: Outcome) -> dict[str, Any]:
    """The last trace of each kind (``jit forward``, ``thunderfx graph 0 fn 1 backward``, ...): the
    label without its trailing index -> the trace with the highest index."""
    last: dict[str, tuple[int, Any]] = {}
    for label, trace in outcome.traces:
        kind, index = label.family, label.index
        if kind not in last or index >= last[kind][0]:
            last[kind] = (index, trace)
    return {kind: trace for kind, (_, trace) in last.items()}


def same_top_level(stock_trace, trace) -> bool:
    """The two traces' top-level bound symbols are the same, in the same order, up to a
    consistent renaming of proxies."""
    stock_nodes, nodes = top_level_nodes(stock_trace), top_level_nodes(trace)
    if len(stock_nodes) != len(nodes):
        return False
    return all(i == j for i, j in align(stock_nodes, nodes, Renaming()))


def split_kinds(outcome: Outcome) -> list[str]:
    return [getattr(r.reason_type, "name", str(r.reason_type)) for r in outcome.split_reasons]


def execution_differences(outcome: Outcome, stock: Outcome) -> list[str]:
    """Why ``outcome`` did not run stock's execution traces (empty: it ran the same ones)."""
    if split_kinds(outcome) != split_kinds(stock):
        return ["thunderfx split the program otherwise"]
    mine, theirs = last_traces(outcome), last_traces(stock)
    if set(mine) != set(theirs):
        return [f"other traces: {', '.join(sorted(set(mine) ^ set(theirs)))}"]
    differs = []
    for kind, trace in mine.items():
        if not hasattr(trace, "bound_symbols") or not hasattr(theirs[kind], "bound_symbols"):
            differs.append(f"{kind}: printed only")  # a trace that crossed processes as text
            continue
        try:
            same = same_top_level(theirs[kind], trace)
        except Exception as e:  # a malformed trace (the names oracle's finding): nothing to compare
            differs.append(f"{kind}: could not be read ({type(e).__name__})")
            continue
        if not same:
            differs.append(f"{kind}: top-level symbols differ")
    return differs


def bit_difference(actual: Any, expected: Any) -> str:
    """Where ``actual`` is not ``expected`` bit for bit (nested alike), or "" where it is."""
    if isinstance(expected, (list, tuple)):
        if not isinstance(actual, (list, tuple)) or len(actual) != len(expected):
            return f"a sequence of {len(expected)} against {type(actual).__name__}"
        for i, (a, e) in enumerate(zip(actual, expected)):
            why = bit_difference(a, e)
            if why:
                return f"[{i}]: {why}"
        return ""
    if isinstance(expected, torch.Tensor):
        if not isinstance(actual, torch.Tensor) or (actual.dtype, actual.shape) != (expected.dtype, expected.shape):
            return f"{describe(actual)} against {describe(expected)}"
        a, e = actual.detach().cpu(), expected.detach().cpu()
        if a.is_floating_point() and a.element_size() in BITS:
            a, e = a.view(BITS[a.element_size()]), e.view(BITS[e.element_size()])
        differing = (a != e).nonzero()
        if not len(differing):
            return ""
        first = tuple(differing[0].tolist())
        return f"{len(differing)} of {a.numel()} elements differ, first at {first}: {actual[first].item()!r} against {expected[first].item()!r}"
    same = type(actual) is type(expected) and (
        actual == expected or (isinstance(actual, float) and math.isnan(actual) and math.isnan(expected))
    )
    return "" if same else f"{actual!r} against {expected!r}"


def describe(value: Any) -> str:
    if isinstance(value, torch.Tensor):
        return f"{value.dtype}{list(value.shape)}"
    return type(value).__name__


def check(outcome: Outcome, reference: Outcome, stock: Outcome | None = None) -> list[Violation]:
    if stock is None or reference.error is not None or outcome.failure is not None or stock.failure is not None:
        return []
    if outcome.device is not None or execution_differences(outcome, stock):
        return []
    violations = []
    for label, call in outcome.calls.items():
        theirs = stock.calls.get(label)
        if theirs is None or call.error is not None or theirs.error is not None:
            continue
        if not has_deterministic_values(reference.calls.get(label)):
            continue
        for attribute, what in COMPARED:
            mine, expected = getattr(call, attribute), getattr(theirs, attribute)
            if mine is None or expected is None:
                continue
            why = bit_difference(mine, expected)
            if why:
                message = f"{label} call {what}{why if why.startswith('[') else ': ' + why} ({stock.placement} ran the same execution trace)"
                key = f"{what} not bit for bit the reference's on the same execution trace"
                fault = value_fault(NAME, label, outcome.path)  # localised: where values first differ
                violations.append(Violation(NAME, outcome.path, message, "BitMismatch", key=key, fault=fault, call=label))
                break  # one finding per call: what differs first
    return violations


ORACLE = Oracle(
    NAME,
    check,
    "where the placement ran stock's execution trace (names aside), outputs, gradients and inputs "
    "after each call equal stock's bit for bit (CPU)",
    "the results are stock's to the bit",
    needs_stock=True,
    judges=Judges.VALUE,
)
