"""Values at each op's edges: an entry's ``Edges`` (kinks and bounds, saturation, ties) are drawn,
exactly in each dtype, with a fair share of the programs that apply the op to an input.

The shares below are measured on 200 programs (alone: clamp's bound met exactly 0.26 with edges, 0.10
without; a tie in max(dim) 0.48 with, 0.21 without; in the whole suite 0.29 with); the floors leave room for the engine's variance (the
same seed draws other programs once other tests have run), and a floor of 0.04 still fails without
edges, where no element is ever one ulp from a bound or at exp's overflow (the last test)."""

import math
import sys

import pytest
import torch
from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st

from fuzzdce.core.program import DTYPES, Domain, Program, Ref, Step, TensorInput
from fuzzdce.strategies import BY_NAME, CATALOG, programs
from fuzzdce.strategies.edges import edge_values, exact_neighbours, readers, with_edges
from fuzzdce.strategies.spec import ALL_FLOATS, Edges

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
