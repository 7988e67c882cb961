"""Values at each op's edges: an entry's ``Edges`` (kinks and bounds, saturation, ties) are drawn,
exactly in each dtype, with a fair share of the programs that apply the op to an input.

The shares below are measured on 200 programs (alone: clamp's bound met exactly 0.26 with edges, 0.10
without; a tie in max(dim) 0.48 with, 0.21 without; in the whole suite 0.29 with); the floors leave room for the engine's variance (the
same seed draws other programs once other tests have run), and a floor of 0.04 still fails without
edges, where no element is ever one ulp from a bound or at exp's overflow (the last test)."""

import dataclasses
import math
import sys
from types import SimpleNamespace

import pytest
import torch
from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st

from fuzzdce.core.program import DTYPES, Domain, Program, Ref, Step, TensorInput
from fuzzdce.strategies import BY_NAME, CATALOG, programs
from fuzzdce.strategies.edges import edge_values, exact_neighbours, readers, with_edges
from fuzzdce.strategies.opinfo import PREFIX, OpInfoSource, singular_points
from fuzzdce.strategies.opinfo import source as opinfo_source
from fuzzdce.strategies.programs import INPUT_DTYPES, edge_catalog, names_of
from fuzzdce.strategies.spec import ALL_FLOATS, TIES, Edges

# float32 in the fast subset (-m "not slow"), every float dtype in the full suite.
FLOATS_FAST_ONE = [d if d == "float32" else pytest.param(d, marks=pytest.mark.slow) for d in ALL_FLOATS]

DRAWS = 200
# Hypothesis's default profile as the parent: a profile another test loads (derandomised, fewer
# examples) must not change which programs these tests draw.
QUIET = settings(
    settings.get_profile("default"),
    max_examples=DRAWS,
    deadline=None,
    database=None,
    phases=[Phase.generate],
    suppress_health_check=list(HealthCheck),
)


def drawn_programs(op: str, dtype: str, n: int = DRAWS) -> list[Program]:
    """``n`` programs of ``op`` alone over inputs of ``dtype``, as generation draws them."""
    found: list[Program] = []

    @QUIET
    @seed(47)
    @given(programs(catalog=(BY_NAME[op],), max_ops=2, dtypes=(dtype,)))
    def collect(program):
        found.append(program)

    collect()
    return found


def reads_input(program: Program, op: str) -> list[tuple[Step, int]]:
    """Each step of ``op`` whose first operand is a tensor input, with that input's index."""
    steps = []
    for step in program.steps:
        first = step.refs()[0] if step.refs() else None
        if step.op == op and first is not None and first < len(program.inputs):
            steps.append((step, first))
    return steps


def share(programs_: list[Program], hit) -> float:
    """The share of the programs applying the op to an input where ``hit(step, input values)`` holds
    (None: it cannot, the input having too few elements)."""
    relevant = hits = 0
    for program in programs_:
        values = program.make_inputs()
        found = reads_input(program, program.steps[0].op) if program.steps else []
        verdicts = [hit(step, values[i].detach()) for step, i in found]
        if all(v is None for v in verdicts):  # no step applies it where it could hold
            continue
        relevant += 1
        hits += any(verdicts)
    assert relevant >= 10, f"only {relevant} programs apply the op to an input"
    return hits / relevant


def at_bound(step, x) -> bool:
    """Some element is one of clamp's bounds exactly."""
    return any(bool((x == v).any()) for k, v in step.kwargs if k in ("lo", "hi") and v is not None)


def beside_bound(step, x) -> bool:
    """Some element is one ulp from one of clamp's bounds (no value domain draws those)."""
    bounds = [v for k, v in step.kwargs if k in ("lo", "hi") and v is not None]
    return any(
        bool(torch.isin(x, torch.tensor(near, dtype=x.dtype)).any())
        for bound in bounds
        for near in [exact_neighbours(float(bound), DTYPES_BY[x.dtype])[::2]]
    )


DTYPES_BY = {v: k for k, v in DTYPES.items()}


def overflowing(dtype: str):
    """Some element is at exp's overflow in ``dtype`` (``log(finfo.max)``) or one ulp from it."""
    points = torch.tensor(exact_neighbours(math.log(torch.finfo(DTYPES[dtype]).max), dtype), dtype=torch.float64)
    return lambda step, x: bool(torch.isin(x.double(), points).any())


def tie(step, x) -> bool | None:
    """A slice along max's dim holds its maximum twice (None: no dim of two elements)."""
    d = dict(step.kwargs)["dim"]
    if x.ndim == 0 or x.numel() == 0 or x.shape[d] < 2:
        return None
    return bool(((x == x.amax(dim=d, keepdim=True)).sum(dim=d) >= 2).any())


