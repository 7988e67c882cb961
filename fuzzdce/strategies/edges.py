"""Values at each op's edges: the catalog's ``Edges`` data made into values an input is drawn among.

Hypothesis's ``floats`` draws its bounds and their neighbours for a float; this does it for an op.
A catalog entry says where its op is special (``spec.Edges``: kinks and bounds, saturation, ties);
once a program's steps are drawn, each tensor input learns the points of the ops that read it
(directly, or through ops that only move its values: reshape, transpose, getitem), and the program
strategy draws whether it takes them (``edge_modes``). The points are made exact per dtype: a point
rounded to the input's dtype, and the values one unit in the last place either side of it, so that
clamp's bound is met exactly in bfloat16 as in float64, and exp's overflow is met at float16's
``log(65504)`` as at float32's ``log(3.4e38)``.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Mapping, Sequence

import hypothesis.strategies as st
import torch

from fuzzdce.core.program import DTYPES, Domain, Input, Step, TensorInput
from fuzzdce.strategies.spec import Edges, OpSpec, Point

# What an input may be drawn as, by the draw ``edge_modes`` makes for it: first what everything
# shrinks to. Two in three inputs that feed an op with edges take them (a fair share: enough that the
# programs applying clamp to an input often meet a bound exactly, tests/test_edges.py), and
# the others keep the domain's values (a gradient at random points is as much a test as one at a kink).
EDGE_MODES = ("domain", "mixed", "only")


@functools.cache
def edge_modes(count: int) -> st.SearchStrategy[tuple[str, ...]]:
    """For each of ``count`` inputs, how its values meet its readers' edges: ``domain`` (not at all),
    ``mixed`` (half its elements among the points) or ``only`` (all of them: values tie). One
    fixed-range draw per input whatever the program's ops, so shrinking an op leaves the draws
    aligned; shrinks towards ``domain``."""
    return st.tuples(*(st.sampled_from(EDGE_MODES) for _ in range(count)))


def resolve(point: Point, dtype: str, kwargs: Mapping[str, object]) -> float | None:
    """A point's value for an operand of ``dtype`` in a step with parameters ``kwargs``: a number as
    it is, a parameter's value (None when the step has no such numeric parameter), a function of
    the dtype's ``finfo`` (None for an integer dtype: it has no overflow or smallest normal)."""
    if isinstance(point, str):
        value = kwargs.get(point)
        return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None
    if callable(point):
        dtype_ = DTYPES[dtype]
        return float(point(torch.finfo(dtype_))) if dtype_.is_floating_point else None
    return float(point)


@functools.lru_cache(maxsize=4096)
def exact_neighbours(value: float, dtype: str) -> tuple[float, ...]:
    """``value`` rounded to ``dtype`` and its neighbours one unit in the last place either side (for
    an integer dtype: the integer and the integers either side, when ``value`` is one)."""
    dtype_ = DTYPES[dtype]
    if not dtype_.is_floating_point:
        return (value - 1, value, value + 1) if value == int(value) and abs(value) < 2**31 - 1 else ()
    exact = torch.tensor(value, dtype=dtype_)
    if not bool(torch.isfinite(exact)):  # beyond the dtype's range: its largest value is the edge
        exact = torch.tensor(math.copysign(torch.finfo(dtype_).max, value), dtype=dtype_)
    up = torch.nextafter(exact, torch.tensor(math.inf, dtype=dtype_))
    down = torch.nextafter(exact, torch.tensor(-math.inf, dtype=dtype_))
    return tuple(float(v) for v in (down, exact, up) if bool(torch.isfinite(v)))


def edge_values(edges: Edges, kwargs: Mapping[str, object], dtype: str, domain: Domain) -> tuple[float, ...]:
    """The values an operand of ``dtype`` drawn in ``domain`` is drawn among for an op with ``edges``
    in a step with parameters ``kwargs``: each point exact in the dtype, twice (an element drawn
    among them is a point itself half the time), and its neighbours (not for ties: those want few
    values, repeated); those in the domain, sorted."""
    exact, near = set(), set()
    for point in edges.points:
        value = resolve(point, dtype, kwargs)
        if value is None:
            continue
        around = exact_neighbours(value, dtype)
        if len(around) == 3:
            exact.add(around[1])
            around = () if edges.ties else (around[0], around[2])
        near.update(around)
    exact = {v for v in exact if domain.holds(v)}
    near = {v for v in near if domain.holds(v)} - exact
    return tuple(sorted([*exact, *exact, *near]))


