"""Hypothesis strategies for straight-line torch programs.

Shrinking is the design constraint. Every choice that refers to something whose count can change
while shrinking (live values, candidates) is drawn from a fixed range and taken modulo the count,
so deleting an op or an input leaves the other choices meaningful; the length of the program is
a "continue?" draw before each op, which Hypothesis deletes cheaply.

Validity by construction: each drawn step is run on small CPU tensors before it is added (eager is
the rule a program must meet; meta kernels accept more); a step eager rejects is dropped, not the
program, so rejections cost neither examples nor shrinking.
"""

from __future__ import annotations

import bisect
import dataclasses
import functools
from collections.abc import Mapping, Sequence
from typing import TypeVar

import hypothesis.extra.numpy as hnp
import hypothesis.strategies as st
import torch
from hypothesis.errors import InvalidArgument

from fuzzdce.core.program import (
    DTYPES,
    Domain,
    Input,
    NumberInput,
    Program,
    Ref,
    Step,
    StringInput,
    TensorInput,
    input_strides,
)
from fuzzdce.strategies.catalog import CATALOG
from fuzzdce.strategies.edges import edge_modes, with_edges, with_known_edges
from fuzzdce.strategies.opinfo import REJECTED_NOTE, Entry, OpInfoSample, OpInfoSource, made, source
from fuzzdce.strategies.spec import SAME, Meta, OpSpec, choose

T = TypeVar("T")


@dataclasses.dataclass(frozen=True)
class Weights:
    """Relative weights that steer generation (``steering.weights`` derives them from what a campaign
    drew so far): per catalog entry, input dtype and value domain (missing: 1), and how rarely a
    program stops growing (one "stop" in ``stop_in`` "continue?" draws). Fixed for one Hypothesis
    run, so that replaying and shrinking draw the same programs."""

    ops: Mapping[str, int] = dataclasses.field(default_factory=dict)
    dtypes: Mapping[str, int] = dataclasses.field(default_factory=dict)
    domains: Mapping[str, int] = dataclasses.field(default_factory=dict)
    stop_in: int = 4
    # Per OpInfo entry (``Entry.name``), in place of the source's own weights; None: the source's.
    opinfos: Mapping[str, int] | None = None


def weighted(options: Sequence[T], weights: Mapping[str, int], key=str) -> st.SearchStrategy[T]:
    """One of ``options``, heavier ones (``weights[key(option)]``, default 1) likelier.

    One fixed-range draw, folded into the cumulative weights of the options sorted heaviest first:
    Hypothesis draws small integers far more often than uniformly (and shrinks towards 0), so the
    order matters as much as the weights.
    """
    ordered = sorted(options, key=lambda option: -max(int(weights.get(key(option), 1)), 1))
    cumulative, total = [], 0
    for option in ordered:
        total += max(int(weights.get(key(option), 1)), 1)
        cumulative.append(total)
    return st.integers(0, total - 1).map(lambda k: ordered[bisect.bisect_right(cumulative, k)])


# Large enough that "index modulo count" is close to uniform for any count we create.
INDEX_RANGE = 255
# Input dtypes, first the one everything shrinks to; the low-precision ones come last.
INPUT_DTYPES = ("float32", "float64", "int64", "bool", "int32", "float16", "bfloat16")
# Input value domains in ``Domain``'s order: the first is the one everything shrinks to.
INPUT_DOMAINS = tuple(Domain)
# The share of OpInfo steps drawn in a floating dtype where the OpInfo has others too (``opinfo_dtypes``).
GRAD_DTYPE_SHARE = 0.75
MAX_TUPLE = 6  # ops returning more values than this (unbind of a long dim) are not added
# A program holding OpInfo steps holds 1 to this many (shrinking to 1): each is a Thunder symbol (or
# an automatically registered torch op) with its own grad rule, so a compile tests several.
MAX_OPINFO_STEPS = 4


