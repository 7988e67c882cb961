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

import importlib
from typing import NamedTuple

import thunder
import torch
from thunder.core.proxies import NumberProxy

from fuzzdce.core.faults import malformation_fault
from fuzzdce.core.model import Oracle, Outcome, ScriptCheck, TraceKind, Violation
from fuzzdce.core.signatures import normalise
from fuzzdce.core.vocabulary import CallStage, TraceLabel


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


class NotChecked(Exception):
    """``check_trace`` could not run on this build or trace: the trace is not checked, which is no finding."""


def thunder_check_trace():
    """``thunder.dev_utils.check_trace.check_trace``, or None on a build without it."""
    try:
        return importlib.import_module("thunder.dev_utils.check_trace").check_trace
    except (ImportError, AttributeError):
        return None


def check_trace_as_thunder_does(trace) -> None:
    """``check_trace`` inside the cache-info context Thunder sets while it compiles: re-executing
    some symbols (``index_put``, ...) reads it, and outside it raises ``LookupError``, a problem of
    the harness's making, not Thunder's. On a build without ``check_trace``, or without the private
    functions that set the context (a ``LookupError`` then), raises ``NotChecked``."""
    check_trace = thunder_check_trace()
    if check_trace is None:
        raise NotChecked("this Thunder has no thunder.dev_utils.check_trace")
    with_context = getattr(thunder, "_with_cache_info_ctx", None)
    get_cache_info = getattr(thunder, "_get_cache_info", None)
    if with_context is None or get_cache_info is None:
        try:
            check_trace(trace)
        except LookupError as e:
            if type(e) is not LookupError:  # a KeyError (a LookupError too) is check_trace's own finding
                raise
            # A ContextVar read outside its context: the cache-info context this build gives no way to set.
            raise NotChecked(f"check_trace needs a cache-info context this Thunder cannot set: {e}") from e
        return

    @with_context
    def check():
        cache_info = get_cache_info()
        cache_info["default_dtype"] = torch.get_default_dtype()
        cache_info["default_device"] = torch.get_default_device()
        check_trace(trace)

    check()


def trace_problems(trace, *, same_number_allowed: bool = False, outcome: Outcome | None = None) -> list[Problem]:
    """``same_number_allowed``: at top level too, as in subsymbols (a prologue under symbolic
    values unpacks each shape's number proxies again where it checks them, before the execution
    transform removes the duplicates). ``outcome``: where a ``check_trace`` that could not run is
    counted (``Outcome.not_checked``)."""
    problems = []
    try:
        check_trace_as_thunder_does(trace)
    except NotChecked as e:
        if outcome is not None:
            outcome.could_not_check(ORACLE_NAME, "could not run check_trace", e)
    except NotImplementedError as e:
        # Its re-execution of each symbol (after its name checks) met an executor's fusion symbol,
        # which has no meta function: the symbols after it are not re-executed. Counted, and said
        # so: "could not run" read as if nothing of the trace had been checked.
        if outcome is not None:
            outcome.could_not_check(ORACLE_NAME, "check_trace stopped at a symbol it cannot re-execute (a fusion)", e)
    except Exception as e:  # check_trace asserts; anything else it raises is a malformed trace too
        first_line = (str(e).strip().splitlines() or [""])[0]
        # check_trace's messages name the proxy, then " in " the bound symbol: the kind is before that.
        kind = f"check_trace: {type(e).__name__}: {first_line.split(' in ')[0]}"
        problems.append(Problem(normalise(kind), f"check_trace: {type(e).__name__}: {first_line}"))
    return problems + extra_problems(trace, same_number_allowed=same_number_allowed)


ORACLE_NAME = "names"


# The kinds of trace a label names (``paths.record_jit_traces``), each made by other transforms.
TRACE_KINDS = (CallStage.FORWARD, CallStage.BACKWARD, TraceKind.PROLOGUE, TraceKind.EPILOGUE)


def trace_kind(label: TraceLabel) -> str:
    """Which kind of trace ``label`` names ("forward", "backward", "prologue", "epilogue"; "" if none)."""
    return label.kind if label.kind in TRACE_KINDS else ""


def check(outcome: Outcome, reference: Outcome, stock: Outcome | None = None) -> list[Violation]:
    return [
        malformed(outcome.path, label, problem)
        for label, trace in outcome.traces
        for problem in trace_problems(trace, same_number_allowed=trace_kind(label) == TraceKind.PROLOGUE, outcome=outcome)
    ]


def malformed(path: str, label: TraceLabel, problem: Problem) -> Violation:
    """One malformation of the trace ``label`` names, as a violation."""
    return Violation(
        ORACLE_NAME,
        path,
        f"{label}: {problem.detail}",
        "MalformedTrace",
        key=problem.kind,
        # The kind of trace as well as the problem: one wording in a backward and in a forward
        # trace comes from two transforms (var_mean's backward using a proxy it never defined and
        # a symbolic-values forward trace using an unknown number proxy read alike).
        fault=malformation_fault(ORACLE_NAME, problem.kind, trace_kind(label)),
    )


ORACLE = Oracle(
    ORACLE_NAME,
    check,
    "every trace is well-formed and defines each name once, at every level",
    "every trace defines each name once",
    reads_traces=True,
    script_check=ScriptCheck.NAMES,
)