@pytest.fixture
def no_edges(monkeypatch):
    """Generation with every input left to its domain: what the tests below must tell apart."""
    module = sys.modules["fuzzdce.strategies.programs"]
    monkeypatch.setattr(module, "edge_modes", lambda n: st.just(("domain",) * n))


@pytest.mark.parametrize("dtype", FLOATS_FAST_ONE)
def test_clamp_is_drawn_at_its_bounds_exactly(dtype):
    """clamp's ``lo`` and ``hi`` (its parameters) are met exactly and one ulp either side, in every
    floating dtype."""
    drawn = drawn_programs("clamp", dtype)
    assert share(drawn, at_bound) >= 0.12
    assert share(drawn, beside_bound) >= 0.04


@pytest.mark.parametrize("dtype", FLOATS_FAST_ONE)
def test_exp_is_drawn_where_it_overflows_its_dtype(dtype):
    """exp is drawn at its dtype's overflow, ``log(finfo.max)`` and one ulp either side, where it is inf."""
    assert share(drawn_programs("exp", dtype), overflowing(dtype)) >= 0.04
    point = torch.tensor(exact_neighbours(math.log(torch.finfo(DTYPES[dtype]).max), dtype), dtype=DTYPES[dtype])
    assert torch.isinf(torch.exp(point)).any() and torch.isfinite(torch.exp(point)).any()  # both sides of it


@pytest.mark.slow  # the fast subset (-m "not slow") stays under 2 minutes: this one alone takes 5-30 s
def test_max_dim_is_drawn_with_ties_along_its_dim(monkeypatch):
    """A slice along max's dim holds its maximum twice (which index the gradient goes to is at
    stake), in far more programs than the value domains alone give (the ``ties`` domain among them)."""
    with_edges_share = share(drawn_programs("max_dim", "float32"), tie)
    monkeypatch.setattr(sys.modules["fuzzdce.strategies.programs"], "edge_modes", lambda n: st.just(("domain",) * n))
    without = share(drawn_programs("max_dim", "float32"), tie)
    assert with_edges_share >= 0.2 and with_edges_share > without, (with_edges_share, without)


def test_without_edges_none_of_that_is_drawn(no_edges):
    """The shares above come from the edges: with every input left to its domain, no element sits one
    ulp from clamp's bound or at exp's overflow."""
    assert share(drawn_programs("clamp", "float32"), beside_bound) == 0
    assert share(drawn_programs("exp", "float32"), overflowing("float32")) == 0


def test_every_point_is_exact_in_its_dtype_and_inside_the_domain():
    """Each value an entry's edges give is representable in the dtype (it survives a round trip) and
    lies in the input's domain; neighbours are one ulp either side."""
    for spec in CATALOG:
        if spec.edges is None:
            continue
        for dtype in (*ALL_FLOATS, "int64"):
            for domain in (Domain.REAL, Domain.POSITIVE, Domain.UNIT):
                for value in edge_values(spec.edges, {"lo": 0, "hi": 1, "threshold": 0.5}, dtype, domain):
                    assert domain.holds(value), (spec.name, dtype, domain, value)
                    assert float(torch.tensor(value, dtype=DTYPES[dtype])) == value, (spec.name, dtype, value)
    down, exact, up = exact_neighbours(1.0, "bfloat16")
    assert (down, exact, up) == (1.0 - 2**-8, 1.0, 1.0 + 2**-7)


def test_points_follow_the_step_and_the_domain():
    """A parameter's point is its value in the step; a function point is per dtype; ties add no
    neighbours; log's points stay positive."""
    bounds = Edges(kinks=("lo",))
    down, exact, up = exact_neighbours(2.0, "float32")
    assert edge_values(bounds, {"lo": 2}, "float32", Domain.REAL) == (down, exact, exact, up)
    assert edge_values(bounds, {"lo": None}, "float32", Domain.REAL) == ()
    assert edge_values(Edges(kinks=(0.0, 1.0), ties=True), {}, "float16", Domain.REAL) == (0.0, 0.0, 1.0, 1.0)
    assert all(v > 0 for v in edge_values(BY_NAME["log"].edges, {}, "float16", Domain.POSITIVE))
    assert edge_values(BY_NAME["exp"].edges, {}, "float16", Domain.REAL) != edge_values(
        BY_NAME["exp"].edges, {}, "float32", Domain.REAL
    )