def index_choice() -> st.SearchStrategy[int]:
    """An index to be taken modulo a count not known when drawing (shrinks towards 0)."""
    return st.integers(0, INDEX_RANGE)


# The draws below are made several times per program: each strategy is made once (``functools.cache``).
# Hypothesis validates a strategy object on its first draw, through every strategy it wraps; made
# anew per draw, that validation was about a third of a program's drawing time. The values drawn
# are the same either way.


@functools.cache
def keep_going(p_stop_in_4: int = 1) -> st.SearchStrategy[bool]:
    """The "continue?" draw before each optional element; shrinks to False (stop)."""
    return st.integers(0, 3).map(lambda k: k >= p_stop_in_4)


@functools.cache
def stops_one_in(stop_in: int) -> st.SearchStrategy[bool]:
    """The "continue?" draw of a program that stops one time in ``stop_in``; shrinks to False (stop)."""
    return st.integers(0, stop_in - 1).map(lambda k: k >= 1)


@functools.cache
def rarely(k: int = 4) -> st.SearchStrategy[bool]:
    """True one time in ``k``; shrinks to False."""
    return st.integers(0, k - 1).map(lambda i: i == k - 1)


@st.composite
def tensor_inputs(
    draw,
    *,
    max_inputs: int = 3,
    dtypes: tuple[str, ...] = INPUT_DTYPES,
    max_side: int = 4,
    max_dims: int = 4,
    weights: Weights | None = None,
    strings: tuple[tuple[str, ...], ...] = (),
):
    """1..max_inputs input tensor specs with mutually broadcastable shapes (0-4 dims, sides 0-4),
    dtypes, value domains, layouts (transposed or strided views) and whether a grad call makes
    them require grad drawn per input; sometimes a
    Python number, and a string from one of ``strings`` (the catalog's string choices)."""
    dtype_choice = sampled(tuple(dtypes)) if weights is None else weighted(dtypes, weights.dtypes)
    domain_choice = sampled(INPUT_DOMAINS) if weights is None else weighted(INPUT_DOMAINS, weights.domains)
    inputs = draw(independent_inputs(max_inputs, dtype_choice, domain_choice, max_side, max_dims))
    # One program in four gets one more input, a view of the first (inputs aliasing one another).
    if draw(rarely()):
        inputs = (*inputs, dataclasses.replace(inputs[0], view_of=0))
    # One in four gets a Python number input too, for the ops that take a scalar (and Thunder's
    # prologue checks, by type and value).
    if draw(rarely()):
        inputs = (*inputs, draw(number_inputs()))
    # One in eight gets a string, for the few ops taking one (and the prologue's check of its value).
    if strings and draw(rarely(8)):
        inputs = (*inputs, draw(string_inputs(strings)))
    return inputs


# The Python number inputs, by type, first the one everything shrinks to: small, so that an int
# is a valid size or count (``torch.zeros(n)``), and floats exact in every floating dtype.
NUMBER_VALUES = {
    "int": st.integers(1, 4),
    "float": st.sampled_from([1.5, 0.5, -2.0, 2.25]),
    "bool": st.booleans(),
}


@functools.cache
def number_inputs() -> st.SearchStrategy[NumberInput]:
    """One Python number input: its type drawn first (shrinks towards int), then its value."""
    return st.sampled_from(tuple(NUMBER_VALUES)).flatmap(NUMBER_VALUES.get).map(NumberInput)


def string_choices(catalog: tuple[OpSpec, ...]) -> tuple[tuple[str, ...], ...]:
    """The sets of strings the catalog's string operands accept, in catalog order, each once."""
    found = (operand.values for spec in catalog for operand in spec.operands if operand.values)
    return tuple(dict.fromkeys(found))


def string_inputs(choices: tuple[tuple[str, ...], ...]) -> st.SearchStrategy[StringInput]:
    """One string input: a set of choices (shrinks towards the first), then a value among them."""
    return st.sampled_from(choices).flatmap(lambda group: st.sampled_from(group).map(lambda v: StringInput(v, group)))


