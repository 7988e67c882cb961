"""Thunder 0.2.5 against 0.2.6 on the same torch: the worked example of a release-to-release run.

0.2.5 is an overlay (``pip install --no-deps --target DIR lightning-thunder==0.2.5``, a 1 MB wheel)
put first on a build worker's path; the Thunder installed here is the reference. A campaign of
both (docs/operating.md, "Worked example: Thunder 0.2.5 against 0.2.6") found 0.2.5 differentiating through a cast to an
integer dtype: ``x.to(torch.int32) + x`` gets gradient 2 under 0.2.5, 1 in eager and under 0.2.6,
a bug 0.2.6 fixed. This test checks that finding on its shrunk program. It needs the package
registry once (pip's cache after that) and is skipped without it, or when 0.2.6 is not installed.
"""

from __future__ import annotations

import subprocess
import sys

import pytest
import thunder

from fuzzdce.core.findings import triage
from fuzzdce.core.model import STOCK
from fuzzdce.core.program import Program, Ref, Step, TensorInput
from fuzzdce.core.vocabulary import Verdict
from fuzzdce.running.evaluate import Evaluator, violations_of
from fuzzdce.running.placements import resolve

# v1 = v0.to(torch.int32); v2 = torch.add(v1, v0): the gradient of v2 w.r.t. v0 is 1 (the cast is not differentiable).
CAST_THEN_ADD = Program(
    (TensorInput((1, 1, 1, 4), domain="positive"),),
    (Step("to_int32", "{0}.to(torch.int32)", (Ref(0),)), Step("add", "torch.add({0}, {1})", (Ref(1), Ref(0)))),
    (2,),
    seed=58,
)


@pytest.fixture(scope="module")
def thunder_025(tmp_path_factory) -> str:
    if getattr(thunder, "__version__", "") != "0.2.6":
        pytest.skip(f"the reference here is Thunder {thunder.__version__}, not 0.2.6")
    target = tmp_path_factory.mktemp("thunder-0.2.5")
    command = [
        sys.executable,
        "-m",
        "pip",
        "install",
        "--quiet",
        "--no-deps",
        "--target",
        str(target),
        "lightning-thunder==0.2.5",
    ]
    if subprocess.run(command, capture_output=True, timeout=120).returncode != 0:
        pytest.skip("lightning-thunder 0.2.5 could not be installed (no package registry?)")
    return f"0.2.5={target}"


def test_thunder_025_differentiates_through_an_integer_cast_and_026_does_not(thunder_025):
    evaluator = Evaluator()
    try:
        evaluations = evaluator(CAST_THEN_ADD, [resolve(thunder_025)], paths=["jit-grad"], timeout=120.0)
    finally:
        evaluator.close()
    found = {(t.violation.oracle, t.verdict, t.placements) for t in triage(violations_of(evaluations)).values()}
    assert found == {("grads", Verdict.REGRESSION, ("0.2.5",))}, found
    assert not any(t.verdict == Verdict.SHARED for t in triage(violations_of(evaluations)).values())
    assert evaluations[STOCK].violations == []


# Every test here starts processes, services or whole campaigns (./dev test -m "not slow" leaves them out).
pytestmark = pytest.mark.slow