def test_an_input_learns_the_edges_of_ops_reading_it_through_shape_ops_and_views():
    """clamp reading a reshape of v0 gives v0 clamp's bounds; v1, a view of v0, gives them to v0;
    an input read by no op with edges keeps its domain's values."""
    inputs = (TensorInput((2, 3)), TensorInput((4,)), TensorInput((2, 3), view_of=0))
    steps = (
        Step("reshape", "torch.reshape({0}, {shape})", (Ref(0),), (("shape", (-1,)),)),
        Step("clamp", "torch.clamp({0}, min={lo}, max={hi})", (Ref(3),), (("hi", 2), ("lo", -1))),
        Step("relu", "torch.relu({0})", (Ref(2),)),
        Step("cos", "torch.cos({0})", (Ref(1),)),
    )
    by_name = {spec.name: spec for spec in CATALOG}
    assert sorted(step.op for step, _ in readers(inputs, steps, by_name)[0]) == ["clamp", "relu"]
    drawn = with_edges(inputs, steps, by_name, ("mixed", "only", "mixed"))
    assert {-1.0, 2.0, 0.0} <= set(drawn[0].edges) and not drawn[0].edges_only
    assert drawn[1].edges == () and drawn[2].edges == ()  # cos has no edges; a view follows its base
    values = Program(drawn, steps, (5,), seed=4).make_inputs()
    assert bool(torch.isin(values[0], torch.tensor([-1.0, 2.0])).any())
    assert with_edges(inputs, steps, by_name, ("domain",) * 3) == inputs


@given(st.sampled_from(ALL_FLOATS), st.integers(0, 2**16))
@settings(max_examples=20, deadline=None)
def test_only_draws_every_element_among_the_points(dtype, seed):
    """``edges_only`` (values tie): each element is one of the points; mixed keeps the domain's too."""
    spec = TensorInput((3, 4), dtype, edges=(0.0, 1.0), edges_only=True)
    (x,) = Program((spec,), (), (0,), seed=seed).make_inputs()
    assert bool(torch.isin(x.double(), torch.tensor([0.0, 1.0], dtype=torch.float64)).all())


# --- issue 54: edge values from the op's own knowledge ------------------------------------------------

# The audit: the ops issue 54 names, and what their catalog entries' edges must say. Order statistics
# tie, and their gradient there is a choice (``ORDER``); saturating activations are drawn where they
# saturate (+-100 and beyond: exp(-100) is a float32 subnormal, far past where each rounds to its
# asymptote); bounded ones at their bounds. A new entry of one of these ops joins its table.
ORDER_OPS = (
    "max_dim", "min_dim", "max_all", "amax", "amin", "argmax", "argmin", "aminmax", "topk", "sort", "argsort",
    "median_dim", "median_all", "mode", "kthvalue", "maximum", "minimum", "max_pool1d", "max_pool2d", "centre_by_max",
)  # fmt: skip
# Named by the issue, in neither the catalog nor Thunder's OpInfos (0.2.6): nanmedian, msort, cummax,
# cummin. Entries for them shift every seeded draw (tests/test_opinfo.py's chaining sample among them).
SATURATING = {
    "sigmoid": (100.0, -100.0), "logsigmoid": (100.0, -100.0), "tanh": (100.0, -100.0),
    "tanhshrink": (100.0, -100.0), "softplus": (100.0, -100.0, 20.0), "silu": (100.0, -100.0),
    "gelu": (100.0, -100.0), "mish": (100.0, -100.0), "elu": (-100.0,), "celu": (-100.0,), "selu": (-100.0,),
    "softmax": (100.0, -100.0), "log_softmax": (100.0, -100.0), "softmax_f": (100.0, -100.0),
    "log_softmax_f": (100.0, -100.0), "softmin": (100.0, -100.0), "logsumexp": (100.0, -100.0),
}  # fmt: skip
BOUNDED = {"hardtanh": (-1.0, 1.0), "relu6": (0.0, 6.0), "hardsigmoid": (-3.0, 3.0), "hardswish": (-3.0, 3.0)}


def audit() -> list[str]:
    """What the catalog misses of the audit's tables: one line per entry missing or lacking."""
    missing = []
    for name in ORDER_OPS:
        edges = BY_NAME[name].edges if name in BY_NAME else None
        if edges is None or not (edges.ties and edges.subgradient):
            missing.append(f"{name}: no ties whose gradient is a choice ({edges})")
    for name, wanted in {**SATURATING, **BOUNDED}.items():
        edges = BY_NAME[name].edges if name in BY_NAME else None
        drawn = set(edge_values(edges, {}, "float32", Domain.REAL)) if edges is not None else set()
        if not set(wanted) <= drawn:
            missing.append(f"{name}: not drawn at {sorted(set(wanted) - drawn)}")
    return missing