@st.composite
def independent_inputs(draw, max_inputs, dtype_choice, domain_choice, max_side, max_dims):
    n = draw(st.integers(1, max_inputs))
    min_side = 0 if draw(rarely()) else 1  # size-0 dims in one program in four
    shapes = draw(broadcastable_shapes(n, max_dims, min_side, max_side)).input_shapes
    first_dtype = draw(dtype_choice)
    # Half the later inputs share the first's dtype: matmul, linear, conv need equal dtypes.
    return tuple(
        TensorInput(
            tuple(shape),
            dtype := first_dtype if k == 0 or not draw(rarely(2)) else draw(dtype_choice),
            transposed=len(shape) > 1 and draw(rarely()),
            domain=integral_domain(dtype, draw(domain_choice)),
            strided=len(shape) > 0 and draw(rarely()),
            # One input in four does not require grad on a grad call (drawn for every dtype, so
            # that shrinking a dtype leaves the later draws in place); shrinks towards requiring it.
            requires_grad=not draw(rarely()),
        )
        for k, shape in enumerate(shapes)
    )


@functools.cache
def sampled(options: tuple) -> st.SearchStrategy:
    return st.sampled_from(options)


@functools.cache
def broadcastable_shapes(n: int, max_dims: int, min_side: int, max_side: int) -> st.SearchStrategy:
    return hnp.mutually_broadcastable_shapes(num_shapes=n, min_dims=0, max_dims=max_dims, min_side=min_side, max_side=max_side)


def integral_domain(dtype: str, domain: str) -> Domain:
    """The domain an input of ``dtype`` drawn in ``domain`` is: booleans are plain ``real`` values,
    integers what ``Domain.on_integers`` says."""
    if dtype == "bool":
        return Domain.REAL
    if dtype.startswith("int"):
        return Domain(domain).on_integers
    return Domain(domain)


def meta_of(value, domain: Domain = Domain.REAL, writable: bool = False) -> Meta | None:
    """The Meta of a step's result: a tensor of a known dtype or a Python int; None otherwise."""
    if isinstance(value, torch.Tensor):
        dtype = next((k for k, v in DTYPES.items() if v == value.dtype), None)
        strides = None if value.is_contiguous() else tuple(value.stride())
        return None if dtype is None else Meta(tuple(value.shape), dtype, domain, writable, strides=strides)
    if isinstance(value, int) and not isinstance(value, bool):
        return Meta((), "pyint", Domain.POSITIVE if value > 0 else Domain.REAL, value=value)
    return None


def _materialize(meta: Meta, device: str):
    """A stand-in for a live value with its shape, dtype and layout: ones (inside every domain but
    "unit"'s edge) on CPU, no data on the meta device; a Python value is itself."""
    if meta.is_python:
        return meta.value
    dtype = DTYPES[meta.dtype]
    if meta.strides is None:
        return torch.ones(meta.shape, dtype=dtype, device=device)
    # A view of a buffer just large enough, as eager's value is a view of its base.
    extent = 1 + sum((n - 1) * s for n, s in zip(meta.shape, meta.strides)) if meta.numel else 0
    return torch.ones(extent, dtype=dtype, device=device).as_strided(meta.shape, meta.strides)


def input_metas(inputs: tuple[Input, ...]) -> list[Meta]:
    """The Metas of a program's inputs, layouts included. Inputs aliasing one another (a view and
    its base) are writable: in-place ops write inputs only where a write shows through an alias."""
    aliased = {i for i, spec in enumerate(inputs) if spec.view_of is not None}
    aliased |= {spec.view_of for spec in inputs if spec.view_of is not None}
    return [dataclasses.replace(input_meta(spec), writable=i in aliased) for i, spec in enumerate(inputs)]


