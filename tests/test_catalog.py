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


def test_an_entry_whose_meta_kernel_accepts_more_is_checked_on_cpu():
    """torch's meta addmm broadcasts an input of any rank, where eager expands it to n x p and
    raises: checked on meta tensors alone, the step would be drawn and eager would reject it."""
    from fuzzdce.core.program import Ref, Step
    from fuzzdce.strategies.programs import infer
    from fuzzdce.strategies.spec import Meta

    step = Step("addmm", BY_NAME["addmm"].template, (Ref(0), Ref(1), Ref(1)), (("beta", 0.5),))
    metas = [Meta((1, 1, 2, 1), "float16"), Meta((1, 1), "float16")]
    assert infer(step, metas) is not None  # what the meta kernel says
    assert BY_NAME["addmm"].meta_accepts_more and infer(step, metas, on_cpu=True) is None
