"""The catalog: every entry is drawable and runs in eager; it covers Thunder's op surface."""

import pytest
from hypothesis import HealthCheck, Phase, find, settings

from fuzzdce.strategies import BY_NAME, CATALOG, programs, thunder_support

# Ops some entries need before them: a Python int from a shape, a computed (writable) tensor, a mask.
ENABLERS = (BY_NAME["shape_i"], BY_NAME["clone"], BY_NAME["gt_scalar"])
# The first program that has the op is enough: no shrinking to the smallest one.
SEARCH = settings(
    max_examples=3000, deadline=None, database=None, phases=[Phase.generate], suppress_health_check=list(HealthCheck)
)


@pytest.mark.slow
@pytest.mark.parametrize("spec", CATALOG, ids=lambda s: s.name)
def test_every_entry_is_drawn_and_runs_in_eager(spec):
    """A program with only this op is drawn (torch accepted the step) and runs in eager."""

    def runs(program):
        if spec.name not in program.ops:
            return False
        program.function()(*program.make_inputs())  # raising here fails the test
        return True

    find(programs(catalog=(spec, *ENABLERS), max_ops=3), runs, settings=SEARCH)


def test_catalog_covers_150_distinct_native_thunder_ops():
    support = {spec.name: thunder_support(spec) for spec in CATALOG}
    assert "unmapped" not in support.values(), [n for n, s in support.items() if s == "unmapped"]
    native = {spec.torch_name for spec in CATALOG if support[spec.name] == "native"}
    assert len(native) >= 150, len(native)


def test_catalog_names_are_unique_and_families_named():
    assert len({spec.name for spec in CATALOG}) == len(CATALOG)
    assert all(spec.family for spec in CATALOG)


@pytest.mark.parametrize(
    "op, shapes, kwargs, why",
    [
        ("addmm", [(1, 1, 2, 1), (1, 1), (1, 1)], (("beta", 0.5),), "meta addmm broadcasts an input of any rank"),
        ("max_dim", [(1, 0, 1)], (("dim", 1), ("keepdim", True)), "meta max reduces a size-0 dim"),
    ],
)
def test_a_step_meta_kernels_accept_and_eager_rejects_is_dropped(op, shapes, kwargs, why):
    """Drawn steps are checked on CPU tensors: eager, not a meta kernel, is the rule."""
    from fuzzdce.core.program import Ref, Step
    from fuzzdce.strategies.programs import infer, run_step
    from fuzzdce.strategies.spec import Meta

    step = Step(op, BY_NAME[op].template, tuple(Ref(i) for i in range(len(shapes))), kwargs)
    metas = [Meta(shape, "float32") for shape in shapes]
    assert run_step(step, metas, "meta"), why
    assert infer(step, metas) is None


def test_a_step_has_the_shapes_eager_gives_it():
    """Meta ``linalg.vector_norm`` over a dim of size 1 keeps that dim; eager drops it, and a later
    in-place op drawn on the meta shape would not run."""
    from fuzzdce.core.program import Ref, Step
    from fuzzdce.strategies.programs import infer, run_step
    from fuzzdce.strategies.spec import Meta

    step = Step("vector_norm", BY_NAME["vector_norm"].template, (Ref(0),), (("dim", -2), ("ord", 2)))
    metas = [Meta((1, 1), "float32")]
    (on_meta,) = run_step(step, metas, "meta")
    _, (inferred,) = infer(step, metas)
    assert on_meta.shape == (1, 1) and inferred.shape == (1,)