def input_meta(spec: Input) -> Meta:
    """The Meta of a program input, its layout included."""
    if isinstance(spec, NumberInput):
        return Meta((), spec.dtype, spec.domain, value=spec.value)
    if isinstance(spec, StringInput):
        return Meta((), spec.dtype, spec.domain, value=spec.value, choices=spec.choices)
    return Meta(spec.shape, spec.dtype, spec.domain, strides=input_strides(spec))


def stand_ins(step: Step, metas: list[Meta | None], device: str, given: Mapping[int, object] | None = None) -> dict:
    """The values ``step`` reads, by name (``v3``): ``given``'s where it has them, else stand-ins."""
    given = given or {}
    return {f"v{i}": given[i] if i in given else _materialize(metas[i], device) for i in set(step.refs())}


def run_step(step: Step, metas: list[Meta | None], device: str, given: Mapping[int, object] | None = None) -> tuple:
    """Execute ``step``'s line on stand-ins for the live values (``given``'s values where it has
    them); its results as a tuple."""
    env: dict = {"torch": torch, **stand_ins(step, metas, device, given)}
    first = len(metas)
    exec(step.line(first), env)  # noqa: S102 - our own generated source
    return tuple(env[f"v{j}"] for j in range(first, first + step.n_out))


def infer(step: Step, metas: list[Meta | None], given: Mapping[int, object] | None = None) -> tuple[Step, tuple] | None:
    """``step`` with its tuple arity filled in and its results, or None when torch rejects it.

    Eager decides, on small CPU stand-ins: meta kernels accept more than eager does (``addmm``
    broadcasts an input of any rank; ``max(x, dim)`` reduces a size-0 dim), return other shapes
    (``linalg.vector_norm`` over a dim of size 1 keeps it) and do not check literal index tensors
    against bounds. A step that does not run in eager on these tensors is dropped.
    """
    probe = dataclasses.replace(step, n_out=1, unpack=False)
    try:
        (result,) = run_step(probe, metas, "cpu", given)
        if isinstance(result, (tuple, list)):  # tuples, named tuples, torch.Size, split's lists
            if not 1 <= len(result) <= MAX_TUPLE:
                return None
            full = dataclasses.replace(step, n_out=len(result), unpack=True)
            return full, tuple(run_step(full, metas, "cpu", given))
        return step, (result,)
    except Exception:  # torch rejects the step: it is dropped
        return None


def result_metas(spec: OpSpec, operands: list[Meta], results: tuple) -> list[Meta | None]:
    """Metas of a step's results: domain from the spec's ``yields``, writable unless a view."""
    domain = operands[0].domain if spec.yields == SAME else spec.yields
    if any(o.domain == Domain.NONFINITE for o in operands):  # NaN and inf propagate
        domain = Domain.NONFINITE
    writes = any(o.written for o in spec.operands)
    fresh = not spec.view and not writes  # an in-place result aliases its target: not fresh
    return [
        meta_of(r, domain if not isinstance(r, torch.Tensor) or r.is_floating_point() else Domain.REAL, fresh) for r in results
    ]


@st.composite
def steps_for(draw, spec: OpSpec, metas: list[Meta | None], first: int | None = None):
    """Draw one application of ``spec`` to live values, or None if no live value fits it. With
    ``first``, its first operand is that value (a model block's step swapped or wrapped, where the
    value is the block's own: ``strategies.model_blocks``), or None if the value does not fit."""
    first_rule = spec.operands[0]
    firsts = [i for i, m in enumerate(metas) if m is not None and first_rule.accepts(spec.dtypes, m, m)]
    if first is not None:
        firsts = [first] if first in firsts else []
    if not firsts:
        return None
    # Count back from the newest value, so shrinking the index makes ops use the latest result.
    first = firsts[-1 - draw(index_choice()) % len(firsts)]
    chosen = [first]
    for rule in spec.operands[1:]:
        fits = [i for i, m in enumerate(metas) if m is not None and rule.accepts(spec.dtypes, metas[first], m)]
        if not fits:
            return None
        chosen.append(fits[-1 - draw(index_choice()) % len(fits)])
    try:
        params = draw(spec.params(*(metas[i] for i in chosen)))
    except InvalidArgument:
        # A parameter rule with no valid value for these operands (say, an index into a size-0
        # dim): the step is dropped like any other torch would reject.
        return None
    return Step(spec.name, spec.template, tuple(Ref(i) for i in chosen), tuple(sorted(params.items())))