def test_the_ops_issue_54_names_have_their_edges():
    """Each op of the audit's tables has its entry, with ties or its saturation and bound points."""
    assert audit() == []


def test_the_audit_fails_where_an_entry_lacks_its_edges(monkeypatch):
    """The audit reads the entries: tanh without its +-100 and sort without ties are found."""
    monkeypatch.setitem(BY_NAME, "tanh", dataclasses.replace(BY_NAME["tanh"], edges=Edges(saturates=(20.0, -20.0))))
    monkeypatch.setitem(BY_NAME, "sort", dataclasses.replace(BY_NAME["sort"], edges=TIES))
    assert sorted(line.split(":")[0] for line in audit()) == ["sort", "tanh"]


def test_an_input_tied_where_a_gradient_is_a_choice_does_not_require_grad():
    """max(x, dim)'s gradient at a tie is a convention (torch: the index it returns; Thunder: shared
    among the ties): an input drawn at its points, or from the ``ties`` domain, does not require
    grad; one left to its domain does, as does one tied where the gradient is no choice (var)."""
    by_name = {spec.name: spec for spec in CATALOG}
    inputs = (TensorInput((2, 3)), TensorInput((2, 3), domain=Domain.TIES), TensorInput((2, 3)))
    steps = (
        Step("max_dim", "torch.max({0}, {dim})", (Ref(0),), (("dim", 1),), n_out=2, unpack=True),
        Step("max_dim", "torch.max({0}, {dim})", (Ref(1),), (("dim", 1),), n_out=2, unpack=True),
        Step("var", "torch.var({0}, dim={dim}, correction={correction})", (Ref(2),), (("correction", 1), ("dim", 1))),
    )
    drawn = with_edges(inputs, steps, by_name, ("only", "domain", "only"))
    assert [x.requires_grad for x in drawn] == [False, False, True]
    assert [x.requires_grad for x in with_edges(inputs[:1], steps[:1], by_name, ("domain",))] == [True]


def test_an_opinfos_domain_ends_and_singularity_zeros_are_its_points():
    """``singular_points``: the domain's finite ends, then where the signed distance to a singularity
    is zero (an OpInfo's producer asked of its defaults), nearest 0 first, at most a few; a producer
    that needs a real sample gives none."""
    floor_like = SimpleNamespace(domain=(0.1, math.inf), singularity_fn_producer=lambda s: lambda x: x - torch.round(x))
    assert singular_points(floor_like) == (0.1, 0.0, -1.0, 1.0, -2.0, 2.0, -3.0)
    two_tensors = SimpleNamespace(domain=(None, None), singularity_fn_producer=lambda s: (lambda a, b: None)(*s.args))
    assert singular_points(two_tensors) == ()
    softplus = SimpleNamespace(
        domain=(None, None), singularity_fn_producer=lambda s: lambda a: a * s.kwargs.get("beta", 1.0) - 20
    )
    assert singular_points(softplus) == (20.0,)


@pytest.fixture(scope="module")
def opinfos():
    """This process's OpInfo source (seconds, once), or a skip where this Thunder ships none."""
    found = opinfo_source(INPUT_DTYPES)
    if found is None:
        pytest.skip("no thunder.tests.opinfos here")
    return found


def test_what_thunders_opinfos_know_joins_the_catalogs_edges(opinfos):
    """rsqrt's OpInfo draws inside (0.1, inf) and tan's is singular at +-pi/2: a catalog entry of
    either op gets those points where the OpInfos are loaded; an OpInfo step of sort ties as the
    catalog's sort does, and its gradient there is a choice."""
    known = opinfos.known_edges()
    assert 0.1 in known["rsqrt"].points
    assert any(abs(p - math.pi / 2) < 1e-9 for p in known["tan"].points if isinstance(p, float))
    assert known[PREFIX + "sort"].ties and known[PREFIX + "sort"].subgradient
    merged = edge_catalog(CATALOG, opinfos)
    assert 0.1 in merged["rsqrt"].edges.points and set(BY_NAME["rsqrt"].edges.points) <= set(merged["rsqrt"].edges.points)
    assert edge_catalog(CATALOG, None) is names_of(CATALOG)  # no OpInfos: the catalog's own, nothing made


def near(points: tuple[float, ...]):
    """Some element is one of ``points`` (rounded to the input's dtype) or one ulp from it."""

    def hit(step, x):
        dtype = DTYPES_BY[x.dtype]
        wanted = [v for p in points for v in exact_neighbours(p, dtype)]
        return bool(torch.isin(x.double(), torch.tensor(wanted, dtype=torch.float64)).any())

    return hit