def readers(
    inputs: Sequence[Input], steps: Sequence[Step], catalog: Mapping[str, OpSpec]
) -> dict[int, list[tuple[Step, OpSpec]]]:
    """For each input, the steps with edges that read its values: directly, or through a step that
    only moves values (a ``shape`` family op: reshape, transpose, getitem; its result is the input's
    values, rearranged)."""
    origin = {i: i if spec.view_of is None else spec.view_of for i, spec in enumerate(inputs)}
    found: dict[int, list[tuple[Step, OpSpec]]] = {}
    first = len(inputs)
    for step in steps:
        spec = catalog.get(step.op)
        sources = {origin[i] for i in step.refs() if i in origin}
        if spec is not None and spec.edges is not None:
            for source in sources:
                found.setdefault(source, []).append((step, spec))
        refs = step.refs()
        if spec is not None and spec.family == "shape" and refs and refs[0] in origin:
            for j in range(first, first + step.n_out):
                origin[j] = origin[refs[0]]
        first += step.n_out
    return found


def with_edges(
    inputs: Sequence[Input], steps: Sequence[Step], catalog: Mapping[str, OpSpec], modes: Sequence[str]
) -> tuple[Input, ...]:
    """``inputs`` with the edges of the ops that read them, where ``modes`` (``edge_modes``) says so.

    A view input follows its base (its values are the base's); a bool input has no edges. An input
    read by an op with ties and drawn ``only`` among its points sees repeated values; ``mixed``
    keeps half the domain's values. An input whose values may tie where a reader's gradient is a
    choice (``Edges.subgradient``: drawn at its points, or from the ``ties`` domain) is drawn not
    requiring grad: torch and Thunder may rightly give such a gradient to different elements."""
    found = readers(inputs, steps, catalog)
    result = []
    for i, (spec, mode) in enumerate(zip(inputs, modes)):
        if not isinstance(spec, TensorInput) or spec.view_of is not None or spec.dtype == "bool":
            result.append(spec)
            continue
        unique = {(op.name, repr(step.kwargs)): (op, step) for step, op in found.get(i, ())}  # each once
        if mode != "domain" or spec.domain == Domain.TIES:
            if spec.requires_grad and any(op.edges.subgradient for op, _ in unique.values()):
                spec = dataclasses.replace(spec, requires_grad=False)
        if mode == "domain":
            result.append(spec)
            continue
        values: list[float] = []
        for op, step in unique.values():
            values.extend(edge_values(op.edges, dict(step.kwargs), spec.dtype, Domain(spec.domain)))
        if not values:
            result.append(spec)
            continue
        result.append(dataclasses.replace(spec, edges=tuple(sorted(values)), edges_only=mode == "only"))
    return (*result, *inputs[len(result) :])


def with_known_edges(catalog: Mapping[str, OpSpec], known: Mapping[str, Edges]) -> dict[str, OpSpec]:
    """``catalog`` with the points ``known`` gives each op name (``opinfo.OpInfoSource.known_edges``:
    what Thunder's OpInfos say of the op) added to its entry's edges, and an entry with those edges
    alone for each name the catalog has not (an OpInfo step's ``Step.op``), so that ``with_edges``
    reads both alike."""
    merged = dict(catalog)
    for name, edges in known.items():
        spec = merged.get(name)
        if spec is None:
            merged[name] = OpSpec(name, "opinfo", "", edges=edges)
        elif spec.edges is None:
            merged[name] = dataclasses.replace(spec, edges=edges)
        else:
            merged[name] = dataclasses.replace(spec, edges=spec.edges.union(edges))
    return merged