_NAMES: dict[int, tuple[tuple[OpSpec, ...], dict[str, OpSpec]]] = {}


def names_of(catalog: tuple[OpSpec, ...]) -> dict[str, OpSpec]:
    """``catalog``'s entries by name (made once per catalog)."""
    known = _NAMES.get(id(catalog))
    if known is None or known[0] is not catalog:
        known = _NAMES[id(catalog)] = (catalog, {spec.name: spec for spec in catalog})
    return known[1]


_EDGE_CATALOGS: dict[tuple[int, int], tuple[tuple[OpSpec, ...], OpInfoSource, dict[str, OpSpec]]] = {}


def edge_catalog(catalog: tuple[OpSpec, ...], opinfos: OpInfoSource | None) -> dict[str, OpSpec]:
    """The entries whose edges a program's inputs meet, by name: ``catalog``'s, and where the OpInfos
    are loaded, with what they know of each op (``OpInfoSource.known_edges``: domain ends, singular
    points, an OpInfo step's ties) joined in; made once per catalog and source. Without OpInfos the
    catalog's alone: nothing is imported for them."""
    if opinfos is None:
        return names_of(catalog)
    known = _EDGE_CATALOGS.get((id(catalog), id(opinfos)))
    if known is None or known[0] is not catalog or known[1] is not opinfos:
        known = (catalog, opinfos, with_known_edges(names_of(catalog), opinfos.known_edges()))
        _EDGE_CATALOGS[(id(catalog), id(opinfos))] = known
    return known[2]


def by_family(catalog: tuple[OpSpec, ...]) -> dict[str, tuple[OpSpec, ...]]:
    families: dict[str, list[OpSpec]] = {}
    for spec in catalog:
        families.setdefault(spec.family, []).append(spec)
    return {k: tuple(v) for k, v in families.items()}


def op_choice(catalog: tuple[OpSpec, ...]) -> st.SearchStrategy[OpSpec]:
    """A family, then an op in it: families are equally likely whatever their size.

    Both draws have fixed bounds (the op index is folded into its family), so changing the
    family while shrinking never misaligns the draws that follow.
    """
    known = _OP_CHOICES.get(id(catalog))
    if known is None or known[0] is not catalog:
        families = list(by_family(catalog).values())
        choice = st.tuples(st.integers(0, len(families) - 1), index_choice()).map(
            lambda fk: families[fk[0]][fk[1] % len(families[fk[0]])]
        )
        known = _OP_CHOICES[id(catalog)] = (catalog, choice)
    return known[1]


_OP_CHOICES: dict[int, tuple[tuple[OpSpec, ...], st.SearchStrategy[OpSpec]]] = {}


# --- OpInfo steps (``strategies.opinfo``) -------------------------------------------------------------


@functools.cache
def chance(rate: float) -> st.SearchStrategy[bool]:
    """True in a share ``rate`` of draws (in hundredths); shrinks to False."""
    percent = round(100 * min(max(rate, 0.0), 1.0))
    return st.integers(0, 99).map(lambda k: k >= 100 - percent)


@dataclasses.dataclass(frozen=True)
class OpInfoPlan:
    """An OpInfo step a program holds: its entry, its sample (None: none at the drawn dtype and kind
    that eager takes, ``why``), and the program inputs made for the sample's tensors (from
    ``first``): their values the sample's or its domain's, each drawn to require grad or not."""

    entry: Entry
    sample: OpInfoSample | None
    leaves: tuple[TensorInput, ...] = ()
    first: int = 0
    why: str = ""

    def given(self) -> dict[int, torch.Tensor]:
        """Its inputs' tensors as the program makes them, by value index: what its step is checked on."""
        return {self.first + k: made(spec) for k, spec in enumerate(self.leaves)}