def drawn_with(op: str, dtype: str, opinfos_) -> list[Program]:
    """As ``drawn_programs``, with the OpInfos' knowledge joined in (``opinfos_``; no OpInfo steps)."""
    found: list[Program] = []

    @QUIET
    @seed(47)
    @given(programs(catalog=(BY_NAME[op],), max_ops=2, dtypes=(dtype,), opinfos=opinfos_))
    def collect(program):
        found.append(program)

    collect()
    return found


@pytest.mark.slow  # four draws of programs, 5-7 s (the fast subset keeps the OpInfo join above)
def test_a_catalog_op_meets_its_opinfos_domain_end_and_singular_points(opinfos):
    """Measured: rsqrt at 0.1 and atanh at +-0.99 (their OpInfos' domain ends), exactly or one ulp
    off, in a fair share of programs with the OpInfos' knowledge and in none without. (tan's poles
    at +-pi/2 lie outside the (-1, 1) its entry draws in: left out, as any point outside a domain.)"""
    rsqrt_end, atanh_ends = near((0.1,)), near((0.99, -0.99))
    assert share(drawn_with("rsqrt", "float32", opinfos), rsqrt_end) >= 0.1
    assert share(drawn_with("atanh", "float32", opinfos), atanh_ends) >= 0.1
    assert share(drawn_with("rsqrt", "float32", None), rsqrt_end) == 0
    assert share(drawn_with("atanh", "float32", None), atanh_ends) == 0


ORDER_OPINFOS = ("amax", "amin", "torch_max", "argmax", "topk", "sort", "argsort")


def opinfo_programs(opinfos_, n: int = 200) -> list[Program]:
    """``n`` programs each holding one step of an order statistic's OpInfo (a source of those alone)."""
    chosen = OpInfoSource([e.opinfo for e in opinfos_.entries if e.name in ORDER_OPINFOS], INPUT_DTYPES)
    found: list[Program] = []

    @settings(QUIET, max_examples=n)
    @seed(47)
    @given(programs(catalog=(BY_NAME["relu"],), max_ops=2, dtypes=("float32",), opinfo_rate=1.0, opinfos=chosen))
    def collect(program):
        found.append(program)

    collect()
    return found


def tied_leaves(program: Program) -> list[tuple[bool, bool, bool]]:
    """For each drawn floating input of the program's OpInfo step: (two of its elements along its
    last dim are equal, it requires grad, it is drawn at edge points)."""
    step = next((s for s in program.steps if s.op.startswith(PREFIX)), None)
    if step is None:
        return []
    values = program.make_inputs()
    found = []
    for i in set(step.refs()):
        spec = program.inputs[i] if i < len(program.inputs) else None
        if isinstance(spec, TensorInput) and spec.values is None and spec.dtype.startswith("float") and values[i].numel() > 1:
            x = values[i].detach().reshape(-1, values[i].shape[-1]) if values[i].ndim else values[i].reshape(1, 1)
            tied = bool((x.sort(dim=-1).values.diff(dim=-1) == 0).any()) if x.shape[-1] > 1 else False
            found.append((tied, spec.requires_grad, bool(spec.edges)))
    return found


@pytest.mark.slow  # 200 programs twice, 15-30 s; the share varies with what ran before in the process
def test_an_order_statistics_opinfo_step_is_drawn_with_ties(opinfos, monkeypatch):
    """Measured (alone 0.30 with edges, 0.00 without; after test_architecture and test_catalog in one
    process 0.07 and 0.00): an OpInfo step of amax, max, topk, sort... reads an input with equal values along a
    dim in far more programs with edges than without, and a tied input drawn at the points does not
    require grad (the gradient there is a choice)."""
    leaves = [leaf for p in opinfo_programs(opinfos) for leaf in tied_leaves(p)]
    monkeypatch.setattr(sys.modules["fuzzdce.strategies.programs"], "edge_modes", lambda n: st.just(("domain",) * n))
    without = [leaf for p in opinfo_programs(opinfos) for leaf in tied_leaves(p)]
    assert len(leaves) >= 15 and len(without) >= 15, (len(leaves), len(without))
    with_share, without_share = (sum(t for t, _, _ in x) / len(x) for x in (leaves, without))
    assert with_share >= 0.05 and with_share > without_share, (with_share, without_share)
    assert any(edged for _, _, edged in leaves) and not any(grad for _, grad, edged in leaves if edged)