def opinfo_dtypes(dtypes: Sequence[str]) -> st.SearchStrategy[str]:
    """One of an OpInfo's ``dtypes``: a floating one in ``GRAD_DTYPE_SHARE`` of draws where it has
    both kinds, shrinking to its first (``INPUT_DTYPES``' order). Only a floating tensor requires
    grad, and a grad rule runs only where one does: drawn evenly, an op supporting every dtype
    fuzzdce draws had 3 samples in 7 that could reach no grad rule. Integer and boolean samples
    stay: they test the forward."""
    floating = [d for d in dtypes if DTYPES[d].is_floating_point]
    if not floating or len(floating) == len(dtypes):
        return choose(dtypes)
    others = [d for d in dtypes if d not in floating]
    return chance(1 - GRAD_DTYPE_SHARE).flatmap(lambda other: choose(others if other else floating))


@st.composite
def opinfo_plans(draw, opinfos: OpInfoSource, first: int, weights: Mapping[str, int] | None = None):
    """An OpInfo (by ``weights``, else the source's: one calling an op no catalog entry calls
    ``BEYOND_CATALOG`` times likelier), a dtype it supports, a kind of inputs it has, one of those
    samples, and per tensor of it whether it requires grad and, where its values are drawn, its layout."""
    entry = draw(weighted(opinfos.entries, opinfos.weights if weights is None else weights, key=lambda e: e.name))
    dtype = draw(opinfo_dtypes(entry.dtypes))
    kind = draw(choose(entry.kinds))
    samples = opinfos.samples(entry, dtype, kind)
    pick = draw(index_choice())
    if isinstance(samples, str):
        return OpInfoPlan(entry, None, why=samples)
    sample = samples[pick % len(samples)]
    leaves = []
    for spec, exact in zip(sample.leaves, sample.exact):
        layout = {}
        if not exact:  # kept values are written in order: contiguous
            layout = dict(transposed=len(spec.shape) > 1 and draw(rarely()), strided=len(spec.shape) > 0 and draw(rarely()))
        # Drawn for every tensor (shrinking keeps the draws aligned); one the OpInfo's op does not
        # differentiate (batch_norm's running statistics) never requires grad.
        requires_grad = not draw(rarely()) and spec.requires_grad
        leaves.append(dataclasses.replace(spec, requires_grad=requires_grad, **layout))
    return OpInfoPlan(entry, sample, tuple(leaves), first)


@st.composite
def opinfo_step(draw, plan: OpInfoPlan, metas: list[Meta | None]):
    """The plan's call, each tensor argument its own input or (where its values are drawn) any live
    value of the same shape and dtype whose domain lies in its own: the ops before it chained in."""
    sample = plan.sample
    args = []
    for k in sample.order:
        own = plan.first + k
        fits = [own]
        if not sample.exact[k]:
            leaf = plan.leaves[k]
            fits = [
                i
                for i, m in enumerate(metas)
                if m is not None
                and not m.is_python
                and m.shape == leaf.shape
                and m.dtype == leaf.dtype
                and leaf.domain in Domain(m.domain).satisfies
            ]
        args.append(Ref(fits[-1 - draw(index_choice()) % len(fits)]))
    return Step(plan.entry.op, sample.template, tuple(args))


def _shares_storage(a: object, b: object) -> bool:
    if not isinstance(a, torch.Tensor) or not isinstance(b, torch.Tensor) or not a.numel() or not b.numel():
        return False
    return a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()


def infer_opinfo(step: Step, metas: list[Meta | None], given: Mapping[int, object]):
    """An OpInfo step checked on its own inputs' values and stand-ins for chained ones: ``(step`` with
    its tuple arity, its results' metas, the operands a result views ``)``, or None when eager rejects it.
    Results are ``real`` (``nonfinite`` from a nonfinite operand) and writable unless they view an operand."""
    probe = dataclasses.replace(step, n_out=1, unpack=False)
    try:
        env = {"torch": torch, **stand_ins(probe, metas, "cpu", given)}
        exec(probe.line(len(metas)), env)  # noqa: S102 - our own generated source
    except Exception:  # eager rejects it here: the step is dropped
        return None
    result = env[f"v{len(metas)}"]
    results = tuple(result) if isinstance(result, (tuple, list)) else (result,)
    if isinstance(result, (tuple, list)):
        if not 1 <= len(results) <= MAX_TUPLE:
            return None
        step = dataclasses.replace(step, n_out=len(results), unpack=True)
    operands = {i: env[f"v{i}"] for i in set(step.refs())}
    viewed = {i for i, value in operands.items() if any(_shares_storage(r, value) for r in results)}
    nonfinite = any(metas[i].domain == Domain.NONFINITE for i in operands)
    new = []
    for r in results:
        domain = Domain.NONFINITE if nonfinite and isinstance(r, torch.Tensor) and r.is_floating_point() else Domain.REAL
        fresh = not any(_shares_storage(r, value) for value in operands.values())
        new.append(meta_of(r, domain, fresh))
    return step, new, viewed


@st.composite
def op_block(
    draw,
    choose_op: st.SearchStrategy[OpSpec],
    metas: list[Meta | None],
    ask_to_continue: bool,
    stop_in: int = 4,
    pending: OpInfoPlan | None = None,
    last: bool = False,
):
    """One iteration of the op loop: the "continue?" draw, the op, its operands and parameters.

    Drawn as one strategy so that all of an op's choices form one span: the shrinker deletes an op
    from the middle of a program by deleting its span, and the ops after it slide into place.
    Every block makes the same draws (the first block's "continue?" is drawn and ignored), so
    deleting any block, the first included, leaves the others aligned.
    With an OpInfo step ``pending``, the block draws whether it is that step (one in three, shrinking
    to yes; always in the ``last`` block): then its operands. Returns None to stop, else
    ``(spec, step or None)``, ``spec`` the pending plan for an OpInfo step.
    """
    if not draw(keep_going() if stop_in == 4 else stops_one_in(stop_in)) and ask_to_continue:
        return None
    if pending is not None and (draw(st.integers(0, 2)) == 0 or last):
        return pending, draw(opinfo_step(pending, metas))
    spec = draw(choose_op)
    return spec, draw(steps_for(spec, metas))


@st.composite
def programs(
    draw,
    *,
    catalog: tuple[OpSpec, ...] = CATALOG,
    max_ops: int = 8,
    max_outputs: int = 3,
    weights: Weights | None = None,
    opinfo_rate: float = 0.0,
    opinfos: OpInfoSource | None = None,
    **input_options,
):
    """Straight-line torch programs over 1-3 inputs, with dead code and one or more outputs.

    Steps that torch rejects are dropped rather than rejected, so every drawn program is valid in
    eager (shape- and dtype-wise) and no example is discarded. ``weights`` steers the draw (ops
    then drawn by entry, not by family first). With ``opinfo_rate``, that share of programs holds
    1 to ``MAX_OPINFO_STEPS`` steps drawn from OpInfos (``opinfos``, default this process's
    ``opinfo.source``: Thunder's and torch's; none where neither imports): each sample's tensors are
    inputs of their own, and its call is placed among the catalog's steps (``op_block``). Where
    ``opinfos`` is loaded (or given, at any rate), what its OpInfos know of each op's edges joins the
    catalog's (``edge_catalog``).
    """
    inputs = draw(tensor_inputs(weights=weights, strings=string_choices(catalog), **input_options))
    dropped: list[str] = []
    plans: list[OpInfoPlan] = []  # the OpInfo steps still to place, in order
    if opinfo_rate > 0:
        opinfos = opinfos if opinfos is not None else source(INPUT_DTYPES)
        if opinfos is not None and opinfos.entries and draw(chance(opinfo_rate)):
            for _ in range(draw(st.integers(1, MAX_OPINFO_STEPS))):
                plan = draw(opinfo_plans(opinfos, len(inputs), None if weights is None else weights.opinfos))
                if plan.sample is None:  # no sample of it at that dtype that eager takes: counted, never run
                    dropped.append(f"{plan.entry.op}{REJECTED_NOTE}{plan.why}")
                else:
                    plans.append(plan)
                    inputs = (*inputs, *plan.leaves)
    metas: list[Meta | None] = input_metas(inputs)
    steps: list[Step] = []
    choose_op = op_choice(catalog) if weights is None else weighted(catalog, weights.ops, key=lambda spec: spec.name)
    stop_in = 4 if weights is None else weights.stop_in
    # Until one step is added there is no "continue?" draw (a program without ops compiles
    # nothing); after a few rejected attempts the program may stay empty. A pending OpInfo step is
    # placed before the program may stop.
    attempts = 0
    # Each placed OpInfo step: (its step's index, its tensor results' value indices).
    opinfo_placed: list[tuple[int, list[int]]] = []
    while len(steps) < max_ops:
        block = draw(
            op_block(
                choose_op,
                metas,
                ask_to_continue=(bool(steps) or attempts >= 4) and not plans,
                stop_in=stop_in,
                pending=plans[0] if plans else None,
                last=max_ops - len(steps) <= len(plans),
            )
        )
        if block is None:
            break
        attempts += 1
        spec, step = block
        if isinstance(spec, OpInfoPlan):
            plans.pop(0)
            placed = None if step is None else infer_opinfo(step, metas, spec.given())
            if placed is None:
                dropped.append(spec.entry.op)
                continue
            step, new_metas, viewed = placed
            for i in viewed:  # a value a result views must not be written: the view would change too
                metas[i] = dataclasses.replace(metas[i], writable=False)
            values = [len(metas) + k for k, m in enumerate(new_metas) if m is not None and not m.is_python]
            opinfo_placed.append((len(steps), values))
            steps.append(step)
            metas.extend(new_metas)
            continue
        inferred = None if step is None else infer(step, metas)
        if inferred is None:
            dropped.append(spec.name)
            continue
        step, results = inferred
        operand_metas = [metas[i] for i in step.refs()]
        if spec.view:  # a value that has been viewed must not be written: the view would change too
            for i in step.refs():
                metas[i] = dataclasses.replace(metas[i], writable=False)
        steps.append(step)
        metas.extend(result_metas(spec, operand_metas, results))
    tensors = [i for i, m in enumerate(metas) if m is not None and not m.is_python]
    outputs = [tensors[-1 - draw(index_choice()) % len(tensors)]]
    while len(outputs) < max_outputs and draw(keep_going(p_stop_in_4=2)):
        candidate = tensors[-1 - draw(index_choice()) % len(tensors)]
        if candidate not in outputs:
            outputs.append(candidate)
    # An OpInfo step is there to be run: when no output reads it, its first tensor result is one.
    for at, values in opinfo_placed:
        if values and at not in Program(tuple(inputs), tuple(steps), tuple(outputs)).live_steps():
            outputs.append(values[0])
    # Values at the edges of the ops that read each input (``strategies.edges``), drawn last: the
    # ops decide where the edges are. Where the OpInfos are loaded, what they know of each op's
    # domain and singular points joins the catalog's (``OpInfoSource.known_edges``).
    inputs = with_edges(inputs, steps, edge_catalog(catalog, opinfos), draw(edge_modes(len(inputs))))
    seed = draw(st.integers(0, 2**16))
    return Program(tuple(inputs), tuple(steps), tuple(outputs), seed, dropped=tuple(dropped))
